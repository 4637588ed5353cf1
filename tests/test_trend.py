"""make trend on the suite's own Rally home (a newcomer's kind: a handful of test-mode races of several challenges) and,
with TEST_METRICS_STORE, on the suite's metrics store: the same history from both; the cluster facts each race records
are the real node's."""

import re
import subprocess

import pytest

from report import races, store, uncertainty
from report.history import races as history_races
from report.history import series
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
    (stored_path,) = (tmp_path / "store").rglob("report.md")

    def masked(report):  # the samples differ (Rally's service times in the store, the track's walls in files): not the history
        return re.sub(r"\d[\d,.]*", "#", re.sub(r"\d+ race\(s\) from .*?; selected", "races from <source>; selected", report))

    # the same changes and configurations from the store as from the files (the numbers masked)
    assert masked(text).split("## Series")[0] == masked(stored_path.read_text()).split("## Series")[0]
    # the store's races read by aggregation (order statistics) give what their samples give, read one by one
    suite_store = store.Store.local("127.0.0.1", SUITE_STORE_PORT)
    checked = 0
    for built in series.build(history_races.from_store(history_races.Selection(("full",)), suite_store).races):
        for cell, points in built.cells.items():
            for point in (p for p in points if cell in races.from_store(suite_store, p.race_id).samples):
                exact = uncertainty.median_interval(races.from_store(suite_store, point.race_id).samples[cell])
                assert point.median == pytest.approx(exact.median, rel=1e-6) and point.n == exact.n, (cell, point, exact)
                checked += 1
    assert checked


def test_a_tag_that_matches_nothing_is_named_with_what_was_found(shared_races, tmp_path):
    race = challenge_race(shared_races, "full")
    result = trend(race.home, tmp_path, "--user-tag", "env:nowhere")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "no race in the Rally home's races" in result.stderr and "matches user tag env:nowhere" in result.stderr
    assert "user tag env:(none)" in result.stderr
