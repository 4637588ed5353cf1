"""make trend on the suite's own Rally home (a newcomer's kind: a handful of test-mode races of several challenges) and,
with TEST_METRICS_STORE, on the suite's metrics store: the same history from both; the cluster facts each race records
are the real node's."""

import re
import subprocess

import pytest

from report import catalog
from report.history import races as history_races
from report.history import series
from report.shared import host_load, races, store, uncertainty
from report.shared.races import Files, Stored
from report.studies.ingest_changes import INGEST_WALL
from runners.contracts import records
from tests.conftest import PYTHON, REPO, SUITE_STORE_PORT, assert_clean, http
from tests.test_challenges import challenge_race

pytestmark = [pytest.mark.integration, pytest.mark.smoke]


def trend(home, out, *args):
    result = subprocess.run(
        [PYTHON, "-m", "report", "trend", "--rally-home", str(home), "--out", str(out), *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    return result


def test_the_race_records_what_it_ran_on_and_the_trend_reads_it(shared_races, tmp_path):
    race = challenge_race(shared_races, "full")
    assert_clean(race)
    facts = records.read(str(race.record_dir()), records.CLUSTER_FACTS)
    (node_id, node), *others = facts["nodes"].items()
    live = http("GET", "/_nodes/jvm")[1]["nodes"][node_id]
    assert not others and node["start-time-ms"] == live["jvm"]["start_time_in_millis"] and node["version"] == live["version"]
    assert facts["corpus"]["generator"]["epochs"] == 5 and facts["corpus"]["section"] == "test_mode"
    # the load driver's host over every timed cell: the sampler's intervals cover each measured coverage's window, and
    # the trend's facts carry the host's load over them (issue 86)
    loaded = races.load(race.folder())
    intervals = host_load.lines(loaded)
    assert intervals and all(b["start"] == a["end"] for a, b in zip(intervals, intervals[1:])), intervals[:3]
    windows = host_load.cell_windows(loaded)
    assert windows and all(intervals[0]["start"] <= lo and hi <= intervals[-1]["end"] for lo, hi in windows.values()), windows
    assert sum(line["rally"] for line in intervals) > 0 and set(host_load.per_cell(loaded)) == set(windows)
    assert history_races.facts_of(loaded).host == host_load.over_cells(loaded) is not None
    result = trend(race.home, tmp_path / "files", "--challenge", "full")
    assert result.returncode == 0, result.stderr[-3000:]
    assert re.match(r"trend: \d+ change\(s\) in \d+ cell\(s\) over \d+ race\(s\) in 1 series", result.stdout), result.stdout
    (path,) = (tmp_path / "files").rglob("report.md")
    text = path.read_text()
    assert (
        "## Changes, newest first" in text
        and race.race["race-id"][:8] in text
        and "### coverage-D_hdr-serial" in text
        and "profile-" not in text
    )
    if not race.in_suite_store:
        return
    stored = trend(race.home, tmp_path / "store", "--challenge", "full", "--configuration-name", store.CONFIG_NAME)
    assert stored.returncode == 0, stored.stderr[-3000:]
    assert race.race["race-id"][:8] in next((tmp_path / "store").rglob("report.md")).read_text()
    # the suite's store may keep races of earlier runs (its node's data outlives a checkout): the races both hold are
    # the same points, each cell's sample count the same (the values differ: Rally's service times, the track's walls)
    suite_store = store.Store.local("127.0.0.1", SUITE_STORE_PORT)
    selection = history_races.Selection(("full",))
    from_files = series.build(history_races.select(selection, Files(race.home)).races, catalog.TREND_FIGURES)
    from_store = {
        (cell, p.race_id): p
        for s in series.build(history_races.select(selection, Stored(suite_store)).races, catalog.TREND_FIGURES)
        for cell, points in s.cells.items()
        for p in points
    }
    shared = [(cell, p) for s in from_files for cell, points in s.cells.items() for p in points if cell != INGEST_WALL.cell()]
    assert shared and all(from_store[(cell, p.race_id)].n == p.n for cell, p in shared), shared
    # the store's races read by aggregation (order statistics) give what their samples give, read one by one
    for race_id in {p.race_id for _, p in shared}:
        samples = races.Stored(suite_store).race(race_id).samples.times
        for cell, point in ((cell, p) for (cell, rid), p in from_store.items() if rid == race_id and cell in samples):
            exact = uncertainty.median_interval(samples[cell])
            assert point.median == pytest.approx(exact.median, rel=1e-6) and point.n == exact.n, (cell, point, exact)


def test_a_tag_that_matches_nothing_is_named_with_what_was_found(shared_races, tmp_path):
    race = challenge_race(shared_races, "full")
    result = trend(race.home, tmp_path, "--user-tag", "env:nowhere")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "no race in the Rally home's races" in result.stderr and "matches user tag env:nowhere" in result.stderr
    assert "user tag env:(none)" in result.stderr
