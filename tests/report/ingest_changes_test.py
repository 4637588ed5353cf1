"""The report's ingest-changes sections on race folders built in tmp_path (race.json and the track's records beside
it): savings from the records, a failed ingest FAILED with no saving, the seed's segment table from /_stats."""

import json
import statistics
from pathlib import Path

import pytest
from scipy import stats

from report.__main__ import main as report_main
from report.shared import races
from report.studies import ingest, ingest_changes
from runners.contracts import records
from runners.contracts.corpus import races_root
from runners.contracts.queries import INGEST_CHANGE_BASELINE, INGEST_CHANGES

HOME = Path(__file__).parents[1] / "fixtures" / "races"
FULL = "b8b9bc99"  # a real --test-mode race of full (tests/report/main_test.py)
RACE_ID = "c0ffee00-0000-0000-0000-000000000000"
# per epoch: wall (s) of each ingest; index and other ES time scale with it, so that every figure differs per ingest
WALLS = {
    INGEST_CHANGE_BASELINE: [10.0, 12.0, 11.0, 13.0, 9.0],
    "bulk-size": [8.0, 9.0, 9.5, 10.0, 7.0],
    "clients": [6.0, 7.0, 6.5, 8.0, 5.0],
    "refresh": [9.5, 11.0, 10.5, 12.5, 8.5],
}


def epoch_row(epoch, wall, index_ms_per_s=400):
    """An ingest-cost-epoch row (runners/studies/ingest.py's keys) whose ES times follow the wall."""
    return {
        "epoch": epoch,
        "docs": 1000,
        "bulk-requests": 1,
        "bulk-took-ms": 200 * epoch,
        "index-ms": int(wall * index_ms_per_s),
        "refresh-ms": int(wall * 20),
        "merge-ms": 7 * epoch,
        "flush-ms": 3,
        "merged-mb": 0.0,
    }


def make_race(
    home, walls=WALLS, failed=(), wrong_count=(), unverified=(), main_ingest=None, params=None, index_ms_per_s=400
):  # parameters: a test race's fields, each a keyword with its default
    """A race folder of ingest-changes under home's races: per ingest its bulk tasks' durations and its
    verify-doc-count in race.json, its record beside it. failed: ingests with a failed bulk (error rate 0.25 on
    epoch 2); wrong_count: ingests whose document count failed; unverified: without verify-doc-count. main_ingest:
    per-epoch walls of the race's own ingest (bulk-epoch-N, ingest.json), as a full race has; index_ms_per_s: the
    /_stats indexing time per second of wall."""
    folder = races_root(home) / RACE_ID
    record_dir = folder / records.RECORD_DIR
    ops = []
    for name, epoch_walls in walls.items():
        record = {"epochs": [], "snapshot": {}, "index-settings": {"index.refresh_interval": "1s", "index.translog.durability": "request"}}
        for epoch, wall in enumerate(epoch_walls, 1):
            error_rate = 0.25 if name in failed and epoch == 2 else 0.0
            ops.append({"task": f"change-{name}-bulk-epoch-{epoch}", "duration": wall * 1000, "error_rate": error_rate})
            record["epochs"].append(epoch_row(epoch, wall, index_ms_per_s))
        if name not in unverified:
            ops.append({"task": f"change-{name}-verify-doc-count", "error_rate": 1.0 if name in wrong_count else 0.0})
        records.write(str(record_dir), f"ingest-change-{name}.json", record)
    if main_ingest:
        ops += [{"task": f"bulk-epoch-{e}", "duration": w * 1000, "error_rate": 0.0} for e, w in enumerate(main_ingest, 1)]
        records.write(str(record_dir), records.INGEST, {"epochs": [epoch_row(e, w) for e, w in enumerate(main_ingest, 1)]})
    data = {
        "race-id": RACE_ID,
        "race-timestamp": "20990101T000000Z",
        "track": records.TRACK_NAME,
        "challenge": "ingest-changes" if walls else "full",
        "track-params": params or {},
        "results": {"op_metrics": ops},
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "race.json").write_text(json.dumps(data))
    return races.load(folder)


def rows_by_ingest(race):
    header, body = ingest_changes.changes_table(race)
    return {row[0]: dict(zip(header, row)) for row in body}


