"""source-large: seed 004 at its scale. Documents of the seed's shape (an isbn-like id and one large text field,
content, 99.99% of the document), generated from the track parameters, indexed one per request into an index of their
own; then the first N of them by id fetched with _source returned, excluded or filtered, as JSON or as CBOR, every
answer checked against the generated documents.

The documents: large_docs of them, each exactly large_doc_mb MB (MB = 2^20 bytes, Elasticsearch's own: its
http.max_content_length "100mb" is 100 x 2^20 bytes) as sent, {"id":"<isbn>","content":"<words>"} in that order
without spaces. The content is English-like words drawn from a fixed vocabulary by a random generator seeded from the
generator's seed and the document's number, so the same parameters give byte-identical documents on any machine (a
1 MB document is the first MB of the 10 MB one, but for its closing bytes). Only ASCII letters, spaces, commas and
full stops: nothing JSON escapes, so the content's length as sent is its length as text.

The mapping (MAPPING): id a keyword (the fetch sorts by it), content a text field with index: false. The seed measures
what handling _source costs, and a fetch reads only the stored _source: an indexed content would add, per 10 MB
document, its analysis into some two million tokens on every load, a larger index and a heavier merge, none of which
the fetch reads. Kept out of the inverted index, content exists only in _source, which is then the whole cost the
fetch shows. (A keyword content could not be indexed at all: a term is at most 32,766 bytes.)
"""

import copy
import functools
import hashlib
import json
import logging
import random
import re
import sys
import time
from collections import namedtuple

import cbor2
import elasticsearch

from runners.contracts import parameters, records, rules
from runners.contracts.context import CONTEXT_KEY, RaceContext
from runners.contracts.queries import LARGE_SOURCE_FORMATS, LARGE_SOURCE_MODES
from runners.contracts.registry import Need, Operation
from runners.shared import results
from runners.shared.validation import CoverageErrors, check_shards
from runners.shared.wire import ACCEPT, CONTENT_TYPE, DECODE, IDENTITY, accept_cbor
from runners.studies.coverage import MALFORMED, MEASURED_KEY, WARMUPS_KEY, http_error, network_error

MIB = 2**20  # source-large's MB, Elasticsearch's own: http.max_content_length "100mb" is 100 x 2^20 bytes
HTTP_MAX_CONTENT_LENGTH = 100 * MIB  # Elasticsearch's default http.max_content_length: one request body at most
MAX_RESULT_WINDOW = 10_000  # Elasticsearch's default index.max_result_window: one search's size at most

LOG = logging.getLogger(__name__)

# ---------------------------------------------------------------- the documents

GENERATOR = {"name": "cluster-metrics large-source", "version": 1, "seed": 4}  # seed 004
# English-like text: the most common English words, some capitalized or followed by a comma or a full stop
_COMMON = (
    "the of and to a in is it you that he was for on are with as his they be at one have this from or had by word but "
    "what some we can out other were all there when up use your how said an each she which do their time if will way "
    "about many then them write would like so these her long make thing see him two has look more day could go come "
    "did number sound no most people my over know water than call first who may down side been now find any new work "
    "part take get place made live where after back little only round man year came show every good me give our under "
    "name very through just form sentence great think say help low line differ turn cause much mean before move right "
    "boy old too same tell does set three want air well also play small end put home read hand port large spell add "
    "even land here must big high such follow act why ask men change went light kind off need house picture try us "
    "again animal point mother world near build self earth father head stand own page should country found answer "
    "school grow study still learn plant cover food sun four between state keep eye never last let thought city tree "
    "cross farm hard start might story saw far sea draw left late run while press close night real life few north"
).split()
WORDS = tuple(_COMMON + [w.capitalize() for w in _COMMON[:40]] + [w + "," for w in _COMMON[40:80]] + [w + "." for w in _COMMON[80:120]])
assert all(re.fullmatch(r"[A-Za-z]+[,.]?", w) for w in WORDS), "a word JSON would escape"
CHUNK_WORDS = 65_536  # words drawn at a time: a chunk is ~0.3 MB

