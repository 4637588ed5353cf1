"""source-large with a stub client (seconds, no node): the documents are the same bytes for the same parameters, every
check of the fetch fails a wrong answer at full scale (10 MB documents) with a description naming what is wrong, the
CBOR answer is kept raw and decoded after the timed window, and the load, count and load-time checks name the
parameter to change."""

import asyncio
import copy
import hashlib
import json
import subprocess
import sys

import cbor2
import elasticsearch
import pytest
from elastic_transport import ApiResponseMeta, HttpHeaders, NodeConfig, SerializationError, SerializerCollection
from elasticsearch.serializer import DEFAULT_SERIALIZERS
from esrally import exceptions
from esrally.client.factory import EsClientFactory

from runners.contracts import parameters, records
from runners.contracts.context import CONTEXT_KEY, RaceContext
from runners.contracts.queries import LARGE_SOURCE_FORMATS, LARGE_SOURCE_INDEX, LARGE_SOURCE_MODES
from runners.shared import wire
from runners.studies import large_source
from runners.studies.coverage import WARMUPS_KEY
from runners.studies.large_source import (
    MIB,
    LargeSourceCreateIndex,
    LargeSourceError,
    LargeSourceFetch,
    LargeSourceFetchParamSource,
    LargeSourceIndex,
    LargeSourceVerify,
    byte_size,
    document,
    made_of,
    validate_large_fetch,
    validate_large_source,
)
from tests.conftest import REPO, rendered_challenges, rendered_tasks
from tests.runners.stub_client import StubClient
from tests.runners.track_load import load, ours

DOC_MB, DOCS, FETCH = 10, 5, 3  # the seed's document size; fewer of them than its 20, for seconds


def params_of(
    tmp_path, mode="returned", fmt="json", doc_mb=DOC_MB, docs=DOCS, fetch=FETCH, warmups=0
):  # parameters: a fetch task's parameters, each a keyword with its default
    """A fetch task's operation parameters as the track processor hands them over."""
    return {
        "name": f"large-fetch-{mode}-{fmt}",
        "index": LARGE_SOURCE_INDEX,
        "mode": mode,
        "format": fmt,
        "doc-mb": doc_mb,
        "docs": docs,
        "fetch-size": fetch,
        "request-timeout": 120,
        CONTEXT_KEY: RaceContext.records_only(str(tmp_path)).as_param(),
        WARMUPS_KEY: warmups,
    }


@pytest.fixture(scope="module")
def sources():
    """The first FETCH documents at full scale, as their _source comes back."""
    return [json.loads(document(n, DOC_MB).body) for n in range(FETCH)]


def answer(mode, sources, change=None):
    """A right answer of the fetch (Elasticsearch's shape), changed by `change` if given."""
    hits = []
    for source in sources:
        hit = {"_index": LARGE_SOURCE_INDEX, "_id": source["id"], "_score": None, "sort": [source["id"]]}
        if mode == "returned":
            hit["_source"] = dict(source)
        elif mode == "filtered":
            hit["_source"] = {"id": source["id"]}
        hits.append(hit)
    body = {"took": 41, "timed_out": False, "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0}, "hits": {"hits": hits}}
    if change:
        body = copy.deepcopy(body)
        change(body)
    return body


def encoded(body, fmt):
    return cbor2.dumps(body) if fmt == "cbor" else json.dumps(body).encode()


def fetch(tmp_path, client, **kwargs):
    source = LargeSourceFetchParamSource(None, params_of(tmp_path, **kwargs))
    return asyncio.run(LargeSourceFetch()(client, source.params()))


def fetch_lines(tmp_path):
    path = tmp_path / records.LARGE_SOURCE_FETCHES
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


# ---------------------------------------------------------------- the documents


def test_the_same_parameters_give_byte_identical_documents_of_the_seeds_shape():
    first, again = document(7, DOC_MB), document(7, DOC_MB)
    assert first.body == again.body and first.digest == again.digest
    assert first.digest.bytes == len(first.body) == DOC_MB * MIB  # exactly large_doc_mb MB as sent
    assert first.digest.sha256 == hashlib.sha256(first.body).hexdigest()
    source = json.loads(first.body)
    assert list(source) == ["id", "content"] and source["id"] == "9781000000078"
    assert sum(int(d) * (3 if k % 2 else 1) for k, d in enumerate(source["id"])) % 10 == 0  # an ISBN-13: its check digit
    assert first.digest.content_bytes / first.digest.bytes > 0.9999  # content: 99.99% of the document, as in the seed
    assert json.dumps(source, separators=(",", ":")).encode() == first.body  # nothing escaped: the bytes are the text
    assert document(8, DOC_MB).body != first.body  # each document its own words
    small = document(7, 1)
    assert small.digest.bytes == MIB and source["content"].startswith(json.loads(small.body)["content"])
    ids = [large_source.doc_id(n) for n in range(DOCS)]
    assert ids == sorted(ids)  # sorting by id is sorting by number: the fetch's expected order


def test_the_documents_are_the_same_in_another_process():
    """No per-process randomness (hash seeds): a load driver and the report agree on what was indexed."""
    script = "from runners.studies.large_source import document; print(document(2, 1).digest.sha256)"
    other = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=True)
    assert other.stdout.strip() == document(2, 1).digest.sha256


