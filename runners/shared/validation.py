"""Checks of coverage responses against the generator's exact ground truth: a wrong answer is a failed sample.

- Hit counts must be what Elasticsearch answers for the truth's count: the exact count with `track_total_hits`
  (track parameter track_total_hits); without it, as in the seed's body, the exact count below 10,000 and "gte
  10,000" above it (check_hit_total). Without exact counts a count above 10,000 could then change unseen in variant
  A's serial and _msearch answers (size 0, no aggregation: the bound is all they carry); A over terms (each bucket's
  doc_count) and every other variant's sums and percentiles stay exact checks of the same documents. Terms buckets must be exactly the nodes, sums must match to a
  relative SUM_RELATIVE_TOLERANCE (float32 values accumulated in double, in any order).
- Percentiles are approximations, bounded by ranks of the node's exact sorted values (n of them, 0-based ranks):
  * t-digest (compression c): the estimate must lie between the order statistics at ranks r - d n and r + d n,
    r = p/100 (n - 1), d = TDIGEST_RANK_TOLERANCE / c. t-digest's scale function lets a centroid near the median
    hold up to ~pi n / c values and an estimate interpolated inside it errs by at most about half of that
    (~1.57% of n at c = 100); 1.5 / c also covers point masses such as cpu's pile-up at 0, where interpolating next
    to a single-valued centroid errs by ~1%. Measured at full scale on Elasticsearch 8.17: at most 1.01% of n.
  * HDR histogram (d digits): the nearest rank (1-based floor or ceil of p n / 100, at least 1; HdrHistogram rounds
    it) with HDR_RANK_SLACK rank either side for floating-point rounding, the values widened by the histogram's
    relative precision 10^-d (HDR reports the lowest or highest value equivalent to the bucket holding that rank).
  Order statistics come from the ground truth's rank grid, rounded outwards (never tighter than the exact bound).
- The measured error against the exact (interpolated) value is kept for the sample's meta.
"""

import decimal
import math
import re
from collections import Counter

from runners.contracts import queries
from runners.contracts.corpus import FETCH_TRUTH_ROWS, FIELDS, OrderStatistics, as_float32, stored_value

SUM_RELATIVE_TOLERANCE = 1e-9
TDIGEST_RANK_TOLERANCE = 1.5  # divided by the compression: a fraction of the node's count
HDR_RANK_SLACK = 1
MAX_LISTED_ERRORS = 5


def tdigest_rank_tolerance(compression=queries.DEFAULT_COMPRESSION):
    return TDIGEST_RANK_TOLERANCE / compression


def percentile_bounds(stats, count, percent, algorithm, hdr_digits=3, compression=queries.DEFAULT_COMPRESSION):
    """(low, high): the values an estimate of `percent` by `algorithm` may take for these order statistics."""
    if algorithm == "tdigest":
        rank, tolerance = percent / 100 * (count - 1), tdigest_rank_tolerance(compression) * count
        return stats.at_or_below(rank - tolerance), stats.at_or_above(rank + tolerance)
    if algorithm == "hdr":
        nearest = percent / 100 * count
        low_rank = max(math.floor(nearest), 1) - 1 - HDR_RANK_SLACK
        high_rank = max(math.ceil(nearest), 1) - 1 + HDR_RANK_SLACK
        precision = 10.0**-hdr_digits
        return stats.at_or_below(low_rank) * (1 - precision), stats.at_or_above(high_rank) * (1 + precision)
    raise ValueError(f"unknown percentile algorithm {algorithm!r}")


def percent_key(p):
    """How the ground truth keys a percent: "50", "99.9"."""
    return str(int(p)) if float(p).is_integer() else str(p)


def es_percent_key(p):
    """How Elasticsearch keys a percentile: its percent as a double, as Java's Double.toString spells it: "50.0",
    "99.9995", and below 0.001 in scientific notation, "5.0E-4" (a real answer's spelling, for answers a test or the
    validation proof builds; a lookup matches by value: percentile_values)."""
    x = float(p)
    if x == 0 or abs(x) >= 1e-3:
        return repr(x)  # the shortest spelling that reads back as the same double, fixed-point in [1e-3, 1e7)
    sign, digits, exponent = decimal.Decimal(repr(x)).as_tuple()
    mantissa = "".join(map(str, digits)).rstrip("0") or "0"
    text = f"{mantissa[0]}.{mantissa[1:] or '0'}E{exponent + len(digits) - 1}"
    return ("-" if sign else "") + text


