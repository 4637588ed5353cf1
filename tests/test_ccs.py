"""ccs-roundtrips through a real Toxiproxy: the searches go to the test node, the index lives on a remote cluster
started for this module alone (and stopped right after it) behind a proxy on its transport port."""

import json
import math
import signal
import time

import pytest

from report.shared import races, readers
from report.studies import network as network_report
from runners.contracts import records
from runners.contracts.parameters import DEFAULTS
from runners.operations import OPERATIONS
from runners.shared import restore
from runners.studies import network
from runners.studies.network import remote_settings
from tests.conftest import (
    STANDARD_SHAPE,
    TEST_PORT,
    VERSION_TIER,
    assert_clean,
    doc_count,
    holds_the_test_corpus,
    http,
    launcher,
    rendered_challenges,
    rendered_tasks,
    run_race,
    start_race,
    toxiproxy_launcher,
    track_params,
    wait_for_our_rally,
    with_rally_client,
)

REMOTE_PORT, REMOTE_PROXY_PORT, REMOTE_HTTP_PROXY_PORT, REMOTE_SHARDS = 9280, 9391, 9392, 5
ALIAS, FAR_ALIAS = DEFAULTS["ccs_alias"], DEFAULTS["ccs_far_alias"]
RTTS = [0] if VERSION_TIER else [0, 50]  # the version tier: the link without latency (Toxiproxy's, not the version's)
PARAMS = {"ccs_rtt_ms": RTTS, "ccs_variants": ["D_hdr"], "ccs_shards": REMOTE_SHARDS}


@pytest.fixture(scope="module")
def remote_cluster(toxiproxy, rally_home, small_corpus):
    """A second cluster holding the test-mode corpus in REMOTE_SHARDS shards, behind its transport proxy."""
    started = launcher("start", "--heap", "1g", port=REMOTE_PORT)
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        made = toxiproxy_launcher("proxy", "--role", "remote", "--listen", str(REMOTE_PROXY_PORT), "--upstream", str(REMOTE_PORT + 100))
        assert made.returncode == 0, made.stdout + made.stderr
        made = toxiproxy_launcher("proxy", "--role", "remote-http", "--listen", str(REMOTE_HTTP_PROXY_PORT), "--upstream", str(REMOTE_PORT))
        assert made.returncode == 0, made.stdout + made.stderr
        # a node home an earlier suite left may hold the corpus in another shape: the ingest creates the index afresh
        if not holds_the_test_corpus(rally_home, port=REMOTE_PORT, shape={**STANDARD_SHAPE, "number_of_shards": REMOTE_SHARDS}):
            ingest = run_race(rally_home, "ingest-baseline", f"--track-params=number_of_shards:{REMOTE_SHARDS}", port=REMOTE_PORT)
            assert_clean(ingest)
        yield REMOTE_PORT
    finally:
        stopped = launcher("stop", port=REMOTE_PORT)
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr


def hosts(remote, far=True):
    clusters = {"default": [f"127.0.0.1:{TEST_PORT}"], ALIAS: [f"127.0.0.1:{remote}"]}
    return json.dumps(dict(clusters, **({FAR_ALIAS: [f"127.0.0.1:{REMOTE_HTTP_PROXY_PORT}"]} if far else {})))


@pytest.fixture(scope="module")
def ccs_race(rally_home, remote_cluster):
    return run_race(rally_home, "ccs-roundtrips", track_params(**PARAMS), target_hosts=hosts(remote_cluster))


@pytest.mark.versions("ccs-roundtrips")
def test_ccs_roundtrips_runs_clean_and_takes_its_registration_back(ccs_race):
    tasks = list(rendered_tasks(rendered_challenges(PARAMS)["ccs-roundtrips"]))
    assert_clean(ccs_race, [t["operation"]["name"] for t in tasks if t["operation"]["operation-type"] in OPERATIONS])
    assert http("GET", "/_remote/info")[1] == {}  # each operation took its registration back
    assert doc_count(port=REMOTE_PORT) == 5000


