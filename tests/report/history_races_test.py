"""make trend's bad input, on small Rally homes written here: each a clear message naming what was found, no
traceback, and nothing counted into a series where it does not belong."""

import json
import shutil
import zlib
from pathlib import Path

import pytest

from report import ReportError, catalog
from report.history import analysis, races, series, trend
from report.shared.races import Files
from report.studies.ingest_changes import INGEST_WALL
from runners.contracts import records

CELL = "coverage-D_td-serial"


def write_race(  # parameters: a test race's fields, each a keyword with its default
    home,
    race_id,
    when,
    challenge="production-comparison",
    track="cluster-metrics",
    tags=None,
    version="8.17.2",
    samples=None,
    finished=True,
    params=None,
    start=1,
    corpus_rows=1000000,
):
    folder = home / ".rally" / "benchmarks" / "races" / race_id
    (folder / records.RECORD_DIR).mkdir(parents=True)
    # each race's own walls: two races with the same samples are one race copied (races.counted_once)
    samples = samples or (400.0 + zlib.crc32(race_id.encode()) % 1000 / 10000,) * 8
    data = {
        "race-id": race_id,
        "race-timestamp": when,
        "track": track,
        "challenge": challenge,
        "track-params": params or {},
        "user-tags": tags or {},
        "cluster": {"distribution-version": version},
        "rally-version": "2.13.0",
    }
    if finished:
        data["results"] = {"op_metrics": [{"task": CELL, "error_rate": 0, "service_time": {"50_0": samples[0]}}]}
    (folder / "race.json").write_text(json.dumps(data))
    cells = {CELL: {"variant": "D_td", "transport": "serial"}}
    records.write(str(folder / records.RECORD_DIR), records.CELLS, cells)
    for i, value in enumerate(samples):
        line = {"task": CELL, "measured": True, "wall-ms": value, "window": [i, i + 1]}
        records.append_line(str(folder / records.RECORD_DIR), records.VALIDATION, json.dumps(line))
    facts = {
        "nodes": {"n1": {"version": version, "start-time-ms": start, "uptime-ms": 1000, "jvm": "j", "heap-max-bytes": 2**30}},
        "settings": {"persistent": {}, "transient": {}},
        "corpus": {"generator": {"rows_per_epoch": corpus_rows}, "section": "full"},
    }
    records.write(str(folder / records.RECORD_DIR), records.CLUSTER_FACTS, facts)


def run(home, tmp_path, *args):
    return trend.main(["--rally-home", str(home), "--out", str(tmp_path / "out"), *args], catalog.TREND_FIGURES)


def test_no_race_of_the_track_names_the_other_tracks_found(tmp_path):
    write_race(tmp_path, "a1", "20261101T000000Z", track="geonames")
    with pytest.raises(ReportError, match=r"no race of the cluster-metrics track in .*it holds 1 race\(s\) of other tracks"):
        run(tmp_path, tmp_path)


def test_an_empty_home_says_to_race_first(tmp_path):
    (tmp_path / ".rally" / "benchmarks" / "races").mkdir(parents=True)
    with pytest.raises(ReportError, match="race it first"):
        run(tmp_path, tmp_path)


def test_a_tag_a_version_or_dates_that_match_nothing_name_what_the_races_have(tmp_path):
    write_race(tmp_path, "a1", "20261101T000000Z", tags={"env": "nightly"})
    with pytest.raises(ReportError, match=r"matches user tag env:weekly: the track's races there have 1 x user tag env:nightly"):
        run(tmp_path, tmp_path, "--user-tag", "env:weekly")
    with pytest.raises(ReportError, match=r"1 x Elasticsearch 8.17.2"):
        run(tmp_path, tmp_path, "--es-version", "9.")
    with pytest.raises(ReportError, match=r"1 x date 2026-11-01"):
        run(tmp_path, tmp_path, "--since", "2026-11-02")
    with pytest.raises(ReportError, match="give key:value"):
        run(tmp_path, tmp_path, "--user-tag", "nightly")
    with pytest.raises(ReportError, match="give a date as YYYY-MM-DD"):
        run(tmp_path, tmp_path, "--since", "yesterday")


