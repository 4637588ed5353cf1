"""Checks of coverage responses against the generator's exact ground truth.

Hit counts and sums must match (sums to a relative 1e-9: float32 values accumulated in double, in any order).
Percentiles are approximations: their error against the exact (interpolated) value is measured, and a sample
fails only when an estimate lies outside the bracket of neighbouring order statistics widened by
PERCENTILE_ERROR_BOUND of the value range (definitions differ: HDR takes the nearest rank, t-digest interpolates).
"""

from runners.queries import FIELDS, TERMS_AGG, has_percentiles, has_sums

SUM_RELATIVE_TOLERANCE = 1e-9
# generous on purpose: t-digest and HDR(3 digits) land far closer; this catches wrong data, not sketch noise
PERCENTILE_ERROR_BOUND = 0.05  # of the node's value range (p100 - p0) for that field
MAX_LISTED_ERRORS = 5


class CoverageErrors:
    """Collects mismatches; the description names epoch, node and field of the first few."""

    def __init__(self):
        self.messages = []

    def add(self, message):
        self.messages.append(message)

    def __bool__(self):
        return bool(self.messages)

    def description(self):
        shown = "; ".join(self.messages[:MAX_LISTED_ERRORS])
        more = len(self.messages) - MAX_LISTED_ERRORS
        return shown + (f"; and {more} more" if more > 0 else "")


class PercentileErrors:
    """Running max / mean of absolute and relative percentile error against the exact values."""

    def __init__(self):
        self.count = 0
        self.abs_sum = self.rel_sum = 0.0
        self.abs_max = self.rel_max = 0.0
        self.worst = None

    def add(self, where, estimate, exact):
        error = abs(estimate - exact)
        relative = error / abs(exact) if exact else (0.0 if error == 0 else float("inf"))
        self.count += 1
        self.abs_sum += error
        self.rel_sum += relative if relative != float("inf") else 0.0
        if error >= self.abs_max:
            self.abs_max, self.worst = error, where
        self.rel_max = max(self.rel_max, relative)

    def as_meta(self):
        if not self.count:
            return {}
        return {"percentile-abs-error-max": self.abs_max, "percentile-abs-error-mean": self.abs_sum / self.count,
                "percentile-rel-error-max": self.rel_max, "percentile-rel-error-mean": self.rel_sum / self.count,
                "percentile-worst": self.worst}


def check_shards(response, where, errors):
    if response.get("timed_out"):
        errors.add(f"{where}: timed_out")
    shards = response.get("_shards", {})
    if shards.get("failed", 0) > 0:
        reasons = [f.get("reason", {}).get("reason", "unknown") for f in shards.get("failures", [])]
        errors.add(f"{where}: {shards['failed']} of {shards.get('total')} shards failed ({'; '.join(reasons[:2])})")


def _present(aggs, suffix, where, errors):
    """(field, aggregation) for each field's <field>_<suffix> aggregation; a missing one is an error."""
    for field in FIELDS:
        agg = aggs.get(f"{field}_{suffix}")
        if agg is None:
            errors.add(f"{where} {field}_{suffix}: missing from the response")
        else:
            yield field, agg


def check_metrics(aggs, expected, variant, percents, where, errors, pct_errors):
    """Sums and percentiles of one node (in a search response's aggregations or in a terms bucket)."""
    if has_sums(variant):
        for field, agg in _present(aggs, "sum", where, errors):
            value, exact = agg.get("value"), expected["sum"][field]
            if value is None or abs(value - exact) > SUM_RELATIVE_TOLERANCE * max(abs(exact), 1.0):
                errors.add(f"{where} {field}_sum: {value} != expected {exact}")
    if has_percentiles(variant):
        for field, agg in _present(aggs, "pct", where, errors):
            exact_by_p, brackets = expected["percentiles"][field], expected["brackets"][field]
            margin = PERCENTILE_ERROR_BOUND * max(exact_by_p["100"] - exact_by_p["0"], 1e-9)
            for p in percents:
                key = _percent_key(p)
                exact = exact_by_p.get(key)
                estimate = agg.get("values", {}).get(_es_percent_key(p))
                if exact is None:
                    continue  # no exact answer kept for this percent; nothing to compare
                if estimate is None:
                    errors.add(f"{where} {field} p{key}: missing from the response")
                    continue
                pct_errors.add(f"{where} {field} p{key}", estimate, exact)
                low, high = brackets[key]
                if not low - margin <= estimate <= high + margin:
                    errors.add(f"{where} {field} p{key}: {estimate} is outside [{low}, {high}] (order statistics "
                               f"around the exact {exact}) widened by {PERCENTILE_ERROR_BOUND:.0%} of the value range")


def _percent_key(p):
    return str(int(p)) if float(p).is_integer() else str(p)


def _es_percent_key(p):
    return f"{float(p)}"  # Elasticsearch keys percentiles as "50.0"


def check_node_response(response, node, epoch, expected, variant, percents, errors, pct_errors):
    """One node's _search (or _msearch sub-) response."""
    where = f"epoch {epoch} node {node}"
    if "error" in response:
        error = response["error"]
        reason = error.get("reason") if isinstance(error, dict) else error
        kind = error.get("type") if isinstance(error, dict) else "error"
        errors.add(f"{where}: {kind}: {reason}")
        return
    check_shards(response, where, errors)
    total = response.get("hits", {}).get("total", {})
    if total.get("relation") != "eq" or total.get("value") != expected["count"]:
        errors.add(f"{where}: {total.get('value')} hits ({total.get('relation')}), expected {expected['count']}")
    check_metrics(response.get("aggregations", {}), expected, variant, percents, where, errors, pct_errors)


def check_terms_response(response, nodes, epoch, expected_by_node, variant, percents, errors, pct_errors):
    """The single terms request: one bucket per node, each checked like a node's search."""
    where = f"epoch {epoch}"
    check_shards(response, where, errors)
    expected_total = sum(expected_by_node[n]["count"] for n in nodes)
    total = response.get("hits", {}).get("total", {})
    if total.get("value") != expected_total:
        errors.add(f"{where}: {total.get('value')} hits, expected {expected_total}")
    agg = response.get("aggregations", {}).get(TERMS_AGG, {})
    buckets = {b["key"]: b for b in agg.get("buckets", [])}
    if agg.get("sum_other_doc_count", 0):
        errors.add(f"{where}: {agg['sum_other_doc_count']} docs outside the node buckets")
    missing = [n for n in nodes if n not in buckets]
    if missing:
        errors.add(f"{where}: no bucket for node(s) {', '.join(missing[:5])} ({len(buckets)} buckets, {len(nodes)} nodes)")
    for node in nodes:
        bucket = buckets.get(node)
        if bucket is None:
            continue
        node_where = f"{where} node {node}"
        if bucket["doc_count"] != expected_by_node[node]["count"]:
            errors.add(f"{node_where}: doc_count {bucket['doc_count']}, expected {expected_by_node[node]['count']}")
        check_metrics(bucket, expected_by_node[node], variant, percents, node_where, errors, pct_errors)
