"""The 30-node coverage: one epoch, every node, over three transports, each answer checked against ground truth."""

import copy
import json
import struct
import time
from collections import Counter

import elasticsearch

from runners.contracts import parameters, queries, records, rules
from runners.contracts.context import CONTEXT_KEY, DEFAULT_CLUSTER, RaceContext
from runners.contracts.corpus import FETCH_TRUTH_ROWS
from runners.contracts.queries import FETCH_KINDS, FETCH_TRANSPORTS
from runners.contracts.registry import Need, Operation
from runners.shared import interleave, results, wire
from runners.shared.validation import (
    CoverageErrors,
    FetchExpectation,
    NodeExpectation,
    PercentileErrors,
    breaker_trips_meta,
    check_fetch_response,
    check_node_response,
    check_terms_response,
    described,
    tripped_breakers,
)
from runners.studies import load, scope

JSON = {"content-type": "application/json", "accept": "application/json", **wire.IDENTITY}
NDJSON = {"content-type": "application/x-ndjson", "accept": "application/json", **wire.IDENTITY}
WARMUPS_KEY = "warmups"  # operation parameter set by the track processor: the task's warm-up iterations
MEASURED_KEY = "measured"  # in a coverage's parameters: not a warm-up (None: the task is time-based, nobody counts)
NO_CACHE = {"request_cache": "false"}  # _search takes it in the URL; _msearch in each header line (queries.py)


# what decoding and checking an answer of the wrong shape raises: not JSON, a field missing, a value of another type
MALFORMED = (ValueError, KeyError, IndexError, TypeError, AttributeError, struct.error)