ID_FIELD, CONTENT_FIELD = "id", "content"
MAPPING = {
    "dynamic": "strict",
    "properties": {ID_FIELD: {"type": "keyword"}, CONTENT_FIELD: {"type": "text", "index": False}},
}
# one shard: the fetch's hits come from one shard, no merge of shard results between the nodes; no replica: the index
# is large and lives for one challenge
SETTINGS = {"index.number_of_shards": 1, "index.number_of_replicas": 0}
META_KEY = "cluster-metrics-large-source"  # in the index mapping's _meta: what made the documents (made_of)

Digest = namedtuple("Digest", "id bytes sha256 content_bytes content_sha256")
Document = namedtuple("Document", "digest body")


def made_of(doc_mb, docs):
    """What makes the documents: the generator and the track parameters (the record's and the mapping's _meta)."""
    return {"generator": dict(GENERATOR), "large_doc_mb": doc_mb, "large_docs": docs}


def doc_id(number):
    """The number-th document's id: an ISBN-13 (prefix 978-1, a valid check digit), zero-padded so that sorting by id
    is sorting by number."""
    digits = f"9781{number:08d}"
    check = (10 - sum(int(d) * (3 if k % 2 else 1) for k, d in enumerate(digits)) % 10) % 10
    return f"{digits}{check}"


def _frame(identifier):
    """The document around its content: (prefix, suffix)."""
    return f'{{"{ID_FIELD}":"{identifier}","{CONTENT_FIELD}":"'.encode(), b'"}'


def _content(number, length):
    """length bytes of English-like words, the same for the same document number whatever the length asked."""
    seed = int.from_bytes(hashlib.sha256(f"{GENERATOR['name']}:{GENERATOR['seed']}:{number}".encode()).digest()[:8], "big")
    rng = random.Random(seed)
    chunks, size = [], 0
    while size < length:
        chunk = " ".join(rng.choices(WORDS, k=CHUNK_WORDS)) + " "
        chunks.append(chunk)
        size += len(chunk)
    return "".join(chunks)[:length].encode("ascii")


def document(number, doc_mb):
    """The number-th document (from 0) of large_doc_mb MB: its bytes as sent and its digest."""
    identifier = doc_id(number)
    prefix, suffix = _frame(identifier)
    content = _content(number, doc_mb * MIB - len(prefix) - len(suffix))
    body = prefix + content + suffix
    digest = Digest(identifier, len(body), hashlib.sha256(body).hexdigest(), len(content), hashlib.sha256(content).hexdigest())
    return Document(digest, body)


@functools.lru_cache(maxsize=4)
def expected_digests(doc_mb, count):
    """The digests of the first count documents (the fetch's answer), generated once per process: every fetch task of
    a worker shares them."""
    return tuple(document(n, doc_mb).digest for n in range(count))


def digest_record(digest):
    return {
        "id": digest.id,
        "bytes": digest.bytes,
        "sha256": digest.sha256,
        "content-bytes": digest.content_bytes,
        "content-sha256": digest.content_sha256,
    }


# ---------------------------------------------------------------- requests

# Both formats send the vendor media types of Elasticsearch 8 (runners/shared/wire.py: CONTENT_TYPE, ACCEPT). No
# compression: aiohttp, under Rally's client, offers gzip by default, and Elasticsearch (http.compression, on by default
# without TLS) would then spend the fetch gzipping the response: the seed measures _source, not gzip.
JSON = {"content-type": CONTENT_TYPE, "accept": ACCEPT["json"]}
# what the fetch asks of each hit's _source, by mode (vocabulary.j2's large_source_modes)
SOURCE = {"returned": True, "excluded": False, "filtered": {"excludes": [CONTENT_FIELD]}}
assert tuple(SOURCE) == LARGE_SOURCE_MODES and tuple(ACCEPT) == tuple(DECODE) == LARGE_SOURCE_FORMATS, "vocabulary.j2"
MALFORMED_ANSWER = MALFORMED + (cbor2.CBORError,)
UNIT = "fetches"