# ---------------------------------------------------------------- the fetch


@pytest.mark.parametrize("fmt", LARGE_SOURCE_FORMATS)
@pytest.mark.parametrize("mode", LARGE_SOURCE_MODES)
def test_a_right_answer_passes_and_is_recorded(tmp_path, sources, mode, fmt):
    sent = encoded(answer(mode, sources), fmt)
    client = StubClient([(200, sent)])
    result = fetch(tmp_path, client, mode=mode, fmt=fmt)
    assert result["success"] is True, result.get("error-description")
    assert result["unit"] == "fetches" and result["hits"] == FETCH and result["took"] == 41
    assert result["response-bytes"] == len(sent)
    expected_source = 0 if mode == "excluded" else FETCH * DOC_MB * MIB
    assert result["source-bytes"] == expected_source and (result["mb-per-s"] > 0) is (mode != "excluded")
    request = client.sent[0]
    body = json.loads(request["body"])
    assert body["size"] == FETCH and body["sort"] == [{"id": "asc"}] and body["_source"] == large_source.SOURCE[mode]
    assert request["headers"]["accept"].startswith(f"application/vnd.elasticsearch+{fmt}")
    assert request["headers"]["accept-encoding"] == "identity"  # the response is not gzipped by the node
    assert client.raw and client.bodies[0].read_after == 1  # decoded from the raw bytes, after the request
    (line,) = fetch_lines(tmp_path)
    assert line["task"] == f"large-fetch-{mode}-{fmt}" and line["measured"] is True and line["success"] is True
    assert line["wall-ms"] == result["wall-ms"] and line["source-bytes"] == expected_source


def _content(change):
    def edit(body):
        source = body["hits"]["hits"][1]["_source"]
        source["content"] = change(source["content"])

    return edit


def _one_byte_changed(text):
    middle = len(text) // 2
    return text[:middle] + ("x" if text[middle] != "x" else "y") + text[middle + 1 :]


def _swap(body):
    hits = body["hits"]["hits"]
    hits[0], hits[1] = hits[1], hits[0]


def _shard_failure(body):
    body["_shards"].update(failed=1, successful=0, failures=[{"shard": 0, "reason": {"type": "x", "reason": "disk on fire"}}])