class CoverageParamSource:
    """Builds every epoch's requests once, serialized to bytes (serial: one _search per node; msearch: the NDJSON of
    one _msearch; terms: one _search), and the expected answer of every node; cycles through the epochs, one
    coverage per call.

    Operation parameters: variant, transport (required); epochs (default: the race's), nodes (default: all),
    percents, hdr-digits, tdigest-compression (default: Elasticsearch's, left out of the request), request-timeout
    (seconds), assertions (Rally's, checked with --enable-assertions);
    remote (a remote cluster's alias: the coverage goes through cross-cluster search to <remote>:<index>) and
    ccs-minimize-roundtrips (true or false, with remote); cluster (a cluster of Rally's --target-hosts other than
    "default": the coverage asks it directly, seed 001's direct cells); new-connection (true: every request goes on a
    new connection, as curl's do); max-concurrent-searches (msearch: _msearch's, else
    Elasticsearch's default); record-rate (true in a load calibration task: each
    successful coverage's duration is recorded for the steps' schedule, runners/studies/load.py) after the task's warm-up coverages (WARMUPS_KEY)
    (set by the track processor to the task's warmup-iterations); interleave (the cell takes turns with the other
    cells of that group, in the order the track processor sets: runners/shared/interleave.py)."""

    carries_scope = True  # hands a fault or a remote registration on to each call (runners/studies/scope.py)

    def __init__(self, track, params, **kwargs):
        context = RaceContext.of(params)
        self.transport = params["transport"]  # checked at load: validate_coverage
        self.index = f"{params['remote']}:{context.index}" if params.get("remote") else context.index
        self._url = dict(NO_CACHE)
        if "ccs-minimize-roundtrips" in params:
            self._url["ccs_minimize_roundtrips"] = str(params["ccs-minimize-roundtrips"]).lower()
        self._msearch_url = {}
        if params.get("max-concurrent-searches"):
            self._msearch_url["max_concurrent_searches"] = str(params["max-concurrent-searches"])
        self.epochs = list(params.get("epochs") or context.epochs)
        self.nodes = list(params.get("nodes") or context.nodes)
        self._fixed = {
            "name": params.get("name"),
            "transport": self.transport,
            "nodes": self.nodes,
            "request-timeout": params.get("request-timeout", parameters.DEFAULTS["request_timeout"]),
            "cluster": params.get("cluster", DEFAULT_CLUSTER),
            "new-connection": bool(params.get("new-connection")),
            **self._query(params),
        }
        if "assertions" in params:
            self._fixed["assertions"] = params["assertions"]
        self._fixed.update(scope.carried(params))
        # the task's warm-up count (set by the track processor for iteration-based tasks): which coverages are measured
        self._warmups = params.get(WARMUPS_KEY)
        self._record_rate = bool(params.get("record-rate"))
        self._fixed[CONTEXT_KEY] = params[CONTEXT_KEY]  # the record folder: validation counts, calibration
        self._turns = None
        if params.get(interleave.ORDER_KEY):
            self._turns = interleave.positions(params[interleave.ORDER_KEY], params.get("name"))
            self._fixed["turn-file"] = interleave.turn_file(context.record_dir, params[interleave.GROUP_KEY])
        self._context = context
        self._built = {}  # the epochs' requests and expectations, built once and shared by the clients' partitions
        self._next = 0
        self._first_epoch = 0
        self.infinite = True

    def _epoch_params(self, epoch):
        """One epoch's requests and expected answers, every epoch's built on first use: Rally also instantiates each
        task's parameter source wherever it looks for the corpora a race uses (loader.used_corpora, in every process that
        prepares the track), where parsing the ground truth and building the requests of a 3000-node coverage costs
        seconds per task for nothing."""
        if not self._built:
            truth = self._truth(self._context)
            self._built.update(
                {
                    e: {"expected": {n: self._expectation(truth[str(e)][n]) for n in self.nodes}, "requests": self._requests(e)}
                    for e in self.epochs
                }
            )
        return self._built[epoch]

    @staticmethod
    def _truth(context):
        """{epoch (str): {node: its ground truth}} of the epochs the coverages ask for."""
        return context.truth()

    def _query(self, params):
        """What the requests ask for, kept for building them; returns what the runner needs of it (the cell)."""
        self.variant = params["variant"]
        self.percents = list(params.get("percents", queries.DEFAULT_PERCENTS))
        self.hdr_digits = params.get("hdr-digits", queries.DEFAULT_HDR_DIGITS)
        self.compression = params.get("tdigest-compression")
        self.exact_hits = params.get("track-total-hits", False)
        concurrency = f" max_concurrent_searches {params['max-concurrent-searches']}" if params.get("max-concurrent-searches") else ""
        return {"variant": self.variant, "cell": f"{self.variant}/{self.transport}{concurrency}"}

    def _expectation(self, node_truth):
        return NodeExpectation(
            node_truth, self.variant, self.percents, self.hdr_digits, self.compression or queries.DEFAULT_COMPRESSION, self.exact_hits
        )

    def _node_search(self, epoch, node):
        return queries.node_search(self.variant, epoch, node, self.percents, self.hdr_digits, self.compression, self.exact_hits)

    def _terms_search(self, epoch):
        return queries.terms_search(self.variant, epoch, len(self.nodes), self.percents, self.hdr_digits, self.compression, self.exact_hits)

    def _requests(self, epoch):
        searches = [self._node_search(epoch, n) for n in self.nodes] if self.transport != "terms" else [self._terms_search(epoch)]
        return build_requests(self.index, self.transport, searches, self._url, self._msearch_url)

    def partition(self, partition_index, total_partitions):
        """Each client its own count of coverages (Rally's warm-up iterations are per client), starting at its own
        epoch; the built requests are shared."""
        if total_partitions == 1:
            return self
        part = copy.copy(self)
        part._next, part._first_epoch = 0, partition_index
        return part

    def params(self):
        epoch = self.epochs[(self._first_epoch + self._next) % len(self.epochs)]
        self._next += 1
        measured = None if self._warmups is None else self._next > self._warmups
        result = {**self._fixed, "epoch": epoch, **self._epoch_params(epoch), MEASURED_KEY: measured}
        if self._record_rate and measured:
            result["record-rate"] = True
        if self._turns is not None:
            if self._next > len(self._turns):
                raise IndexError(f"{self._fixed['name']}: coverage {self._next} has no turn ({len(self._turns)} in the order)")
            result[interleave.TURN_KEY] = self._turns[self._next - 1]
        return result