def percentile_values(values):
    """A percentiles aggregation's values by percent as a number: Elasticsearch keys each by its percent as a double
    (es_percent_key), so a key is matched by the value it spells, not by one spelling ("5.0E-4" is 0.0005). A key
    that is not a number is left out (the value then counts as missing)."""
    found = {}
    for key, value in (values or {}).items():
        try:
            found[float(key)] = value
        except (TypeError, ValueError):
            continue
    return found


class NodeExpectation:
    """What one node's answer must be for one epoch and variant: count, sums, and per field and percent the
    (low, high) bounds and the exact value. Built once per (epoch, node) by the parameter source."""

    def __init__(self, truth, variant, percents, hdr_digits=3, compression=queries.DEFAULT_COMPRESSION, exact_hits=False):
        self.count = truth["count"]
        self.exact_hits = exact_hits  # the request asked for track_total_hits
        self.sums = truth["sum"] if queries.has_sums(variant) else None
        self.percentiles = None
        algorithm = queries.percentile_algorithm(variant)
        if algorithm:
            self.percentiles = {}
            for field in FIELDS:
                stats = OrderStatistics(truth["ranks"][field], self.count)
                exact_by_key = truth["percentiles"][field]
                self.percentiles[field] = {}
                for p in percents:
                    low, high = percentile_bounds(stats, self.count, p, algorithm, hdr_digits, compression)
                    exact = exact_by_key.get(percent_key(p))
                    if exact is None:  # off the exact list: the interpolated value of the rank grid
                        rank = p / 100 * (self.count - 1)
                        exact = (stats.at_or_below(rank) + stats.at_or_above(rank)) / 2
                    self.percentiles[field][p] = (low, high, exact)


BREAKER_TRIP = re.compile(r"\[(\w+)\] Data too large")  # a circuit_breaking_exception's reason names its breaker
# the breakers a sample's meta counts: the request breaker (the limit aggregation-memory bisects) and the parent
# breaker (the node's whole heap in use, garbage included, over indices.breaker.total.limit: 95% of the heap)
COUNTED_BREAKERS = ("request", "parent")


def tripped_breakers(error):
    """The circuit breakers ("request", "parent", ...) that rejected a request, as an Elasticsearch error object names
    them at any depth (caused_by, root_cause, failed shards)."""
    found = set()
    if isinstance(error, dict):
        match = BREAKER_TRIP.match(str(error.get("reason", ""))) if error.get("type") == "circuit_breaking_exception" else None
        found.update([match.group(1)] if match else [])
        values = error.values()
    else:
        values = error if isinstance(error, list) else ()
    for value in values:
        if isinstance(value, (dict, list)):
            found |= tripped_breakers(value)
    return found


def breaker_trips_meta(counts):
    """A sample's meta of {breaker: trips}: request-breaker-trips, parent-breaker-trips where not 0."""
    return {f"{name}-breaker-trips": counts[name] for name in COUNTED_BREAKERS if counts.get(name)}


def described(error):
    """ "type: reason" of an Elasticsearch error object ("error: ..." of one without structure). A search that failed
    as a whole (its reduce on the coordinating node) has an empty reason: its cause is named instead. One whose shards
    failed ("all shards failed") names the first shard's cause too, which is where a breaker's trip is."""
    if not isinstance(error, dict):
        return f"error: {error}"
    cause = error.get("caused_by")
    if not error.get("reason") and isinstance(cause, dict):
        return f"{error.get('type')}, caused by {described(cause)}"
    shards = error.get("failed_shards")
    if isinstance(shards, list) and shards and isinstance(shards[0], dict) and isinstance(shards[0].get("reason"), dict):
        return f"{error.get('type')}: {error.get('reason')}, shard {shards[0].get('shard')}: {described(shards[0]['reason'])}"
    return f"{error.get('type')}: {error.get('reason')}"