WRONG = [
    ("returned", _content(lambda text: text[:-1]), f"hit 2 (9781000000016): content is {DOC_MB * MIB - 36} bytes, the generated"),
    ("returned", _content(_one_byte_changed), "hit 2 (9781000000016): content's sha256 differs from the generated document's"),
    ("returned", lambda body: body["hits"]["hits"].pop(), "2 hits returned, expected 3"),
    ("returned", _swap, "hit 1 is 9781000000016, expected 9781000000009 by id (the expected documents in another order)"),
    ("returned", lambda body: body["hits"]["hits"][2].pop("_source"), "hit 3 (9781000000023): no _source"),
    ("returned", lambda body: body["hits"]["hits"][0]["_source"].update(id="x"), "_source id 'x', expected 9781000000009"),
    (
        "excluded",
        lambda body: body["hits"]["hits"][0].update(_source={"id": "9781000000009"}),
        "_source returned, the fetch asked for none",
    ),
    ("filtered", lambda body: body["hits"]["hits"][1]["_source"].update(content="words"), "hit 2 (9781000000016): content returned"),
    ("filtered", _shard_failure, "1 of 1 shards failed (disk on fire)"),
    ("excluded", lambda body: body.update(timed_out=True), "timed_out"),
    ("excluded", lambda body: body["hits"]["hits"][2].update(_id="9781000000999"), "hit 3 (9781000000999): not one of the expected"),
]


@pytest.mark.parametrize("fmt", LARGE_SOURCE_FORMATS)
@pytest.mark.parametrize("mode,change,message", WRONG, ids=[w[2][:40] for w in WRONG])
def test_each_wrong_answer_fails_naming_what_is_wrong(tmp_path, sources, mode, change, message, fmt):
    result = fetch(tmp_path, StubClient([(200, encoded(answer(mode, sources, change), fmt))]), mode=mode, fmt=fmt)
    assert result["success"] is False and result["weight"] == 0 and result["unit"] == "fetches"
    assert result["error-type"] == "cluster-metrics-validation"
    assert f"large-fetch-{mode}-{fmt}" in result["error-description"] and message in result["error-description"]
    (line,) = fetch_lines(tmp_path)
    assert line["success"] is False and message in line["error"]  # the report sees the failed sample too


@pytest.mark.parametrize("fmt", LARGE_SOURCE_FORMATS)
def test_an_answer_that_does_not_decode_is_a_failed_sample(tmp_path, fmt):
    garbage = b"\xff\xfe not json and not cbor"
    result = fetch(tmp_path, StubClient([(200, garbage)]), fmt=fmt)
    assert result["success"] is False and "malformed answer" in result["error-description"]


def headers_rallys_client_sends(headers, distribution_version):
    """The headers Rally's asynchronous client (the one a runner gets) hands its transport for a fetch sent with
    `headers` to a cluster of `distribution_version`: after its rewrite of application/json (2.13.0 to the client's
    major, 8; master to the cluster's, 8 or 9). The transport is a stand-in: no request leaves the process."""
    sent = []

    async def perform_request(method, target, **kwargs):
        sent.append(dict(kwargs["headers"]))
        node = NodeConfig("http", "127.0.0.1", 9200)
        meta = ApiResponseMeta(200, "1.1", HttpHeaders({"x-elastic-product": "Elasticsearch"}), 0.0, node)
        return meta, {}  # what both clients unpack of the transport's answer

    async def fetch_once():
        factory = EsClientFactory([{"host": "127.0.0.1", "port": 9200}], {}, distribution_version, distribution_flavor="default")
        es = factory.create_async(client_id=0)
        es.transport.perform_request = perform_request
        try:
            await es.perform_request("POST", f"/{LARGE_SOURCE_INDEX}/_search", headers=dict(headers), body=b"{}")
        finally:
            await es.close()

    asyncio.run(fetch_once())
    (request_headers,) = sent
    return {name: request_headers[name] for name in headers}


