"""The layout sweep's single-document indexing with a stub client: each client's slice of the corpus file, one
document per request, every check of the answer fed a wrong one (not created, a shard failure, fewer copies, an HTTP
429, a connection error), and the count check against the documents acknowledged."""

import asyncio
import json
import re
import shutil
from pathlib import Path

import elasticsearch
import pytest
from esrally.track import track as track_model

from runners.contracts import parameters
from runners.contracts.context import CONTEXT_KEY
from runners.shared.index_body import FreshIndexBodyParamSource
from runners.studies import single_doc
from runners.studies.layouts import record_name
from runners.studies.single_doc import SingleDoc, SingleDocCount, SingleDocParamSource, SingleDocSetup, per_second, validate_single_doc
from tests.conftest import rendered_challenges, rendered_tasks
from tests.runners.stub_client import StubClient

LAYOUT = "2S1R"
INDEX = single_doc.single_doc_index(LAYOUT)


@pytest.fixture
def fresh(context):
    """The context with no single-document records yet (the module's context is shared by its tests)."""
    shutil.rmtree(Path(context.record_dir) / single_doc.OUTCOMES_DIR, ignore_errors=True)
    (Path(context.record_dir) / record_name(LAYOUT)).unlink(missing_ok=True)
    return context


def operation(context, **extra):
    return {CONTEXT_KEY: context.as_param(), "index": INDEX, "layout": LAYOUT, "copies": 2, "epoch": 1, **extra}


def documents(context, clients):
    """Each client's documents, as its partition of the parameter source hands them out until its slice ends (one
    dict per document: the call's parameters with its line and body)."""
    source = SingleDocParamSource(None, operation(context))
    found = []
    for i in range(clients):
        part, mine = source.partition(i, clients), []
        while True:
            try:
                call = part.params()
            except StopIteration:
                break
            assert 1 <= len(call["documents"]) <= single_doc.DOCS_PER_CALL
            mine += [{**call, "line": line, "body": body} for line, body in call["documents"]]
        found.append(mine)
    return found


def test_each_client_sends_its_own_slice_of_the_epochs_corpus_file(context):
    lines = context.corpus_file(1).read_bytes().splitlines()
    assert len(lines) == context.epoch_docs["1"]
    slices = documents(context, 3)
    assert [len(s) for s in slices] == [30, 30, 30]
    # client i: lines i, i + 3, ... of the file, each the document's bytes as the bulk ingest reads them
    assert [p["body"] for p in slices[1]] == lines[1::3]
    assert sorted(p["line"] for s in slices for p in s) == list(range(1, len(lines) + 1))
    first = slices[2][0]
    assert first["index"] == INDEX and first["copies"] == 2 and first["client"] == 2 and first["epoch"] == 1
    assert json.loads(first["body"])["epoch"] == 1


def created(total=2, successful=2, failed=0, result="created"):
    return (201, {"_index": INDEX, "_id": "abc", "result": result, "_shards": {"total": total, "successful": successful, "failed": failed}})


def send(context, answer, **extra):
    """One request of client 0 with this answer; the runner's result and the stub client."""
    client = StubClient([answer])
    first = documents(context, 1)[0][0]
    params = {**first, "documents": [(first["line"], first["body"])], **extra}
    return asyncio.run(SingleDoc()(client, params)), client


def outcomes(context):
    return [outcome for _, _, outcome in single_doc.read_outcomes(context.record_dir, LAYOUT)]


def test_an_acknowledged_document_is_one_doc_of_throughput_sent_without_retries(fresh):
    result, client = send(fresh, created())
    assert result["success"] is True and result["weight"] == 1 and result["unit"] == "docs"
    assert result["doc-id"] == "abc" and result["shards-successful"] == 2
    (request,) = client.sent
    assert request["method"] == "POST" and request["path"] == f"/{INDEX}/_doc"
    assert request["body"] == fresh.corpus_file(1).read_bytes().splitlines()[0]  # the document's bytes, no bulk action
    assert client.options_seen[0]["max_retries"] == 0 and client.options_seen[0]["retry_on_status"] == ()
    assert outcomes(fresh) == [single_doc.OK]