class CoverageErrors:
    """Collects mismatches and counts the checks made; the description names epoch, node and field of the first few.
    breaker_trips: how many of this coverage's own answers each circuit breaker rejected."""

    def __init__(self):
        self.messages = []
        self.checks = 0
        self.breaker_trips = Counter()

    def note_error(self, error):
        self.breaker_trips.update(tripped_breakers(error))

    def check(self, ok, message):
        self.checks += 1
        if not ok:
            self.messages.append(message() if callable(message) else message)
        return ok

    def add(self, message):
        self.check(False, message)

    def __bool__(self):
        return bool(self.messages)

    def description(self):
        shown = "; ".join(self.messages[:MAX_LISTED_ERRORS])
        more = len(self.messages) - MAX_LISTED_ERRORS
        return shown + (f"; and {more} more" if more > 0 else "")

    def as_meta(self):
        return {"checks": self.checks, "failed-checks": len(self.messages), **breaker_trips_meta(self.breaker_trips)}


class PercentileErrors:
    """Max and mean absolute and relative percentile error against the exact values. Relative error is taken only
    where the exact value is not 0; estimates of an exact 0 are counted apart (and how many of them were not 0)."""

    def __init__(self):
        self.count = self.relative_count = self.exact_zeros = self.nonzero_at_exact_zero = 0
        self.abs_sum = self.rel_sum = 0.0
        self.abs_max = self.rel_max = 0.0
        self.worst = None

    def add(self, where, estimate, exact):
        error = abs(estimate - exact)
        self.count += 1
        self.abs_sum += error
        if error >= self.abs_max:
            self.abs_max, self.worst = error, where
        if exact == 0:
            self.exact_zeros += 1
            self.nonzero_at_exact_zero += estimate != 0
        else:
            relative = error / abs(exact)
            self.relative_count += 1
            self.rel_sum += relative
            self.rel_max = max(self.rel_max, relative)

    def as_meta(self):
        if not self.count:
            return {}
        meta = {
            "percentile-abs-error-max": self.abs_max,
            "percentile-abs-error-mean": self.abs_sum / self.count,
            "percentile-worst": self.worst,
            "percentile-exact-zeros": self.exact_zeros,
            "percentile-nonzero-at-exact-zero": self.nonzero_at_exact_zero,
        }
        if self.relative_count:
            meta.update({"percentile-rel-error-max": self.rel_max, "percentile-rel-error-mean": self.rel_sum / self.relative_count})
        return meta


def check_shards(response, where, errors):
    """timed_out, failed shards and, in a cross-cluster search, a cluster skipped, partial or failed: each an error."""
    errors.check(not response.get("timed_out"), f"{where}: timed_out")
    clusters = response.get("_clusters")
    if clusters and clusters.get("successful") != clusters.get("total"):
        states = ", ".join(f"{k} {clusters[k]}" for k in ("skipped", "partial", "failed", "running") if clusters.get(k))
        errors.add(f"{where}: {clusters.get('successful')} of {clusters.get('total')} clusters answered ({states})")
    shards = response.get("_shards", {})
    if shards.get("failed", 0) > 0:
        errors.note_error(shards.get("failures"))
        reasons = [f.get("reason", {}).get("reason", "unknown") for f in shards.get("failures", [])]
        errors.add(f"{where}: {shards['failed']} of {shards.get('total')} shards failed ({'; '.join(reasons[:2])})")


def _present(aggs, suffix, where, errors):
    """(field, aggregation) for each field's <field>_<suffix> aggregation; a missing one is an error."""
    for field in FIELDS:
        agg = aggs.get(f"{field}_{suffix}")
        if errors.check(agg is not None, f"{where} {field}_{suffix}: missing from the response"):
            yield field, agg


