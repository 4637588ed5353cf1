"""Ingest cost and the index checks with a stub client: the epoch's cost is the difference of two /_stats snapshots,
the doc count and the corpus fingerprint are compared exactly, and a mismatch names the fix."""

import asyncio
import json
import re
import time
from types import SimpleNamespace

import pytest

from runners.contracts import corpus, records
from runners.contracts.context import CONTEXT_KEY
from runners.contracts.took_files import read_took_line, recount_bulk_tooks
from runners.studies.index_checks import VerifyCorpus, VerifyDocCount
from runners.studies.ingest import EpochBulk, IngestCostEpoch, IngestSetup, epoch_cost
from tests.runners.stub_client import StubClient


def stats(
    index_ms, docs, refresh_ms=0, merge_ms=0, merged=0, flush_ms=0, replicas=0
):  # parameters: the _stats counters, each a keyword with its default
    return {
        "_all": {
            "primaries": {"indexing": {"index_total": docs}},
            "total": {
                "indexing": {"index_time_in_millis": index_ms, "index_total": docs * (1 + replicas)},
                "refresh": {"total_time_in_millis": refresh_ms},
                "merges": {"total_time_in_millis": merge_ms, "total_size_in_bytes": merged},
                "flush": {"total_time_in_millis": flush_ms},
            },
        }
    }


class BulkClient(StubClient):
    """elasticsearch-py's bulk signature: the documents as operations, or as the deprecated body."""

    async def bulk(self, operations=None, body=None, params=None, **kwargs):
        self.bulk_arguments = [name for name, value in (("operations", operations), ("body", body)) if value is not None]
        raw = (await self.perform_request("POST", "/_bulk", params=params, body=operations if operations is not None else body)).body
        raw.meta = SimpleNamespace(status=200)  # Rally's raw response: the bytes, with the HTTP meta attached
        return raw


def run(runner, client, params):
    return asyncio.run(runner(client, params))


def start(params):
    """The set-up's parameters with no index to create: only the ingest record started (its snapshot and settings)."""
    return {**params, "indices": [], "wait-for-status": "green", "record": records.INGEST}


def test_epoch_cost_is_the_difference_of_two_snapshots():
    before = {"index-ms": 100, "index-docs": 1000, "refresh-ms": 5, "merge-ms": 0, "merged-bytes": 0, "flush-ms": 1}
    after = {"index-ms": 350, "index-docs": 2000, "refresh-ms": 9, "merge-ms": 40, "merged-bytes": 2**21, "flush-ms": 1}
    assert epoch_cost(2, before, after, [200, 0, 200]) == {
        "epoch": 2,
        "docs": 1000,
        "bulk-requests": 3,
        "bulk-took-ms": 400,
        "index-ms": 250,
        "refresh-ms": 4,
        "merge-ms": 40,
        "flush-ms": 0,
        "merged-mb": 2.0,
    }


def test_start_then_epoch_writes_the_epoch_row(context):
    params = {CONTEXT_KEY: context.as_param(), "record": records.INGEST}  # as name_records sets it
    settings = {
        "cluster-metrics": {"settings": {"index.refresh_interval": "-1"}, "defaults": {"index.translog.durability": "REQUEST"}}
    }  # as Elasticsearch 8.17 lists its default
    run(IngestSetup(), StubClient([(200, stats(10, 0)), (200, settings)]), start(params))
    records.append_line(context.record_dir, f"{records.TOOK_DIR}/ingest/epoch-1-123.txt", "200")
    records.append_line(context.record_dir, f"{records.TOOK_DIR}/ingest/epoch-1-456.txt", "0")
    records.append_line(context.record_dir, f"{records.TOOK_DIR}/ingest-2S1R/epoch-1-789.txt", "999")  # another record
    result = run(IngestCostEpoch(), StubClient([(200, stats(60, 90, refresh_ms=3, replicas=1))]), {**params, "epoch": 1})
    assert result["success"] and result["docs"] == 90 and result["index-ms"] == 50 and result["bulk-took-ms"] == 200
    row = records.read(context.record_dir, records.INGEST)["epochs"]
    assert [r["epoch"] for r in row] == [1] and row[0]["bulk-requests"] == 2
    # the settings the ingest ran with, the index's own or Elasticsearch's default
    assert records.read(context.record_dir, records.INGEST)["index-settings"] == {
        "index.refresh_interval": "-1",
        "index.translog.durability": "request",
    }