def test_a_cbor_answer_is_kept_raw_by_rallys_client_and_its_headers_agree_on_the_version():
    """Rally's client decodes by content type and knows no CBOR: without accept_cbor its transport raises on a CBOR
    answer; with it, the bytes come back raw. The headers already carry compatible-with=8 on both sides, which
    Rally's client sends as they are, to an 8.x and a 9.x cluster alike, on 2.13.0 and on master (Elasticsearch refuses
    a body whose two headers disagree)."""

    class Transport:
        serializers = SerializerCollection(dict(DEFAULT_SERIALIZERS))

    class Client:
        transport = Transport()

    data = cbor2.dumps({"hits": {"hits": []}})
    with pytest.raises(SerializationError):
        Client.transport.serializers.loads(data, "application/vnd.elasticsearch+cbor")
    wire.accept_cbor(Client())
    for mimetype in wire.CBOR_MIMETYPES:
        assert Client.transport.serializers.loads(data, mimetype).read() == data
    plain = {"content-type": "application/json", "accept": "application/json"}  # the rewrite happens, on both Rallies
    assert headers_rallys_client_sends(plain, "8.17.2") == dict.fromkeys(plain, "application/vnd.elasticsearch+json; compatible-with=8")
    for fmt in LARGE_SOURCE_FORMATS:
        headers = large_source.fetch_headers(fmt)
        assert all("compatible-with=8" in headers[h] for h in ("accept", "content-type"))
        for version in ("8.17.2", "9.5.3"):
            assert headers_rallys_client_sends(headers, version) == headers, (fmt, version)


@pytest.mark.parametrize("fmt", LARGE_SOURCE_FORMATS)
def test_an_http_error_is_a_failed_sample_naming_elasticsearchs_reason(tmp_path, fmt):
    error = {"error": {"type": "circuit_breaking_exception", "reason": "[parent] Data too large"}, "status": 429}
    result = fetch(tmp_path, StubClient([(429, encoded(error, fmt))]), fmt=fmt)
    assert result["success"] is False and result["unit"] == "fetches" and result["http-status"] == 429
    assert "HTTP 429 (circuit_breaking_exception: [parent] Data too large); not retried" in result["error-description"]
    assert fetch_lines(tmp_path)[0]["success"] is False


def test_an_error_answer_in_plain_text_is_shown_as_text(tmp_path):
    result = fetch(tmp_path, StubClient([(400, b"no handler found for uri [/x/_search] and method [POST]")]), fmt="cbor")
    assert result["success"] is False and "HTTP 400 (no handler found for uri [/x/_search]" in result["error-description"]


@pytest.mark.parametrize(
    "error,message",
    [
        (elasticsearch.ConnectionTimeout("timed out"), "no complete answer within the request timeout of 120 s"),
        (elasticsearch.ConnectionError("Connection reset by peer"), "connection failed: Connection reset by peer"),
    ],
)
def test_a_network_failure_is_a_failed_sample(tmp_path, error, message):
    client = StubClient([error])
    result = fetch(tmp_path, client)
    assert result["success"] is False and result["error-type"] == "network" and message in result["error-description"]
    assert client.marks == ["end"]  # the failure's moment closes Rally's timing


def test_warmups_are_recorded_as_not_measured(tmp_path, sources):
    source = LargeSourceFetchParamSource(None, params_of(tmp_path, warmups=2))
    client = StubClient([(200, encoded(answer("returned", sources), "json"))] * 3)
    for _ in range(3):
        assert asyncio.run(LargeSourceFetch()(client, source.params()))["success"] is True
    assert [line["measured"] for line in fetch_lines(tmp_path)] == [False, False, True]


# ---------------------------------------------------------------- the index


def index_params(tmp_path, doc_mb=1, docs=3):
    return {k: v for k, v in params_of(tmp_path, doc_mb=doc_mb, docs=docs, fetch=1).items() if k not in ("mode", "format")}


def created(number):
    return 201, {"_index": LARGE_SOURCE_INDEX, "_id": large_source.doc_id(number), "result": "created", "_shards": {"failed": 0}}


def test_each_document_is_one_request_and_the_record_says_what_made_it(tmp_path):
    client = StubClient([created(n) for n in range(3)])
    result = asyncio.run(LargeSourceIndex()(client, index_params(tmp_path)))
    assert result["success"] is True and result["weight"] == 3 and result["unit"] == "docs" and result["bytes"] == 3 * MIB
    assert [r["path"] for r in client.sent] == [f"/{LARGE_SOURCE_INDEX}/_doc/{large_source.doc_id(n)}" for n in range(3)]
    assert [r["body"] for r in client.sent] == [document(n, 1).body for n in range(3)]
    made = records.read(str(tmp_path), records.LARGE_SOURCE_DOCUMENTS)
    assert made["parameters"] == made_of(1, 3) and made["complete"] is True and made["mapping"] == large_source.MAPPING
    for n, doc in enumerate(made["documents"]):
        digest = document(n, 1).digest
        assert (doc["id"], doc["bytes"], doc["sha256"], doc["content-sha256"]) == (
            digest.id,
            digest.bytes,
            digest.sha256,
            digest.content_sha256,
        )


