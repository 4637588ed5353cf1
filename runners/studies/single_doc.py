"""Single-document indexing per layout (seed 003's "realtime indexing"): one document per request, no bulk.

The documents are the bulk ingest's own: the corpus file of one epoch (RaceContext.corpus_file, the file Rally's bulk
reads for that epoch), each line one document. They go into an index of the layout's own (single_doc_index: the
corpus index's twin, created with the layout's shards and replicas), so the bulk-ingested index and its ground truth
stay untouched. Each request's outcome is appended to the race's records (one file per client); the check that
follows the timed task counts the index against the documents Elasticsearch acknowledged and keeps the per-second
throughput for the report.
"""

import copy
import glob
import itertools
import math
import os
import time

import elasticsearch

from runners.contracts import corpus, errors, parameters, records, rules
from runners.contracts.context import RaceContext
from runners.contracts.registry import Need, Operation
from runners.shared import results
from runners.shared.index_body import FreshIndexBodyParamSource
from runners.shared.restore import JSON, body_of
from runners.shared.validation import described
from runners.studies import layouts
from runners.studies.coverage import network_seen
from runners.studies.ingest import recreate_indices

RECORD_KEY = "single-doc"  # the layout record's (layouts.record_name) section of the single-document indexing
OUTCOMES_DIR = "single-doc"  # in the record folder: <layout>/client-<i>.txt, one line per request
OK, WRONG = "ok", "wrong"  # outcomes of an answer: every check passed, or one failed (acknowledged when "created")
HTTP, NETWORK, MALFORMED = "http", "network", "malformed"  # outcomes without an acknowledged document
# documents per runner call, each still its own request: Rally keeps a sample per call, and a sample per document
# (some 100,000 a layout) left Rally's in-memory metrics store computing a full-scale sweep's results for many minutes
DOCS_PER_CALL = 100


def single_doc_index(layout):
    """The layout's single-document index (track.json spells the same name)."""
    return f"cluster-metrics-single-doc-{layout.lower()}"


def outcomes_file(layout, client):
    return os.path.join(OUTCOMES_DIR, layout, f"client-{client}.txt")


def outcome_line(when, doc_id, outcome):
    """A request's line: the wall-clock time of its answer (s), the document's _id ("-": none acknowledged), outcome."""
    return f"{when:.3f} {doc_id or '-'} {outcome}"


def read_outcomes(record_dir, layout):
    """Every request's (time, _id or None, outcome) of the layout's single-document task, from all clients."""
    found = []
    for path in sorted(glob.glob(os.path.join(record_dir, OUTCOMES_DIR, layout, "client-*.txt"))):
        with open(path) as f:
            for line in f:
                if line.strip():
                    when, doc_id, outcome = line.split()
                    found.append((float(when), None if doc_id == "-" else doc_id, outcome))
    return sorted(found, key=lambda outcome: outcome[0])


def per_second(times):
    """Documents per whole wall-clock second, the first and the last (partial) seconds left out: the throughput
    samples of the report's interval."""
    if not times:
        return []
    first, last = math.floor(min(times)), math.floor(max(times))
    counts = [0] * (last - first + 1)
    for t in times:
        counts[math.floor(t) - first] += 1
    return counts[1:-1]


def summary(outcomes, clients=None):
    """What the layout's single-document task did, as the report reads it from the layout record."""
    counts = {}
    for _, _, outcome in outcomes:
        counts[outcome] = counts.get(outcome, 0) + 1
    return {
        "requests": len(outcomes),
        "acknowledged": sum(1 for _, doc_id, _ in outcomes if doc_id is not None),
        "outcomes": counts,
        "per-second": per_second([t for t, _, outcome in outcomes if outcome == OK]),
        "clients": clients,
    }