def test_epoch_without_a_start_snapshot_fails(tmp_path, context):
    ctx = context.as_param() | {"record_dir": str(tmp_path)}
    result = run(IngestCostEpoch(), StubClient([(200, stats(60, 90))]), {CONTEXT_KEY: ctx, "epoch": 1, "record": records.INGEST})
    assert result["success"] is False and "ingest-setup" in result["error-description"]


@pytest.mark.parametrize("count,success", [(180, True), (179, False)])
def test_doc_count_is_exact(context, count, success):
    result = run(VerifyDocCount(), StubClient([(200, {"count": count})]), {CONTEXT_KEY: context.as_param()})
    assert result["success"] is success
    if not success:
        assert result["error-description"] == "index cluster-metrics holds 179 documents, the ingested corpus has 180"


def mapping(fingerprint):
    meta = {"_meta": {corpus.FINGERPRINT_KEY: fingerprint}} if fingerprint else {}
    return {"cluster-metrics": {"mappings": meta}}


def counts(context, change=0):
    truth = context.truth()
    buckets = [
        {
            "key": int(e),
            "node": {"buckets": [{"key": n, "doc_count": truth[e][n]["count"] + (change if n == "N002" else 0)} for n in context.nodes]},
        }
        for e in ("1", "2")
    ]
    return {"aggregations": {"epoch": {"buckets": buckets}}}


SETTINGS = (200, {"cluster-metrics": {"settings": {"index.number_of_shards": "1", "index.number_of_replicas": "0"}}})
NO_NOTES = (404, {"error": {"type": "index_not_found_exception"}})  # no restore note was ever written (runners/shared/restore.py)


def test_corpus_check_puts_back_what_a_killed_race_left_first(context):
    notes = {"hits": {"hits": [{"_source": {"setting": "indices.breaker.request.limit", "original": None}}]}}
    settings = {"persistent": {}, "transient": {}}
    client = StubClient(
        [
            (200, notes),
            (200, {"acknowledged": True}),
            (200, settings),
            (200, {"result": "deleted"}),
            (200, mapping(context.fingerprint)),
            SETTINGS,
            (200, counts(context)),
        ]
    )
    result = run(VerifyCorpus(), {"default": client}, {CONTEXT_KEY: context.as_param()})
    assert result["success"] and result["restored"] == ["indices.breaker.request.limit=None"]
    assert client.sent[1]["body"] == {"persistent": {"indices.breaker.request.limit": None}}


def test_corpus_check_passes_on_the_right_index(context):
    client = StubClient([NO_NOTES, (200, mapping(context.fingerprint)), SETTINGS, (200, counts(context))])
    assert run(VerifyCorpus(), {"default": client}, {CONTEXT_KEY: context.as_param()})["success"]


def test_corpus_check_reads_the_named_cluster(context):
    remote = StubClient([NO_NOTES, (200, mapping(context.fingerprint)), SETTINGS, (200, counts(context))])
    params = {CONTEXT_KEY: context.as_param(), "cluster": "metrics-remote"}
    assert run(VerifyCorpus(), {"default": StubClient([]), "metrics-remote": remote}, params)["success"]
    assert remote.sent[1]["path"] == "/cluster-metrics/_mapping"
    with pytest.raises(corpus.CorpusError, match="--target-hosts names no cluster 'metrics-remote' .*default"):
        run(VerifyCorpus(), {"default": StubClient([])}, params)