def test_the_round_trip_model_is_a_floor_through_the_proxy(ccs_race):
    """The round-trip model as a physical floor at the largest RTT, not a timing target: with minimized round trips
    the whole search crosses the link once; without, the local coordinator asks for the remote's shards, then sends
    its shard requests in waves of at most 5 per node (max_concurrent_shard_requests): 1 + ceil(shards / 5) round
    trips. (Test mode has one sample per point, the first cold: the fitted slopes are left to full-scale races.)"""
    header, body = network_report.ccs_table(races.load(ccs_race.folder()))
    assert header[3:5] == [f"{r} ms" for r in RTTS] and len(body) == 5  # 2 transports x 2 settings, the samples row
    ops, rtt, race = ccs_race.op_metrics(), max(RTTS), races.load(ccs_race.folder())
    assert race.record(records.CELLS)  # the race recorded its cells (runners/contracts/cells.py)
    floors = {True: 1, False: 1 + math.ceil(REMOTE_SHARDS / 5)}
    for transport in DEFAULTS["ccs_transports"]:
        for minimize, round_trips in floors.items():
            op = ops[race.task_of(variant="D_hdr", transport=transport, **{"rtt-ms": rtt, "minimize-roundtrips": minimize})]
            assert op["service_time"]["mean"] >= round_trips * rtt, (transport, minimize, op["service_time"])
        # the seed's direct cells: the far ones cross the link once per request (the near one has no floor)
        for route in ("far", "far-new-connection"):
            op = ops[race.task_of(variant="D_hdr", transport=transport, route=route, **{"rtt-ms": rtt})]
            assert op["service_time"]["mean"] >= rtt, (transport, route, op["service_time"])


def test_seed_001s_table_holds_every_cell_with_took_and_wall(ccs_race):
    header, body = network_report.ccs_point_table(races.load(ccs_race.folder()))
    cells = [row[3] for row in body if row[0] == f"{max(RTTS)} ms" and row[2] == "terms"]
    assert cells == ["direct-near", "direct-far", "direct-far-new-connection", "minimize-true", "minimize-false"]
    assert all(row[4] and row[4] != "FAILED" and row[6] for row in body), body


def http_connections_opened(port):
    return sum(n["http"]["total_opened"] for n in http("GET", "/_nodes/stats/http", port=port)[1]["nodes"].values())


def test_a_new_connection_per_request_opens_one_per_request_and_the_kept_alive_one_does_not(rally_home, remote_cluster):
    """As curl: every request of the far-new-connection cell reaches the remote on a connection of its own (the
    remote's HTTP connections opened count them); the far cell's requests share the client's kept-alive ones."""
    params = track_params(
        ccs_rtt_ms=[0],
        ccs_variants=["D_td"],
        ccs_transports=["serial"],
        ccs_minimize_roundtrips=[True],
        ccs_direct=["far", "far-new-connection"],
        ccs_shards=REMOTE_SHARDS,
    )
    before = http_connections_opened(REMOTE_PORT)
    race = run_race(rally_home, "ccs-roundtrips", params, target_hosts=hosts(remote_cluster))
    assert_clean(race)
    opened = http_connections_opened(REMOTE_PORT) - before
    coverages = {route: 0 for route in ("far", "far-new-connection")}
    loaded = races.load(race.folder())
    for line in readers.validation(loaded):
        for route in coverages:  # the cell's own coverages and the warm-up pass's of it ("<pass>/<cell>")
            cell = loaded.task_of(variant="D_td", transport="serial", route=route, **{"rtt-ms": 0})
            coverages[route] += line["task"].rsplit("/", 1)[-1] == cell
    assert coverages["far"] >= 1 and coverages["far-new-connection"] >= 1, coverages
    requests = {route: 30 * n for route, n in coverages.items()}  # a serial coverage: one _search per node
    assert requests["far-new-connection"] <= opened < requests["far-new-connection"] + requests["far"], (opened, requests)


def test_a_direct_cell_without_its_cluster_in_target_hosts_is_refused_before_anything_runs(rally_home, remote_cluster):
    before = http("GET", "/_cluster/settings?flat_settings=true")[1]
    race = run_race(rally_home, "ccs-roundtrips", track_params(**PARAMS), target_hosts=hosts(remote_cluster, far=False))
    assert race.returncode != 0 and f"asks the cluster '{FAR_ALIAS}', which --target-hosts does not name" in race.output
    assert "ccs_direct" in race.output
    assert http("GET", "/_cluster/settings?flat_settings=true")[1] == before