@pytest.mark.parametrize(
    "answer,said,acknowledged",
    [
        (created(result="updated"), "result 'updated', not \"created\"", False),
        (created(failed=1, successful=1), "_shards.failed 1; _shards.successful 1 of total 2, the layout has 2 copies", True),
        (created(total=2, successful=1), "_shards.successful 1 of total 2, the layout has 2 copies", True),
        (created(total=3, successful=3), "_shards.successful 3 of total 3, the layout has 2 copies", True),
    ],
)
def test_a_wrong_answer_is_a_failed_sample_naming_it(fresh, answer, said, acknowledged):
    result, _ = send(fresh, answer)
    assert result["success"] is False and result["weight"] == 0 and result["unit"] == "docs"
    assert result["error-description"] == f"layout {LAYOUT} client 0: epoch 1 line 1: {said}"
    # the document is in the index when Elasticsearch created it, whatever its copies: the count check counts it
    (line,) = single_doc.read_outcomes(fresh.record_dir, LAYOUT)
    assert line[2] == single_doc.WRONG and (line[1] is not None) == acknowledged


def test_an_http_429_is_a_failed_sample_not_retried(fresh):
    rejected = {"error": {"type": "es_rejected_execution_exception", "reason": "rejected execution of write"}, "status": 429}
    result, client = send(fresh, (429, rejected))
    assert result["success"] is False and result["http-status"] == 429 and result["error-type"] == "http"
    assert result["error-description"] == (
        f"layout {LAYOUT} client 0: epoch 1 line 1: HTTP 429 (es_rejected_execution_exception: rejected execution of write); not retried"
    )
    assert len(client.sent) == 1 and outcomes(fresh) == [single_doc.HTTP]


@pytest.mark.parametrize(
    "error,said",
    [
        (elasticsearch.ConnectionError("Connection reset by peer"), "connection failed: Connection reset by peer"),
        (elasticsearch.ConnectionTimeout("timed out"), "no complete answer within the request timeout of 120 s"),
    ],
)
def test_a_connection_error_is_a_failed_sample(fresh, error, said):
    result, client = send(fresh, error)
    assert result["success"] is False and result["error-type"] == "network"
    assert result["error-description"] == f"layout {LAYOUT} client 0: epoch 1 line 1: {said}; not retried"
    assert client.marks == ["end"] and outcomes(fresh) == [single_doc.NETWORK]


def test_a_malformed_answer_is_a_failed_sample(fresh):
    result, _ = send(fresh, (201, {"result": "created"}))
    assert result["success"] is False and "malformed answer (KeyError" in result["error-description"]


DELETED = (200, {"acknowledged": True})


def count(context, index_count, clients=4):
    client = StubClient([(200, {"_shards": {"total": 2, "successful": 2, "failed": 0}}), (200, {"count": index_count}), DELETED])
    params = {CONTEXT_KEY: context.as_param(), "index": INDEX, "layout": LAYOUT, "clients": clients}
    return asyncio.run(SingleDocCount()(client, params)), client


def test_the_count_check_compares_the_index_with_the_acknowledged_documents(fresh):
    for answer in (created(), created(), created(total=2, successful=1), (429, {"error": "busy"})):
        send(fresh, answer)
    result, client = count(fresh, 3)
    assert result["success"] is True and result["count"] == 3 and result["acknowledged"] == 3
    # counted, then the index deleted by name: no step of its own, no cluster privilege to lift destructive_requires_name
    assert [(r["method"], r["path"]) for r in client.sent] == [
        ("POST", f"/{INDEX}/_refresh"),
        ("GET", f"/{INDEX}/_count"),
        ("DELETE", f"/{INDEX}"),
    ]
    section = json.loads((Path(fresh.record_dir) / record_name(LAYOUT)).read_text())[single_doc.RECORD_KEY]
    assert section["requests"] == 4 and section["outcomes"] == {"ok": 2, "wrong": 1, "http": 1} and section["clients"] == 4
    assert section["index"] == INDEX and section["count"] == 3
    lost, _ = count(fresh, 2)
    assert lost["success"] is False and lost["error-description"] == f"index {INDEX} holds 2 documents, Elasticsearch acknowledged 3"


