"""profile-breakdown: one node's search for one epoch with profile: true and without it, in pairs, each answer checked.

Each iteration of the task sends the same search twice, profile OFF and profile ON, back to back, the order alternating
from one iteration to the next, so that both see the same cluster state (caches, segments, JIT, the load driver) and
neither always goes first. Every call is a line of the race's record (records.PROFILE_CALLS); the profile's shares
(records.PROFILE) come from the measured ON calls. The report (report/studies/profile.py) reads the overhead of profiling
(took ON against OFF) and the seed's single-call phases from these lines.
"""

import json
import logging
import os
import statistics
import time

import elasticsearch

from runners.contracts import parameters, queries, records, rules
from runners.contracts.context import CONTEXT_KEY, RaceContext
from runners.contracts.registry import Need, Operation
from runners.shared import results
from runners.shared.validation import CoverageErrors, NodeExpectation, PercentileErrors, check_node_response
from runners.studies.coverage import JSON, MALFORMED, MEASURED_KEY, NO_CACHE, WARMUPS_KEY, http_error, network_error

LOG = logging.getLogger(__name__)

UNIT = "ops"  # one iteration: a pair of calls
QUERY_PART = "query (filter)"  # the query tree's time: the filter's postings intersection
# what a part of the profile is, for the seed's phases (report/studies/profile.py): by the aggregator's type
PHASE_FILTER, PHASE_PERCENTILES, PHASE_SUMS, PHASE_OTHER = "filter", "percentiles", "sums", "other aggregations"


def breakdown(profile):
    """Nanoseconds of the query (the filter) and of each aggregation, summed over shards, and each one's share of
    their total; per aggregation also build-nanos, the part of its time spent building its result after collecting
    (build_aggregation and reduce of its breakdown: the seed's "build / reduce" phase, not its collect). The collector
    tree is left out: its time contains the aggregations' collect time, so adding it would count that work twice."""
    nanos, build = {}, {}
    for shard in profile.get("shards", []):
        for search in shard.get("searches", []):
            for query in search.get("query", []):
                nanos[QUERY_PART] = nanos.get(QUERY_PART, 0) + query["time_in_nanos"]
        for agg in shard.get("aggregations", []):
            name = f"{agg['description']} ({agg['type']})"
            nanos[name] = nanos.get(name, 0) + agg["time_in_nanos"]
            steps = agg.get("breakdown", {})
            build[name] = build.get(name, 0) + steps.get("build_aggregation", 0) + steps.get("reduce", 0)
    total = sum(nanos.values())
    return {
        name: {"nanos": n, "share": n / total if total else 0.0, **({"build-nanos": build[name]} if name in build else {})}
        for name, n in nanos.items()
    }


def phase(part):
    """The seed's phase of a profile part (a breakdown name): the filter, the percentiles or the sums, else other."""
    if part == QUERY_PART:
        return PHASE_FILTER
    kind = part.rsplit("(", 1)[-1]
    if "Percentiles" in kind:
        return PHASE_PERCENTILES
    if kind.startswith("SumAggregator"):
        return PHASE_SUMS
    return PHASE_OTHER


def is_measured(call):
    """A recorded call counts unless it was a warm-up (measured None: the task did not say, nobody counted)."""
    return call.get("measured") is not False


def read_calls(record_dir):
    """The race's recorded calls (records.PROFILE_CALLS), in the order they ran."""
    try:
        with open(os.path.join(record_dir, records.PROFILE_CALLS)) as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def shares(calls):
    """profile.json's content from recorded calls: the successful measured ON calls, each part's mean nanoseconds per
    call and its share of all parts (sums over the calls, so a slow call weighs what it cost); None without one."""
    on = [c for c in calls if c["profile"] and c["success"] and is_measured(c)]
    if not on:
        return None
    names = dict.fromkeys(name for c in on for name in c["parts"])
    sums = {name: sum(c["parts"].get(name, {}).get("nanos", 0) for c in on) for name in names}
    total = sum(sums.values())
    first = on[0]
    return {
        **{k: first[k] for k in ("task", "variant", "epoch", "node")},
        "calls": len(on),
        "took_ms": statistics.fmean(c["took-ms"] for c in on),
        "parts": {name: {"nanos": s / len(on), "share": s / total if total else 0.0} for name, s in sums.items()},
    }