def test_a_document_not_created_fails_naming_it_and_the_record_says_how_far_it_got(tmp_path):
    updated = (200, {"result": "updated", "_shards": {"failed": 0}})
    client = StubClient([created(0), updated])
    result = asyncio.run(LargeSourceIndex()(client, index_params(tmp_path)))
    assert result["success"] is False and "document 2 of 3 (9781000000016, 1048576 bytes)" in result["error-description"]
    made = records.read(str(tmp_path), records.LARGE_SOURCE_DOCUMENTS)
    assert made["complete"] is False and len(made["documents"]) == 1 and "expected result created" in made["failure"]


def test_a_refused_document_is_an_http_failure_naming_it(tmp_path):
    too_large = {"error": {"type": "content_too_long", "reason": "entity too large"}, "status": 413}
    result = asyncio.run(LargeSourceIndex()(StubClient([(413, too_large)]), index_params(tmp_path)))
    assert result["success"] is False and result["unit"] == "docs" and "document 1 of 3" in result["error-description"]
    assert "HTTP 413" in result["error-description"]


def test_the_index_is_created_only_where_a_document_fits_in_one_request(tmp_path):
    nodes = {"nodes": {"a1": {"name": "es-1", "settings": {"http.max_content_length": "5mb"}}, "b2": {"name": "es-2", "settings": {}}}}
    with pytest.raises(LargeSourceError, match=r"node es-1 accepts at most 5242880 bytes .*lower the track parameter large_doc_mb to 4"):
        asyncio.run(LargeSourceCreateIndex()(StubClient([(200, nodes)]), index_params(tmp_path, doc_mb=10)))
    client = StubClient([(200, {"nodes": {"a1": {"name": "es-1", "settings": {}}}}), (200, {"acknowledged": True})])
    result = asyncio.run(LargeSourceCreateIndex()(client, index_params(tmp_path, doc_mb=10)))
    assert result["success"] is True and result["max-content-length"] == 100 * MIB  # Elasticsearch's default
    create = client.sent[1]
    assert create["method"] == "PUT" and create["path"] == f"/{LARGE_SOURCE_INDEX}"
    assert create["body"]["mappings"]["properties"]["content"] == {"type": "text", "index": False}
    assert create["body"]["mappings"]["_meta"][large_source.META_KEY] == made_of(10, 3)


def test_byte_sizes_read_as_elasticsearch_writes_them():
    assert byte_size("100mb") == 100 * MIB and byte_size("1gb") == 2**30 and byte_size("512KB") == 512 * 1024 and byte_size("10") == 10
    with pytest.raises(ValueError):
        byte_size("lots")


def test_the_count_and_the_documents_origin_are_verified(tmp_path):
    def mapping(made):
        return {LARGE_SOURCE_INDEX: {"mappings": {"_meta": {large_source.META_KEY: made}}}}

    params = index_params(tmp_path)
    ok = asyncio.run(LargeSourceVerify()(StubClient([(200, {"count": 3}), (200, mapping(made_of(1, 3)))]), params))
    assert ok["success"] is True
    short = asyncio.run(LargeSourceVerify()(StubClient([(200, {"count": 2}), (200, mapping(made_of(1, 3)))]), params))
    assert short["success"] is False and "holds 2 documents, the challenge indexed 3" in short["error-description"]
    other = asyncio.run(LargeSourceVerify()(StubClient([(200, {"count": 3}), (200, mapping(made_of(10, 3)))]), params))
    assert other["success"] is False and "'large_doc_mb': 10" in other["error-description"]


# ---------------------------------------------------------------- load time


