"""The network through a real Toxiproxy: round-trip times that really reach the coverage, each fault kind as failed
samples with a description and nothing lost, and bad network input named before the cluster changes. One
network-faults race holds every fault; one rtt-sweep race every round-trip check. (Cross-cluster search:
tests/test_ccs.py.)"""

import json
import os
import signal
import subprocess
import sys

import pytest

from report.shared import races
from report.studies import network as network_report
from runners.contracts import records
from runners.contracts.parameters import DEFAULTS
from runners.shared.toxiproxy import FAULT, FAULTS, PROXIES
from tests.conftest import (
    PROXY_PORT,
    REPO,
    TEST_PORT,
    TOXIPROXY_LAUNCHER,
    assert_clean,
    assert_reported,
    doc_count,
    ensure_test_index,
    http,
    rendered_challenges,
    rendered_tasks,
    run_race,
    track_params,
)
from tests.signals import popen_with_default_signals

# what the description of a failed sample says under each fault
SEEN = {
    "reset": "connection failed",
    "black-hole": "no complete answer within the request timeout of 2 s",
    "slow-link": "no complete answer within the request timeout of 2 s",
    "cut-mid-response": "connection failed",
}
FAULTED = ("msearch", "terms")  # the transports each fault's coverages use, in schedule order


@pytest.fixture
def ingested(shared_races, toxiproxy):
    ensure_test_index(shared_races)
    return toxiproxy


@pytest.fixture
def faults_race(shared_races, ingested):
    """network-faults with every fault (its default), once for the session."""

    def after(race):  # what the race left, read before any other test changes it
        race.left = {"docs": doc_count(), "toxics": ingested.toxics(PROXIES["http"])}

    return shared_races.race("network-faults", track_params(), port=PROXY_PORT, after=after)


def cell_task(race, **cell):
    """The task of a cell in this race, as the race recorded its cells (runners/contracts/cells.py): it must have recorded them."""
    loaded = races.load(race.folder())
    assert loaded.record(records.CELLS), "the race recorded no cells"
    return loaded.task_of(**cell)


def faults_in_schedule_order():
    tasks = [t["operation"]["name"] for t in rendered_tasks(rendered_challenges()["network-faults"])]
    under = {
        cell["fault"]: task for task, cell in races.rendered_cells("network-faults", "{}").items() if cell.get("transport") == FAULTED[0]
    }
    order = sorted(FAULTS, key=lambda f: tasks.index(under[f]))
    assert sorted(order) == sorted(DEFAULTS["faults"]) == sorted(FAULTS)  # the race's default: every fault
    return order


@pytest.mark.versions("network-faults")
def test_every_fault_fails_its_coverages_and_the_race_goes_on_to_the_end(faults_race):
    """Every coverage under a fault failed, everything else (the healed coverages, the document count after)
    succeeded, and the race went on to the end."""
    assert faults_race.returncode == 0, faults_race.explained()
    failing = {cell_task(faults_race, variant="D_td", transport=t, fault=f, phase="under") for f in FAULTS for t in FAULTED}
    healed = {cell_task(faults_race, variant="D_td", transport="msearch", fault=f, phase="healed") for f in FAULTS}
    assert None not in failing | healed
    rates = faults_race.error_rates()
    assert failing | healed | {"verify-doc-count"} <= set(rates), rates
    wrong = {task: rate for task, rate in rates.items() if rate != (1.0 if task in failing else 0.0)}
    assert not wrong, f"error rates {wrong}; failures logged: {faults_race.failures()[-20:]}"
    assert faults_race.left["docs"] == 5000  # nothing lost
    assert FAULT not in faults_race.left["toxics"]  # healed
    assert_reported(faults_race)  # a race whose faulted cells all failed still gives its report


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_each_fault_is_a_failed_sample_with_its_description_never_a_hang(faults_race, fault):
    described = [line for line in faults_race.failures() if "failed sample (network)" in line]
    order = faults_in_schedule_order()
    # test mode: one coverage per fault task (msearch, terms), logged in schedule order
    assert len(described) == len(FAULTED) * len(order), described
    mine = described[len(FAULTED) * order.index(fault) :][: len(FAULTED)]
    assert all(SEEN[fault] in line and "not retried" in line for line in mine), mine
    ops = faults_race.op_metrics()
    timeout_ms = DEFAULTS["fault_request_timeout"] * 1000
    for t in FAULTED:  # never a hang past the request timeout
        assert (
            ops[cell_task(faults_race, variant="D_td", transport=t, fault=fault, phase="under")]["service_time"]["100_0"]
            < timeout_ms + 1500
        )