class FetchCoverageParamSource(CoverageParamSource):
    """The coverage's fetch counterpart: per node, the N busiest samples of the epoch (sorted by cpu, descending),
    each hit returned with its _source or with its fields' doc values; serial or msearch.

    Operation parameters: fetch ("source" or "docvalues"), fetch-size (N), transport; epochs, nodes,
    request-timeout, assertions as for the coverage."""

    def _query(self, params):
        self.kind, self.size = params["fetch"], params["fetch-size"]
        return {"fetch": self.kind, "fetch-size": self.size, "cell": f"fetch-{self.kind}/{self.transport}"}

    def _expectation(self, node_truth):
        return FetchExpectation(node_truth, self.size)

    def _node_search(self, epoch, node):
        return queries.fetch_search(epoch, node, self.size, self.kind)


def build_requests(index, transport, searches, url=NO_CACHE, msearch_url=None):
    """(path, URL parameters, body bytes, headers) of each HTTP request of one coverage of `searches` (the node
    searches; for terms, its one search)."""
    search_path = f"/{index}/_search"
    if transport == "msearch":
        msearch_url = {**{k: v for k, v in url.items() if k not in NO_CACHE}, **(msearch_url or {})}  # per header line instead
        return [("/_msearch", msearch_url or None, queries.msearch_body(index, searches), NDJSON)]
    return [(search_path, url, queries.json_bytes(body), JSON) for body in searches]


class RequestFailed(Exception):
    """Request `index` of a coverage got no answer or an error answer (`error`, elasticsearch-py's)."""

    def __init__(self, index, error):
        super().__init__(str(error))
        self.index, self.error = index, error


async def send_requests(es, requests, request_timeout, new_connection=False):
    """The timed part of a coverage: sends the requests one after another, without client retries, and keeps each
    answer's raw bytes. Returns (bodies, seconds from the first request sent to the last answer read); raises
    RequestFailed. report/client_cost.py times this same function beside a minimal client."""
    client = es.options(request_timeout=request_timeout, max_retries=0, retry_on_status=(), retry_on_timeout=False)
    es.return_raw_response()  # keep the bytes: decoding waits until the timed window is closed
    bodies = []
    started = time.perf_counter()
    for i, (path, query, body, headers) in enumerate(requests):
        if new_connection:
            await close_connections(es)
        try:
            response = await client.perform_request("POST", path, params=query, body=body, headers=dict(headers))
        except (elasticsearch.ApiError, elasticsearch.TransportError) as e:
            raise RequestFailed(i, e) from e
        bodies.append(response.body)
    return bodies, time.perf_counter() - started


