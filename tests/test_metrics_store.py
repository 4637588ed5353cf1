"""Rally's Elasticsearch metrics store on a second real node, set up as `make metrics-store` does: a test-mode race
of the track goes into it, its coverage samples carry the track's validation counts, and the report read from the
store by race id has the figures of the one read from race.json, with each sample's service time beside them."""

import pytest
from test_rally_track import assert_clean, ensure_test_mode_ingest

from conftest import launcher, run_race
from report import races, store, tables
from report.__main__ import compare_report
from report.__main__ import main as report_main
from runners.queries import TRANSPORTS, VARIANTS
from runners.tasks import coverage_task_name

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("es_node")]

STORE_PORT = 9260  # the suite's own store, never a user's (make metrics-store uses 9210)


@pytest.fixture(scope="module")
def metrics_store(rally_home):
    started = launcher("start", "--heap", "512m", port=STORE_PORT)
    assert started.returncode == 0, started.stdout + started.stderr
    store.main(["--port", str(STORE_PORT), "--rally-home", str(rally_home)])  # as make metrics-store does
    store.main(["--check", "--rally-home", str(rally_home)])  # as make race METRICS_STORE=yes does first
    yield store.Store.from_config(rally_home, store.CONFIG_NAME)
    store.config_path(rally_home, store.CONFIG_NAME).unlink()
    stopped = launcher("stop", port=STORE_PORT)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr


def test_a_race_in_the_metrics_store_reports_what_its_files_report(rally_home, small_corpus, metrics_store, tmp_path):
    ensure_test_mode_ingest(rally_home)
    raced = run_race(rally_home, "query-decomposition", f"--configuration-name={store.CONFIG_NAME}")
    assert_clean(raced)
    race_id = raced.race["race-id"]
    from_store = races.from_store(metrics_store, race_id[:8], rally_home)
    from_files = races.find(race_id, rally_home)
    assert from_store.race_id == race_id and from_store.source == f"Rally's metrics store at http://127.0.0.1:{STORE_PORT}"
    assert races.from_store(metrics_store, rally_home=rally_home).race_id == race_id  # the newest race of the track

    # Rally's figures: the same cells, medians and error rates; the store adds every sample's service time
    cells = tables.coverage_cells(from_files)
    assert len(cells) == len(VARIANTS) * len(TRANSPORTS) and tables.coverage_cells(from_store) == cells
    for v, t in cells:
        assert len(from_store.samples[coverage_task_name(v, t)]) == 1  # test mode: one measured iteration
    header, body = tables.coverage_table(from_store)
    files_header, files_body = tables.coverage_table(from_files)
    kept = [i for i, name in enumerate(header) if "interval" not in name]
    assert [header[i] for i in kept] == files_header and [[row[i] for i in kept] for row in body] == files_body
    assert len(header) - len(kept) == len(TRANSPORTS) and all("n=1 (interval from 6 samples)" in row for row in body)

    # each coverage sample carries the track's validation counts as Rally's request meta-data
    query = {
        "bool": {
            "filter": [{"term": {"race-id": race_id}}, {"term": {"name": "service_time"}}, {"term": {"task": "coverage-D_td-msearch"}}]
        }
    }
    samples = metrics_store._search("rally-metrics-*", {"query": query, "size": 10})["hits"]["hits"]
    meta = samples[0]["_source"]["meta"]
    assert meta["success"] is True and meta["checks"] > 0 and meta["failed-checks"] == 0 and meta["requests"] == 1

    # the report and a comparison from the store, by race id
    assert (
        report_main(
            ["--race", race_id[:8], "--rally-home", str(rally_home), "--configuration-name", store.CONFIG_NAME, "--out", str(tmp_path)]
        )
        == 0
    )
    report = (tmp_path / race_id / "report.md").read_text()
    assert f"read from Rally's metrics store at http://127.0.0.1:{STORE_PORT}" in report and "95% interval" in report
    _, text = compare_report([from_store, from_store], tmp_path)
    assert text.count("no verdict: 1 samples, a verdict needs 7 on each side") == len(cells)