def fetch_body(mode, size):
    """The fetch, serialized once: the first `size` documents by id, with _source as `mode` asks."""
    body = {"size": size, "sort": [{ID_FIELD: "asc"}], "query": {"match_all": {}}, "_source": SOURCE[mode], "track_total_hits": False}
    return json.dumps(body).encode()


def fetch_headers(fmt):
    return {"content-type": CONTENT_TYPE, "accept": ACCEPT[fmt], **IDENTITY}


def _options(es, params):
    # no client retries: a rejected or cut request is a failed sample, never retried away inside the timed window
    return es.options(request_timeout=params["request-timeout"], max_retries=0, retry_on_status=(), retry_on_timeout=False)


def _readable(error):
    """An error answer whose body is a CBOR or JSON stream, as a structure the coverage's http_error can name (an
    Elasticsearch error is an object: bytes that decode to anything else stay bytes, which it shows as text)."""
    body = error.body
    if hasattr(body, "read"):
        body = body.read()
    if isinstance(body, bytes):
        for decode in (json.loads, cbor2.loads):
            try:
                decoded = decode(body)
            except MALFORMED_ANSWER:
                continue
            if isinstance(decoded, dict):
                body = decoded
                break
    error.body = body
    return error


# ---------------------------------------------------------------- the index


class LargeSourceError(Exception):
    """The challenge cannot run on this cluster as asked (raised: the race ends, naming the parameter and the fix)."""


def byte_size(text):
    """Elasticsearch's byte size ("100mb", "1gb", "512kb", "2048b") in bytes; raises ValueError."""
    units = {"": 1, "b": 1, "k": 2**10, "kb": 2**10, "m": 2**20, "mb": 2**20, "g": 2**30, "gb": 2**30, "t": 2**40, "tb": 2**40}
    units.update({"p": 2**50, "pb": 2**50})
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*", str(text).lower())
    if not match or match.group(2) not in units:
        raise ValueError(f"not a byte size: {text!r}")
    return int(float(match.group(1)) * units[match.group(2)])


async def max_content_length(es):
    """(bytes, node) of the smallest http.max_content_length among the cluster's nodes (their own setting, else
    Elasticsearch's default): the largest request body any of them accepts."""
    nodes = (await es.perform_request("GET", "/_nodes/settings", params={"flat_settings": "true"})).body.get("nodes", {})
    default = f"{HTTP_MAX_CONTENT_LENGTH // MIB}mb"
    found = [(byte_size(n.get("settings", {}).get("http.max_content_length", default)), n.get("name", i)) for i, n in nodes.items()]
    return min(found) if found else (HTTP_MAX_CONTENT_LENGTH, "the node (default)")


class LargeSourceCreateIndex:
    """Creates source-large's index (its MAPPING and SETTINGS, what made the documents in the mapping's _meta), after
    checking that one document fits in one request: the smallest http.max_content_length of the cluster's nodes must
    hold large_doc_mb MB, else the race ends here naming the parameter and the fix (no document is then sent to be
    refused one by one). Untimed setup; returns 1 op, the limit and the document size."""

    async def __call__(self, es, params):
        index, doc_mb = params["index"], params["doc-mb"]
        limit, node = await max_content_length(es)
        if doc_mb * MIB > limit:
            raise LargeSourceError(
                f"a document of {doc_mb} MB ({doc_mb * MIB} bytes) is one index request, and node {node} accepts at most "
                f"{limit} bytes (http.max_content_length): lower the track parameter large_doc_mb to {max(limit // MIB - 1, 1)} or less, "
                "or raise http.max_content_length in elasticsearch.yml"
            )
        body = {"settings": SETTINGS, "mappings": {**MAPPING, "_meta": {META_KEY: made_of(doc_mb, params["docs"])}}}
        await es.perform_request("PUT", f"/{index}", body=body, headers=JSON)
        return {"weight": 1, "unit": "ops", "success": True, "max-content-length": limit, "document-bytes": doc_mb * MIB}

    def __repr__(self):
        return "large-source-create-index"