@pytest.mark.parametrize(
    "case,message",
    [
        ("no-meta", "it was not created by this track's ingest"),
        ("other-seed", "made with other generator parameters: seed 99 there, 3 here"),
        ("test-mode", "it holds the test_mode files, this race uses the full files"),
        ("counts", "epoch 1 node N002: 31 documents, expected 30"),
        ("missing", "index cluster-metrics does not exist"),
    ],
)
def test_corpus_check_ends_the_race_naming_the_fix(context, case, message):
    fingerprint = dict(context.fingerprint)
    answers = {
        "no-meta": [(200, mapping(None))],
        "other-seed": [(200, mapping(fingerprint | {"generator": fingerprint["generator"] | {"seed": 99}}))],
        "test-mode": [(200, mapping(fingerprint | {"section": "test_mode"}))],
        "counts": [(200, mapping(fingerprint)), SETTINGS, (200, counts(context, change=1))],
        "missing": [(404, {"error": {"type": "index_not_found_exception", "reason": "no such index"}})],
    }[case]
    with pytest.raises(corpus.CorpusError, match=message) as raised:
        run(VerifyCorpus(), {"default": StubClient([NO_NOTES, *answers])}, {CONTEXT_KEY: context.as_param()})
    assert "ingest it with this race's corpus" in str(raised.value)


def test_a_bulk_is_sent_without_client_retries_and_files_its_took(context, tmp_path):
    """The client's default retries (429, 502-504, connection errors) would resend a bulk Elasticsearch may have
    applied already: duplicated documents; the bulk runner turns them off."""

    client = BulkClient([(200, {"took": 7, "errors": False, "items": [{"index": {"status": 201}}] * 2})])
    params = {
        "body": b'{"index":{}}\n{"epoch":1}\n{"index":{}}\n{"epoch":1}\n',
        "action-metadata-present": True,
        "bulk-size": 2,
        "unit": "docs",
        "index": "cluster-metrics",
        "epoch": 1,
        "record-dir": str(tmp_path),
        "record": "ingest.json",
        "client": 3,
    }
    before = time.time()
    result = run(EpochBulk(), client, params)
    assert {
        "max_retries": 0,
        "retry_on_status": (),
        "retry_on_timeout": False,
        "headers": {"accept-encoding": "identity"},
    } in client.options_seen
    assert result["success"] is True and result["weight"] == 2
    (line,) = [p.read_text() for p in tmp_path.rglob("epoch-1-client-3.txt")]  # the client's own file
    took, (started, ended) = read_took_line(line)
    assert took == 7 and before - 0.01 <= started <= ended <= time.time() + 0.01  # the bulk's wall-clock window
    # Rally's runner passes body=, whose deprecation warning costs a stack walk per bulk: it goes out as operations=
    assert client.bulk_arguments == ["operations"] and client.sent[0]["body"] == params["body"]


def _bulk_params(docs=2):
    return {"body": b'{"index":{}}\n{"epoch":1}\n' * docs, "action-metadata-present": True, "bulk-size": docs, "unit": "docs", "index": "x"}


def _es_answer(errors, took, items):
    """A bulk answer as Elasticsearch writes it: compact, `errors` then `took` first."""
    return json.dumps({"errors": errors, "took": took, "items": items}, separators=(",", ":")).encode()


def test_a_clean_bulk_answer_is_read_from_its_head_and_asks_for_no_compression():
    client = BulkClient([(200, _es_answer(False, 9, [{"index": {"status": 201}}] * 2))])
    result = run(EpochBulk(), client, _bulk_params())
    assert result["success"] is True and result["took"] == 9 and result["weight"] == 2 and result["error-count"] == 0
    assert any(o.get("headers") == {"accept-encoding": "identity"} for o in client.options_seen)


@pytest.mark.parametrize(
    "answer",
    [
        _es_answer(True, 3, [{"index": {"status": 201}}, {"index": {"status": 429, "error": {"type": "es_rejected_execution_exception"}}}]),
        # another shape (took first, spaces): the head does not match, Rally's own reading decides
        json.dumps({"took": 3, "errors": True, "items": [{"index": {"status": 201}}, {"index": {"status": 400, "error": "x"}}]}).encode(),
    ],
)
def test_a_bulk_answer_with_errors_or_of_another_shape_is_read_by_rally(answer):
    """Only an answer that says errors:false in its head takes the short way; a failed document is counted as Rally
    counts it, never as a success."""
    result = run(EpochBulk(), BulkClient([(200, answer)]), _bulk_params())
    assert result["success"] is False and result["error-count"] == 1 and result["took"] == 3


STANDARD = {"number_of_shards": 1, "number_of_replicas": 0, "source-mode": "stored"}