def check_metrics(aggs, expected, where, errors, pct_errors):
    """Sums and percentiles of one node (in a search response's aggregations or in a terms bucket)."""
    if expected.sums is not None:
        for field, agg in _present(aggs, "sum", where, errors):
            value, exact = agg.get("value"), expected.sums[field]
            errors.check(
                value is not None and abs(value - exact) <= SUM_RELATIVE_TOLERANCE * max(abs(exact), 1.0),
                lambda: f"{where} {field}_sum: {value} != expected {exact}",
            )
    if expected.percentiles is not None:
        for field, agg in _present(aggs, "pct", where, errors):
            values = percentile_values(agg.get("values"))
            for p, (low, high, exact) in expected.percentiles[field].items():
                estimate = values.get(float(p))
                label = f"{where} {field} p{percent_key(p)}"
                if not errors.check(isinstance(estimate, (int, float)), f"{label}: {estimate!r} is not a number"):
                    continue
                pct_errors.add(label, estimate, exact)
                errors.check(low <= estimate <= high, lambda: f"{label}: {estimate} is outside [{low}, {high}] (exact {exact})")


def check_hit_total(total, count, exact_hits, where, errors):
    """hits.total against the truth's count: exact with track_total_hits; without it Elasticsearch counts exactly up
    to HIT_COUNT_THRESHOLD and answers "gte" the threshold beyond (at exactly the threshold either relation)."""
    threshold = queries.HIT_COUNT_THRESHOLD
    value, relation = total.get("value"), total.get("relation")
    if exact_hits or count < threshold:
        ok = relation == "eq" and value == count
        expected = f"{count} (eq)"
    else:
        ok = value == threshold and (relation == "gte" or (relation == "eq" and count == threshold))
        expected = f"{threshold} (gte): the truth holds {count}"
    errors.check(ok, lambda: f"{where}: {value} hits ({relation}), expected {expected}")


def check_node_response(response, node, epoch, expected, errors, pct_errors):
    """One node's _search (or _msearch sub-) response. Returns its hit count (None if it has none)."""
    where = f"epoch {epoch} node {node}"
    if "error" in response:
        error = response["error"]
        errors.note_error(error)
        status = f"status {response['status']}, " if "status" in response else ""
        errors.add(f"{where}: {status}{described(error)}")
        return None
    check_shards(response, where, errors)
    total = response.get("hits", {}).get("total", {})
    check_hit_total(total, expected.count, expected.exact_hits, where, errors)
    check_metrics(response.get("aggregations", {}), expected, where, errors, pct_errors)
    return total.get("value")


def check_terms_response(response, nodes, epoch, expected_by_node, errors, pct_errors):
    """The single terms request: one bucket per node, each checked like a node's search. Returns the hit count."""
    where = f"epoch {epoch}"
    check_shards(response, where, errors)
    expected_total = sum(expected_by_node[n].count for n in nodes)
    total = response.get("hits", {}).get("total", {})
    check_hit_total(total, expected_total, all(expected_by_node[n].exact_hits for n in nodes), where, errors)
    agg = response.get("aggregations", {}).get(queries.TERMS_AGG, {})
    keys = [b.get("key") for b in agg.get("buckets", [])]
    repeated = sorted({str(k) for k in keys if keys.count(k) > 1})
    errors.check(not repeated, lambda: f"{where}: buckets repeated ({', '.join(repeated[:5])}): one bucket per node")
    buckets = {b.get("key"): b for b in agg.get("buckets", [])}
    errors.check(not agg.get("sum_other_doc_count", 0), lambda: f"{where}: {agg['sum_other_doc_count']} docs outside the node buckets")
    missing = [n for n in nodes if n not in buckets]
    extra = [k for k in buckets if k not in expected_by_node]
    errors.check(
        not missing and not extra,
        lambda: f"{where}: buckets differ from the nodes (missing {', '.join(missing[:5]) or 'none'}, "
        f"unexpected {', '.join(map(str, extra[:5])) or 'none'})",
    )
    for node in nodes:
        bucket = buckets.get(node)
        if bucket is None:
            continue
        node_where = f"{where} node {node}"
        errors.check(
            bucket.get("doc_count") == expected_by_node[node].count,
            lambda: f"{node_where}: doc_count {bucket.get('doc_count')}, expected {expected_by_node[node].count}",
        )
        check_metrics(bucket, expected_by_node[node], node_where, errors, pct_errors)
    return total.get("value")


