"""What it costs, in a real race on the test node: the request breaker's limit is back as it was after a bisection
that fails midway, after a load driver killed mid-bisection (by the next race), and never lowered on a cluster
that other clients search. (Both cost challenges run clean, and their records are checked, in
tests/test_challenges.py.)"""

import json
import os
import signal
import subprocess
import threading
import time

import pytest

from report.shared import races
from runners.shared.restore import NOTES_INDEX
from runners.studies.memory import BREAKER_SETTING
from tests.answer_proxy import AnswerProxy
from tests.conftest import (
    ESRALLY,
    RALLY_HOMES,
    TEST_MODE_PASSES,
    TEST_PORT,
    assert_clean,
    challenge_alone_track,
    ensure_test_index,
    http,
    rally_pids,
    run_race,
    wait_for_our_rally,
)
from tests.signals import popen_with_default_signals

ONE_CELL = "--track-params=" + json.dumps(
    # no settling: the proxy below counts the coverages before the timed cell's, and a settling runs as many passes as
    # the node needs
    {
        "memory_variants": ["D_td"],
        "memory_transports": ["msearch"],
        "memory_hdr_digits": [3],
        "memory_tdigest_compression": [100],
        "settle": False,
    }
)


def persistent_limit():
    return http("GET", "/_cluster/settings?flat_settings=true")[1]["persistent"].get(BREAKER_SETTING)


def set_limit(value):
    status, body = http("PUT", "/_cluster/settings", {"persistent": {BREAKER_SETTING: value}})
    assert status == 200, body


@pytest.mark.smoke
def test_the_breaker_limit_is_put_back_when_the_bisection_fails_midway(shared_races):
    """A proxy passes the first coverage requests (the warm-up pass's TEST_MODE_PASSES passes over the suite
    corpus's 5 epochs; the timed task's 2 in test mode, 1 warmup and 1 measured; and the 3 at the node's own limit),
    then doubles every net p50: the bisection has lowered the limit by then, meets a wrong answer that is not the
    breaker, and fails the cell. The limit a user had set (59%) must be back."""
    ensure_test_index(shared_races)
    set_limit("59%")
    passed_through = TEST_MODE_PASSES * 5 + 2 + 3
    proxy = AnswerProxy(TEST_PORT, mode="double-net-p50", corrupt_after=passed_through)
    try:
        race = run_race(shared_races.home, "aggregation-memory", ONE_CELL, port=proxy.port)
        after = persistent_limit()
    finally:
        proxy.close()
        set_limit(None)
    cell, loaded = {"variant": "D_td", "transport": "msearch", "hdr-digits": None, "tdigest-compression": 100}, races.load(race.folder())
    assert race.returncode == 0, race.explained()
    assert race.error_rates()[loaded.task_of(**cell, measure="time")] == 0
    assert race.error_rates()[loaded.task_of(**cell, measure="breaker-floor")] == 1
    assert any("failed without tripping the request breaker" in line and "net p50" in line for line in race.failures()), race.failures()
    assert proxy.searches > passed_through + 1  # the bisection ran past the baseline
    assert after == "59%"


def notes():
    status, body = http("POST", f"/{NOTES_INDEX}/_search", {"size": 10})
    return [] if status == 404 else [hit["_source"] for hit in body["hits"]["hits"]]


def kill_load_driver(home):
    """kill -9 of every process of that Rally (all of them started by this test), until none is left."""
    deadline = time.monotonic() + 60
    while (pids := rally_pids([home], zombies=False)) and time.monotonic() < deadline:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.2)
    assert not rally_pids([home], zombies=False)


@pytest.mark.own_actor_system
def test_a_load_driver_killed_mid_bisection_leaves_a_note_and_the_next_race_puts_the_limit_back(shared_races):
    """kill -9 of the whole load driver while the limit is bisected: no finally runs. The limit stays at the value
    last tried; the note on the cluster holds the user's 59%, and the next race (any query challenge) puts it back.
    The race starts with the default signal dispositions (tests/signals.py), as every process a test signals does
    (SIGKILL itself cannot be ignored or blocked)."""
    rally_home = shared_races.home
    ensure_test_index(shared_races)
    set_limit("59%")
    command = [
        ESRALLY,
        "race",
        f"--track-path={challenge_alone_track('aggregation-memory')}",
        "--challenge=aggregation-memory",
        "--pipeline=benchmark-only",
        "--offline",
        f"--target-hosts=127.0.0.1:{TEST_PORT}",
        "--test-mode",
        ONE_CELL,
    ]
    env = dict(os.environ, RALLY_HOME=str(rally_home))
    output = rally_home / "killed-race.log"
    wait_for_our_rally()  # one Rally at a time
    RALLY_HOMES.add(rally_home)
    try:
        with open(output, "w") as out:
            race = popen_with_default_signals(command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        bisecting = None
        try:
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline and race.poll() is None:
                value = persistent_limit()
                if value and value.endswith("b"):  # a limit of the bisection, in bytes
                    bisecting = value
                    break
                time.sleep(0.02)
        finally:
            kill_load_driver(rally_home)
            race.wait(timeout=60)
        assert bisecting is not None, f"the race ended before its bisection was seen: {output.read_text()[-2000:]}"
        left = persistent_limit()
        assert left.endswith("b") and left != "59%"  # nothing restored it: the load driver died
        assert notes() == [{"setting": BREAKER_SETTING, "original": "59%"}]
        after = run_race(rally_home, "production-comparison")
        assert_clean(after, ["verify-corpus", "coverage-D_td-serial"])
        assert persistent_limit() == "59%" and notes() == []
    finally:
        set_limit(None)  # the suite's node as it was, whatever failed


def test_aggregation_memory_refuses_a_cluster_with_other_search_traffic(shared_races):
    """Another client searching while the bisection would lower a cluster-wide limit: the race ends before anything
    changes, naming the parameter that accepts a shared cluster."""
    ensure_test_index(shared_races)
    stop = threading.Event()

    def other_client():
        for _ in range(3000):  # bounded: at most a few minutes of loopback searches
            if stop.wait(0.05):
                return
            http("POST", "/cluster-metrics/_search", {"size": 0})

    searcher = threading.Thread(target=other_client, daemon=True)
    searcher.start()
    try:
        race = run_race(shared_races.home, "aggregation-memory", ONE_CELL)
    finally:
        stop.set()
        searcher.join()
    assert race.returncode != 0
    assert "searches of other clients ran on the cluster" in race.output and "memory_shared_cluster: true" in race.output
    assert persistent_limit() is None and notes() == []
