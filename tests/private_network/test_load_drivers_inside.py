"""Run by tests/test_load_drivers.py inside a private network namespace, never collected outside it: a node and a
metrics store on this namespace's loopback, and one load-driver daemon (esrallyd, node and coordinator IP
127.0.0.1) that the races join with --load-driver-hosts=127.0.0.1.

Rally's Elasticsearch metrics store keeps what a team shares: the report built from the store alone (the race's
folder on the load driver's disk moved away meanwhile) has the tables of the one built from that folder."""

import json
import os
import socket
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import assert_clean, launcher, run_race
from report import races, store, study, tables
from report.__main__ import compare_report
from report.__main__ import main as report_main
from runners import records
from runners.corpus import data_root, races_root
from runners.queries import TRANSPORTS
from runners.tasks import coverage_task_name

pytestmark = pytest.mark.integration

TARGET_PORT, STORE_PORT = 9330, 9331  # this namespace's own; their data apart from the suite's node (9250)
ESRALLYD = str(Path(sys.executable).with_name("esrallyd"))
LOAD_DRIVER = "--load-driver-hosts=127.0.0.1"
EPOCHS = 2  # of the suite's small corpus's 5: enough to show rows per epoch, short enough for CI
VARIANTS_RACED = ["D_td", "D_hdr"]  # the production pair: six cells of the eighteen keep the race short


@pytest.fixture(scope="module")
def home():
    return Path(os.environ["RALLY_HOME"])  # the outer suite's Rally home, with its small corpus


@pytest.fixture(scope="module")
def metrics_store(home):
    up = subprocess.run(["ip", "link", "set", "lo", "up"], capture_output=True, text=True)  # a new namespace's loopback is down
    assert up.returncode == 0, up.stderr
    started = []
    try:
        for port, heap in ((TARGET_PORT, "1g"), (STORE_PORT, "512m")):
            result = launcher("start", "--heap", heap, port=port)
            assert result.returncode == 0, result.stdout + result.stderr
            started.append(port)
        store.main(["--port", str(STORE_PORT), "--rally-home", str(home)])  # as make metrics-store does
        yield store.Store.from_config(home, store.CONFIG_NAME)
    finally:
        store.config_path(home, store.CONFIG_NAME).unlink(missing_ok=True)
        for port in started:
            launcher("stop", port=port)


@contextmanager
def load_driver_daemon(rally_home):
    """esrallyd as on a load-driver host whose Rally home is rally_home; the races of this namespace join it."""

    output = Path(rally_home) / "esrallyd.out"

    def esrallyd(*args):
        # into a file, not a pipe: the daemon's actor processes keep its output open, a pipe would never end
        with output.open("w") as out:
            returncode = subprocess.run(
                [ESRALLYD, *args], env=dict(os.environ, RALLY_HOME=str(rally_home)), stdout=out, stderr=out, timeout=300
            ).returncode
        return returncode, output.read_text()

    returncode, text = esrallyd("start", "--node-ip=127.0.0.1", "--coordinator-ip=127.0.0.1")
    assert returncode == 0, text
    try:
        yield
    finally:
        returncode, text = esrallyd("stop")
        assert returncode == 0, text