def test_one_race_is_a_history_of_one_point_and_no_change(tmp_path, capsys):
    write_race(tmp_path, "a1", "20261101T000000Z")
    assert run(tmp_path, tmp_path) == 0
    assert "trend: 0 change(s) in 0 cell(s) over 1 race(s) in 1 series" in capsys.readouterr().out


def test_mixed_challenges_and_corpora_are_separate_series_and_an_unfinished_race_no_point(tmp_path):
    write_race(tmp_path, "a1", "20261101T000000Z", samples=(400.0,) * 8)
    write_race(tmp_path, "a2", "20261102T000000Z", challenge="full")
    write_race(tmp_path, "a3", "20261103T000000Z", corpus_rows=100000)
    write_race(tmp_path, "a4", "20261104T000000Z", finished=False)
    write_race(tmp_path, "a5", "20261105T000000Z", samples=(900.0,) * 8, params={"epochs": 3})
    found = races.select(races.Selection(), Files(tmp_path))
    built = series.build(found.races, catalog.TREND_FIGURES)
    assert [[r[0] for r in s.races] for s in built] == [["a1", "a4"], ["a2"], ["a3"], ["a5"]]
    assert [(p.race_id, p.median) for p in built[0].cells[CELL]] == [("a1", 400.0)]
    assert built[0].excluded == [("a4", None, "DID NOT FINISH")]
    assert "corpus" in series.how_they_differ(built[2].key, built[0].key)
    assert "track params" in series.how_they_differ(built[3].key, built[0].key)


def test_a_failed_cell_is_excluded_with_its_reason_never_a_point(tmp_path):
    write_race(tmp_path, "a1", "20261101T000000Z")
    write_race(tmp_path, "a2", "20261102T000000Z")
    path = tmp_path / ".rally" / "benchmarks" / "races" / "a2" / "race.json"
    data = json.loads(path.read_text())
    data["results"]["op_metrics"][0]["error_rate"] = 0.5
    path.write_text(json.dumps(data))
    (built,) = series.build(races.select(races.Selection(), Files(tmp_path)).races, catalog.TREND_FIGURES)
    assert [p.race_id for p in built.cells[CELL]] == ["a1"] and built.excluded == [("a2", CELL, "failed")]


def test_the_alert_exits_3_on_a_slower_step_among_the_newest_races(tmp_path, capsys):
    for day in range(1, 13):
        slower = day > 8
        write_race(
            tmp_path,
            f"r{day:02d}",
            f"202611{day:02d}T000000Z",
            samples=[(560.0 if slower else 400.0) + i + (day * 7 % 5) / 10 for i in range(8)],
            version="9.5.3" if slower else "8.17.2",
            start=day if day in (1, 9) else (1 if day < 9 else 9),
        )
    assert run(tmp_path, tmp_path, "--fail-on", "slower") == trend.ALERT_EXIT
    out = capsys.readouterr().out
    assert "ALERT: coverage-D_td-serial 1.4" in out and "Elasticsearch 8.17.2 -> 9.5.3" in out
    assert run(tmp_path, tmp_path, "--fail-on", "slower", "--alert-within", "3") == 0  # the step is 4 races old


def test_points_ordered_by_version_or_by_a_tag_when_asked(tmp_path):
    for race_id, when, version, tag in (
        ("a1", "20261101T000000Z", "9.5.3", "b"),
        ("a2", "20261102T000000Z", "8.17.2", "c"),
        ("a3", "20261103T000000Z", "8.19.21", "a"),
    ):
        write_race(tmp_path, race_id, when, version=version, tags={"build": tag})
    (built,) = series.build(races.select(races.Selection(), Files(tmp_path)).races, catalog.TREND_FIGURES)
    points = built.cells[CELL]
    assert [p.race_id for p in analysis.order_points(points, "race")] == ["a1", "a2", "a3"]
    assert [p.race_id for p in analysis.order_points(points, "version")] == ["a2", "a3", "a1"]
    assert [p.race_id for p in analysis.order_points(points, "tag:build")] == ["a3", "a1", "a2"]
    with pytest.raises(SystemExit):
        run(tmp_path, tmp_path, "--order", "colour")