class Coverage:
    """One 30-node coverage of one epoch.

    Measures: service_time is the wall time of the whole coverage, from the first request sent to the last byte of
    the last response: 30 serial _search calls, one _msearch with 30 sub-searches, or one _search with a terms
    bucket per node. Every transport sends bytes serialized before the timed window and keeps the raw responses;
    decoding and validation happen after it, so no transport is charged for client work the others are not.

    Returns weight 1, unit "coverages", and: hits (summed over the coverage), checks and failed-checks (validation),
    took (server-side, summed), requests (HTTP requests), epoch, and the percentile error against the exact ground
    truth. Rally assertions (--enable-assertions) can use any of these.

    Errors, each a failed sample with a description naming variant, transport, epoch and, where known, the node:
    - any mismatch against the ground truth, an _msearch sub-response error, a shard failure, timed_out;
    - an HTTP error status (429, 5xx, ...): requests are sent without client retries (max_retries 0, no retry on
      status or timeout), so a rejected request is never retried away inside the timed window;
    - a network failure: no answer within request-timeout seconds, a refused or reset connection, a response cut
      short. Never retried; the description names the request and what the client saw. Mapped here rather than
      left to Rally, which ends the race on a connection error unless --on-error is continue-on-network: a fault on
      one link is a failed sample like any other, and --on-error=abort still ends the race on the first one.
    - in an interleaved group, a turn that never came (the coverage holding it never finished).

    In an interleaved group the coverage waits for its turn before its first request and passes it on after its
    answer is checked: neither is in the timed window, which opens at the first request.

    With new-connection, the client's connections are closed before each request (close_connections), so every
    request opens its own connection, as curl does: the window holds the close of the previous one (well under a
    millisecond) and the new connection's set-up.

    Rally hands it every cluster's client (multi_cluster); it asks the one its parameters name ("cluster", default
    "default")."""

    multi_cluster = True

    async def __call__(self, es, params):
        if isinstance(es, dict):
            es = es[params.get("cluster", DEFAULT_CLUSTER)]
        turn = params.get(interleave.TURN_KEY)
        if turn is None:
            return await self._coverage(es, params)
        # the longest a live coverage of the group can hold the turn: a serial one, a request per node
        stall_seconds = params["request-timeout"] * (len(params["nodes"]) + 1)
        stalled = await interleave.wait_for_turn(params["turn-file"], turn, stall_seconds)
        if stalled:
            return _record_failure(params, results.failed(f"{params['cell']}: {stalled}", "cluster-metrics-schedule", "coverages"))
        try:
            return await self._coverage(es, params)
        finally:
            interleave.pass_turn(params["turn-file"], turn)

    async def _coverage(self, es, params):
        requests = params["requests"]
        window_start = time.time()  # wall clock, for the record: when the coverage ran beside other tasks
        try:
            bodies, seconds = await send_requests(es, requests, params["request-timeout"], params.get("new-connection"))
        except RequestFailed as failed:
            if isinstance(failed.error, elasticsearch.ApiError):
                return _record_failure(params, http_error(failed.error, _where(params, failed.index)))
            es.on_request_end()  # the failure's moment; the client does not mark every kind (a timeout)
            return _record_failure(params, network_error(failed.error, _where(params, failed.index), params["request-timeout"]))
        window = [round(window_start, 3), round(window_start + seconds, 3)]
        # the timed window is closed: decode and check
        errors, pct_errors = CoverageErrors(), PercentileErrors()
        try:
            decoded = [json.load(body) for body in bodies]
            hits = self.check(decoded, params, errors, pct_errors)
            took, took_sum = server_took(decoded, params["transport"])
        except MALFORMED as e:  # an answer of the wrong shape: a failed sample, never a crashed race
            failure = results.failed(
                f"{params['cell']}: epoch {params['epoch']}: malformed answer ({type(e).__name__}: {e})",
                "cluster-metrics-validation",
                "coverages",
            )
            return _record_failure(params, failure)
        meta = {
            "hits": hits or 0,
            "took": took,
            "took-sum": took_sum,
            "wall-ms": round(seconds * 1000, 3),
            "requests": len(requests),
            "epoch": params["epoch"],
            **errors.as_meta(),
            **pct_errors.as_meta(),
        }
        records.add(meta, load.step_meta(params.get("name")))
        description = f"{params['cell']}: {errors.description()}" if errors else None
        records.add(meta, _record_validation(params, meta, window, params.get(MEASURED_KEY), description))
        if errors:
            return results.failed(description, "cluster-metrics-validation", "coverages", meta)
        if params.get("record-rate"):
            records.add(meta, load.record_duration(params, seconds))
        return {"weight": 1, "unit": "coverages", "success": True, **meta}

    def check(self, decoded, params, errors, pct_errors):
        """Every answer of one coverage against its expectation; returns the hits."""
        transport, epoch, nodes, expected = params["transport"], params["epoch"], params["nodes"], params["expected"]
        if transport == "terms":
            return check_terms_response(decoded[0], nodes, epoch, expected, errors, pct_errors)
        responses = self._responses(decoded, params, errors)
        counts = [check_node_response(r, n, epoch, expected[n], errors, pct_errors) for n, r in zip(nodes, responses)]
        return sum(c for c in counts if c is not None)

    @staticmethod
    def _responses(decoded, params, errors):
        """The per-node responses of a serial or msearch coverage (one per node, or an error)."""
        responses = decoded if params["transport"] == "serial" else decoded[0].get("responses", [])
        errors.check(
            len(responses) == len(params["nodes"]),
            lambda: f"epoch {params['epoch']}: {len(responses)} responses for {len(params['nodes'])} searches",
        )
        return responses

    def __repr__(self):
        return "coverage"


