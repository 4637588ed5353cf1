"""The request breaker floor with a fake cluster that trips its breaker below a set need: the bisection finds the
need to the resolution, and the setting is put back whatever happens, at every step a failure can come."""

import asyncio
import io
import json

import pytest
from coverage_test import answers

from runners import records
from runners.context import CONTEXT_KEY
from runners.memory import BREAKER_SETTING, LOWEST_LIMIT_BYTES, BreakerFloor, BreakerFloorParamSource
from stub_client import Response

NODE_LIMIT = 644_245_094  # 60% of a 1 GB heap, as a real node reports it


class BreakerCluster:
    """One node: a persistent breaker limit, the request breaker's trip count, young GC counters, and correct
    msearch coverage answers while the limit is at least `need` bytes (a breaker error and a trip below it).
    fail_at: the coverage request (1-based) that gets an answer with a wrong hit count instead."""

    def __init__(self, context, need, persistent=None, fail_at=None, transient=None):
        self.context, self.need, self.fail_at = context, need, fail_at
        self.persistent, self.transient = persistent, transient
        self.trips, self.coverages, self.gcs, self.raw, self.puts = 0, 0, 0, False, []

    def options(self, **kwargs):
        return self

    def return_raw_response(self):
        self.raw = True

    def on_request_end(self):
        pass

    def _limit(self):
        value = self.persistent or "60%"
        return NODE_LIMIT if value.endswith("%") else int(value.rstrip("b"))

    async def perform_request(self, method, path, params=None, body=None, headers=None):
        if path == "/_cluster/settings" and method == "PUT":
            self.puts.append(body["persistent"][BREAKER_SETTING])
            self.persistent = body["persistent"][BREAKER_SETTING]
            answer = {"acknowledged": True}
        elif path == "/_cluster/settings":
            answer = {
                "persistent": {BREAKER_SETTING: self.persistent} if self.persistent else {},
                "transient": {BREAKER_SETTING: self.transient} if self.transient else {},
            }
        elif path == "/_nodes/stats/breaker":
            answer = {"nodes": {"n1": {"breakers": {"request": {"limit_size_in_bytes": self._limit(), "tripped": self.trips}}}}}
        elif path == "/_nodes/stats/jvm":
            answer = {
                "nodes": {
                    "n1": {
                        "jvm": {"gc": {"collectors": {"young": {"collection_count": self.gcs, "collection_time_in_millis": 4 * self.gcs}}}}
                    }
                }
            }
        else:
            answer = self._coverage()
        data = json.dumps(answer).encode()
        return Response(io.BytesIO(data) if self.raw else answer)

    def _coverage(self):
        self.coverages += 1
        self.gcs += 2
        answer = answers(self.context, "msearch")[0][1]
        if self.coverages == self.fail_at:
            answer = json.loads(json.dumps(answer))
            answer["responses"][0]["hits"]["total"]["value"] += 1
        elif self._limit() < self.need:
            self.trips += 1
            answer = json.loads(json.dumps(answer))
            answer["responses"][0] = {"status": 429, "error": {"type": "circuit_breaking_exception", "reason": "[request] Data too large"}}
        return answer


def params(context, tmp_path, **extra):
    context = context.__class__(**{**context.as_param(), "record_dir": str(tmp_path)})
    source = BreakerFloorParamSource(
        None,
        {
            CONTEXT_KEY: context.as_param(),
            "variant": "D_td",
            "transport": "msearch",
            "percents": [0, 50, 90, 100],
            "name": "breaker-floor-x",
            **extra,
        },
    )
    return source.params()


def run(cluster, p):
    return asyncio.run(BreakerFloor()(cluster, p))


@pytest.mark.parametrize("need", [150_000, 3_000_000, 40_000])
def test_the_floor_brackets_the_need_to_the_resolution(context, tmp_path, need):
    cluster = BreakerCluster(context, need)
    result = run(cluster, params(context, tmp_path, resolution=0.05))
    assert result["success"] is True, result.get("error-description")
    assert result["below-bytes"] < need <= result["floor-bytes"] <= result["below-bytes"] * 1.05
    assert result["young-gcs-per-coverage"] == 2 and result["gc-ms-per-coverage"] == 8
    assert cluster.persistent is None and cluster.puts[-1] is None  # removed, as it was before
    (line,) = open(tmp_path / records.MEMORY).read().splitlines()
    assert json.loads(line)["floor-bytes"] == result["floor-bytes"] and json.loads(line)["cell"] == "D_td/msearch"


def test_a_coverage_that_needs_almost_nothing_is_below_the_lowest_limit(context, tmp_path):
    cluster = BreakerCluster(context, 10)
    result = run(cluster, params(context, tmp_path))
    assert result["floor-bytes"] == LOWEST_LIMIT_BYTES and result["below-bytes"] == 0
    assert cluster.persistent is None


@pytest.mark.parametrize("fail_at", range(4, 17, 3))
def test_a_failure_that_is_not_the_breaker_fails_the_cell_and_the_limit_is_put_back(context, tmp_path, fail_at):
    """A wrong answer at any coverage after the baseline (the first 3 run at the node's own limit)."""
    cluster = BreakerCluster(context, 150_000, persistent="55%", fail_at=fail_at)
    result = run(cluster, params(context, tmp_path))
    assert cluster.coverages == fail_at and result["success"] is False
    assert "failed without tripping the request breaker" in result["error-description"]
    assert "hits" in result["error-description"]
    assert cluster.persistent == "55%" and cluster.puts[-1] == "55%"


def test_an_exception_mid_bisection_still_puts_the_limit_back(context, tmp_path):
    class Broken(BreakerCluster):
        def _coverage(self):
            if self.coverages == 6:
                raise RuntimeError("connection lost")
            return super()._coverage()

    cluster = Broken(context, 150_000, persistent="524288000b")
    with pytest.raises(RuntimeError):
        run(cluster, params(context, tmp_path))
    assert len(cluster.puts) > 1 and cluster.persistent == "524288000b"


def test_a_failure_at_the_nodes_own_limit_changes_nothing(context, tmp_path):
    cluster = BreakerCluster(context, 150_000, fail_at=2)
    result = run(cluster, params(context, tmp_path))
    assert result["success"] is False and "fails at the node's own limit" in result["error-description"]
    assert cluster.puts == []


def test_a_transient_limit_is_named_and_nothing_changes(context, tmp_path):
    cluster = BreakerCluster(context, 150_000, transient="40%")
    result = run(cluster, params(context, tmp_path))
    assert result["success"] is False and "transient" in result["error-description"]
    assert cluster.puts == [] and cluster.coverages == 0