class LargeSourceIndex:
    """Indexes every document, one per request (PUT /<index>/_doc/<id>, the pre-serialized bytes), in order; each
    document is generated just before its request, so Rally's service time of the task holds the generation too,
    where each request's own wall (first byte sent to the answer) is timed apart.

    Returns weight = documents indexed, unit "docs", and index-ms (the requests' walls summed); writes what made the
    documents to the race's record (records.LARGE_SOURCE_DOCUMENTS): the parameters, the generator, the mapping, and
    each document's id, byte size and sha256 (of the document and of its content) with its request's wall.

    Errors, each a failed sample naming the document: an answer other than "created", a shard failure, an HTTP error
    status, a network failure (the coverage's error mapping; never retried)."""

    async def __call__(self, es, params):
        index, doc_mb, count = params["index"], params["doc-mb"], params["docs"]
        client = _options(es, params)
        written, failure = [], None
        for number in range(count):
            doc = document(number, doc_mb)
            where = f"{params.get('name')}: document {number + 1} of {count} ({doc.digest.id}, {doc.digest.bytes} bytes)"
            started = time.perf_counter()
            try:
                response = await client.perform_request("PUT", f"/{index}/_doc/{doc.digest.id}", body=doc.body, headers=JSON)
            except elasticsearch.ApiError as e:
                failure = http_error(_readable(e), where, "docs")
                break
            except elasticsearch.TransportError as e:
                es.on_request_end()
                failure = network_error(e, where, params["request-timeout"], "docs")
                break
            seconds = time.perf_counter() - started
            answer = response.body
            if answer.get("result") != "created" or answer.get("_shards", {}).get("failed", 0):
                failure = results.failed(f"{where}: answered {json.dumps(answer)[:300]}, expected result created", unit="docs")
                break
            written.append({**digest_record(doc.digest), "wall-ms": round(seconds * 1000, 3)})
        made = {
            "parameters": made_of(doc_mb, count),
            "python": sys.version.split()[0],
            "index": index,
            "mapping": MAPPING,
            "settings": SETTINGS,
            "complete": failure is None,
            "failure": failure and failure["error-description"],
            "documents": written,
        }
        meta = records.write(RaceContext.of(params).record_dir, records.LARGE_SOURCE_DOCUMENTS, made)
        if failure:
            return {**failure, **meta}
        index_ms = round(sum(d["wall-ms"] for d in written), 3)
        LOG.info("cluster-metrics source-large: %d documents of %d MB indexed, %.0f ms of requests", len(written), doc_mb, index_ms)
        return {
            "weight": len(written),
            "unit": "docs",
            "success": True,
            "index-ms": index_ms,
            "bytes": sum(d["bytes"] for d in written),
            **meta,
        }

    def __repr__(self):
        return "large-source-index"


class LargeSourceVerify:
    """After the load and a refresh: the index holds exactly large_docs documents, made by this generator with these
    parameters (its mapping's _meta), so that a fetch never times documents another race left (a race that skipped the
    setup tasks by tag, say). Untimed; returns 1 op; a difference is a failed sample naming both."""

    async def __call__(self, es, params):
        index, docs = params["index"], params["docs"]
        count = (await es.perform_request("GET", f"/{index}/_count")).body["count"]
        mapping = (await es.perform_request("GET", f"/{index}/_mapping")).body
        found = next(iter(mapping.values()), {}).get("mappings", {}).get("_meta", {}).get(META_KEY)
        wanted = made_of(params["doc-mb"], docs)
        problems = []
        if count != docs:
            problems.append(f"index {index} holds {count} documents, the challenge indexed {docs}")
        if found != wanted:
            problems.append(f"index {index} was made of {found}, this race's documents are made of {wanted}")
        if problems:
            return results.failed("; ".join(problems), meta={"actual": count, "expected": docs})
        return {"weight": 1, "unit": "ops", "success": True, "actual": count, "expected": docs}

    def __repr__(self):
        return "large-source-verify"


# ---------------------------------------------------------------- the fetch


