"""Aggregation memory: the lowest request circuit-breaker limit at which a coverage still succeeds.

Elasticsearch's request breaker (indices.breaker.request.limit, a dynamic cluster setting, default 60% of the heap)
adds up what requests reserve on a node and rejects a request that would take the node past the limit. Lowering
the limit until a coverage starts to fail measures the memory the breaker accounts to that coverage: its peak
reservation, summed over the searches the node runs at once. What it does not see, it cannot measure: in
Elasticsearch 8.17 the shard-level percentile states (t-digest created without circuit breaking, HDR DoubleHistogram
allocated directly) are outside it; the coordinating node's reservation for the shard results it reduces, the
terms buckets and the other BigArrays are inside. The runner therefore also reports the young-generation
collections and collection time per coverage at the node's own limit (JVM statistics of /_nodes/stats), which do see
those allocations.
"""

import asyncio
import json
import logging
import math
import numbers

from runners.contracts import parameters, queries, records, rules
from runners.contracts.context import RaceContext
from runners.contracts.queries import TRANSPORTS, VARIANTS
from runners.contracts.registry import SETTINGS_CHANGE, Need, Operation
from runners.shared import restore, results
from runners.studies.coverage import Coverage, CoverageParamSource, validate_coverage

MIN_RESOLUTION = 0.001  # the request breaker floor's finest relative bracket

LOG = logging.getLogger(__name__)
BREAKER_SETTING = "indices.breaker.request.limit"
LOWEST_LIMIT_BYTES = 1024  # below this the bisection does not look: a coverage passing here needs "< 1 KiB"
NARROWEST_BRACKET_BYTES = 64  # the bisection stops at a bracket this narrow, whatever the resolution


class BreakerFloorParamSource(CoverageParamSource):
    """The coverage's requests and expectations, plus the bisection's attempts and resolution."""

    def __init__(self, track, params, **kwargs):
        super().__init__(track, params, **kwargs)
        self._fixed.update(
            {
                "attempts": params.get("attempts", parameters.DEFAULTS["memory_attempts"]),
                "resolution": params.get("resolution", parameters.DEFAULTS["memory_resolution"]),
                "record-dir": RaceContext.of(params).record_dir,
                "settings": {"hdr-digits": self.hdr_digits, "tdigest-compression": self.compression},
            }
        )


