"""The request breaker floor with a fake cluster that trips its breaker below a set need: the bisection finds the
need to the resolution, and the setting is put back whatever happens, at every step a failure can come."""

import asyncio
import io
import json

import elasticsearch
import pytest

from runners.contracts import records
from runners.contracts.context import CONTEXT_KEY
from runners.shared.restore import NOTES_INDEX, RestoreError
from runners.shared.validation import described, tripped_breakers
from runners.studies.memory import BREAKER_SETTING, LOWEST_LIMIT_BYTES, BreakerFloor, BreakerFloorParamSource
from tests.runners.coverage_test import answers
from tests.runners.stub_client import Response, _meta

NODE_LIMIT = 644_245_094  # 60% of a 1 GB heap, as a real node reports it
PARENT_TRIP = {  # as Elasticsearch 9.5.3 named it in a CI run (a 1 GB heap)
    "type": "circuit_breaking_exception",
    "reason": "[parent] Data too large, data for [<http_request>] would be [1022513836/975.1mb], which is larger than the "
    "limit of [1020054732/972.7mb], real usage: [1022512640/975.1mb], new bytes reserved: [1196/1.1kb]",
}


class BreakerCluster:
    """One node: a persistent breaker limit, the request breaker's trip count, young GC counters, and correct
    msearch coverage answers while the limit is at least `need` bytes (a breaker error and a trip below it).
    fail_at: the coverage request (1-based) that gets an answer with a wrong hit count instead; parent_at: the one
    whose first search the parent breaker rejects (as Elasticsearch 9.5 answers a reduce it rejected)."""

    def __init__(
        self, context, need, persistent=None, fail_at=None, transient=None, foreign_trips=False, parent_at=None
    ):  # parameters: a fake cluster's behaviours, each a keyword with its default
        self.context, self.need, self.fail_at, self.foreign_trips = context, need, fail_at, foreign_trips
        self.parent_at = parent_at
        self.persistent, self.transient = persistent, transient
        self.trips, self.coverages, self.gcs, self.raw, self.puts = 0, 0, 0, False, []
        self.notes = None  # the restore notes index: None until a note is first written

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
        if path == f"/{NOTES_INDEX}":
            return Response({"acknowledged": True})
        if path.startswith(f"/{NOTES_INDEX}/"):
            return self._notes(method, path, body)
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

    def _notes(self, method, path, body):
        if self.notes is None and method != "PUT":
            raise elasticsearch.NotFoundError(message="index_not_found_exception", meta=_meta(404), body={})
        self.notes = self.notes or {}
        if method == "PUT":
            self.notes[path.rsplit("/", 1)[1]] = body
            return Response({"result": "created"})
        if method == "DELETE":
            self.notes.pop(path.rsplit("/", 1)[1], None)
            return Response({"result": "deleted"})
        hits = [{"_source": note} for note in self.notes.values()]
        data = json.dumps({"hits": {"hits": hits}}).encode()
        return Response(io.BytesIO(data) if self.raw else json.loads(data))

    def _coverage(self):
        self.coverages += 1
        if self.coverages > 5000:
            raise RuntimeError("the bisection does not end")
        self.trips += self.foreign_trips  # another client's searches tripping the breaker on a shared cluster
        self.gcs += 2
        answer = answers(self.context, "msearch")[0][1]
        if self.coverages == self.fail_at:
            answer = json.loads(json.dumps(answer))
            answer["responses"][0]["hits"]["total"]["value"] += 1
        elif self.coverages == self.parent_at:
            answer = json.loads(json.dumps(answer))
            answer["responses"][0] = {
                "status": 429,
                "error": {"type": "search_phase_execution_exception", "reason": "", "phase": "fetch", "caused_by": PARENT_TRIP},
            }
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


def test_a_trip_of_another_client_is_not_this_coverages_floor(context, tmp_path):
    """On a shared cluster the node's trip count rises with other clients' trips: a coverage that fails for another
    reason meanwhile fails the cell; it is not read as "too low" (which once gave 10 MB for a 150 KB need)."""
    cluster = BreakerCluster(context, 150_000, fail_at=9, foreign_trips=True)
    result = run(cluster, params(context, tmp_path))
    assert result["success"] is False and "failed without tripping the request breaker" in result["error-description"]
    assert cluster.persistent is None


def test_the_bisection_ends_at_any_resolution(context, tmp_path):
    """A resolution finer than one byte in the need once held the cluster at a bisected limit forever."""
    cluster = BreakerCluster(context, 150_000)
    result = run(cluster, params(context, tmp_path, resolution=1e-6))
    assert result["success"] is True
    assert result["below-bytes"] < 150_000 <= result["floor-bytes"] <= result["below-bytes"] + 64
    assert cluster.persistent is None


@pytest.mark.parametrize(
    "error,tripped",
    [
        ({"type": "circuit_breaking_exception", "reason": "[request] Data too large, data for [<reused_arrays>]"}, {"request"}),
        (
            {
                "type": "search_phase_execution_exception",
                "root_cause": [{"type": "circuit_breaking_exception", "reason": "[request] Data too large"}],
            },
            {"request"},
        ),
        ([{"shard": 0, "reason": {"type": "circuit_breaking_exception", "reason": "[request] Data too large"}}], {"request"}),
        ({"type": "circuit_breaking_exception", "reason": "[parent] Data too large, real usage"}, {"parent"}),
        ({"type": "search_phase_execution_exception", "reason": "", "caused_by": PARENT_TRIP}, {"parent"}),
        ({"type": "es_rejected_execution_exception", "reason": "rejected"}, set()),
        ({"type": "illegal_argument_exception", "reason": "[request] Data too large"}, set()),
        ("[request] Data too large", set()),
    ],
)
def test_a_trip_is_read_from_the_breaker_that_rejected_this_request(error, tripped):
    assert tripped_breakers(error) == tripped