class LargeSourceFetchParamSource:
    """One fetch per call: the request serialized once, and the expected answer (the digests of the first
    large_fetch_size documents, generated on first use: Rally also instantiates parameter sources where it only looks
    for corpora). Operation parameters: index, mode, format, doc-mb, docs, fetch-size, request-timeout; the task's
    warm-up count (WARMUPS_KEY, set by the track processor) tells which calls are measured."""

    def __init__(self, track, params, **kwargs):
        self._fixed = {key: params[key] for key in ("name", "index", "mode", "format", "doc-mb", "docs", "fetch-size", "request-timeout")}
        self._fixed.update(
            {
                "body": fetch_body(params["mode"], params["fetch-size"]),
                "headers": fetch_headers(params["format"]),
                CONTEXT_KEY: params.get(CONTEXT_KEY),
            }
        )
        self._warmups = params.get(WARMUPS_KEY)
        self._next = 0
        self.infinite = True

    def partition(self, partition_index, total_partitions):
        part = copy.copy(self)
        part._next = 0  # each client counts its own warm-ups (Rally's warm-up iterations are per client)
        return part

    def params(self):
        self._next += 1
        measured = None if self._warmups is None else self._next > self._warmups
        expected = expected_digests(self._fixed["doc-mb"], self._fixed["fetch-size"])
        return {**self._fixed, "expected": expected, MEASURED_KEY: measured}


class LargeSourceFetch:
    """One fetch of the first large_fetch_size documents by id, with _source returned (whole), excluded
    ("_source": false) or filtered (excludes content), answered as JSON or as CBOR.

    Measures: the wall from the first byte sent to the last byte received (the request serialized before, the raw
    answer kept: es.return_raw_response(), and a CBOR answer kept raw too, accept_cbor); decoding and checking come
    after the window closes, as in the coverage (runners/studies/coverage.py).

    Every answer is checked: no shard failure, not timed_out; exactly fetch-size hits; their ids the expected ones in
    order (sorted by id); returned: each hit's _source holds only id and content, its id the hit's, its content the
    generated document's exact byte length and sha256; excluded: no hit has a _source; filtered: each _source holds
    its id and nothing else (no content).

    Returns weight 1, unit "fetches", and: took (Elasticsearch's, ms), wall-ms, response-bytes (the answer as it
    came), source-bytes (the stored _source the fetch handled: the documents' sizes summed for returned and filtered,
    which Elasticsearch reads and parses to filter, 0 for excluded), mb-per-s (source MB over the wall, MB = 2^20
    bytes), hits, checks and failed-checks. Each call, warm-ups too, is a line of the race's record
    (records.LARGE_SOURCE_FETCHES) that the report reads.

    Errors, each a failed sample with a description naming the task and, where known, the hit: any check above; an
    answer that does not decode; an HTTP error status and a network failure, mapped as the coverage maps them
    (runners/studies/coverage.py http_error and network_error; never retried)."""

    async def __call__(self, es, params):
        where = f"{params['name']} ({params['fetch-size']} of {params['docs']} documents of {params['doc-mb']} MB)"
        client = _options(es, params)
        accept_cbor(es)
        es.return_raw_response()  # keep the bytes: decoding waits until the timed window is closed
        window_start = time.time()
        started = time.perf_counter()
        try:
            response = await client.perform_request(
                "POST", f"/{params['index']}/_search", body=params["body"], headers=dict(params["headers"])
            )
        except elasticsearch.ApiError as e:
            return self._failed(params, http_error(_readable(e), where, UNIT))
        except elasticsearch.TransportError as e:
            es.on_request_end()  # the failure's moment; the client does not mark every kind (a timeout)
            return self._failed(params, network_error(e, where, params["request-timeout"], UNIT))
        seconds = time.perf_counter() - started
        # the timed window is closed: decode and check
        raw = response.body.read() if hasattr(response.body, "read") else response.body
        errors = CoverageErrors()
        try:
            answer = DECODE[params["format"]](raw)
            hits = check_fetch(answer, params["mode"], params["expected"], where, errors)
            took = answer.get("took")
        except MALFORMED_ANSWER as e:  # an answer of the wrong shape: a failed sample, never a crashed race
            return self._failed(
                params, results.failed(f"{where}: malformed answer ({type(e).__name__}: {e})", "cluster-metrics-validation", UNIT)
            )
        source_bytes = 0 if params["mode"] == "excluded" else sum(d.bytes for d in params["expected"])
        meta = {
            "took": took,
            "wall-ms": round(seconds * 1000, 3),
            "response-bytes": len(raw),
            "source-bytes": source_bytes,
            "mb-per-s": round(source_bytes / MIB / seconds, 3) if seconds > 0 else None,
            "hits": hits,
            "window": [round(window_start, 3), round(window_start + seconds, 3)],
            **errors.as_meta(),
        }
        if errors:
            return self._failed(params, results.failed(errors.description(), "cluster-metrics-validation", UNIT, meta))
        records.add(meta, _record(params, {"success": True, **meta}))
        return {"weight": 1, "unit": UNIT, "success": True, **meta}

    @staticmethod
    def _failed(params, result):
        line = {"success": False, "error": result.get("error-description")}
        line.update({k: result[k] for k in ("took", "wall-ms", "response-bytes", "source-bytes", "hits") if k in result})
        return records.add(result, _record(params, line))

    def __repr__(self):
        return "large-source-fetch"