def race_folder(home, race_id):
    return home / ".rally" / "benchmarks" / "races" / race_id


def _copy_lines(folder):
    """The coverage record's lines twice over, as a record appended to itself: n doubled, no figure changed."""
    path = folder / records.RECORD_DIR / records.VALIDATION
    path.write_text(path.read_text() * 2)


def history_of(home, count=6, **kwargs):
    """`count` races of one node start, a day apart from 2026-11-01, each its own walls around 400 ms."""
    for day in range(1, count + 1):
        write_race(home, f"r{day:02d}", f"202611{day:02d}T120000Z", samples=[400.0 + i + (day * 7 % 5) for i in range(8)], **kwargs)


@pytest.mark.parametrize(
    "walls, why",
    [
        ([1e12] * 8, "beyond any plausible time"),
        ([400.0] * 7 + [-15.0], "not a finite time above 0"),
        ([400.0] * 7 + [float("nan")], "not a finite time above 0"),
        ([400.0] * 7 + [float("inf")], "not a finite time above 0"),
        ([0.0] * 8, "not a finite time above 0"),
        ([400.0] * 7 + ["fast"], "is not a number"),
        # a wall with no lower bound made "0.0 ms" points and spreads of 40,000%
        ([400.0] * 7 + [1e-6], "is shorter than any request takes (0.05 ms)"),
    ],
)
def test_a_wall_that_cannot_be_a_time_fails_its_cell_with_the_reason(tmp_path, capsys, walls, why):
    """A wall that is not a finite time above 0, or beyond any plausible time, makes its cell failed in that race with
    the reason: never a point, never a traceback, and the other races' points stand."""
    history_of(tmp_path, 4)
    folder = race_folder(tmp_path, "r04")
    lines = [json.loads(line) for line in (folder / records.RECORD_DIR / records.VALIDATION).read_text().splitlines()]
    text = "".join(json.dumps({**line, "wall-ms": wall}) + "\n" for line, wall in zip(lines, walls))
    (folder / records.RECORD_DIR / records.VALIDATION).write_text(text)
    assert run(tmp_path, tmp_path, "--fail-on", "slower") == 0
    (built,) = series.build(races.select(races.Selection(), Files(tmp_path)).races, catalog.TREND_FIGURES)
    assert [p.race_id for p in built.cells[CELL]] == ["r01", "r02", "r03"]
    ((race_id, cell, reason),) = built.excluded
    assert (race_id, cell) == ("r04", CELL) and reason.startswith("failed: ") and why in reason


def test_a_wall_longer_than_its_task_ran_is_implausible(tmp_path):
    """A sample cannot have taken longer than its task's duration in race.json (ms)."""
    history_of(tmp_path, 2)
    path = race_folder(tmp_path, "r02") / "race.json"
    data = json.loads(path.read_text())
    data["results"]["op_metrics"][0]["duration"] = 300.0  # the walls are 404-411 ms
    path.write_text(json.dumps(data))
    (built,) = series.build(races.select(races.Selection(), Files(tmp_path)).races, catalog.TREND_FIGURES)
    assert built.excluded == [("r02", CELL, "failed: a sample of 404 ms is beyond any plausible time (300 ms)")]


