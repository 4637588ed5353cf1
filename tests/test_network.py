"""The network through a real Toxiproxy: round-trip times that really reach the coverage, each fault kind as failed
samples with a description and nothing lost, cross-cluster search through a proxied remote, and bad network input
named before the cluster changes."""

import json
import os
import signal
import subprocess
import sys

import pytest
from test_rally_track import assert_clean, assert_faults, doc_count, ensure_test_mode_ingest, race_dir

from conftest import PROXY_PORT, REPO, TEST_PORT, TOXIPROXY_LAUNCHER, http, run_race, track_params, with_rally_client
from report import network as network_report
from report import races
from runners import restore
from runners.network import remote_settings
from runners.parameters import PARAMETERS
from runners.tasks import healed_task_name, rtt_task_name
from runners.toxiproxy import FAULT, FAULTS, PROXIES

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("es_node")]

# what the description of a failed sample says under each fault
SEEN = {
    "reset": "connection failed",
    "black-hole": "no complete answer within the request timeout of 2 s",
    "slow-link": "no complete answer within the request timeout of 2 s",
    "cut-mid-response": "connection failed",
}


@pytest.fixture
def ingested(rally_home, small_corpus, toxiproxy):
    ensure_test_mode_ingest(rally_home)
    return toxiproxy


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_each_fault_is_a_failed_sample_with_a_description_and_nothing_is_lost(rally_home, ingested, fault):
    race = run_race(rally_home, "network-faults", track_params(faults=[fault]), port=PROXY_PORT)
    assert_faults(race, [fault], [healed_task_name(fault, "D_td", "msearch"), "verify-doc-count"])
    described = [line for line in race.failures() if "failed sample (network)" in line]
    # test mode: one coverage per fault task (msearch, terms)
    assert len(described) == 2 and all(SEEN[fault] in line and "not retried" in line for line in described), described
    ops = {op["task"]: op for op in race.race["results"]["op_metrics"]}
    timeout_ms = PARAMETERS["fault_request_timeout"][0] * 1000
    for t in ("msearch", "terms"):  # never a hang past the request timeout
        assert ops[f"fault-{fault}-coverage-D_td-{t}"]["service_time"]["100_0"] < timeout_ms + 1500
    assert doc_count() == 5000
    assert FAULT not in ingested.toxics(PROXIES["http"])  # healed


def test_round_trip_time_reaches_every_request_of_the_coverage(rally_home, ingested):
    race = run_race(rally_home, "rtt-sweep", track_params(rtt_ms=[0, 50], rtt_variants=["D_td"]), port=PROXY_PORT)
    assert_clean(race, [rtt_task_name("D_td", t, r) for t in ("serial", "msearch", "terms") for r in (0, 50)])
    ops = {op["task"]: op for op in race.race["results"]["op_metrics"]}
    at = lambda t, r: ops[rtt_task_name("D_td", t, r)]["service_time"]["mean"]  # noqa: E731
    # a physical floor, not a timing target: 30 sequential round trips cannot take less than 30 x RTT
    assert at("serial", 50) >= 30 * 50 and at("msearch", 50) >= 50 and at("terms", 50) >= 50
    assert at("serial", 0) < 30 * 50
    loaded = races.load(race_dir(rally_home, race))
    header, body = network_report.rtt_table(loaded)
    assert header[2:4] == ["0 ms", "50 ms"] and [row[:2] for row in body[:3]] == [
        ["D_td", "serial"],
        ["D_td", "msearch"],
        ["D_td", "terms"],
    ]
    assert body[0][4] > 25  # fitted round trips of serial: about 30


def test_a_target_not_behind_the_proxy_ends_the_race_before_any_timed_coverage(rally_home, ingested):
    race = run_race(rally_home, "rtt-sweep", track_params(rtt_ms=[0]), port=TEST_PORT)
    assert race.returncode != 0
    assert "target host is not reached through it" in race.output and "--target-hosts" in race.output
    assert not any(task.startswith("coverage-") for task in race.error_rates()) if race.race else True


def test_an_unreachable_toxiproxy_is_named_before_the_cluster_changes(rally_home, ingested):
    before = http("GET", "/cluster-metrics/_settings")[1]
    race = run_race(rally_home, "network-faults", track_params(toxiproxy_url="http://127.0.0.1:8479"), port=PROXY_PORT)
    assert race.returncode != 0
    assert "Toxiproxy is not reachable at http://127.0.0.1:8479" in race.output and "make proxy-start" in race.output
    assert http("GET", "/cluster-metrics/_settings")[1] == before and doc_count() == 5000


def test_a_remote_behind_no_proxy_is_refused(rally_home, remote_cluster):
    alias = PARAMETERS["ccs_alias"][0]
    hosts = json.dumps({"default": [f"127.0.0.1:{TEST_PORT}"], alias: [f"127.0.0.1:{remote_cluster}"]})
    direct = f"127.0.0.1:{remote_cluster + 100}"  # the remote's own transport port: no latency can reach it
    race = run_race(rally_home, "ccs-roundtrips", track_params(rtt_ms=[0], ccs_proxy_address=direct), target_hosts=hosts)
    assert race.returncode != 0 and "remote cluster is not reached through it" in race.output
    # the race ended before remove-remote: the registration stays, noted, and the next race takes it away
    assert alias in http("GET", "/_remote/info")[1]
    notes = http("POST", f"/{restore.NOTES_INDEX}/_search", {"size": 10})[1]["hits"]["hits"]
    assert {n["_source"]["setting"]: n["_source"]["original"] for n in notes} == dict.fromkeys(remote_settings(alias))
    assert with_rally_client(restore.leftovers) == [f"{setting}=None" for setting in remote_settings(alias)]
    assert http("GET", "/_remote/info")[1] == {}
    assert http("POST", f"/{restore.NOTES_INDEX}/_search", {"size": 10})[1]["hits"]["hits"] == []


def test_a_fault_an_aborted_race_left_is_cleared_by_the_next_network_race(rally_home, ingested):
    """network-faults with --on-error=abort ends at its first failed sample with slow-link on; rtt-sweep raced directly
    (no make target to clear the proxy) must still measure a clean link, and leave it clean."""
    aborted = run_race(rally_home, "network-faults", "--on-error=abort", track_params(faults=["slow-link"]), port=PROXY_PORT)
    assert FAULT in ingested.toxics(PROXIES["http"]), aborted.output[-2000:]  # left on by the aborted race
    params = track_params(rtt_ms=[0], rtt_variants=["D_td"], rtt_transports=["msearch"])
    race = run_race(rally_home, "rtt-sweep", params, port=PROXY_PORT)
    assert_clean(race, [rtt_task_name("D_td", "msearch", 0), "clear-toxics-before", "clear-toxics-after"])
    ops = {op["task"]: op for op in race.race["results"]["op_metrics"]}
    # a physical bound: at 1 KB/s a coverage's ~5 KB response alone takes 5 s
    assert ops[rtt_task_name("D_td", "msearch", 0)]["service_time"]["100_0"] < 2000  # Rally names the max "100_0"
    assert ingested.toxics(PROXIES["http"]) == {}


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
    stranger = subprocess.Popen(["sleep", "60"])
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
