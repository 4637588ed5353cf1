"""Every report section on a full-scale race (5 x 1,000,000 rows) of every challenge, as raced and in every shape a race
can also come out (tests/race_shapes.py): the races are packed in tests/fixtures/full-scale-races.tar.xz
(tests/fixtures/full-scale-races.md lists them and how they were raced). A report is figures or named reasons, never a
traceback; a failed task is marked FAILED wherever its figures would be.

Every race of the archive is built; a challenge of the track with no race there yet (a new one) passes the unit tier and
fails the slow tier only (test_every_challenge_has_a_full_scale_race), which names the commands that make and pack it."""

import json
import shutil
import tarfile
from pathlib import Path

import pytest

from report.__main__ import single_report
from report.shared import charts, races
from report.shared.charts import plt
from runners.contracts import records
from runners.contracts.queries import INGEST_CHANGE_BASELINE
from runners.processor import CorpusChecks
from tests.conftest import rendered_challenges
from tests.fixtures.pack_full_scale import listed_challenges
from tests.race_shapes import assert_no_answer, every_ingest_failed, every_task_failed, no_records, stopped_midway, took_zero

ARCHIVE = Path(__file__).parents[1] / "fixtures" / "full-scale-races.tar.xz"
SHAPES = [None, took_zero, every_task_failed, every_ingest_failed, no_records, stopped_midway]
# the sections every report has, whatever its race (report/__main__.py): the rest are the race's own
ALWAYS = ("## Percentile accuracy", "## What the load driver adds per request")


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory):
    """{challenge: race folder} of the archive, unpacked once."""
    root = tmp_path_factory.mktemp("full-scale")
    with tarfile.open(ARCHIVE) as tar:
        tar.extractall(root, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))  # the filter: 3.11.4 on
    folders = sorted(root.iterdir())
    found = {races.load(folder).challenge: folder for folder in folders}
    assert len(found) == len(folders), "the archive holds two races of one challenge"
    return found


def _not_drawn(fig, path, title=None):
    """charts.save but for the drawing: each chart's data and plot calls run in every shape; its layout and PNG, most of
    this module's time, are drawn whole in the as-raced shape of every challenge."""
    if title:
        fig.suptitle(title)
    plt.close(fig)
    return path


# the challenges the archive holds a race of, as its listing names them (read at collection, without unpacking)
ARCHIVED = listed_challenges()


def test_the_archive_holds_full_scale_races_of_the_tracks_challenges(unpacked):
    """One race per challenge, as the listing says, each of a challenge the track has, with results; each that read the
    corpus read the full-scale one (its corpus check's cache: every epoch file about 75 MB, where 5 x 100,000 rows make
    7.5 MB)."""
    assert sorted(unpacked) == sorted(ARCHIVED), "the archive and its listing disagree: pack it again"
    assert set(unpacked) <= set(rendered_challenges()), "the archive holds a race of a challenge the track no longer has"
    for challenge, folder in unpacked.items():
        assert races.load(folder).data["results"]["op_metrics"], f"{challenge}: a race with no results"
        checks = folder / records.RECORD_DIR / CorpusChecks.NOTE
        if checks.is_file():
            noted = [json.loads(line) for line in checks.read_text().splitlines() if line.strip()]
            sizes = [note["bytes"] for note in noted if "-epoch-" in Path(note["path"]).name]
            assert sizes and min(sizes) > 50_000_000, f"{challenge}: not the full-scale corpus ({sizes})"


@pytest.mark.parametrize("shape", SHAPES, ids=lambda shape: shape.__name__ if shape else "as-raced")
@pytest.mark.parametrize("challenge", ARCHIVED)
def test_every_section_builds_on_a_full_scale_race_in_every_shape(unpacked, challenge, shape, tmp_path, monkeypatch):
    race_dir = tmp_path / unpacked[challenge].name
    shutil.copytree(unpacked[challenge], race_dir)
    if shape:
        shape(race_dir)
        monkeypatch.setattr(charts, "save", _not_drawn)
    race = races.load(race_dir)
    text = single_report(race, tmp_path / "reports")[0].read_text()
    assert f"challenge `{challenge}`" in text and "Traceback" not in text
    own = [line for line in text.splitlines() if line.startswith("## ") and line not in ALWAYS]
    if shape is None:
        assert own, f"{challenge}: a full-scale race whose report has none of its own sections"
    if shape is every_task_failed:
        # every figure of a failed task is withheld: no section shows one without saying FAILED
        assert "FAILED" in text, f"{challenge}: every task failed and the report does not say so"
    if shape is stopped_midway:
        assert_no_answer(text, challenge)


@pytest.mark.integration  # the slow tier: a new challenge passes make test before its full-scale race exists
def test_every_challenge_has_a_full_scale_race():
    missing = sorted(set(rendered_challenges()) - set(ARCHIVED))
    assert not missing, (
        f"no full-scale race of {', '.join(missing)} in tests/fixtures/full-scale-races.tar.xz: race each at full scale "
        f"(make race CHALLENGE=<challenge>: it generates the corpus first; a challenge that queries the index without "
        f"ingesting it needs the corpus ingested before: make race CHALLENGE=ingest-baseline, then make race "
        f"CHALLENGE=<challenge>) and pack it beside the others "
        f"(python tests/fixtures/pack_full_scale.py --add <race id>)"
    )