def test_an_error_without_a_reason_is_described_by_its_cause():
    assert described({"type": "search_phase_execution_exception", "reason": "", "caused_by": PARENT_TRIP}) == (
        f"search_phase_execution_exception, caused by circuit_breaking_exception: {PARENT_TRIP['reason']}"
    )
    assert described({"type": "search_phase_execution_exception", "reason": "all shards failed"}) == (
        "search_phase_execution_exception: all shards failed"
    )
    # the 429 of HDR terms at 1000 nodes on a 1 GB heap (race b7d9ad4e): its shards' cause is the breaker's
    all_failed = {
        "type": "search_phase_execution_exception",
        "reason": "all shards failed",
        "failed_shards": [{"shard": 0, "index": "cluster-metrics", "reason": PARENT_TRIP}],
    }
    assert (
        described(all_failed)
        == f"search_phase_execution_exception: all shards failed, shard 0: circuit_breaking_exception: {PARENT_TRIP['reason']}"
    )


@pytest.mark.parametrize("parent_at", [2, 7])
def test_a_parent_breaker_trip_is_no_floor_and_names_the_heap(context, tmp_path, parent_at):
    """The parent breaker (the heap in use, garbage included) rejecting a coverage at the node's own limit or midway
    fails the cell naming the heap: the bisection neither reads it as "too low" nor tries the limit again."""
    cluster = BreakerCluster(context, 150_000, persistent="55%", parent_at=parent_at)
    result = run(cluster, params(context, tmp_path))
    assert result["success"] is False and cluster.coverages == parent_at
    assert "[parent] Data too large" in result["error-description"]
    if parent_at > 3:  # after the baseline's 3 coverages at the node's own limit
        assert "the parent breaker rejected a coverage" in result["error-description"] and "HEAP=2g" in result["error-description"]
    else:
        assert "fails at the node's own limit" in result["error-description"] and cluster.puts == []
    assert cluster.persistent == "55%" and cluster.notes in (None, {})


def test_the_limit_is_noted_on_the_cluster_before_it_changes_and_the_note_goes_after(context, tmp_path):
    cluster = BreakerCluster(context, 150_000, persistent="59%")
    first_put = []

    class Watching(BreakerCluster):
        async def perform_request(self, method, path, params=None, body=None, headers=None):
            if path == "/_cluster/settings" and method == "PUT" and not first_put:
                first_put.append(dict(self.notes or {}))
            return await super().perform_request(method, path, params, body, headers)

    cluster = Watching(context, 150_000, persistent="59%")
    assert run(cluster, params(context, tmp_path))["success"] is True
    assert first_put == [{BREAKER_SETTING: {"setting": BREAKER_SETTING, "original": "59%"}}]
    assert cluster.notes == {} and cluster.persistent == "59%"


def test_a_limit_a_killed_race_left_is_put_back_before_anything_is_measured(context, tmp_path):
    """The note a killed load driver left says 59%; the cluster still has the bisection's 149107b."""
    cluster = BreakerCluster(context, 150_000, persistent="149107b")
    cluster.notes = {BREAKER_SETTING: {"setting": BREAKER_SETTING, "original": "59%"}}
    assert run(cluster, params(context, tmp_path))["success"] is True
    assert cluster.puts[0] == "59%" and cluster.persistent == "59%" and cluster.notes == {}


@pytest.mark.parametrize("broken", ["restore put", "read back"])
def test_a_restore_that_fails_is_loud_and_names_the_value_to_set(context, tmp_path, broken):
    class Broken(BreakerCluster):
        async def perform_request(self, method, path, params=None, body=None, headers=None):
            restoring = path == "/_cluster/settings" and method == "PUT" and body["persistent"][BREAKER_SETTING] == "55%"
            if restoring and broken == "restore put":
                raise ConnectionResetError("reset by peer")
            answer = await super().perform_request(method, path, params, body, headers)
            if restoring:
                self.persistent = "1024b"  # the put was acknowledged, yet the value reads otherwise
            return answer

    cluster = Broken(context, 150_000, persistent="55%")
    with pytest.raises(RestoreError) as raised:
        run(cluster, params(context, tmp_path))
    assert BREAKER_SETTING in str(raised.value) and '"55%"' in str(raised.value)
    assert cluster.notes == {BREAKER_SETTING: {"setting": BREAKER_SETTING, "original": "55%"}}  # the next race restores


@pytest.mark.parametrize("fail_at", [None, 7])
def test_the_sample_carries_every_coverages_records_so_a_store_rebuilds_the_same_folder(context, tmp_path, fail_at):
    """A metrics store keeps each sample's record operations, not the load driver's files: the floor's sample, passed
    or failed, carries the validation row of every coverage it ran (at the node's limit and at each bisection step)
    and its memory row, and replaying them rebuilds the same lines."""
    validation = tmp_path / records.VALIDATION  # the race's record folder (params: tmp_path)
    cluster = BreakerCluster(context, 150_000, fail_at=fail_at)
    result = run(cluster, params(context, tmp_path))
    assert result["success"] is (fail_at is None)
    written = validation.read_text().splitlines()
    assert len(written) == cluster.coverages
    rebuilt = tmp_path / "rebuilt"
    records.replay(str(rebuilt), [result[records.META_KEY]])
    assert (rebuilt / records.VALIDATION).read_text().splitlines() == written
    if fail_at is None:
        assert (rebuilt / records.MEMORY).read_text() == (tmp_path / records.MEMORY).read_text()