def _record(params, figures):
    """Appends one fetch (warm-ups too, each marked) to the race's record; returns the record's sample meta."""
    line = {"task": params.get("name"), "mode": params["mode"], "format": params["format"], "measured": params.get(MEASURED_KEY)}
    line.update(figures)
    line.pop("window", None)
    return records.append_line(RaceContext.of(params).record_dir, records.LARGE_SOURCE_FETCHES, json.dumps(line, sort_keys=True))


def check_fetch(answer, mode, expected, where, errors):
    """One fetch's decoded answer against the generated documents; returns the hits returned."""
    check_shards(answer, where, errors)
    hits = answer["hits"]["hits"]
    errors.check(len(hits) == len(expected), lambda: f"{where}: {len(hits)} hits returned, expected {len(expected)}")
    ids, wanted = [hit.get("_id") for hit in hits], [d.id for d in expected]
    if ids != wanted:
        at = next((k for k, (a, b) in enumerate(zip(ids, wanted)) if a != b), min(len(ids), len(wanted)))
        got = ids[at] if at < len(ids) else "missing"
        order = " (the expected documents in another order)" if sorted(ids) == sorted(wanted) else ""
        errors.add(f"{where}: hit {at + 1} is {got}, expected {wanted[at] if at < len(wanted) else 'no more hits'} by id{order}")
    by_id = {d.id: d for d in expected}
    for k, hit in enumerate(hits):
        digest = by_id.get(hit.get("_id"))
        hit_where = f"{where} hit {k + 1} ({hit.get('_id')})"
        if errors.check(digest is not None, f"{hit_where}: not one of the expected documents"):
            CHECKS[mode](hit, digest, hit_where, errors)
    return len(hits)


def _check_returned(hit, digest, where, errors):
    source = hit.get("_source")
    if not errors.check(isinstance(source, dict), f"{where}: no _source, the fetch asked for the whole of it"):
        return
    errors.check(set(source) == {ID_FIELD, CONTENT_FIELD}, lambda: f"{where}: _source holds {sorted(source)}, expected id and content")
    errors.check(source.get(ID_FIELD) == digest.id, lambda: f"{where}: _source id {source.get(ID_FIELD)!r}, expected {digest.id}")
    content = source.get(CONTENT_FIELD)
    if not errors.check(isinstance(content, str), lambda: f"{where}: content is {type(content).__name__}, expected text"):
        return
    data = content.encode("utf-8")
    if errors.check(
        len(data) == digest.content_bytes,
        lambda: f"{where}: content is {len(data)} bytes, the generated document's is {digest.content_bytes}",
    ):
        errors.check(
            hashlib.sha256(data).hexdigest() == digest.content_sha256,
            f"{where}: content's sha256 differs from the generated document's (same {digest.content_bytes} bytes)",
        )


def _check_excluded(hit, digest, where, errors):
    errors.check("_source" not in hit, f'{where}: _source returned, the fetch asked for none ("_source": false)')