@pytest.mark.parametrize(
    "settings,meta,shape,message",
    [
        ({"index.number_of_shards": "3", "index.number_of_replicas": "2"}, {}, STANDARD, "3 shards, this race expects 1"),
        (
            {"index.store.stats_refresh_interval": "1s"},
            {"cluster-metrics-altered": "source-cost: force-merged to one segment"},
            STANDARD,
            "source-cost: force-merged to one segment",
        ),
        (
            {"index.refresh_interval": "-1", "index.translog.durability": "async"},
            {},
            STANDARD,
            "index.refresh_interval -1, left by ingest-tuned",
        ),
        ({"index.mapping.source.mode": "synthetic"}, {}, STANDARD, "_source synthetic, this race expects stored"),
    ],
)
def test_the_corpus_check_refuses_an_index_in_another_shape(context, settings, meta, shape, message):
    """After layout-sweep (3S2R), source-cost (force-merged), an aborted ingest-tuned or source-cost (synthetic left):
    the same corpus, but not the index a query challenge measures."""
    answer = {"cluster-metrics": {"settings": {"index.number_of_shards": "1", "index.number_of_replicas": "0", **settings}}}
    body = mapping(context.fingerprint)
    body["cluster-metrics"]["mappings"]["_meta"].update(meta)
    client = StubClient([NO_NOTES, (200, body), (200, answer), (200, counts(context))])
    with pytest.raises(corpus.CorpusError, match="not in the shape this challenge measures") as raised:
        run(VerifyCorpus(), {"default": client}, {CONTEXT_KEY: context.as_param(), "shape": shape})
    assert message in str(raised.value) and "ingest-baseline" in str(raised.value)


def test_source_cost_accepts_its_own_force_merged_index(context):
    answer = {
        "cluster-metrics": {
            "settings": {
                "index.number_of_shards": "1",
                "index.number_of_replicas": "0",
                "index.store.stats_refresh_interval": "1s",
                "index.mapping.source.mode": "synthetic",
            }
        }
    }
    body = mapping(context.fingerprint)
    body["cluster-metrics"]["mappings"]["_meta"]["cluster-metrics-altered"] = "source-cost: force-merged to one segment"
    client = StubClient([NO_NOTES, (200, body), (200, answer), (200, counts(context))])
    shape = {**STANDARD, "source-mode": "synthetic", "altered-by": "source-cost"}
    assert run(VerifyCorpus(), {"default": client}, {CONTEXT_KEY: context.as_param(), "shape": shape})["success"]


def test_a_folder_rebuilt_from_sample_meta_counts_every_load_driver_hosts_tooks(context, tmp_path):
    """Two load-driver hosts: each bulk's took lands in its own host's folder, and the epoch task (on the first host)
    counts only that host's. The samples' meta in a metrics store holds both; the rebuilt folder counts all."""
    first, second, rebuilt = (str(tmp_path / name) for name in ("first-host", "second-host", "rebuilt"))
    samples = []  # each sample's meta, in order, as the metrics store keeps it

    def bulk(record_dir, took, client_index):
        client = BulkClient([(200, {"took": took, "errors": False, "items": [{"index": {"status": 201}}]})])
        params = {"body": b'{"index":{}}\n{"epoch":1}\n', "action-metadata-present": True, "bulk-size": 1, "unit": "docs"}
        params |= {"index": "i", "epoch": 1, "record-dir": record_dir, "record": "ingest.json", "client": client_index}
        samples.append(run(EpochBulk(), client, params))

    params = {CONTEXT_KEY: context.as_param() | {"record_dir": first}, "record": records.INGEST}
    samples.append(run(IngestSetup(), StubClient([(200, stats(10, 0)), (200, {"i": {"settings": {}}})]), start(params)))
    bulk(first, 30, 0)
    bulk(second, 12, 1)
    samples.append(run(IngestCostEpoch(), StubClient([(200, stats(60, 2))]), {**params, "epoch": 1}))
    assert samples[-1]["bulk-took-ms"] == 30  # the first host's files only

    records.replay(rebuilt, [meta[records.META_KEY] for meta in samples if records.META_KEY in meta])
    recount_bulk_tooks(rebuilt)
    (row,) = records.read(rebuilt, records.INGEST)["epochs"]
    assert row["bulk-took-ms"] == 42 and row["bulk-requests"] == 2 and row["index-ms"] == 50 and row["docs"] == 2