class SingleDocParamSource:
    """DOCS_PER_CALL documents per call (fewer at the end of the slice), from the corpus file of the operation's epoch:
    client i of n takes lines i, i + n, i + 2n, ... (its own slice, read as it goes: no client reads more of the file
    than it sends). When a client's slice is used up its schedule ends (StopIteration), whatever time is left of the
    task's time-period.

    Operation parameters: index (the layout's single-document index), layout, copies (shard copies a write must
    reach: replicas + 1), epoch (default: the race's first), request-timeout (seconds)."""

    def __init__(self, track, params, **kwargs):
        context = RaceContext.of(params)
        self._context = context
        self._epoch = int(params.get("epoch") or context.epochs[0])
        self._fixed = {
            "index": params["index"],
            "layout": params["layout"],
            "copies": params["copies"],
            "epoch": self._epoch,
            "request-timeout": params.get("request-timeout", parameters.DEFAULTS["request_timeout"]),
            "record-dir": context.record_dir,
            "client": 0,
        }
        self._client, self._clients = 0, 1
        self._lines = None  # opened at the first document: partitions may run in other processes
        self.infinite = True

    def partition(self, partition_index, total_partitions):
        part = copy.copy(self)
        part._client, part._clients = partition_index, total_partitions
        part._fixed = {**self._fixed, "client": partition_index}
        part._lines = None
        return part

    def _slice(self):
        with open(self._context.corpus_file(self._epoch), "rb") as f:
            for number, line in enumerate(f):
                if number % self._clients == self._client and line.strip():
                    yield number, line.rstrip(b"\n")

    def params(self):
        if self._lines is None:
            self._lines = self._slice()
        documents = [(number + 1, body) for number, body in itertools.islice(self._lines, DOCS_PER_CALL)]
        if not documents:
            raise StopIteration  # this client's slice is used up
        return {**self._fixed, "documents": documents}


class SingleDoc:
    """One document per request: `POST /<index>/_doc` with the document's bytes as the corpus holds them (no bulk;
    Elasticsearch gives the _id), wait_for_active_shards left at its default (the primary); the call's documents
    (DOCS_PER_CALL) one request after the other.

    Measures: service_time is the call's requests, from sending the first to the last answer; Rally's throughput of
    the task is documents acknowledged with every check passed per second (weight: their number, unit "docs").
    Returns requests, and the last answer's _id (doc-id), corpus line and shard counts (shards-total, -successful,
    -failed).

    Every answer is checked; a call with a problem is a failed sample whose description names the first problem
    (layout, client, corpus line) and how many of the call's requests had one; its weight counts the documents that
    passed. The problems:
    - result not "created" (a document overwritten or not indexed);
    - _shards.failed above 0, or _shards.successful or _shards.total other than the copies the layout has
      (replicas + 1): a copy that did not take the write;
    - an HTTP error status (429 rejected, 5xx, ...): sent without client retries (max_retries 0, no retry on status or
      timeout): a retried POST that Elasticsearch had applied would index the document twice, and a 429 retried away
      would hide the rejection;
    - a network failure: no answer within request-timeout seconds, a refused or reset connection. Never retried; the
      document may or may not be in the index (the count check says how many such requests there were).
    - an answer of the wrong shape (not JSON, a field missing).
    Each request's outcome and, for an acknowledged document (result "created", whatever its copies), its _id are
    appended to the race's records after the answer (outcomes_file); single-doc-count checks the index against them."""

    async def __call__(self, es, params):
        client = es.options(request_timeout=params["request-timeout"], max_retries=0, retry_on_status=(), retry_on_timeout=False)
        outcomes, problems, meta = [], [], {}
        for line, body in params["documents"]:
            outcome, doc_id, problem, meta = await self._one(es, client, params, line, body)
            outcomes.append(outcome_line(time.time(), doc_id, outcome))
            if problem:
                problems.append(problem)
        record = records.append_line(params["record-dir"], outcomes_file(params["layout"], params["client"]), "\n".join(outcomes))
        passed = len(outcomes) - len(problems)
        meta = {**meta, "requests": len(outcomes), **record}
        if problems:
            description, error_type, extra = problems[0]
            more = f" ({len(problems)} of the call's {len(outcomes)} requests had a problem)" if len(outcomes) > 1 else ""
            return {**results.failed(description + more, error_type, "docs", {**meta, **extra}), "weight": passed}
        return {"weight": passed, "unit": "docs", "success": True, **meta}

    @staticmethod
    async def _one(es, client, params, line, body):
        """One document's request and its checks: (outcome, acknowledged _id or None, (description, error type,
        meta) of its problem or None, the answer's meta)."""
        where = f"layout {params['layout']} client {params['client']}: epoch {params['epoch']} line {line}"
        try:
            response = await client.perform_request("POST", f"/{params['index']}/_doc", body=body, headers=dict(JSON))
        except elasticsearch.ApiError as e:
            problem = (f"{where}: HTTP {e.status_code} ({_reason(e)}); not retried", "http", {"http-status": e.status_code})
            return HTTP, None, problem, {}
        except elasticsearch.TransportError as e:
            es.on_request_end()  # the failure's moment; the client does not mark every kind (a timeout)
            return NETWORK, None, (f"{where}: {network_seen(e, params['request-timeout'])}; not retried", "network", {}), {}
        try:
            answer = body_of(response)
            doc_id, result, shards = answer.get("_id"), answer.get("result"), answer["_shards"]
            written = {"total": int(shards["total"]), "successful": int(shards["successful"]), "failed": int(shards["failed"])}
        except (AttributeError, KeyError, TypeError, ValueError) as e:
            return MALFORMED, None, (f"{where}: malformed answer ({type(e).__name__}: {e})", "cluster-metrics-validation", {}), {}
        meta = {"doc-id": doc_id, "line": line, **{f"shards-{k}": v for k, v in written.items()}}
        problem = check_answer(result, written, params["copies"])
        if problem:
            acknowledged = doc_id if result == "created" else None
            return WRONG, acknowledged, (f"{where}: {problem}", "cluster-metrics-validation", {}), meta
        return OK, doc_id, None, meta

    def __repr__(self):
        return "single-doc"