def test_each_change_is_saved_against_the_baseline_epoch_by_epoch(tmp_path):
    race = make_race(tmp_path, params={"tuned_bulk_size": 250, "tuned_clients": 2})
    rows = rows_by_ingest(race)
    assert list(rows) == [INGEST_CHANGE_BASELINE, "bulk-size", "clients", "refresh"]  # the vocabulary's order
    base = WALLS[INGEST_CHANGE_BASELINE]
    for name in ("bulk-size", "clients", "refresh"):
        row, walls = rows[name], WALLS[name]
        assert row["wall per epoch, mean (s)"] == pytest.approx(statistics.mean(walls))
        assert row["wall, total (s)"] == pytest.approx(sum(walls))
        assert row["bulk took, total (s)"] == pytest.approx(sum(200 * e for e in range(1, 6)) / 1000)
        assert row["ES indexing /_stats, total (s)"] == pytest.approx(sum(int(w * 400) for w in walls) / 1000)
        shares = [(b - c) / b for b, c in zip(base, walls)]
        low, high = stats.t.interval(0.95, len(shares) - 1, loc=statistics.mean(shares), scale=stats.sem(shares))
        assert row["saving per epoch, mean (s)"] == pytest.approx(statistics.mean(b - c for b, c in zip(base, walls)))
        assert row["saving, mean (% of wall)"] == f"{100 * statistics.mean(shares):.1f}%"
        assert row["95% t-interval"] == f"{100 * low:.1f}% .. {100 * high:.1f}%"
        assert row["min..max over epochs"] == f"{100 * min(shares):.1f}% .. {100 * max(shares):.1f}%"
    # the race's values in what each ingest changes; the seed's own words beside ours
    assert rows["bulk-size"]["what it changes"] == "bulk size 1000 → 250"
    assert rows["clients"]["what it changes"] == "clients 1 → 2"
    assert rows["bulk-size"]["seed 000: expected savings"] == "fewer fsyncs/round-trips, ~5–10s"
    assert rows["refresh"]["seed 000: trade-off"] == "data not visible until manual refresh"
    assert rows[INGEST_CHANGE_BASELINE]["saving, mean (% of wall)"] == "-"


def test_one_epoch_has_a_saving_but_no_interval(tmp_path):
    race = make_race(tmp_path, {INGEST_CHANGE_BASELINE: [10.0], "translog": [8.0]})
    row = rows_by_ingest(race)["translog"]
    assert row["saving, mean (% of wall)"] == "20.0%" and row["95% t-interval"] == "none: 1 epoch"


@pytest.mark.parametrize(
    "failure,said",
    [
        ({"failed": ("clients",)}, "failed bulk requests in change-clients-bulk-epoch-2"),
        ({"wrong_count": ("clients",)}, "the document count differs from the corpus's (change-clients-verify-doc-count)"),
        ({"unverified": ("clients",)}, "its document count was not verified"),
    ],
)
def test_a_failed_change_is_failed_and_has_no_saving(tmp_path, failure, said):
    rows = rows_by_ingest(make_race(tmp_path, **failure))
    failed = rows["clients"]
    assert failed["saving per epoch, mean (s)"].startswith("FAILED") and said in failed["saving per epoch, mean (s)"]
    assert failed["saving, mean (% of wall)"] == failed["95% t-interval"] == failed["min..max over epochs"] == "-"
    assert rows["bulk-size"]["saving, mean (% of wall)"].endswith("%")  # the others keep theirs


def test_a_failed_baseline_gives_no_change_a_saving(tmp_path):
    race = make_race(tmp_path, wrong_count=(INGEST_CHANGE_BASELINE,))
    rows = rows_by_ingest(race)
    assert rows[INGEST_CHANGE_BASELINE]["saving per epoch, mean (s)"].startswith("FAILED")
    assert all(rows[name]["saving per epoch, mean (s)"] == "no saving: the baseline FAILED" for name in ("bulk-size", "clients"))
    segments = ingest_changes.segment_table(race)
    assert {row[3] for row in segments[1]} == {"FAILED"}


def test_a_race_without_the_challenge_has_neither_table(tmp_path):
    race = make_race(tmp_path, walls={})
    assert ingest_changes.changes_table(race) is None and ingest_changes.segment_table(race) is None
    full = races.Files(rally_home=HOME).race(FULL)
    assert ingest_changes.changes_table(full) is None