@pytest.mark.parametrize("name", ["../outside.json", "/tmp/outside.json"])
def test_a_record_operation_outside_the_folder_is_refused(tmp_path, name):
    with pytest.raises(ValueError, match="outside the race's record folder"):
        records.replay(str(tmp_path / "rebuilt"), [json.dumps([{"write": name, "data": {}}])])
    assert not (tmp_path / "outside.json").exists()


class FakeCluster(StubClient):
    """One index as the ingest task sees it: an index left by an earlier ingest at first (not this ingest's mark),
    bulks add their documents after a short, client-dependent delay (so the clients interleave), /_stats counts what
    is indexed, and every full snapshot the recorder takes notes the count."""

    def __init__(self, lose=()):
        super().__init__([])
        self.indexed, self.snapshots, self.lose, self.calls, self.meta = 500, [], set(lose), 0, {"cluster-metrics-ingest": "old"}
        self.counts, self.lag, self.lag_counts = 0, 0, 0
        self.answer_delay = 0  # seconds between a bulk's documents being indexed and its answer leaving

    def client(self):
        return BulkClientOf(self)

    async def answer(self, method, path, body):
        if path == "/cluster-metrics" and method == "DELETE":
            self.meta = None
            return {"acknowledged": True}
        if path == "/cluster-metrics" and method == "PUT":
            self.meta, self.indexed, self.starting = body["mappings"]["_meta"], 0, True
            return {"acknowledged": True}
        if path.endswith("/_stats/indexing") and getattr(self, "starting", False):
            self.starting = False  # a new index's shards not yet started: its stats have no primaries' figures
            return {"_all": {"primaries": {}, "total": {}}}
        if self.meta is None and path.startswith("/cluster-metrics/"):
            raise HTTP_EXCEPTIONS[404](message="index_not_found_exception", meta=_meta(404), body={"error": "no such index"})
        if path.endswith("/_mapping"):
            return {"cluster-metrics": {"mappings": {"_meta": self.meta}}}
        if path.endswith("/_settings") and method == "GET":
            return {"cluster-metrics": {"settings": {}}}
        if path.startswith("/_cluster/health"):
            return {"status": "green", "timed_out": False}
        if path == "/_bulk":
            self.calls += 1
            call, docs = self.calls, body.count(b"\n") // 2
            await asyncio.sleep(0.001 * (call % 3))
            # this bulk's own number, taken before the sleep: read after it, another client's bulk sent meanwhile had
            # moved the count on, and on a loaded machine no bulk was lost at all (a CI run: no sample failed)
            if call in self.lose:  # a bulk whose documents never arrive: Elasticsearch rejected them
                return {"took": 1, "errors": True, "items": [{"index": {"status": 429, "error": {"type": "rejected"}}}] * docs}
            self.indexed += docs
            await asyncio.sleep(self.answer_delay)  # counted already: the recorder's wait may see them before the answer
            return {"took": 1, "errors": False, "items": [{"index": {"status": 201}}] * docs}
        if path.endswith("/_stats/indexing"):
            return stats(0, self.indexed)
        if "/_stats/" in path:
            self.snapshots.append(self.indexed)
            return stats(self.indexed, self.indexed)
        if path.endswith("/_count"):
            self.counts += 1  # a replica still applying the last bulk answers the first lag_counts counts short
            return {"count": self.indexed - (self.lag if self.counts <= self.lag_counts else 0)}
        return {"acknowledged": True}


class BulkClientOf(BulkClient):
    """A client of the fake cluster, as Rally hands one to each of the task's clients."""

    def __init__(self, cluster):
        super().__init__([])
        self.cluster = cluster

    async def perform_request(self, method, path, params=None, body=None, headers=None):
        self.sent.append({"method": method, "path": path, "params": params, "body": body})
        from tests.runners.stub_client import Response

        answer = await self.cluster.answer(method, path, body)
        return Response(RawBody(json.dumps(answer).encode(), self) if path == "/_bulk" else answer)