class ProfileParamSource:
    """Builds the node's search once, serialized without and with profile: true, and the answer both must give;
    numbers each iteration, so that the runner knows the warm-ups (WARMUPS_KEY, set by the track processor to the
    task's warmup-iterations) and which call of the pair goes first (OFF first in odd iterations, ON in even ones).

    Operation parameters: node, epoch (required); variant (default D_td), percents, hdr-digits, request-timeout
    (seconds, default 120)."""

    def __init__(self, track, params, **kwargs):
        self._params = params
        self._warmups = params.get(WARMUPS_KEY)
        self._built = None  # on first use: Rally also builds parameter sources where it only looks for corpora
        self._next = 0
        self.infinite = True

    def _build(self):
        p = self._params
        context = RaceContext.of(p)
        variant, epoch, node = p.get("variant", "D_td"), p["epoch"], p["node"]
        percents = list(p.get("percents", queries.DEFAULT_PERCENTS))
        hdr_digits = p.get("hdr-digits", queries.DEFAULT_HDR_DIGITS)
        body = queries.node_search(variant, epoch, node, percents, hdr_digits)
        # node and epoch were checked against the corpus when the track loaded (validate_profile)
        return {
            "name": p.get("name"),
            "variant": variant,
            "epoch": epoch,
            "node": node,
            "request-timeout": p.get("request-timeout", parameters.DEFAULTS["request_timeout"]),
            "path": f"/{context.index}/_search",
            "bodies": {False: queries.json_bytes(body), True: queries.json_bytes({**body, "profile": True})},
            "expected": NodeExpectation(context.truth()[str(epoch)][node], variant, percents, hdr_digits),
            CONTEXT_KEY: p[CONTEXT_KEY],
        }

    def partition(self, partition_index, total_partitions):
        return self  # one client (validate_profile)

    def params(self):
        if self._built is None:
            self._built = self._build()
        self._next += 1
        return {
            **self._built,
            "iteration": self._next,
            "profile-first": self._next % 2 == 0,
            MEASURED_KEY: None if self._warmups is None else self._next > self._warmups,
        }


class ProfileBreakdown:
    """One iteration: the node's search with profile OFF and with profile ON, back to back, in the order the parameter
    source says; each answer checked against the ground truth.

    Measures per call: took (Elasticsearch's, ms), wall (ms, perf_counter around the request alone: the body is sent
    as bytes serialized beforehand and decoded after the clock stops) and the decoding (ms); of the ON call also the
    profile's parts (nanoseconds of the filter and of each aggregation, and the aggregations' build time). Profiling
    inserts timers into per-document loops and inflates the ON call (the seed saw +83% took), so only its shares mean
    anything: the OFF call is the absolute figure.

    Returns weight 1, unit "ops", took-off, took-on, wall-off-ms, wall-on-ms and measured; appends a line per call to
    <race>/cluster-metrics/profile-calls.jsonl and, after a measured iteration, writes the shares of the measured ON
    calls so far to profile.json (both travel as sample meta, records.py).

    Errors, each a failed sample with a description naming the call (profile ON or OFF), node and epoch: a wrong
    answer (any mismatch against the ground truth, a shard failure, timed_out, an ON answer without its profile), an
    answer of the wrong shape, an HTTP error status, a network failure (never retried: a retry would hide inside the
    timed wall). A call that got no answer ends the iteration, and nothing of it is recorded (a pair lacks a side);
    a pair with both answers is recorded, a wrong answer with its errors."""

    async def __call__(self, es, params):
        client = es.options(request_timeout=params["request-timeout"], max_retries=0, retry_on_status=(), retry_on_timeout=False)
        es.return_raw_response()  # keep the bytes: decoding waits until the clock has stopped
        order = (True, False) if params["profile-first"] else (False, True)
        answered = []
        for profiled in order:
            where = _where(params, profiled)
            # errors mapped as the coverage maps them (its wording, the status and Elasticsearch's reason), in this unit
            started = time.perf_counter()
            try:
                response = await client.perform_request(
                    "POST", params["path"], params=NO_CACHE, body=params["bodies"][profiled], headers=dict(JSON)
                )
            except elasticsearch.ApiError as e:
                return {**http_error(e, where), "unit": UNIT}
            except elasticsearch.TransportError as e:
                es.on_request_end()  # the failure's moment; the client does not mark every kind (a timeout)
                return {**network_error(e, where, params["request-timeout"]), "unit": UNIT}
            answered.append((profiled, response.body, (time.perf_counter() - started) * 1000))
        # the clock has stopped for both calls: decode, check and record
        calls = [self._call(params, profiled, body, wall_ms, position) for position, (profiled, body, wall_ms) in enumerate(answered, 1)]
        record_dir = RaceContext.of(params).record_dir
        meta = {}
        for call in calls:
            records.add(meta, records.append_line(record_dir, records.PROFILE_CALLS, json.dumps(call, sort_keys=True)))
        by_profile = {call["profile"]: call for call in calls}
        meta.update(
            {
                "took-off": by_profile[False]["took-ms"],
                "took-on": by_profile[True]["took-ms"],
                "wall-off-ms": by_profile[False]["wall-ms"],
                "wall-on-ms": by_profile[True]["wall-ms"],
                "measured": params.get(MEASURED_KEY),
            }
        )
        errors = [f"{_label(params, call['profile'])}: {call['error']}" for call in calls if not call["success"]]
        if errors:
            return results.failed("; ".join(errors), "cluster-metrics-validation", UNIT, meta)
        if params.get(MEASURED_KEY) is not False:
            profile = shares([c for c in read_calls(record_dir) if c.get("task") == params["name"]])
            if profile:
                records.add(meta, records.write(record_dir, records.PROFILE, profile))
        return {"weight": 1, "unit": UNIT, "success": True, **meta}

    @staticmethod
    def _call(params, profiled, body, wall_ms, position):
        """One answered call as its record line: its times, whether the answer was right and, ON, the profile's parts."""
        call = {
            "task": params["name"],
            "variant": params["variant"],
            "epoch": params["epoch"],
            "node": params["node"],
            "iteration": params["iteration"],
            "measured": params.get(MEASURED_KEY),
            "profile": profiled,
            "position": position,
            "wall-ms": round(wall_ms, 3),
            "took-ms": None,
            "success": False,
            "error": None,
        }
        errors, pct_errors = CoverageErrors(), PercentileErrors()
        where = f"epoch {params['epoch']} node {params['node']}"  # as check_node_response names its mismatches
        try:
            started = time.perf_counter()
            response = json.load(body)
            call["decode-ms"] = round((time.perf_counter() - started) * 1000, 3)
            call["took-ms"] = response.get("took")
            call["hits"] = check_node_response(response, params["node"], params["epoch"], params["expected"], errors, pct_errors)
            errors.check(isinstance(call["took-ms"], int), lambda: f"{where}: took is {call['took-ms']!r}, not a number of ms")
            if profiled and errors.check("profile" in response, f"{where}: the answer has no profile"):
                call["parts"] = {
                    name: {k: v for k, v in part.items() if k != "share"} for name, part in breakdown(response["profile"]).items()
                }
        except MALFORMED as e:  # an answer of the wrong shape: a failed sample, never a crashed race
            errors.add(f"{where}: malformed answer ({type(e).__name__}: {e})")
        call.update(errors.as_meta())
        call["success"] = not errors
        call["error"] = errors.description() if errors else None
        return call

    def __repr__(self):
        return "profile-breakdown"


