"""ccs-roundtrips through a real Toxiproxy: the searches go to the test node, the index lives on a remote cluster
started for this module alone (and stopped right after it) behind a proxy on its transport port."""

import json
import math

import pytest

from conftest import (
    TEST_PORT,
    assert_clean,
    doc_count,
    http,
    launcher,
    rendered_challenges,
    rendered_tasks,
    run_race,
    toxiproxy_launcher,
    track_params,
    with_rally_client,
)
from report import network as network_report
from report import races
from runners import restore
from runners.network import remote_settings
from runners.operations import OPERATIONS
from runners.parameters import PARAMETERS
from runners.tasks import ccs_task_name

REMOTE_PORT, REMOTE_PROXY_PORT, REMOTE_SHARDS = 9280, 9391, 5
ALIAS = PARAMETERS["ccs_alias"][0]
RTTS = [0, 50]
PARAMS = {"rtt_ms": RTTS, "rtt_variants": ["D_hdr"]}


@pytest.fixture(scope="module")
def remote_cluster(toxiproxy, rally_home, small_corpus):
    """A second cluster holding the test-mode corpus in REMOTE_SHARDS shards, behind its transport proxy."""
    started = launcher("start", "--heap", "1g", port=REMOTE_PORT)
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        made = toxiproxy_launcher("proxy", "--role", "remote", "--listen", str(REMOTE_PROXY_PORT), "--upstream", str(REMOTE_PORT + 100))
        assert made.returncode == 0, made.stdout + made.stderr
        if doc_count(port=REMOTE_PORT) != 5000:
            ingest = run_race(rally_home, "ingest-baseline", f"--track-params=number_of_shards:{REMOTE_SHARDS}", port=REMOTE_PORT)
            assert_clean(ingest)
        yield REMOTE_PORT
    finally:
        stopped = launcher("stop", port=REMOTE_PORT)
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr


def hosts(remote):
    return json.dumps({"default": [f"127.0.0.1:{TEST_PORT}"], ALIAS: [f"127.0.0.1:{remote}"]})


@pytest.fixture(scope="module")
def ccs_race(rally_home, remote_cluster):
    return run_race(rally_home, "ccs-roundtrips", track_params(**PARAMS), target_hosts=hosts(remote_cluster))


def test_ccs_roundtrips_runs_clean_and_takes_its_registration_back(ccs_race):
    tasks = list(rendered_tasks(rendered_challenges(PARAMS)["ccs-roundtrips"]))
    assert_clean(ccs_race, [t["operation"]["name"] for t in tasks if t["operation"]["operation-type"] in OPERATIONS])
    assert http("GET", "/_remote/info")[1] == {}  # the registration is removed at the end
    assert doc_count(port=REMOTE_PORT) == 5000


def test_the_round_trip_model_is_a_floor_through_the_proxy(ccs_race):
    """The round-trip model as a physical floor at the largest RTT, not a timing target: with minimized round trips
    the whole search crosses the link once; without, the local coordinator asks for the remote's shards, then sends
    its shard requests in waves of at most 5 per node (max_concurrent_shard_requests): 1 + ceil(shards / 5) round
    trips. (Test mode has one sample per point, the first cold: the fitted slopes are left to full-scale races.)"""
    header, body = network_report.ccs_table(races.load(ccs_race.folder()))
    assert header[3:5] == [f"{r} ms" for r in RTTS] and len(body) == 5  # 2 transports x 2 settings, the samples row
    ops, rtt = ccs_race.op_metrics(), max(RTTS)
    floors = {True: 1, False: 1 + math.ceil(REMOTE_SHARDS / 5)}
    for transport in PARAMETERS["ccs_transports"][0]:
        for minimize, round_trips in floors.items():
            op = ops[ccs_task_name("D_hdr", transport, minimize, rtt)]
            assert op["service_time"]["mean"] >= round_trips * rtt, (transport, minimize, op["service_time"])


def test_a_remote_behind_no_proxy_is_refused(rally_home, remote_cluster):
    direct = f"127.0.0.1:{remote_cluster + 100}"  # the remote's own transport port: no latency can reach it
    race = run_race(rally_home, "ccs-roundtrips", track_params(rtt_ms=[0], ccs_proxy_address=direct), target_hosts=hosts(remote_cluster))
    assert race.returncode != 0 and "remote cluster is not reached through it" in race.output
    # the race ended before remove-remote: the registration stays, noted, and the next race takes it away
    assert ALIAS in http("GET", "/_remote/info")[1]
    notes = http("POST", f"/{restore.NOTES_INDEX}/_search", {"size": 10})[1]["hits"]["hits"]
    assert {n["_source"]["setting"]: n["_source"]["original"] for n in notes} == dict.fromkeys(remote_settings(ALIAS))
    assert with_rally_client(restore.leftovers) == [f"{setting}=None" for setting in remote_settings(ALIAS)]
    assert http("GET", "/_remote/info")[1] == {}
    assert http("POST", f"/{restore.NOTES_INDEX}/_search", {"size": 10})[1]["hits"]["hits"] == []