def _check_filtered(hit, digest, where, errors):
    source = hit.get("_source")
    if not errors.check(isinstance(source, dict), f"{where}: no _source, the fetch asked for all but content"):
        return
    if errors.check(CONTENT_FIELD not in source, f"{where}: content returned, the fetch excluded it"):
        errors.check(source == {ID_FIELD: digest.id}, lambda: f"{where}: _source {source}, expected only id {digest.id}")


CHECKS = {"returned": _check_returned, "excluded": _check_excluded, "filtered": _check_filtered}


# ---------------------------------------------------------------- load time


def validate_large_source(params, clients, context):
    """Load-time check of every source-large operation; raises ValueError naming the problem and the parameter."""
    if not isinstance(params.get("index"), str) or not params.get("index"):
        raise ValueError(f"index must name the index of the large documents, got {params.get('index')!r}")
    parameters.check_operation_value("doc-mb", params.get("doc-mb"), "large_doc_mb")
    parameters.check_operation_value("docs", params.get("docs"), "large_docs")
    parameters.check_operation_value("fetch-size", params.get("fetch-size"), "large_fetch_size")
    parameters.check_operation_value(
        "request-timeout", params.get("request-timeout", parameters.DEFAULTS["request_timeout"]), "request_timeout"
    )
    if params["fetch-size"] > params["docs"]:
        raise ValueError(
            f"the fetch asks for {params['fetch-size']} documents of the {params['docs']} indexed: raise the track parameter "
            "large_docs or lower large_fetch_size"
        )
    if clients != 1:
        raise ValueError(f"runs with one client (the documents are indexed in order, each once), not {clients}")


def validate_large_fetch(params, clients, context):
    """Load-time check of a source-large fetch: the common rules, its _source mode and response format."""
    if params.get("mode") not in LARGE_SOURCE_MODES:
        raise ValueError(f"mode must be one of {', '.join(LARGE_SOURCE_MODES)}, got {params.get('mode')!r}")
    if params.get("format") not in LARGE_SOURCE_FORMATS:
        raise ValueError(f"format must be one of {', '.join(LARGE_SOURCE_FORMATS)}, got {params.get('format')!r}")
    validate_large_source(params, 1, context)  # several clients may fetch at once


# documents of its own, generated from the track parameters, in an index of its own


def document_mb(value):
    """The rule of large_doc_mb: source-large sends each document in one index request, which must fit under
    http.max_content_length."""
    largest = HTTP_MAX_CONTENT_LENGTH // MIB - 1
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= largest:
        raise rules.ParameterError(
            f"an integer from 1 to {largest} (MB of 2^20 bytes): each document is one index request, and Elasticsearch "
            f"refuses a request body over http.max_content_length ({HTTP_MAX_CONTENT_LENGTH // MIB}mb by default)"
        )


# source-large (seed 004 at its scale): large_docs documents of large_doc_mb each in an index of their own, and a fetch
# of the first large_fetch_size of them per _source mode and response format
PARAMETER_RULES = {
    "large_doc_mb": document_mb,
    "large_docs": rules.integer(1),
    "large_fetch_size": rules.integer(1, MAX_RESULT_WINDOW),  # at most large_docs: checked with the fetch's operation
    "large_iterations": rules.integer(1),
    "large_warmup_iterations": rules.integer(0),
}


OPERATIONS = {
    "large-source-create-index": Operation(
        LargeSourceCreateIndex,
        Need("reads the nodes' http.max_content_length, creates the index of the large documents", ("monitor",), ("create_index",)),
        validate=validate_large_source,
        reads_corpus=False,
    ),
    "large-source-index": Operation(
        LargeSourceIndex, Need("indexes the large documents", index=("index",)), validate=validate_large_source, reads_corpus=False
    ),
    "large-source-verify": Operation(
        LargeSourceVerify,
        Need("counts the large documents, reads the index's mapping", index=("read", "view_index_metadata")),
        validate=validate_large_source,
        reads_corpus=False,
    ),
    "large-source-fetch": Operation(
        LargeSourceFetch,
        Need("searches the index of the large documents", index=("read",)),
        LargeSourceFetchParamSource,
        validate_large_fetch,
        reads_corpus=False,
    ),
}