@pytest.mark.parametrize(
    "spoil, why",
    [
        (lambda folder: (folder / "race.json").write_text("[1, 2]"), "race.json holds a list"),
        (lambda folder: (folder / "race.json").write_text((folder / "race.json").read_text()[:40]), "unreadable race.json"),
        (lambda folder: _edit(folder, lambda d: d.pop("race-timestamp")), "race.json has no race-timestamp"),
        (lambda folder: _edit(folder, lambda d: d.pop("race-id")), "race.json has no race-id"),
        (lambda folder: _edit(folder, lambda d: d.update({"race-timestamp": "yesterday"})), "is not Rally's form"),
        (lambda folder: _truncate(folder / records.RECORD_DIR / records.VALIDATION), "its records cannot be read"),
        (lambda folder: _truncate(folder / records.RECORD_DIR / records.CELLS), "its records cannot be read"),
        (lambda folder: (folder / records.RECORD_DIR / records.VALIDATION).write_text('{"task": 3}\n[1]\n'), "its records cannot be read"),
        (lambda folder: (folder / records.RECORD_DIR / records.CLUSTER_FACTS).write_text("[]"), "cannot be read"),
        (lambda folder: _edit_lines(folder, lambda line: {**line, "measured": "false"}), "measured is 'false', not true, false or null"),
        (lambda folder: (folder / records.RECORD_DIR / records.CELLS).write_text(""), "its records cannot be read"),
        (_copy_lines, "line 9 repeats line 1 (the same timed window, wall and took): a copied line"),
        (lambda folder: (folder / "race.json").unlink(), "no race.json (a race still running, or one that ended before Rally wrote it)"),
    ],
)
def test_a_malformed_race_is_left_out_with_its_folder_and_reason(tmp_path, capsys, spoil, why):
    """A race whose race.json or records cannot be read, or are not what Rally and the track write, is left out: its
    folder (or id) and the reason on the console's line and the report's first screen, no traceback, and the other
    races make the history."""
    history_of(tmp_path, 4)
    spoil(race_folder(tmp_path, "r03"))
    assert run(tmp_path, tmp_path) == 0
    out = capsys.readouterr().out
    assert "over 3 race(s)" in out and "1 race(s) left out: r03 (" in out, out  # the console names the folder too
    report = (tmp_path / "out").glob("trend-*/report.md")
    first_screen = next(report).read_text().split("## Changes")[0]
    assert "Left out (never a point):" in first_screen and why in first_screen and "r03" in first_screen


@pytest.mark.parametrize("args", [[], ["--user-tag", "env:nightly"], ["--order", "tag:env"], ["--es-version", "8."]])
@pytest.mark.parametrize(
    "change, why",
    [
        (lambda d: d.update({"cluster": "8.17.2"}), "race.json's cluster is a str, not the object Rally writes"),
        (lambda d: d.update({"user-tags": ["env:nightly"]}), "race.json's user-tags is a list, not the object Rally writes"),
        (lambda d: d.update({"challenge": 7}), "race.json's challenge is a int, not the str Rally writes"),
        (lambda d: d.update({"cluster": {"distribution-version": 8}}), "cluster.distribution-version is a int, not a version"),
        (lambda d: d.update({"race-timestamp": "20990101T000000Z"}), "race.json is dated 2099-01-01 00:00, in the future"),
    ],
)
def test_a_race_json_field_of_another_type_or_a_future_date_is_left_out_whatever_is_asked(tmp_path, capsys, change, why, args):
    """A race.json field of another type than Rally writes, or a race dated in the future (the newest race the alert
    watches), is a malformed race: left out with its folder and reason, however the history is selected or ordered."""
    history_of(tmp_path, 4, tags={"env": "nightly"})
    _edit(race_folder(tmp_path, "r03"), change)
    assert run(tmp_path, tmp_path, *args) == 0
    out = capsys.readouterr().out
    assert "over 3 race(s)" in out and "1 race(s) left out" in out, out
    first_screen = next((tmp_path / "out").glob("trend-*/report.md")).read_text().split("## Changes")[0]
    assert why in first_screen and "r03" in first_screen, first_screen