RTT_PARAMS = {"rtt_ms": [0, 50], "rtt_variants": ["D_td"]}


@pytest.fixture
def rtt_race(shared_races, ingested):
    return shared_races.race("rtt-sweep", track_params(**RTT_PARAMS), port=PROXY_PORT)


@pytest.mark.versions("rtt-sweep")
def test_rtt_sweep_runs_clean(rtt_race):
    cells = [
        cell_task(rtt_race, variant="D_td", transport=t, **{"rtt-ms": r})
        for t in ("serial", "msearch", "terms")
        for r in RTT_PARAMS["rtt_ms"]
    ]
    assert None not in cells
    assert_clean(rtt_race, cells)
    # what the race recorded is what its track renders with its parameters
    loaded = races.load(rtt_race.folder())
    assert loaded.record(records.CELLS) == races.rendered_cells("rtt-sweep", json.dumps(loaded.data["track-params"], sort_keys=True))


def test_round_trip_time_reaches_every_request_of_the_coverage(rtt_race):
    ops = rtt_race.op_metrics()
    at = lambda t, r: ops[cell_task(rtt_race, variant="D_td", transport=t, **{"rtt-ms": r})]["service_time"]["mean"]  # noqa: E731
    # a physical floor, not a timing target: 30 sequential round trips cannot take less than 30 x RTT
    assert at("serial", 50) >= 30 * 50 and at("msearch", 50) >= 50 and at("terms", 50) >= 50
    assert at("serial", 0) < 30 * 50


def test_the_round_trip_model_fits_each_transport(rtt_race):
    """The report's model (30 round trips for serial, one per node; 1 for msearch and terms) and its fitted ms of
    coverage per ms of RTT: serial's about 30. (A test-mode point is one sample and the first runs cold, so the
    fits of the one-round-trip transports are left to the floors above and to full-scale races.)"""
    header, body = network_report.rtt_table(races.load(rtt_race.folder()))
    assert header[2:4] == ["0 ms", "50 ms"]
    rows = {row[1]: row for row in body[:3]}
    assert [row[:2] for row in body[:3]] == [["D_td", "serial"], ["D_td", "msearch"], ["D_td", "terms"]]
    assert [rows[t][-1] for t in ("serial", "msearch", "terms")] == [30, 1, 1]  # the model's round trips
    # fitted: about 30. A test-mode point is one coverage: a request of it that opens a connection pays one round trip
    # more (CI, 2026-11-28: 46.9, the 50 ms point 2,412 ms for 30 requests), so the bound is what tells 30 from 1 and
    # from 60 (a connection per request), not a close fit (full-scale races: docs/network.md)
    assert 25 < rows["serial"][4] < 55, rows["serial"]


def test_a_target_not_behind_the_proxy_ends_the_race_before_any_timed_coverage(shared_races, ingested):
    race = run_race(shared_races.home, "rtt-sweep", track_params(rtt_ms=[0]), port=TEST_PORT)
    assert race.returncode != 0
    assert "target host is not reached through it" in race.output and "--target-hosts" in race.output
    assert not any(task.startswith("coverage-") for task in race.error_rates()) if race.race else True


def test_an_unreachable_toxiproxy_is_named_before_the_cluster_changes(shared_races, ingested):
    before = http("GET", "/cluster-metrics/_settings")[1]
    race = run_race(shared_races.home, "network-faults", track_params(toxiproxy_url="http://127.0.0.1:8479"), port=PROXY_PORT)
    assert race.returncode != 0
    assert "Toxiproxy is not reachable at http://127.0.0.1:8479" in race.output and "make proxy-start" in race.output
    assert http("GET", "/cluster-metrics/_settings")[1] == before and doc_count() == 5000


