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

import json
import logging
import math

from runners import parameters, records, results
from runners.context import RaceContext
from runners.coverage import Coverage, CoverageParamSource, validate_coverage

LOG = logging.getLogger(__name__)
BREAKER_SETTING = "indices.breaker.request.limit"
LOWEST_LIMIT_BYTES = 1024  # below this the bisection does not look: a coverage passing here needs "< 1 KiB"


class BreakerFloorParamSource(CoverageParamSource):
    """The coverage's requests and expectations, plus the bisection's attempts and resolution."""

    def __init__(self, track, params, **kwargs):
        super().__init__(track, params, **kwargs)
        self._fixed.update(
            {
                "attempts": params.get("attempts", 3),
                "resolution": params.get("resolution", 0.05),
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
    request breaker's trip count went up. A failure without a trip (a wrong answer, a shard failure that is not the
    breaker, a network error) ends the bisection as a failed sample naming it. Whatever happens, the setting's
    persistent value is put back as it was (removed if it was not set), in a finally block, and read back.

    Returns: floor-bytes (the lowest limit that passed), below-bytes (the highest limit that tripped, 0 if none),
    original-limit-bytes, young-gcs-per-coverage, gc-ms-per-coverage, coverages (run in all), and the cell; appends
    the same as one line to <race>/cluster-metrics/aggregation-memory.jsonl."""

    def __init__(self):
        self._coverage = Coverage()

    async def __call__(self, es, params):
        settings = await _settings(es)
        transient = settings.get("transient", {}).get(BREAKER_SETTING)
        if transient is not None:
            return _failed(
                params,
                f"a transient {BREAKER_SETTING} ({transient}) is set and would hide the bisection's "
                "persistent one: remove it with PUT _cluster/settings "
                f'{{"transient": {{"{BREAKER_SETTING}": null}}}}',
            )
        original = settings.get("persistent", {}).get(BREAKER_SETTING)
        limit = await _limit_bytes(es)
        gc_before = await _gc(es)
        baseline = await self._attempts(es, params)
        gc_after = await _gc(es)
        if baseline is not None:
            return _failed(params, f"fails at the node's own limit of {limit} bytes: {baseline}")
        attempts, coverages = params["attempts"], params["attempts"]
        low, high, steps = 0, limit, 0
        try:
            candidate = LOWEST_LIMIT_BYTES
            while candidate is not None:
                steps += 1
                outcome, ran = await self._try(es, params, candidate)
                coverages += ran
                if outcome == "pass":
                    high = candidate
                elif outcome == "trip":
                    low = candidate
                else:
                    return _failed(
                        params, f"at a limit of {candidate} bytes, a coverage failed without tripping the " f"request breaker: {outcome}"
                    )
                candidate = _next_limit(low, high, params["resolution"])
        finally:
            await _restore(es, original)
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
        records.append_line(params["record-dir"], records.MEMORY, json.dumps(row, sort_keys=True))
        LOG.info("cluster-metrics request breaker floor: %s", row)
        return {"weight": 1, "unit": "ops", "success": True, **row}

    async def _attempts(self, es, params):
        """None when `attempts` coverages in a row pass, else the first failure's description."""
        for _ in range(params["attempts"]):
            result = await self._coverage(es, params)
            if not result["success"]:
                return result["error-description"]
        return None

    async def _try(self, es, params, limit):
        """("pass" | "trip" | a failure's description, coverages run) at this limit."""
        await _put_limit(es, f"{limit}b")
        tripped = await _trips(es)
        for ran in range(1, params["attempts"] + 1):
            result = await self._coverage(es, params)
            if not result["success"]:
                return ("trip" if await _trips(es) > tripped else result["error-description"]), ran
        return "pass", params["attempts"]

    def __repr__(self):
        return "breaker-floor"


def _next_limit(low, high, resolution):
    """The next limit to try (geometric middle), or None when high / low is within the resolution, or when nothing
    tripped yet (the first try, LOWEST_LIMIT_BYTES, passed)."""
    if low == 0 or high / low <= 1 + resolution:
        return None
    return int(math.sqrt(low * high))


def _body(response):
    """A response's JSON: the coverage switched the client to raw responses for this runner call."""
    body = response.body
    return json.load(body) if hasattr(body, "read") else body


async def _settings(es):
    return _body(await es.perform_request("GET", "/_cluster/settings", params={"flat_settings": "true"}))


async def _put_limit(es, value):
    await es.perform_request(
        "PUT",
        "/_cluster/settings",
        body={"persistent": {BREAKER_SETTING: value}},
        headers={"content-type": "application/json", "accept": "application/json"},
    )


async def _restore(es, original):
    """Put the persistent value back (None removes it) and read it back; a mismatch is logged as an error."""
    await _put_limit(es, original)
    now = (await _settings(es)).get("persistent", {}).get(BREAKER_SETTING)
    if now != original:
        LOG.error("%s is %r after the bisection, it was %r: set it back by hand", BREAKER_SETTING, now, original)


async def _nodes_stats(es, metric):
    return _body(await es.perform_request("GET", f"/_nodes/stats/{metric}"))["nodes"].values()


async def _limit_bytes(es):
    """The request breaker's limit now, the lowest over the nodes."""
    return min(n["breakers"]["request"]["limit_size_in_bytes"] for n in await _nodes_stats(es, "breaker"))


async def _trips(es):
    return sum(n["breakers"]["request"]["tripped"] for n in await _nodes_stats(es, "breaker"))


async def _gc(es):
    young = [n["jvm"]["gc"]["collectors"]["young"] for n in await _nodes_stats(es, "jvm")]
    return {"count": sum(y["collection_count"] for y in young), "ms": sum(y["collection_time_in_millis"] for y in young)}


def _failed(params, reason):
    return results.failed(f"{params['cell']} request breaker floor: {reason}")


def validate_breaker_floor(params, clients, context):
    """Load-time check: the coverage's own parameters, attempts and resolution; one client (the limit is
    node-wide)."""
    validate_coverage(params, clients, context)
    parameters.check_operation_value("attempts", params.get("attempts", 3), "memory_attempts")
    parameters.check_operation_value("resolution", params.get("resolution", 0.05), "memory_resolution")
    if clients != 1:
        raise ValueError(f"the request breaker floor runs with 1 client, not {clients} (the limit is node-wide)")