class FetchCoverage(Coverage):
    """One fetch coverage: per node, the N busiest samples of one epoch with their _source or doc values.

    Measures the same window as the coverage (first request sent to last byte received; decoding after it), so a
    fetch and an aggregation coverage are timed alike. Returns what the coverage returns, hits being the hits
    returned (not the total). Every hit is checked (runners/shared/validation.py check_fetch_response): node and epoch,
    the fields present, cpu against the order statistics of its rank, mem and net within the node's range; the exact
    total per node. Errors as for the coverage."""

    def check(self, decoded, params, errors, pct_errors):
        epoch, expected = params["epoch"], params["expected"]
        responses = self._responses(decoded, params, errors)
        counts = [check_fetch_response(r, n, epoch, expected[n], params["fetch"], errors) for n, r in zip(params["nodes"], responses)]
        return sum(c for c in counts if c is not None)

    def __repr__(self):
        return "fetch-coverage"


async def close_connections(es):
    """Closes every connection of the client (each node's HTTP session): its next request opens a new one. A request
    asking "Connection: close" is not enough: Elasticsearch closes the connection without saying so in the response,
    and the client would pool it and send the next request down a socket that is closing."""
    for node in es.transport.node_pool.all():
        await node.close()


def server_took(decoded, transport):
    """(took, took summed over the searches) of one coverage's decoded answers, in ms, as Elasticsearch reports them:
    serial, both the sum of its searches' tooks; _msearch, the response's own took and the sum of its sub-searches'
    (what the node's search threads spent: their ratio is the effective parallelism); terms, its one search's took.
    None where an answer has no took (an error)."""

    def took_of(response):
        return response.get("took") if isinstance(response.get("took"), (int, float)) else None

    if transport == "msearch":
        response = decoded[0]
        subs = [took_of(r) for r in response.get("responses", [])]
        return took_of(response), (None if None in subs or not subs else sum(subs))
    tooks = [took_of(r) for r in decoded]
    total = None if None in tooks else sum(tooks)
    return total, total


def _record_validation(params, meta, window, measured, error=None):
    """Appends the coverage's validation counts, its timed window (wall-clock seconds, first request to last answer),
    its wall and server took (ms), whether it was a measured sample (not a warm-up; None where the task does not
    say) and, for a failed one, why (records.ERROR) to the race's record (race.json keeps only task aggregates of a
    sample, and Rally's default in-memory store drops the samples: these lines are each coverage's sample on every
    path, and when Rally writes no results at all, a race that did not finish, the only account of what ran); returns
    the record's sample meta."""
    counts = {
        "task": params.get("name"),
        "window": window,
        "measured": measured,
        **{k: meta.get(k) for k in ("checks", "failed-checks", "percentile-rel-error-max", "took", "took-sum", "wall-ms")},
    }
    if error is not None:
        counts[records.ERROR] = error
    return records.append_line(RaceContext.of(params).record_dir, records.VALIDATION, json.dumps(counts, sort_keys=True))


def _record_failure(params, failure):
    """A coverage that got no answer to check (an HTTP error, a network failure, a malformed answer, a turn that never
    came) recorded like any other, with its description as the cause: returns the failed sample with the record's
    meta."""
    return records.add(failure, _record_validation(params, {}, None, params.get(MEASURED_KEY), failure["error-description"]))


def _where(params, i):
    target = f"node {params['nodes'][i]}" if params["transport"] == "serial" else f"(all {len(params['nodes'])} nodes)"
    return f"{params['cell']}: epoch {params['epoch']} {target}, request {i + 1} of " f"{len(params['requests'])}"


def network_seen(error, timeout):
    """What the client saw of a request that got no complete HTTP answer."""
    if isinstance(error, elasticsearch.ConnectionTimeout):
        return f"no complete answer within the request timeout of {timeout} s"
    causes = [error, *(getattr(error, "errors", None) or ())]
    return "connection failed: " + "; ".join(dict.fromkeys(str(getattr(c, "message", c)) for c in causes))


def network_error(error, where, timeout, unit="coverages"):
    """A request that got no complete HTTP answer, as a failed sample naming what the client saw."""
    return results.failed(f"{where}: {network_seen(error, timeout)}; not retried", "network", unit)