def test_a_race_through_the_daemon_into_the_store_reports_what_its_files_report(home, metrics_store, tmp_path):
    with load_driver_daemon(home):
        params = f"--track-params={json.dumps({'variants': VARIANTS_RACED, 'epochs': EPOCHS})}"
        raced = run_race(home, "full", LOAD_DRIVER, f"--configuration-name={store.CONFIG_NAME}", params, port=TARGET_PORT)
    assert_clean(raced)
    assert "Try joining already running actor system" in raced.log  # the race ran in the daemon's actor system
    race_id = raced.race["race-id"]

    # the report from the store alone: the race's folder on the load driver's disk is away meanwhile
    folder = races_root(home) / race_id
    folder.rename(tmp_path / "away")
    try:
        from_store = races.from_store(metrics_store, race_id[:8])
        assert (
            report_main(
                ["--race", race_id[:8], "--rally-home", str(home), "--configuration-name", store.CONFIG_NAME, "--out", str(tmp_path)]
            )
            == 0
        )
    finally:
        (tmp_path / "away").rename(folder)
    from_files = races.find(race_id, home)
    assert from_store.race_id == race_id and from_store.path is None
    assert from_store.source == f"Rally's metrics store at http://127.0.0.1:{STORE_PORT}"

    # the track's own records: per-epoch ingest cost and every coverage's validation counts
    assert len(from_files.ingest["epochs"]) == EPOCHS and all(row["bulk-requests"] > 0 for row in from_files.ingest["epochs"])
    assert tables.ingest_table(from_store) == tables.ingest_table(from_files)
    validation = tables.validation_table(from_files)
    # a row per cell
    assert validation == tables.validation_table(from_store) and len(validation[1]) == len(VARIANTS_RACED) * len(TRANSPORTS)
    # each coverage's took and wall travel through the store as they are on the load driver's disk
    assert study.took_table(from_store) == study.took_table(from_files)
    assert len(study.took_table(from_files)[1]) == len(VARIANTS_RACED) * len(TRANSPORTS)
    assert all(coverages >= 1 and checks > 0 and failed == 0 for _, coverages, checks, failed, _ in validation[1])

    # Rally's figures: the same cells, medians and error rates; the store adds every sample's service time
    cells = tables.coverage_cells(from_files)
    assert len(cells) == len(VARIANTS_RACED) * len(TRANSPORTS) and tables.coverage_cells(from_store) == cells
    for v, t in cells:
        assert len(from_store.samples[coverage_task_name(v, t)]) == 1  # test mode: one measured iteration
    # the samples: Rally's service times from the store, each coverage's recorded wall time from the files (in test
    # mode one a cell either way, so no interval); each table's median is its own samples', the p90 Rally's
    header, body = tables.coverage_table(from_store)
    files_header, files_body = tables.coverage_table(from_files)
    assert header == files_header and sum("interval" in name for name in header) == len(TRANSPORTS)
    assert all("n=1 (interval from 6 samples)" in row for row in body + files_body)
    for race, rows in ((from_store, body), (from_files, files_body)):
        for row in rows:
            for t in TRANSPORTS:
                (sample,) = race.samples[coverage_task_name(row[0], t)]
                assert row[header.index(f"{t} median (ms)")] == sample
    assert [[row[header.index(f"{t} p90 (ms)")] for t in TRANSPORTS] for row in body] == [
        [row[header.index(f"{t} p90 (ms)")] for t in TRANSPORTS] for row in files_body
    ]

    # the samples carry the track's figures as Rally's request meta-data
    def meta(task):
        query = {"bool": {"filter": [{"term": {"race-id": race_id}}, {"term": {"name": "service_time"}}, {"term": {"task": task}}]}}
        return [hit["_source"]["meta"] for hit in metrics_store._search("rally-metrics-*", {"query": query, "size": 100})["hits"]["hits"]]

    (epoch_cost,) = meta("ingest-cost-epoch-2")
    assert epoch_cost["epoch"] == 2 and epoch_cost["docs"] == 1000 and epoch_cost["index-ms"] >= 0 and records.META_KEY in epoch_cost
    coverage = meta("coverage-D_td-msearch")[0]
    assert coverage["success"] is True and coverage["checks"] > 0 and coverage["failed-checks"] == 0 and coverage["requests"] == 1

    report = (tmp_path / race_id / "report.md").read_text()
    assert f"read from Rally's metrics store at http://127.0.0.1:{STORE_PORT}" in report and "95% interval" in report
    assert "## Ingest per epoch" in report and "## Validation" in report
    _, text = compare_report([from_store, from_store], tmp_path)
    assert text.count("no verdict: 1 samples, a verdict needs 7 on each side") == len(cells)


def test_a_load_driver_host_without_the_corpus_names_itself_and_the_fix(home, metrics_store, tmp_path):
    """The daemon's Rally home stands for another machine: it has no corpus. Rally loads the track there with that
    host's rally.ini; the race stops before any task, naming the host, its missing file and the fix."""
    elsewhere = tmp_path / "load-driver-home"
    elsewhere.mkdir()
    with load_driver_daemon(elsewhere):
        refused = run_race(home, "query-decomposition", LOAD_DRIVER, port=TARGET_PORT)
    assert refused.returncode != 0
    assert f"No cluster-metrics corpus: {data_root(elsewhere)}" in refused.output, refused.output[-3000:]
    assert f"(host {socket.gethostname()})" in refused.output and "make corpus" in refused.output
    assert refused.race is None or not refused.race.get("results", {}).get("op_metrics")