def test_a_race_aborted_at_its_first_fault_leaves_no_fault_for_the_next_one(shared_races, ingested):
    """network-faults with --on-error=abort ends at its first failed sample, the reset fault's: the fault lived
    inside that coverage's call, so the link is clean at once, and rtt-sweep raced directly through the proxy (no
    make target to clear it) gets past Rally's own version check and measures a clean link."""
    aborted = run_race(shared_races.home, "network-faults", "--on-error=abort", track_params(faults=["reset"]), port=PROXY_PORT)
    assert aborted.returncode != 0 and "Connection reset by peer" in aborted.output + aborted.log, aborted.output[-2000:]
    assert ingested.toxics(PROXIES["http"]) == {}  # nothing left on the link
    params = track_params(rtt_ms=[0], rtt_variants=["D_td"], rtt_transports=["msearch"])
    race = run_race(shared_races.home, "rtt-sweep", params, port=PROXY_PORT)
    assert_clean(race, [cell_task(race, variant="D_td", transport="msearch", **{"rtt-ms": 0}), "clear-toxics-before", "clear-toxics-after"])
    assert ingested.toxics(PROXIES["http"]) == {}


def test_the_launcher_clears_what_a_killed_race_left(toxiproxy):
    """kill -9 can still leave a toxic: make proxy-start (and proxy-clear) clears the track's toxics, and only ours."""
    toxiproxy.set_rtt(PROXIES["http"], 100)
    toxiproxy.add_toxic(PROXIES["http"], FAULT, "timeout", "upstream", {"timeout": 0})
    toxiproxy.add_toxic(PROXIES["http"], "a-users-own", "latency", "upstream", {"latency": 1})
    cleared = subprocess.run(
        [sys.executable, TOXIPROXY_LAUNCHER, "clear", "--api-port", toxiproxy.url.rsplit(":", 1)[1]], capture_output=True, text=True
    )
    assert cleared.returncode == 0, cleared.stderr
    assert list(toxiproxy.toxics(PROXIES["http"])) == ["a-users-own"]
    toxiproxy.remove_toxic(PROXIES["http"], "a-users-own")


def test_a_new_proxy_definition_clears_what_an_aborted_race_left(toxiproxy):
    toxiproxy.set_rtt(PROXIES["http"], 100)
    toxiproxy.add_toxic(PROXIES["http"], FAULT, "timeout", "upstream", {"timeout": 0})  # a fault on top of the latency
    assert len(toxiproxy.toxics(PROXIES["http"])) == 3
    made = subprocess.run(
        [
            sys.executable,
            TOXIPROXY_LAUNCHER,
            "proxy",
            "--api-port",
            toxiproxy.url.rsplit(":", 1)[1],
            "--role",
            "http",
            "--listen",
            str(PROXY_PORT),
            "--upstream",
            str(TEST_PORT),
        ],
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    assert toxiproxy.toxics(PROXIES["http"]) == {}


def test_the_launcher_never_stops_a_process_it_did_not_start(tmp_path):
    """A process of another's recorded as the launcher's Toxiproxy is left running by its stop. The stranger starts
    with the default signal dispositions (tests/signals.py): the SIGTERM that ends it here is not ignored even when the
    suite runs with SIGTERM ignored."""
    stranger = popen_with_default_signals(["sleep", "60"])
    state = REPO / "local-es" / ".state" / "toxiproxy-8476.json"
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text(json.dumps({"pid": stranger.pid, "api": "http://127.0.0.1:8476"}))
    try:
        stopped = subprocess.run([sys.executable, TOXIPROXY_LAUNCHER, "stop", "--api-port", "8476"], capture_output=True, text=True)
        assert stopped.returncode == 0 and "no Toxiproxy of ours" in stopped.stdout
        assert stranger.poll() is None
    finally:
        os.kill(stranger.pid, signal.SIGTERM)
        state.unlink(missing_ok=True)