def test_bad_values_are_named_with_their_track_parameter(tmp_path):
    with pytest.raises(
        ValueError, match="asks for 6 documents of the 5 indexed: raise the track parameter large_docs or lower large_fetch_size"
    ):
        validate_large_source(params_of(tmp_path, fetch=6), 1, None)
    with pytest.raises(ValueError, match=r"doc-mb must be an integer from 1 to 99 .*\(track parameter large_doc_mb\)"):
        validate_large_source(params_of(tmp_path, doc_mb=100), 1, None)
    with pytest.raises(ValueError, match="mode must be one of returned, excluded, filtered"):
        validate_large_fetch(params_of(tmp_path, mode="partial"), 1, None)
    with pytest.raises(ValueError, match="runs with one client"):
        validate_large_source(index_params(tmp_path), 2, None)
    with pytest.raises(parameters.ParameterError, match="http.max_content_length"):
        parameters.check({"large_doc_mb": 100})


@pytest.mark.parametrize(
    "track_params,message",
    [
        ({"large_doc_mb": 100}, "track parameter large_doc_mb must be an integer from 1 to 99"),
        ({"large_docs": 0}, "track parameter large_docs must be an integer of at least 1, got 0"),
        ({"large_fetch_size": 10001}, "track parameter large_fetch_size must be an integer from 1 to 10000"),
        ({"large_iterations": "x"}, "track parameter large_iterations must be an integer of at least 1"),
        ({"large_warmup_iterations": -1}, "track parameter large_warmup_iterations must be an integer of at least 0"),
        ({"large_fetch_size": 50}, "Task [large-create-index]: the fetch asks for 50 documents of the 40 indexed"),
    ],
)
def test_the_track_names_a_bad_parameter_before_the_cluster_is_touched(tmp_path, track_params, message):
    with pytest.raises(exceptions.SystemSetupError) as error:
        load(tmp_path, track_params, challenge="source-large")
    assert message in str(error.value)


def test_the_challenge_needs_no_generated_corpus_and_records_in_the_races_folder(tmp_path):
    """source-large makes its own documents: it loads where no corpus was generated, and each of its operations gets
    the race's record folder."""
    track = load(tmp_path, {"large_doc_mb": 1, "large_docs": 4, "large_fetch_size": 2}, challenge="source-large")
    tasks = ours(track, "source-large")
    contexts = {json.dumps(t.operation.params[CONTEXT_KEY], sort_keys=True) for t in tasks}
    (context,) = [RaceContext(**json.loads(c)) for c in contexts]
    assert not context.has_corpus and context.record_dir.endswith("races/r-1/cluster-metrics")
    fetches = [t for t in tasks if t.operation.type == "large-source-fetch"]
    assert [t.name for t in fetches] == [f"large-fetch-{m}-{f}" for m in LARGE_SOURCE_MODES for f in LARGE_SOURCE_FORMATS]
    assert {(t.warmup_iterations, t.iterations, t.operation.params[WARMUPS_KEY]) for t in fetches} == {(2, 10, 2)}


def test_the_schedule_loads_counts_fetches_and_deletes_in_order():
    tasks = list(rendered_tasks(rendered_challenges({"large_iterations": 4})["source-large"]))
    names = [t["operation"]["name"] for t in tasks]
    setup = ["delete-index", "create-index", "index-documents", "refresh", "verify-doc-count"]
    assert names[1:6] == [f"large-{n}" for n in setup] and names[-1] == "large-delete-index-after"
    assert {t["operation"]["index"] for t in tasks[1:]} == {LARGE_SOURCE_INDEX}
    # the settling, then a warm-up pass, over every fetch cell before the first is measured, then the cells
    fetches = [n for n in names if n.startswith("large-fetch-")]
    assert names[6:8] == ["settle", "warm-up-pass"] and len(fetches) == 6
    assert tasks[6]["operation"]["warms"] == tasks[7]["operation"]["warms"] == fetches
    assert {t["iterations"] for t in tasks if "iterations" in t and t["operation"]["name"] not in ("settle", "warm-up-pass")} == {4}