def check_answer(result, shards, copies):
    """What is wrong with an index answer ({"total", "successful", "failed"} of its _shards), or None."""
    problems = []
    if result != "created":
        problems.append(f'result {result!r}, not "created"')
    if shards["failed"] > 0:
        problems.append(f"_shards.failed {shards['failed']}")
    if shards["successful"] != copies or shards["total"] != copies:
        problems.append(f"_shards.successful {shards['successful']} of total {shards['total']}, the layout has {copies} copies")
    return "; ".join(problems) or None


def _reason(error):
    body = error.body
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return described(body["error"])
    return errors.error_reason(error)


class SingleDocSetup:
    """Untimed, before the layout's single-document task: its index (the corpus index's twin with the layout's shards
    and replicas, param source fresh-index-body) deleted by name if a race left it, created afresh and awaited green.
    One task where Rally's delete-index, create-index and cluster-health were three (each Rally task costs about 5 s of
    wall time outside test mode). Returns 1 op; an index that does not get healthy within 60 s is a failed sample."""

    async def __call__(self, es, params):
        problem = await recreate_indices(es, {**params, "wait-for-status": "green"})
        return results.failed(problem) if problem else {"weight": 1, "unit": "ops", "success": True}

    def __repr__(self):
        return "single-doc-setup"