def client_bulks(epoch_docs, clients, client, bulk_size):
    """What IngestEpochsParamSource hands one client: its slice of each epoch (Rally's bounds), in bulks."""
    for epoch, docs in epoch_docs.items():
        start, end = round(docs / clients * client), round(docs / clients * (client + 1))
        sizes = [min(bulk_size, end - s) for s in range(start, end, bulk_size)]
        for i, size in enumerate(sizes):
            yield epoch, i == 0, size


def ingest(
    tmp_path, context, epoch_docs, clients, lose=(), timeout=5, lag=(0, 0), answer_delay=0
):  # parameters: a fake cluster's faults, each a keyword with its default
    """Every client's bulks through one IngestEpochs runner at once; each sample as Rally would get it. lag: (documents,
    counts): the first counts of the index answer that many documents short (a replica still applying a bulk).
    answer_delay: seconds each bulk's answer takes after its documents are indexed."""
    from runners.studies.ingest import IngestEpochs

    cluster, runner, samples = FakeCluster(lose), IngestEpochs(), []
    (cluster.lag, cluster.lag_counts), cluster.answer_delay = lag, answer_delay
    race_dir = tmp_path / "races" / "race-1"
    ctx = context.as_param() | {"record_dir": str(race_dir / "cluster-metrics"), "epoch_docs": {str(e): d for e, d in epoch_docs.items()}}

    async def one(client):
        es, bulks = cluster.client(), list(client_bulks(epoch_docs, clients, client, 2))
        for n, (epoch, first, size) in enumerate(bulks):
            params = {"body": b'{"index":{}}\n{"x":1}\n' * size, "action-metadata-present": True, "bulk-size": size, "unit": "docs"}
            last_of_epoch = n == len(bulks) - 1 or bulks[n + 1][0] != epoch
            params |= {"index": "cluster-metrics", "epoch": epoch, "first-of-epoch": first, "last": n == len(bulks) - 1}
            params |= {"last-of-epoch": last_of_epoch}
            params |= {"epochs": list(epoch_docs), "epoch-docs": ctx["epoch_docs"], "client": client, "clients": clients}
            params |= {"record-dir": ctx["record_dir"], "record": "ingest.json", "request-timeout": timeout, CONTEXT_KEY: ctx}
            params |= {"indices": [("cluster-metrics", {"settings": {}})], "wait-for-status": "green"}
            samples.append(await runner(es, params))

    async def all_clients():
        await asyncio.gather(*(one(c) for c in range(clients)))

    asyncio.run(all_clients())
    return cluster, samples, records.read(ctx["record_dir"], "ingest.json")


from elasticsearch.exceptions import HTTP_EXCEPTIONS  # noqa: E402

from tests.runners.stub_client import RawBody, _meta  # noqa: E402


@pytest.mark.parametrize("clients", [1, 3])
def test_one_ingest_task_records_each_epoch_at_its_exact_boundary(tmp_path, context, clients):
    """The epochs' boundaries without Rally's join points: every snapshot the recorder takes holds exactly the
    documents of the epochs so far, however the clients interleave, and the count is checked after the last."""
    epoch_docs = {1: 10, 2: 7, 3: 5}
    cluster, samples, record = ingest(tmp_path, context, epoch_docs, clients)
    assert all(s["success"] for s in samples), [s.get("error-description") for s in samples if not s["success"]]
    # the index set up afresh and marked as this race's ingest (the clients waited for the mark, not the old index);
    # one snapshot at the start (0 documents), then one per epoch at its boundary
    assert cluster.meta == {"cluster-metrics-ingest": "race-1/ingest.json"}
    assert cluster.snapshots == [0, 10, 17, 22]
    assert [(r["epoch"], r["docs"], r["bulk-requests"]) for r in record["epochs"]] == [
        (e, d, sum(1 for c in range(clients) for b in client_bulks({e: d}, clients, c, 2))) for e, d in epoch_docs.items()
    ]
    assert record["count"] == {"actual": 22, "expected": 22}
    for row in record["epochs"]:  # the epoch's wall: its bulks' windows, every client's
        assert 0 <= row["wall-s"] and row["processing-s"] >= 0