class FetchExpectation:
    """What one node's fetch answer must be for one epoch: the exact hit count, and min(size, count) distinct hits of
    this node and epoch, the k-th with the node's k-th highest cpu, each one of the node's top rows in the ground truth
    (all six fields exact). Rows tied on cpu at the end may come in any order and any choice: Elasticsearch breaks
    ties by shard and Lucene doc id, which a merge may reorder."""

    def __init__(self, truth, size):
        self.count = truth["count"]
        self.returned = min(size, self.count)
        top = truth["top"]
        if len(top) < self.returned:
            raise ValueError(
                f"the ground truth holds {len(top)} top rows of a node with {self.count}; a fetch of {size} needs "
                f"{self.returned} (fetch_size is at most {FETCH_TRUTH_ROWS})"
            )
        self.cpus = [stored_value(row[1]) for row in top[: self.returned]]
        last = top[self.returned - 1][1] if self.returned else math.inf
        # (task, cpu, mem, net) as Elasticsearch keeps them, with how often the corpus holds each
        self.rows = Counter((task, *(stored_value(c) for c in cents)) for task, *cents in top if cents[0] >= last)


def _hit_values(hit, kind):
    """{field: value} of one hit: from its _source, or from its doc values (each a one-element list)."""
    if kind == "source":
        return dict(hit.get("_source") or {})
    return {name: values[0] for name, values in (hit.get("fields") or {}).items() if values}


def check_fetch_response(response, node, epoch, expected, kind, errors):
    """One node's fetch (_search or _msearch sub-) response. Returns the number of hits it returned (None if none)."""
    where = f"epoch {epoch} node {node}"
    if "error" in response:
        error = response["error"]
        errors.add(
            f"{where}: {error.get('type') if isinstance(error, dict) else 'error'}: "
            f"{error.get('reason') if isinstance(error, dict) else error}"
        )
        return None
    check_shards(response, where, errors)
    total = response.get("hits", {}).get("total", {})
    errors.check(
        total.get("relation") == "eq" and total.get("value") == expected.count,
        lambda: f"{where}: {total.get('value')} hits ({total.get('relation')}), expected {expected.count}",
    )
    hits = response.get("hits", {}).get("hits", [])
    if not errors.check(len(hits) == expected.returned, lambda: f"{where}: {len(hits)} hits returned, expected {expected.returned}"):
        return len(hits)
    ids = [hit.get("_id") for hit in hits]
    errors.check(
        None not in ids and len(set(ids)) == len(ids), lambda: f"{where}: {len(ids) - len(set(ids))} hits repeated (or without _id)"
    )
    rows = Counter(expected.rows)  # each top row can be returned once
    for k, hit in enumerate(hits):
        values, label = _hit_values(hit, kind), f"{where} hit {k + 1}"
        missing = [f for f in queries.DOC_FIELDS if f not in values]
        if not errors.check(not missing, lambda: f"{label}: no {', '.join(missing)} in its {kind}"):
            continue
        errors.check(
            values["node"] == node and values["epoch"] == epoch,
            lambda: f"{label}: node {values['node']} epoch {values['epoch']}, asked for {node} epoch {epoch}",
        )
        cpu = as_float32(values["cpu"])
        errors.check(
            cpu == expected.cpus[k],
            lambda: f"{label}: cpu {cpu}, expected {expected.cpus[k]}, the node's value at rank {k + 1} from the top",
        )
        sort = (hit.get("sort") or [None])[0]
        errors.check(isinstance(sort, (int, float)) and as_float32(sort) == cpu, lambda: f"{label}: sort value {sort} is not its cpu {cpu}")
        row = (values["task"], cpu, as_float32(values["mem"]), as_float32(values["net"]))
        errors.check(
            rows[row] > 0,
            lambda: f"{label}: task {row[0]} cpu {row[1]} mem {row[2]} net {row[3]} is not a row of the node's top "
            f"{expected.returned} in the corpus (or is returned more often than the corpus holds it)",
        )
        rows[row] -= 1
    return len(hits)