class BreakerFloor:
    """The memory the request circuit breaker accounts to one coverage, by bisection of its limit.

    First, at the node's own limit, `attempts` coverages must pass (else the cell fails and nothing is changed); the
    young GCs and GC time they cause are kept. Then the limit (set as a persistent cluster setting) is bisected in
    geometric steps between LOWEST_LIMIT_BYTES and the node's limit until the bracket is narrower than `resolution`
    (relative): a limit passes when `attempts` coverages in a row pass, and is too low when a coverage fails and the
    coverage's own answer is the request breaker rejecting it. A failure without a trip (a wrong answer, a shard
    failure that is not the breaker, a network error) ends the bisection as a failed sample naming it; so does the
    parent breaker rejecting a coverage (the heap in use, garbage included, past its limit: no floor of this
    coverage), naming the heap. The setting's persistent value is noted on the cluster before the first change
    (runners/shared/restore.py) and put back as it was (removed if it was not set), in a finally block, and read back; a
    restore that fails raises, naming the setting and the request to set it by hand, and leaves the note for the next
    race.

    Returns: floor-bytes (the lowest limit that passed), below-bytes (the highest limit that tripped, 0 if none),
    original-limit-bytes, young-gcs-per-coverage, gc-ms-per-coverage, coverages (run in all), and the cell; appends
    the same as one line to <race>/cluster-metrics/aggregation-memory.jsonl."""

    def __init__(self):
        self._coverage = Coverage()

    async def __call__(self, es, params):
        carried = {}  # the record operations of every coverage run here (their validation rows), for the sample's meta
        result = await self._bisect(es, params, carried)
        return records.add(result, carried)

    async def _bisect(self, es, params, carried):
        await restore.leftovers(es)  # a limit a killed bisection left is not the user's: put the noted value back first
        original, transient = await restore.persistent(es, BREAKER_SETTING)
        if transient is not None:
            return _failed(
                params,
                f"a transient {BREAKER_SETTING} ({transient}) is set and would hide the bisection's "
                "persistent one: remove it with PUT _cluster/settings "
                f'{{"transient": {{"{BREAKER_SETTING}": null}}}}',
            )
        limit = await _limit_bytes(es)
        gc_before = await _gc(es)
        baseline = await self._attempts(es, params, carried)
        gc_after = await _gc(es)
        if baseline is not None:
            return _failed(params, f"fails at the node's own limit of {limit} bytes: {baseline}")
        attempts, coverages = params["attempts"], params["attempts"]
        low, high, steps = 0, limit, 0
        await restore.note(es, BREAKER_SETTING, original)  # on the cluster: it outlives this load driver
        try:
            candidate = LOWEST_LIMIT_BYTES
            while candidate is not None:
                steps += 1
                outcome, ran, problem = await self._try(es, params, candidate, carried)
                coverages += ran
                if outcome == "pass":
                    high = candidate
                elif outcome == "trip":
                    low = candidate
                elif outcome == "parent":
                    return _failed(
                        params,
                        f"at a limit of {candidate} bytes, the parent breaker rejected a coverage: the node's heap in use "
                        "(garbage included) passed indices.breaker.total.limit before the request limit did, which says "
                        "nothing of this coverage's need. Give the node a larger heap (make's local node: HEAP=2g) or "
                        f"leave this cell out: {problem}",
                    )
                else:
                    return _failed(
                        params, f"at a limit of {candidate} bytes, a coverage failed without tripping the request breaker: {problem}"
                    )
                candidate = _next_limit(low, high, params["resolution"])
        finally:
            await restore.put_back(es, {BREAKER_SETTING: original})
        row = {
            "cell": params["cell"],
            "variant": params["variant"],
            "transport": params["transport"],
            **params["settings"],
            "task": params.get("name"),
            "floor-bytes": high,
            "below-bytes": low,
            "original-limit-bytes": limit,
            "steps": steps,
            "coverages": coverages,
            "young-gcs-per-coverage": (gc_after["count"] - gc_before["count"]) / attempts,
            "gc-ms-per-coverage": (gc_after["ms"] - gc_before["ms"]) / attempts,
        }
        meta = records.append_line(params["record-dir"], records.MEMORY, json.dumps(row, sort_keys=True))
        LOG.info("cluster-metrics request breaker floor: %s", row)
        return {"weight": 1, "unit": "ops", "success": True, **row, **meta}

    async def _attempts(self, es, params, carried):
        """None when `attempts` coverages in a row pass, else the first failure's description."""
        for _ in range(params["attempts"]):
            result = await self._covered(es, params, carried)
            if not result["success"]:
                return result["error-description"]
        return None

    async def _try(self, es, params, limit, carried):
        """(outcome, coverages run, the failure's description) at this limit; outcome "pass", "trip" (the request
        breaker rejected the coverage), "parent" (the parent breaker did, and not the request breaker) or "failed"."""
        await _put_limit(es, f"{limit}b")
        for ran in range(1, params["attempts"] + 1):
            result = await self._covered(es, params, carried)
            if not result["success"]:
                # too low only when this coverage's own answer is the request breaker rejecting it: a trip elsewhere
                # on a shared cluster says nothing of this coverage's need
                if result.get("request-breaker-trips"):
                    return "trip", ran, None
                return ("parent" if result.get("parent-breaker-trips") else "failed"), ran, result["error-description"]
        return "pass", params["attempts"], None

    async def _covered(self, es, params, carried):
        """One coverage, its record operations (its validation row) added to `carried`: a metrics store then rebuilds
        the same record folder as the load driver's disk holds."""
        result = await self._coverage(es, params)
        records.add(carried, {records.META_KEY: result[records.META_KEY]} if records.META_KEY in result else {})
        return result

    def __repr__(self):
        return "breaker-floor"


class CheckQuietCluster:
    """Before aggregation-memory lowers a cluster-wide limit: no other search traffic on the cluster. Counts the
    searches every node ran (query_total of /_nodes/stats) over `seconds` in which this track sends none; any means
    other clients, whose searches a lowered request breaker would reject (and whose trips are not this coverage's
    floor). Then the race ends before anything changes, naming the parameter that accepts it (shared-cluster: the
    track parameter memory_shared_cluster). Untimed; returns 1 op and the searches seen."""

    async def __call__(self, es, params):
        before = await _searches(es)
        await asyncio.sleep(params.get("seconds", 3))
        seen = await _searches(es) - before
        if seen and not params.get("shared-cluster"):
            raise SharedClusterError(
                f"{seen} searches of other clients ran on the cluster in {params.get('seconds', 3)} s: aggregation-memory lowers "
                f"{BREAKER_SETTING}, a cluster-wide limit, and would reject their searches while it bisects. Run it on a cluster "
                "of your own, or accept that with the track parameter memory_shared_cluster: true"
            )
        return {"weight": 1, "unit": "ops", "success": True, "searches-seen": seen}

    def __repr__(self):
        return "check-quiet-cluster"


class SharedClusterError(Exception):
    """Other search traffic where the track is about to lower a cluster-wide limit."""


async def _searches(es):
    return sum(n["indices"]["search"]["query_total"] for n in await _nodes_stats(es, "indices/search"))


