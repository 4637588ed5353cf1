"""Ingest cost and the index checks with a stub client: the epoch's cost is the difference of two /_stats snapshots,
the doc count and the corpus fingerprint are compared exactly, and a mismatch names the fix."""

import asyncio

import pytest

from runners import corpus, records
from runners.context import CONTEXT_KEY
from runners.index_checks import VerifyCorpus, VerifyDocCount
from runners.ingest import IngestCostEpoch, IngestCostStart, epoch_cost
from stub_client import StubClient


def stats(index_ms, docs, refresh_ms=0, merge_ms=0, merged=0, flush_ms=0, replicas=0):
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


def run(runner, client, params):
    return asyncio.run(runner(client, params))


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
    params = {CONTEXT_KEY: context.as_param()}
    run(IngestCostStart(), StubClient([(200, stats(10, 0))]), params)
    records.append_line(context.record_dir, f"{records.TOOK_DIR}/ingest/epoch-1-123.txt", "200")
    records.append_line(context.record_dir, f"{records.TOOK_DIR}/ingest/epoch-1-456.txt", "0")
    records.append_line(context.record_dir, f"{records.TOOK_DIR}/ingest-2S1R/epoch-1-789.txt", "999")  # another record
    result = run(IngestCostEpoch(), StubClient([(200, stats(60, 90, refresh_ms=3, replicas=1))]), {**params, "epoch": 1})
    assert result["success"] and result["docs"] == 90 and result["index-ms"] == 50 and result["bulk-took-ms"] == 200
    row = records.read(context.record_dir, records.INGEST)["epochs"]
    assert [r["epoch"] for r in row] == [1] and row[0]["bulk-requests"] == 2


def test_epoch_without_a_start_snapshot_fails(tmp_path, context):
    ctx = context.as_param() | {"record_dir": str(tmp_path)}
    result = run(IngestCostEpoch(), StubClient([(200, stats(60, 90))]), {CONTEXT_KEY: ctx, "epoch": 1})
    assert result["success"] is False and "ingest-cost-start" in result["error-description"]


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


def test_corpus_check_passes_on_the_right_index(context):
    client = StubClient([(200, mapping(context.fingerprint)), (200, counts(context))])
    assert run(VerifyCorpus(), {"default": client}, {CONTEXT_KEY: context.as_param()})["success"]


def test_corpus_check_reads_the_named_cluster(context):
    remote = StubClient([(200, mapping(context.fingerprint)), (200, counts(context))])
    params = {CONTEXT_KEY: context.as_param(), "cluster": "metrics-remote"}
    assert run(VerifyCorpus(), {"default": StubClient([]), "metrics-remote": remote}, params)["success"]
    assert remote.sent[0]["path"] == "/cluster-metrics/_mapping"
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
        "counts": [(200, mapping(fingerprint)), (200, counts(context, change=1))],
        "missing": [(404, {"error": {"type": "index_not_found_exception", "reason": "no such index"}})],
    }[case]
    with pytest.raises(corpus.CorpusError, match=message) as raised:
        run(VerifyCorpus(), {"default": StubClient(answers)}, {CONTEXT_KEY: context.as_param()})
    assert "ingest it with this race's corpus" in str(raised.value)