def _label(params, profiled):
    return f"{params['name']} profile {'ON' if profiled else 'OFF'}"


def _where(params, profiled):
    return f"{_label(params, profiled)}: epoch {params['epoch']} node {params['node']}"


def validate_profile(params, clients, context):
    """Load-time check: a known variant, a node and epoch the race's corpus has (track parameters profile_node,
    profile_epoch), one client (the pair is timed one call at a time)."""
    queries.validate_variant(params.get("variant", "D_td"))
    if params.get("node") not in context.nodes:
        raise ValueError(
            f"node {params.get('node')!r} is not in the generated corpus ({context.nodes[0]}.."
            f"{context.nodes[-1]}; track parameter profile_node)"
        )
    if params.get("epoch") not in context.epochs:
        raise ValueError(
            f"epoch {params.get('epoch')!r} is not ingested by this race (epochs {list(context.epochs)}; " "track parameter profile_epoch)"
        )
    if clients != 1:
        raise ValueError(f"profile-breakdown times one call at a time: clients must be 1, not {clients}")
    parameters.check_operation_value("percents", params.get("percents", list(queries.DEFAULT_PERCENTS)), "percents")
    parameters.check_operation_value("hdr-digits", params.get("hdr-digits", queries.DEFAULT_HDR_DIGITS), "hdr_digits")
    parameters.check_operation_value(
        "request-timeout", params.get("request-timeout", parameters.DEFAULTS["request_timeout"]), "request_timeout"
    )


PARAMETER_RULES = {
    "profile_node": rules.string,
    "profile_epoch": rules.integer(1),
    "profile_iterations": rules.integer(1),  # measured OFF/ON pairs of profile-breakdown, each side a sample
}


OPERATIONS = {
    "profile-breakdown": Operation(
        ProfileBreakdown, Need("searches the index with profile on", index=("read",)), ProfileParamSource, validate_profile
    ),
}