def test_a_remote_behind_no_proxy_is_refused_and_its_registration_taken_back(rally_home, remote_cluster):
    before = http("GET", "/_cluster/settings?flat_settings=true")[1]
    direct = f"127.0.0.1:{remote_cluster + 100}"  # the remote's own transport port: no latency can reach it
    params = track_params(ccs_rtt_ms=[0], ccs_proxy_address=direct, ccs_shards=REMOTE_SHARDS, ccs_direct=[])
    race = run_race(rally_home, "ccs-roundtrips", params, target_hosts=hosts(remote_cluster))
    assert race.returncode != 0 and "remote cluster is not reached through it" in race.output
    # the path check failed inside the operation that registered the remote: its finally took the registration back
    assert http("GET", "/_remote/info")[1] == {}
    assert http("GET", "/_cluster/settings?flat_settings=true")[1] == before
    assert http("POST", f"/{restore.NOTES_INDEX}/_search", {"size": 10})[1]["hits"]["hits"] == []


def test_a_registration_a_killed_race_left_is_put_back_by_the_next_one(rally_home, remote_cluster):
    """kill -9 in the middle of an operation: the registration and its notes stay (made here as the operation makes
    them); the next race of this track (its verify-corpus, or the next registration) puts the settings back."""
    registration = {"alias": ALIAS, "proxy-address": f"127.0.0.1:{REMOTE_PROXY_PORT}"}
    assert with_rally_client(lambda es: network.register_remote(es, registration)) > 0
    notes = http("POST", f"/{restore.NOTES_INDEX}/_search", {"size": 10})[1]["hits"]["hits"]
    assert {n["_source"]["setting"]: n["_source"]["original"] for n in notes} == dict.fromkeys(remote_settings(ALIAS))
    assert with_rally_client(restore.leftovers) == [f"{setting}=None" for setting in sorted(remote_settings(ALIAS))]
    assert http("GET", "/_remote/info")[1] == {}
    assert http("POST", f"/{restore.NOTES_INDEX}/_search", {"size": 10})[1]["hits"]["hits"] == []


@pytest.mark.own_actor_system
def test_ctrl_c_in_the_middle_of_ccs_roundtrips_leaves_the_cluster_settings_as_they_were(rally_home, remote_cluster):
    """The race is interrupted (SIGINT, as Ctrl-C sends it) while a coverage holds the remote's registration: the
    operation's finally takes it back, and the cluster's settings equal those before the race. start_race starts the
    race with the default signal dispositions (tests/signals.py): run as a background job (`.ci/run &`), the suite
    has SIGINT ignored, and a race that inherited that would ignore the SIGINT and end SUCCESS (issue 55)."""
    before = http("GET", "/_cluster/settings?flat_settings=true")[1]
    # at 200 ms each operation holds the registration for a second or more: a window the poll below cannot miss
    params = track_params(ccs_rtt_ms=[200], ccs_variants=["D_hdr"], ccs_shards=REMOTE_SHARDS, ccs_direct=[])
    race = start_race(rally_home, "ccs-roundtrips", params, target_hosts=hosts(remote_cluster))
    try:
        deadline, seen = time.monotonic() + 300, False
        while not seen and race.poll() is None and time.monotonic() < deadline:
            seen = f"cluster.remote.{ALIAS}.mode" in http("GET", "/_cluster/settings?flat_settings=true")[1]["persistent"]
            time.sleep(0.05)
        assert seen, "the race never registered the remote"
        race.send_signal(signal.SIGINT)  # as a terminal's Ctrl-C: Rally's actors run in a session of their own
        output = race.communicate(timeout=300)[0]
    finally:
        if race.poll() is None:
            race.kill()
    assert race.returncode != 0 and "cancel" in output.lower(), output[-2000:]
    wait_for_our_rally()
    assert http("GET", "/_cluster/settings?flat_settings=true")[1] == before
    assert http("GET", "/_remote/info")[1] == {}
    assert http("POST", f"/{restore.NOTES_INDEX}/_search", {"size": 10})[1]["hits"]["hits"] == []