def test_the_recorder_sums_an_epochs_tooks_once_every_client_has_filed_them(tmp_path, context):
    """Each bulk's documents are counted 50 ms before its answer reaches its client and the client files its took (as
    Elasticsearch counts them before it answers): the recorder, whose wait for the count ends first, still sums every
    client's tooks of each epoch, since it waits for each client's marker that its epoch's tooks are filed. A
    test-mode ingest-changes race once recorded an epoch one bulk short without it."""
    epoch_docs = {1: 10, 2: 7, 3: 5}
    _, samples, record = ingest(tmp_path, context, epoch_docs, clients=3, answer_delay=0.05)
    assert all(s["success"] for s in samples), [s.get("error-description") for s in samples if not s["success"]]
    assert [(r["epoch"], r["bulk-requests"]) for r in record["epochs"]] == [
        (e, sum(1 for c in range(3) for b in client_bulks({e: d}, 3, c, 2))) for e, d in epoch_docs.items()
    ]
    took_dir = tmp_path / "races" / "race-1" / "cluster-metrics" / records.TOOK_DIR
    assert not list(took_dir.rglob("*.filed"))  # the markers coordinate the race only: none is left in the record


def test_a_client_that_never_files_its_tooks_fails_the_recorders_sample_naming_it(tmp_path, context, monkeypatch):
    """A client whose marker never comes (its process died after its bulk): the recorder's wait ends after
    request-timeout and its sample fails, naming the clients it waited for."""
    from runners.studies import ingest as ingest_module

    mark = ingest_module._mark_filed
    monkeypatch.setattr(ingest_module, "_mark_filed", lambda params, epoch, client: client != 1 and mark(params, epoch, client))
    _, samples, _ = ingest(tmp_path, context, {1: 10, 2: 7}, clients=2, timeout=0.2)
    failed = [s["error-description"] for s in samples if not s["success"]]
    assert any("clients [1] had not filed the tooks of their bulks" in d for d in failed), failed


def test_a_replica_that_catches_up_is_counted_once_it_has_and_a_short_count_that_stays_fails(tmp_path, context):
    """The primaries have indexed every document but a replica answers the count 3 short at first: the count is read
    again until it matches (a clean ingest); a count that stays short past request-timeout fails, naming both."""
    _, samples, record = ingest(tmp_path / "a", context, {1: 10, 2: 7}, clients=2, lag=(3, 4))
    assert all(s["success"] for s in samples) and record["count"] == {"actual": 17, "expected": 17}
    _, samples, record = ingest(tmp_path / "b", context, {1: 10, 2: 7}, clients=2, timeout=0.2, lag=(3, 10**6))
    assert record["count"] == {"actual": 14, "expected": 17}
    assert any("holds 14 documents, the ingested corpus has 17" in s.get("error-description", "") for s in samples), samples


def test_a_lost_bulk_fails_the_ingest_naming_what_the_wait_saw(tmp_path, context):
    """A bulk whose documents never arrive: the waits at the next boundary end after request-timeout, a sample that
    waited fails saying what it saw, and the count check names the difference; nothing hangs. Which wait sees the short
    count depends on the clients' timing: the first whose request-timeout runs out sends its epoch-2 bulk, and that
    bulk may complete the count the other still waits for (a CI run: client 1 timed out first, the recorder then saw 10)."""
    cluster, samples, record = ingest(tmp_path, context, {1: 10, 2: 7}, clients=2, lose={2}, timeout=0.2)
    failed = [s["error-description"] for s in samples if not s["success"]]
    assert "HTTP status: 429" in failed  # the lost bulk's own sample
    waits = ("waiting for all 10 documents of epochs up to it", "waiting for the recorder to finish epoch 1")
    assert any(any(w in d for w in waits) and "had indexed 8 documents" in d for d in failed), failed
    # after a wait timed out, the recorder no longer waits for late clients: the count it checks is short
    assert any(re.search(r"holds 1[0-5] documents, the ingested corpus has 17", d) for d in failed), failed
    assert record["count"]["expected"] == 17 and record["count"]["actual"] < 17