class SingleDocCount:
    """Untimed, after the layout's single-document task: refreshes its index and checks that _count equals the
    documents Elasticsearch acknowledged (result "created", from every client's records). Writes the task's summary
    (requests, acknowledged documents, each outcome's count, documents per whole second) into the layout's record
    (<race>/cluster-metrics/layout-<layout>.json, section "single-doc"), then deletes the index by name, whatever the
    count (nothing of the piece is left behind). Returns 1 op; a count other than the acknowledged documents, or no
    acknowledged document at all, is a failed sample naming both numbers (and the requests that got no answer: each
    may or may not have been applied)."""

    async def __call__(self, es, params):
        try:
            return await self._count(es, params)
        finally:
            await es.perform_request("DELETE", f"/{params['index']}", params={"ignore_unavailable": "true"})

    @staticmethod
    async def _count(es, params):
        context, layout, index = RaceContext.of(params), params["layout"], params["index"]
        await es.perform_request("POST", f"/{index}/_refresh")
        count = (await es.perform_request("GET", f"/{index}/_count")).body["count"]
        found = summary(read_outcomes(context.record_dir, layout), params.get("clients"))
        found.update(index=index, count=count)
        record = records.read(context.record_dir, layouts.record_name(layout), {"layout": layout})
        record[RECORD_KEY] = found
        meta = {
            "count": count,
            "acknowledged": found["acknowledged"],
            **records.write(context.record_dir, layouts.record_name(layout), record),
        }
        unanswered = found["outcomes"].get(NETWORK, 0)
        if count != found["acknowledged"]:
            why = f"; {unanswered} request(s) got no answer (network): Elasticsearch may have applied them" if unanswered else ""
            return results.failed(
                f"index {index} holds {count} documents, Elasticsearch acknowledged {found['acknowledged']}{why}", meta=meta
            )
        if not found["acknowledged"]:
            return results.failed(f"layout {layout}: no document was acknowledged (records under {OUTCOMES_DIR}/{layout})", meta=meta)
        return {"weight": 1, "unit": "ops", "success": True, **meta}

    def __repr__(self):
        return "single-doc-count"


def validate_single_doc(params, clients, context):
    """Load-time check of a single-document task: its layout, the copies that layout has, the epoch among the race's,
    the clients (track parameter single_doc_clients), at least one document per client."""
    shards, replicas = layouts.parse_layout(params.get("layout"))
    if params.get("copies") != replicas + 1:
        raise ValueError(f"copies must be the layout's replicas + 1 ({replicas + 1}), got {params.get('copies')!r}")
    if params.get("index") != single_doc_index(params["layout"]):
        raise ValueError(f"index must be {single_doc_index(params['layout'])}, got {params.get('index')!r}")
    parameters.check_operation_value("clients", clients, "single_doc_clients")
    epoch = str(params.get("epoch") or context.epochs[0])
    if epoch not in context.epoch_docs:
        raise ValueError(f"epoch {epoch} is not among this race's corpora (track parameter epochs)")
    if context.epoch_docs[epoch] < clients:
        raise ValueError(f"{clients} clients need at least a document each, epoch {epoch} has {context.epoch_docs[epoch]}")


def validate_single_doc_setup(params, clients, context):
    validate_single_doc_count(params, clients, context)
    if params.get("body-of") != corpus.INDEX:
        raise ValueError(f"body-of must be {corpus.INDEX} (the corpus index's twin), got {params.get('body-of')!r}")


def validate_single_doc_count(params, clients, context):
    layouts.parse_layout(params.get("layout"))
    if params.get("index") != single_doc_index(params["layout"]):
        raise ValueError(f"index must be {single_doc_index(params['layout'])}, got {params.get('index')!r}")


# the layout sweep's single-document indexing (seed 003's realtime indexing): clients, and seconds per layout (0 leaves
# it out)
PARAMETER_RULES = {
    "single_doc_clients": rules.integer(1, 256),
    "single_doc_seconds": rules.integer(0, 86400),
}


OPERATIONS = {
    "single-doc": Operation(
        SingleDoc,
        Need("indexes one document per request into the layout's single-document index", index=("index",)),
        SingleDocParamSource,
        validate_single_doc,
    ),
    "single-doc-setup": Operation(
        SingleDocSetup,
        Need(
            "deletes the layout's single-document index by name if it exists, creates it and waits for its health",
            ("monitor",),
            ("delete_index", "create_index"),
        ),
        FreshIndexBodyParamSource,
        validate_single_doc_setup,
    ),
    "single-doc-count": Operation(
        SingleDocCount,
        Need("refreshes, counts and deletes the layout's single-document index", index=("maintenance", "read", "delete_index")),
        validate=validate_single_doc_count,
    ),
}