def _edit(folder, change):
    data = json.loads((folder / "race.json").read_text())
    change(data)
    (folder / "race.json").write_text(json.dumps(data))


def _edit_lines(folder, change):
    path = folder / records.RECORD_DIR / records.VALIDATION
    path.write_text("".join(json.dumps(change(json.loads(line))) + "\n" for line in path.read_text().splitlines()))


def _truncate(path):
    """Cut within a line, as a disk that filled up leaves a record."""
    path.write_text(path.read_text()[: len(path.read_text()) // 2 - 3])


def test_a_race_copied_counts_once_and_is_named(tmp_path, capsys):
    """A race folder copied under another name (the same race-id inside), or with a new race-id but the same samples,
    counts once: the copy is named with the race it copies, and no verdict moves for it."""
    history_of(tmp_path, 4)
    shutil.copytree(race_folder(tmp_path, "r04"), race_folder(tmp_path, "r04-copy"))
    shutil.copytree(race_folder(tmp_path, "r03"), race_folder(tmp_path, "r05"))
    _edit(race_folder(tmp_path, "r05"), lambda d: d.update({"race-id": "r05", "race-timestamp": "20261105T120000Z"}))
    found = races.select(races.Selection(), Files(tmp_path))
    assert [race.race_id for race in found.races] == ["r01", "r02", "r03", "r04"]
    said = dict(found.left_out)
    assert said[str(race_folder(tmp_path, "r04-copy"))].startswith("the same race-id as")
    assert said["r05"] == "the same samples as race r03 under another race-id: counted once"
    assert run(tmp_path, tmp_path) == 0 and "over 4 race(s)" in capsys.readouterr().out


def test_until_holds_its_whole_day_and_a_reversed_range_is_named(tmp_path, capsys):
    history_of(tmp_path, 3)
    assert run(tmp_path, tmp_path, "--until", "2026-11-03") == 0
    assert "over 3 race(s)" in capsys.readouterr().out  # r03 ran at noon on 2026-11-03
    assert run(tmp_path, tmp_path, "--since", "2026-11-02", "--until", "2026-11-02") == 0
    assert "over 1 race(s)" in capsys.readouterr().out
    with pytest.raises(ReportError, match=r"--since 2026-11-03 is after --until 2026-11-01: the range is reversed; swap them"):
        run(tmp_path, tmp_path, "--since", "2026-11-03", "--until", "2026-11-01")


def test_a_home_or_an_out_that_cannot_be_is_named_with_its_fix(tmp_path):
    history_of(tmp_path, 2)
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(ReportError, match=r"--rally-home .*missing: no such folder; give the folder that holds .rally"):
        trend.main(["--rally-home", str(tmp_path / "missing"), "--out", str(tmp_path / "out")], catalog.TREND_FIGURES)
    with pytest.raises(ReportError, match=r"--rally-home .*a-file is a file: give the folder that holds .rally"):
        trend.main(["--rally-home", str(tmp_path / "a-file"), "--out", str(tmp_path / "out")], catalog.TREND_FIGURES)
    with pytest.raises(ReportError, match=r"--rally-home is empty"):
        trend.main(["--rally-home", "", "--out", str(tmp_path / "out")], catalog.TREND_FIGURES)
    with pytest.raises(ReportError, match=r"--out .*a-file is a file: give a folder for the report"):
        trend.main(["--rally-home", str(tmp_path), "--out", str(tmp_path / "a-file")], catalog.TREND_FIGURES)
    # a name longer than a file system takes, and a place no file can be written (procfs: read-only, even for root)
    with pytest.raises(ReportError, match=r"--out .*x\.\.\. \(\d+ characters\) cannot be written \(File name too long\): give a folder"):
        trend.main(["--rally-home", str(tmp_path), "--out", str(tmp_path / ("x" * 300))], catalog.TREND_FIGURES)
    with pytest.raises(ReportError, match=r"--out /proc/trend-out cannot be written \(.+\): give a folder you can write to"):
        trend.main(["--rally-home", str(tmp_path), "--out", "/proc/trend-out"], catalog.TREND_FIGURES)
    # the selection's own report folder taken by a file: named with the fix, after the work, never a traceback
    run(tmp_path, tmp_path)
    (taken,) = (tmp_path / "out").glob("trend-*")
    shutil.rmtree(taken)
    taken.write_text("x")
    with pytest.raises(
        ReportError, match=r"trend-.* is a file where the trend writes this selection's report: move it, or give another --out"
    ):
        run(tmp_path, tmp_path)


def test_a_reused_out_keeps_no_chart_of_an_earlier_run(tmp_path):
    history_of(tmp_path, 3)
    assert run(tmp_path, tmp_path) == 0
    (folder,) = (tmp_path / "out").glob("trend-*")
    (folder / "change-1-stale.png").write_bytes(b"an earlier run's chart")
    assert run(tmp_path, tmp_path) == 0
    assert sorted(p.name for p in folder.iterdir()) == ["report.md", "unchanged.png"]


@pytest.mark.parametrize("versions", [("8.17.2",), ("8.17.2", "9.5.3")])
def test_a_history_with_nothing_to_judge_says_so(tmp_path, capsys, versions):
    """One race, or two versions with one race each: no spread to judge by, said on the console's line."""
    for day, version in enumerate(versions, start=1):
        write_race(tmp_path, f"r{day:02d}", f"202611{day:02d}T120000Z", version=version, start=day)
    assert run(tmp_path, tmp_path, "--fail-on", "slower") == 0
    assert "nothing could be judged: no two node starts of one configuration" in capsys.readouterr().out


@pytest.mark.parametrize("wall", [float("nan"), -2.0, 1e9])
def test_an_ingest_wall_that_cannot_be_a_time_fails_the_ingest_figure(tmp_path, wall):
    """The ingest's wall over its epochs (a figure of the history, s): an epoch's wall-s of NaN, below 0 or beyond an
    hour fails the figure in that race with the reason, never "nan s [nan, nan]"."""
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "full-race" / ".rally"
    shutil.copytree(fixture, tmp_path / ".rally")
    (folder,) = (tmp_path / ".rally" / "benchmarks" / "races").iterdir()
    path = folder / records.RECORD_DIR / records.INGEST
    data = json.loads(path.read_text())
    data["epochs"][2]["wall-s"] = wall
    path.write_text(json.dumps(data))
    (built,) = series.build(races.select(races.Selection(), Files(tmp_path)).races, catalog.TREND_FIGURES)
    assert INGEST_WALL.cell() not in built.cells
    ((race_id, cell, why),) = [e for e in built.excluded if e[1] == INGEST_WALL.cell()]
    assert why.startswith("failed: a sample of") and ("not a finite time above 0" in why or "beyond any plausible time" in why)


@pytest.mark.parametrize(
    "lines, settled",
    [
        (None, None),  # a race from before the record, or settle false
        ([{"settled": True, "window": 5}], True),
        ([{"settled": True, "window": 5}, {"settled": False, "window": 5}], False),  # one settling task did not
        ([{"settled": True, "window": 1}], False),  # --test-mode's one-pass window: the record's shape, not a settled node
        ([{"settled": "true", "window": 5}], False),
    ],
)
def test_a_race_says_its_node_settled_only_where_every_settling_stopped_by_the_rule(lines, settled):
    from report.shared.races import Race
    from runners.studies.settle import SETTLE

    texts = {} if lines is None else {SETTLE: "".join(json.dumps(line) + "\n" for line in lines)}
    assert races.settled_of(Race("r", None, {"race-id": "r"}, record_texts=texts)) is settled
    with pytest.raises(ValueError, match="not an object"):
        races.settled_of(Race("r", None, {"race-id": "r"}, record_texts={SETTLE: "[1]\n"}))