def test_the_segments_come_from_the_stats_and_the_wall(tmp_path):
    race = make_race(tmp_path)
    header, body = ingest_changes.segment_table(race)
    assert header[:3] == ["segment", "seed 000 (s per epoch)", "seed 000 share"] and header[3] == "ingest-changes baseline (s per epoch)"
    rows = {row[0].split(":")[0]: row for row in body}
    walls = WALLS[INGEST_CHANGE_BASELINE]
    wall = statistics.mean(walls)
    index = statistics.mean(int(w * 400) / 1000 for w in walls)
    other = statistics.mean((int(w * 20) + 7 * e + 3) / 1000 for e, w in enumerate(walls, 1))
    assert rows["ES indexing"][3] == pytest.approx(index) and rows["ES other"][3] == pytest.approx(other)
    assert rows["Client + network"][3] == pytest.approx(wall - index - other)
    assert rows["Client + network"][4] == f"{100 * (wall - index - other) / wall:.1f}%"
    assert rows["wall"][3] == pytest.approx(wall) and rows["wall"][4] == "100.0%"
    # the seed's own figures in their own columns
    assert [rows[k][1:3] for k in ("Client + network", "ES indexing", "ES other")] == [[37, "47%"], [34, "42%"], [6, "11%"]]


def test_client_and_network_floor_at_zero_when_es_time_exceeds_the_wall(tmp_path):
    """Several threads' indexing summed can exceed the wall: client + network is then 0, not negative."""
    race = make_race(tmp_path, {INGEST_CHANGE_BASELINE: [3.0, 3.0]}, index_ms_per_s=2000)
    rows = {row[0].split(":")[0]: row for row in ingest_changes.segment_table(race)[1]}
    assert rows["ES indexing"][3] == pytest.approx(2 * rows["wall"][3]) and rows["Client + network"][3] == 0.0
    assert rows["ES indexing"][4] == "200.0%"  # a share above 100%, as the note says it can be


def test_the_race_own_ingest_gets_its_segments_too(tmp_path):
    race = make_race(tmp_path, walls={}, main_ingest=[20.0, 22.0])
    header, body = ingest_changes.segment_table(race)
    assert header[3:] == ["full ingest (s per epoch)", "full ingest share"]
    assert {row[0].split(":")[0]: row[3] for row in body}["wall"] == pytest.approx(21.0)
    # and on a real full race: its ingest.json and its bulk-epoch-N durations
    full = races.Files(rally_home=HOME).race(FULL)
    header, body = ingest_changes.segment_table(full)
    walls = [r["wall_s"] for r in ingest.ingest_rows(full)]
    assert {row[0].split(":")[0]: row[3] for row in body}["wall"] == pytest.approx(statistics.mean(walls))


def test_every_change_has_the_seeds_words():
    assert set(ingest_changes.SEED_CHANGES) == set(INGEST_CHANGES)


def test_the_report_shows_both_sections_with_their_notes(tmp_path):
    make_race(tmp_path)
    out = tmp_path / "out"
    assert report_main(["--race", RACE_ID[:8], "--rally-home", str(tmp_path), "--out", str(out)]) == 0
    text = (out / RACE_ID / "report.md").read_text()
    assert "## Ingest changes one at a time" in text and "## Ingest: the seed's segments" in text
    assert ingest_changes.CHANGES_NOTE.strip() in text and ingest_changes.SEGMENT_NOTE.strip() in text
    assert "| FAILED" not in text  # no table cell failed (the notes say what FAILED means)


def test_in_full_the_changes_are_saved_against_the_studys_own_ingest(tmp_path):
    """full runs the changes, then its baseline ingest (ingest.json, bulk-epoch-N): that ingest is the baseline."""
    walls = {k: v for k, v in WALLS.items() if k != INGEST_CHANGE_BASELINE}
    race = make_race(tmp_path, walls=walls, main_ingest=WALLS[INGEST_CHANGE_BASELINE])
    rows = rows_by_ingest(race)
    assert list(rows) == [INGEST_CHANGE_BASELINE, "bulk-size", "clients", "refresh"]
    base, walls = WALLS[INGEST_CHANGE_BASELINE], WALLS["clients"]
    assert rows[INGEST_CHANGE_BASELINE]["wall, total (s)"] == pytest.approx(sum(base))
    assert rows["clients"]["saving, mean (% of wall)"] == f"{100 * statistics.mean((b - c) / b for b, c in zip(base, walls)):.1f}%"
    # without the changes, the study's ingest alone is no changes table
    assert ingest_changes.changes_table(make_race(tmp_path / "alone", walls={}, main_ingest=base)) is None
