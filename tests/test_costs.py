"""What it costs, in a real race on the test node: the request breaker's limit is back as it was after a bisection
that fails midway. (Both cost challenges run clean with their defaults, and their records are checked, in
tests/test_rally_track.py's every-challenge test.)"""

import json

import pytest
from test_rally_track import ensure_test_mode_ingest

from answer_proxy import AnswerProxy
from conftest import TEST_PORT, http, run_race
from runners.memory import BREAKER_SETTING
from runners.tasks import breaker_floor_task_name, memory_cell, memory_task_name

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("es_node")]

ONE_CELL = "--track-params=" + json.dumps(
    {"memory_variants": ["D_td"], "memory_transports": ["msearch"], "memory_hdr_digits": [3], "memory_tdigest_compression": [100]}
)


def persistent_limit():
    return http("GET", "/_cluster/settings?flat_settings=true")[1]["persistent"].get(BREAKER_SETTING)


def set_limit(value):
    status, body = http("PUT", "/_cluster/settings", {"persistent": {BREAKER_SETTING: value}})
    assert status == 200, body


def test_the_breaker_limit_is_put_back_when_the_bisection_fails_midway(rally_home, small_corpus):
    """A proxy passes the first 5 coverage requests (the timed task's 2 in test mode, 1 warmup and 1 measured, and the
    3 at the node's own limit), then doubles
    every net p50: the bisection has lowered the limit by then, meets a wrong answer that is not the breaker, and
    fails the cell. The limit a user had set (59%) must be back."""
    ensure_test_mode_ingest(rally_home)
    set_limit("59%")
    proxy = AnswerProxy(TEST_PORT, mode="double-net-p50", corrupt_after=5)
    try:
        race = run_race(rally_home, "aggregation-memory", ONE_CELL, port=proxy.port)
        after = persistent_limit()
    finally:
        proxy.close()
        set_limit(None)
    cell = memory_cell("D_td", "msearch", compression=100)
    assert race.returncode == 0, race.output[-3000:]
    assert race.error_rates()[memory_task_name(cell)] == 0
    assert race.error_rates()[breaker_floor_task_name(cell)] == 1
    assert any("failed without tripping the request breaker" in line and "net p50" in line for line in race.failures()), race.failures()
    assert proxy.searches > 6  # the bisection ran past the baseline
    assert after == "59%"