def http_error(error, where, unit="coverages"):
    """An HTTP error status as a failed sample whose description names the status and Elasticsearch's reason."""
    body = error.body
    if hasattr(body, "read"):
        body = body.read()
    if isinstance(body, bytes):
        try:
            body = json.loads(body)
        except ValueError:
            body = body.decode("utf-8", "replace")[:200]
    reason = body
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        reason = described(body["error"])
    description = f"{where}: HTTP {error.status_code} ({reason}); not retried"
    meta = {"http-status": error.status_code, **breaker_trips_meta(Counter(tripped_breakers(body)))}
    return results.failed(description, "http", unit, meta)


def validate_coverage(params, clients, context):
    """Load-time check of a coverage operation against the race context; raises ValueError naming the problem."""
    queries.validate_variant(params.get("variant"))
    queries.validate_transport(params.get("transport"))
    _validate_common(params, context)
    parameters.check_operation_value("percents", params.get("percents", list(queries.DEFAULT_PERCENTS)), "percents")
    parameters.check_operation_value("hdr-digits", params.get("hdr-digits", queries.DEFAULT_HDR_DIGITS), "hdr_digits")
    if params.get("tdigest-compression") is not None:
        parameters.check_operation_value("tdigest-compression", [params["tdigest-compression"]], "memory_tdigest_compression")
    if params.get("remote") is not None:
        parameters.check_operation_value("remote", params["remote"], "ccs_alias")
    if params.get("cluster", DEFAULT_CLUSTER) != DEFAULT_CLUSTER and params.get("remote") is not None:
        raise ValueError(f"a coverage asks cluster {params['cluster']!r} directly or goes through cross-cluster search, not both")
    if not isinstance(params.get("new-connection", False), bool):
        raise ValueError(f"new-connection must be true or false, got {params['new-connection']!r}")
    if "rate-fraction" in params:
        load.validate_step(params)
    if "ccs-minimize-roundtrips" in params:
        parameters.check_operation_value("ccs-minimize-roundtrips", [params["ccs-minimize-roundtrips"]], "ccs_minimize_roundtrips")
    if "max-concurrent-searches" in params:
        parameters.check_operation_value("max-concurrent-searches", [params["max-concurrent-searches"]], "width_max_concurrent_searches")
        if params["transport"] != "msearch":
            raise ValueError(f"max-concurrent-searches is _msearch's, this coverage goes over {params['transport']}")


def validate_fetch_coverage(params, clients, context):
    """Load-time check of a fetch coverage; raises ValueError naming the problem."""
    queries.validate_fetch_kind(params.get("fetch"))
    if params.get("transport") not in queries.FETCH_TRANSPORTS:
        raise ValueError(
            f"a fetch coverage goes over {' or '.join(queries.FETCH_TRANSPORTS)}, not "
            f"{params.get('transport')!r} (a terms bucket's top_hits stops at 100 hits)"
        )
    parameters.check_operation_value("fetch-size", params.get("fetch-size"), "fetch_size")
    _validate_common(params, context)


def _validate_common(params, context):
    """Epochs, nodes and the request timeout of any coverage."""
    for epoch in params.get("epochs") or context.epochs:
        if epoch not in context.epochs:
            raise ValueError(f"epoch {epoch} is not ingested by this race (epochs {list(context.epochs)}, track " "parameter epochs)")
    unknown = [n for n in params.get("nodes") or () if n not in context.nodes]
    if unknown:
        raise ValueError(f"node(s) {', '.join(unknown)} are not in the generated corpus")
    parameters.check_operation_value(
        "request-timeout", params.get("request-timeout", parameters.DEFAULTS["request_timeout"]), "request_timeout"
    )


# the fetch coverages (source-cost): each node's N busiest samples with their _source or their doc values
PARAMETER_RULES = {
    "fetch_size": rules.integer(1, FETCH_TRUTH_ROWS),  # the ground truth's top rows per node (within max_result_window)
    "fetch_kinds": rules.names(FETCH_KINDS),
    "fetch_transports": rules.names(FETCH_TRANSPORTS),
}


OPERATIONS = {
    "coverage": Operation(Coverage, Need("searches the index", index=("read",)), CoverageParamSource, validate_coverage),
    "fetch-coverage": Operation(
        FetchCoverage, Need("searches the index", index=("read",)), FetchCoverageParamSource, validate_fetch_coverage
    ),
}