def test_the_drift_check_reads_a_tasks_coverages_in_the_order_they_started(unpacked, tmp_path):
    """With several clients the record holds a task's coverages in the order they ended and a metrics store in the
    order Rally stamped them; the drift check (first third against last) reads them in the order they started, so a
    race gives one verdict whatever it was read from (make test's store-against-files comparison once differed on
    layout-sweep's 4-client cells, 9.5.3). The record's lines in other orders give the same drifts."""
    from report.studies import coverage

    def drifts(order=None):
        folder = tmp_path / (order.__name__ if order else "as-recorded") / unpacked["layout-sweep"].name
        shutil.copytree(unpacked["layout-sweep"], folder)
        record = folder / records.RECORD_DIR / records.VALIDATION
        if order:
            record.write_text("".join(line + "\n" for line in order(record.read_text().splitlines())))
        return {task: d.text() for task, d in coverage.drifts(races.load(folder)).items()}

    def reverse(lines):
        return list(reversed(lines))

    def by_end(lines):
        return sorted(lines, key=lambda line: (json.loads(line).get("window") or [0, 0])[1])

    as_recorded = drifts()
    assert len(as_recorded) >= 36  # every layout's coverages, 4 clients each
    assert drifts(reverse) == as_recorded and drifts(by_end) == as_recorded


def test_each_ingest_change_is_a_figure_of_the_history(unpacked):
    """make trend follows each ingest change's walls (the epochs' summed) as a figure of its own, the baseline's too in
    ingest-changes; in full the baseline is the race's own ingest, followed as the ingest wall alone."""
    from report.studies import ingest_changes
    from report.studies.ingest_changes import INGEST_WALL

    race = races.load(unpacked["ingest-changes"])
    changes = INGEST_WALL.measure(race)
    names = [INGEST_CHANGE_BASELINE, "bulk-size", "clients", "refresh", "translog", "all"]
    assert list(changes) == [INGEST_WALL.cell(n) for n in names] and INGEST_WALL.unit == "s"
    for name in names:
        assert changes[INGEST_WALL.cell(name)][0] == pytest.approx(sum(r["wall"] for r in ingest_changes.change_rows(race, name)))
    assert changes[INGEST_WALL.cell("all")][0] < 0.6 * changes[INGEST_WALL.cell(INGEST_CHANGE_BASELINE)][0]
    full = INGEST_WALL.measure(races.load(unpacked["full"]))
    assert INGEST_WALL.cell() in full and INGEST_WALL.cell(INGEST_CHANGE_BASELINE) not in full
    assert INGEST_WALL.cell("all") in full


def test_other_studies_headline_figures_are_figures_of_the_history(unpacked):
    """make trend follows the width sweep's crossover (per variant and msearch setting: the width from which terms is
    faster, between the width before it and it), the RTT sweep's round trips (the fitted ms per ms of RTT with its
    interval), each large fetch's wall and profile-breakdown's took ON and OFF: the same figures the race's own report
    gives."""
    from report.studies import large_source, network, profile, widths

    race = races.load(unpacked["coverage-width"])
    crossovers = widths.CROSSOVER.measure(race)
    _, rows = widths.crossover_answer(race)
    assert len(crossovers) == len(rows) > 0
    for variant, against, statement in rows:
        value = crossovers[widths.CROSSOVER.cell(f"{variant} terms against {against}")]
        if isinstance(value, str):  # no crossover in the sweep: never a point, its statement the reason
            assert value == statement and "does not overtake" in statement
        else:
            width, before, at, _ = value
            assert (
                width == at
                and before <= width
                and (f"faster from {width:.0f} on" in statement or f"narrowest width, {width:.0f}" in statement)
            )
    sweep = races.load(unpacked["rtt-sweep"])
    trips = network.ROUND_TRIPS.measure(sweep)
    note = network.rtt_note(sweep)
    assert len(trips) == len(network.rtt_series(sweep)) > 0
    for cell, (slope, low, high, points) in trips.items():
        variant, transport = cell.rsplit(": ", 1)[1].split()
        assert low < slope < high and points == len(sweep.param("rtt_ms")) and f"{variant} {transport}: {slope:.1f} ms per ms" in note
        # the model's round trips (30 for serial, 1 else) within 10% of the interval: the sweep at full scale fits it
        assert low * 0.9 <= network.model_round_trips(transport) <= high * 1.1, (cell, low, high)
    large = races.load(unpacked["source-large"])
    fetches = large_source.LARGE_FETCH.measure(large)
    assert len(fetches) == len(large_source.cells(large)) == 6
    for (mode, fmt), fetch in large_source.cells(large).items():
        wall, low, high, n = fetches[large_source.LARGE_FETCH.cell(f"{mode} {fmt}")]
        assert wall == large_source.figures(fetch)["wall"] and low <= wall <= high and n == len(fetch["measured"])
    profiled = races.load(unpacked["profile-breakdown"])
    tooks = profile.PROFILE_TOOK.measure(profiled)
    _, rows = profile.overhead_table(profiled)
    assert [tooks[profile.PROFILE_TOOK.cell(f"profile {switch}")][::3] for switch in ("ON", "OFF")] == [
        (row[1], row[3]) for row in rows[:2]
    ]
