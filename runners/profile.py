"""profile: true for one node and epoch: each aggregation's share of the shard-level time."""

import logging

from runners import parameters, queries, records
from runners.context import RaceContext
from runners.validation import CoverageErrors, NodeExpectation, PercentileErrors, check_node_response

LOG = logging.getLogger(__name__)


def breakdown(profile):
    """Nanoseconds of the query (the filter) and of each aggregation, summed over shards, and each one's share of
    their total. The collector tree is left out: its time contains the aggregations' collect time, so adding it
    would count that work twice."""
    parts = {}
    for shard in profile.get("shards", []):
        for search in shard.get("searches", []):
            for query in search.get("query", []):
                parts["query (filter)"] = parts.get("query (filter)", 0) + query["time_in_nanos"]
        for agg in shard.get("aggregations", []):
            name = f"{agg['description']} ({agg['type']})"
            parts[name] = parts.get(name, 0) + agg["time_in_nanos"]
    total = sum(parts.values())
    return {name: {"nanos": nanos, "share": nanos / total if total else 0.0} for name, nanos in parts.items()}


class ProfileBreakdown:
    """Runs one node's search for one epoch with profile: true (the seed's D_td by default).

    Profiling inserts timers into per-document loops and inflates absolute time (the seed saw ~75-80%), so only the
    shares are meaningful. Returns weight 1, unit "ops"; writes the shares to <race>/cluster-metrics/profile.json
    and validates the answer against the ground truth like a coverage."""

    async def __call__(self, es, params):
        context = RaceContext.of(params)
        variant, epoch, node = params.get("variant", "D_td"), params["epoch"], params["node"]
        percents = params.get("percents", queries.DEFAULT_PERCENTS)
        hdr_digits = params.get("hdr-digits", queries.DEFAULT_HDR_DIGITS)
        body = queries.node_search(variant, epoch, node, percents, hdr_digits)
        body["profile"] = True
        response = (await es.perform_request("POST", f"/{context.index}/_search", params={"request_cache": "false"}, body=body)).body
        errors, pct_errors = CoverageErrors(), PercentileErrors()
        # node and epoch were checked against the corpus when the track loaded
        expected = NodeExpectation(context.truth()[str(epoch)][node], variant, percents, hdr_digits)
        check_node_response(response, node, epoch, expected, errors, pct_errors)
        shares = breakdown(response.get("profile", {}))
        meta = records.write(
            context.record_dir,
            records.PROFILE,
            {"variant": variant, "epoch": epoch, "node": node, "took_ms": response.get("took"), "parts": shares},
        )
        result = {
            "weight": 1,
            "unit": "ops",
            "success": not errors,
            "took": response.get("took"),
            **{f"share {name}": part["share"] for name, part in shares.items()},
            **meta,
        }
        if errors:
            result["error-type"] = "cluster-metrics-validation"
            result["error-description"] = errors.description()
        return result

    def __repr__(self):
        return "profile-breakdown"


def validate_profile(params, clients, context):
    """Load-time check: a known variant, and a node and epoch the race's corpus has (track parameters profile_node,
    profile_epoch)."""
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
    parameters.check_operation_value("percents", params.get("percents", list(queries.DEFAULT_PERCENTS)), "percents")
    parameters.check_operation_value("hdr-digits", params.get("hdr-digits", queries.DEFAULT_HDR_DIGITS), "hdr_digits")