def test_the_count_check_names_the_requests_without_an_answer(fresh):
    send(fresh, created())
    send(fresh, elasticsearch.ConnectionError("Connection reset by peer"))
    result, _ = count(fresh, 2)
    assert result["success"] is False
    assert "holds 2 documents, Elasticsearch acknowledged 1; 1 request(s) got no answer (network)" in result["error-description"]


def test_no_acknowledged_document_at_all_fails_the_check(fresh):
    result, client = count(fresh, 0)
    assert result["success"] is False and "no document was acknowledged" in result["error-description"]
    assert client.sent[-1]["method"] == "DELETE"  # a failed count leaves no index behind either


def test_the_count_check_deletes_the_index_even_when_the_count_cannot_be_read(fresh):
    client = StubClient([(200, {}), (503, {"error": "unavailable"}), DELETED])
    params = {CONTEXT_KEY: fresh.as_param(), "index": INDEX, "layout": LAYOUT, "clients": 4}
    with pytest.raises(elasticsearch.ApiError):
        asyncio.run(SingleDocCount()(client, params))
    assert client.sent[-1] == {
        "method": "DELETE",
        "path": f"/{INDEX}",
        "params": {"ignore_unavailable": "true"},
        "body": None,
        "headers": None,
    }


def test_the_setup_recreates_the_index_by_name_and_waits_for_green(fresh):
    body = {"settings": {"index.number_of_shards": 2}, "mappings": {"properties": {}}}
    client = StubClient([DELETED, DELETED, (200, {"status": "green", "timed_out": False})])
    result = asyncio.run(SingleDocSetup()(client, {"indices": [(INDEX, body)], "request-params": {}}))
    assert result["success"] is True
    assert [(r["method"], r["path"]) for r in client.sent] == [
        ("DELETE", f"/{INDEX}"),
        ("PUT", f"/{INDEX}"),
        ("GET", f"/_cluster/health/{INDEX}"),
    ]
    assert client.sent[1]["body"] == body and client.sent[2]["params"]["wait_for_status"] == "green"
    late = StubClient([DELETED, DELETED, (200, {"status": "yellow", "timed_out": True})])
    result = asyncio.run(SingleDocSetup()(late, {"indices": [(INDEX, body)]}))
    assert (
        result["success"] is False and f"index {INDEX} did not reach green health within 60 s (it is yellow)" in result["error-description"]
    )


def test_per_second_samples_leave_the_partial_first_and_last_seconds_out():
    assert per_second([10.9, 11.0, 11.5, 12.2, 12.3, 12.4, 13.1]) == [2, 3]
    assert per_second([]) == [] and per_second([5.5]) == []


def test_load_time_validation_names_the_problem(context):
    validate_single_doc(operation(context), 4, context)
    with pytest.raises(ValueError, match=r"copies must be the layout's replicas \+ 1 \(2\)"):
        validate_single_doc(operation(context, copies=3), 4, context)
    with pytest.raises(ValueError, match="clients must be an integer from 1 to 256.*single_doc_clients"):
        validate_single_doc(operation(context), 0, context)
    with pytest.raises(ValueError, match="epoch 7 is not among this race's corpora"):
        validate_single_doc(operation(context, epoch=7), 4, context)
    with pytest.raises(ValueError, match="index must be cluster-metrics-single-doc-2s1r"):
        validate_single_doc(operation(context, index="cluster-metrics"), 4, context)