def _next_limit(low, high, resolution):
    """The next limit to try (geometric middle), or None when high / low is within the resolution, or when nothing
    tripped yet (the first try, LOWEST_LIMIT_BYTES, passed)."""
    if low == 0 or high / low <= 1 + resolution or high - low <= NARROWEST_BRACKET_BYTES:
        return None
    return int(math.sqrt(low * high))


async def _put_limit(es, value):
    await restore.put(es, BREAKER_SETTING, value)


async def _nodes_stats(es, metric):
    return restore.body_of(await es.perform_request("GET", f"/_nodes/stats/{metric}"))["nodes"].values()


async def _limit_bytes(es):
    """The request breaker's limit now, the lowest over the nodes."""
    return min(n["breakers"]["request"]["limit_size_in_bytes"] for n in await _nodes_stats(es, "breaker"))


async def _gc(es):
    young = [n["jvm"]["gc"]["collectors"]["young"] for n in await _nodes_stats(es, "jvm")]
    return {"count": sum(y["collection_count"] for y in young), "ms": sum(y["collection_time_in_millis"] for y in young)}


def _failed(params, reason):
    return results.failed(f"{params['cell']} request breaker floor: {reason}")


def validate_breaker_floor(params, clients, context):
    """Load-time check: the coverage's own parameters, attempts and resolution; one client (the limit is
    node-wide)."""
    validate_coverage(params, clients, context)
    parameters.check_operation_value("attempts", params.get("attempts", parameters.DEFAULTS["memory_attempts"]), "memory_attempts")
    parameters.check_operation_value("resolution", params.get("resolution", parameters.DEFAULTS["memory_resolution"]), "memory_resolution")
    if clients != 1:
        raise ValueError(f"the request breaker floor runs with 1 client, not {clients} (the limit is node-wide)")


def resolution(value):
    """The rule of memory_resolution: at least MIN_RESOLUTION, since a finer bracket than the breaker's own granularity
    never closes."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not MIN_RESOLUTION <= value < 1:
        raise rules.ParameterError(f"a number from {MIN_RESOLUTION} to 1 (exclusive)")


# aggregation memory per cell (request breaker floor, GC activity)
PARAMETER_RULES = {
    "memory_variants": rules.names(tuple(VARIANTS)),
    "memory_transports": rules.names(TRANSPORTS),
    "memory_hdr_digits": rules.list_of(rules.integer(0, rules.MAX_HDR_DIGITS), f"HDR digits (0 to {rules.MAX_HDR_DIGITS})"),
    "memory_tdigest_compression": rules.list_of(rules.integer(1, 100000), "t-digest compressions (1 to 100000)"),
    # above this many digits the HDR sweep runs over serial only: msearch and terms hold up to 90 histograms at once,
    # which at 5 digits is more than a 1 GB heap holds, and no breaker sees them
    "memory_parallel_hdr_digits_max": rules.integer(0, rules.MAX_HDR_DIGITS),
    "memory_attempts": rules.integer(1, 100),
    "memory_resolution": resolution,
    "memory_iterations": rules.integer(1),
    # the bisection lowers a cluster-wide limit: refused while other clients search, unless the user accepts it
    "memory_shared_cluster": rules.boolean,
}


def check_parallel_hdr(tasks, user_params):
    """At load: no HDR cell above memory_parallel_hdr_digits_max digits over msearch or terms, whichever parameter
    brings the digits in (up to 90 histograms at once, outside every breaker: 5 digits kill a 1 GB node)."""
    limit = parameters.value(user_params, "memory_parallel_hdr_digits_max")
    for task in tasks:
        params = task.operation.params
        if (
            params.get("variant") not in VARIANTS
            or queries.percentile_algorithm(params["variant"]) != "hdr"
            or params.get("transport") == "serial"
        ):
            continue
        digits = params.get("hdr-digits", queries.DEFAULT_HDR_DIGITS)
        if digits > limit:
            raise ValueError(
                f"task {task.name} runs HDR with {digits} digits over {params['transport']}, above memory_parallel_hdr_digits_max "
                f"({limit}): its histograms, which no breaker sees, can exhaust the heap. Lower hdr_digits, run that cell over "
                "serial, or raise memory_parallel_hdr_digits_max on a node with a larger heap"
            )


OPERATIONS = {
    "check-quiet-cluster": Operation(CheckQuietCluster, Need("reads node stats", ("monitor",))),
    "breaker-floor": Operation(
        BreakerFloor,
        Need("bisects the request breaker's limit, a persistent cluster setting", ("manage", "monitor"), ("read",), SETTINGS_CHANGE),
        BreakerFloorParamSource,
        validate_breaker_floor,
    ),
}