@pytest.mark.parametrize(
    "given,said",
    [
        ({"single_doc_clients": 0}, "track parameter single_doc_clients must be an integer from 1 to 256, got 0"),
        ({"single_doc_clients": "4"}, "track parameter single_doc_clients must be an integer from 1 to 256, got '4'"),
        ({"single_doc_seconds": -1}, "track parameter single_doc_seconds must be an integer from 0 to 86400, got -1"),
        ({"single_doc_seconds": 1.5}, "track parameter single_doc_seconds must be an integer from 0 to 86400, got 1.5"),
    ],
)
def test_single_doc_track_parameters_are_checked_by_type_and_range(given, said):
    parameters.check({"single_doc_clients": 8, "single_doc_seconds": 0})
    with pytest.raises(parameters.ParameterError, match=re.escape(said)):
        parameters.check(given)


def test_the_track_spells_each_layouts_single_doc_index_as_the_runner_does():
    layouts = ["1S0R", "2S2R", "3S2R"]
    tasks = list(rendered_tasks(rendered_challenges({"layouts": layouts})["layout-sweep"]))
    mine = [t for t in tasks if "single-doc" in t["operation"]["name"]]
    assert {t["operation"]["index"] for t in mine} == {single_doc.single_doc_index(name) for name in layouts}
    timed = {t["operation"]["layout"]: t for t in mine if t["operation"]["operation-type"] == "single-doc"}
    assert timed["2S2R"]["operation"]["copies"] == 3 and timed["2S2R"]["clients"] == 4 and timed["2S2R"]["time-period"] == 60
    # single_doc_seconds 0 leaves the piece out
    none = rendered_tasks(rendered_challenges({"layouts": layouts, "single_doc_seconds": 0})["layout-sweep"])
    assert not [t for t in none if "single-doc" in t["operation"]["name"]]


def test_the_single_doc_index_is_the_corpus_index_twin_with_the_layouts_shape():
    corpus_index = track_model.Index(
        name="cluster-metrics", body={"settings": {"index.codec": "best_compression"}, "mappings": {"_meta": {"x": 1}, "properties": {}}}
    )
    track = track_model.Track(name="t", indices=[corpus_index])
    settings = {"index.number_of_shards": 2, "index.number_of_replicas": 1}
    params = FreshIndexBodyParamSource(track, {"index": INDEX, "body-of": "cluster-metrics", "settings": settings}).params()
    ((name, body),) = params["indices"]
    assert name == INDEX and body["settings"] == {"index.codec": "best_compression", **settings}
    assert body["mappings"] == {"properties": {}}  # the corpus fingerprint is the corpus index's alone
    assert track.indices[0].name == "cluster-metrics" and "_meta" in track.indices[0].body["mappings"]


def test_a_call_sends_its_documents_one_request_each_and_counts_those_that_passed(fresh):
    """DOCS_PER_CALL documents a call (Rally keeps a sample per call), each its own request and its own outcome; one
    wrong answer makes the call a failed sample that names it, its weight the documents that passed."""
    source = SingleDocParamSource(None, operation(fresh))
    call = source.partition(0, 1).params()
    docs = min(single_doc.DOCS_PER_CALL, fresh.epoch_docs["1"])
    assert [line for line, _ in call["documents"]] == list(range(1, docs + 1))
    call = {**call, "documents": call["documents"][:3]}
    client = StubClient([created(), created(result="updated"), created()])
    result = asyncio.run(SingleDoc()(client, call))
    assert [r["path"] for r in client.sent] == [f"/{INDEX}/_doc"] * 3 and [r["body"] for r in client.sent] == [
        b for _, b in call["documents"]
    ]
    assert result["success"] is False and result["weight"] == 2 and result["requests"] == 3
    assert result["error-description"] == (
        f"layout {LAYOUT} client 0: epoch 1 line 2: result 'updated', not \"created\" (1 of the call's 3 requests had a problem)"
    )
    assert outcomes(fresh) == [single_doc.OK, single_doc.WRONG, single_doc.OK]
