"""Percentile validation at full scale (one epoch of the default 1M-row corpus, ~33k values per node), without a
node: exact answers pass, and wrong answers are caught wherever they are farther from the exact answer than the
algorithm's own precision. The same check on Elasticsearch's real answers: report/validation_proof.py."""

import math

import pytest

import cmgen
from report.validation_proof import (
    COUNT_SUBSTITUTIONS,
    INDISTINGUISHABLE,
    PERCENTS,
    SUBSTITUTIONS,
    ProofEpoch,
    caught,
    count_proof,
    keyed_answer,
    rank_distance,
    substitute,
    within_precision,
)
from runners.contracts.corpus import FIELDS, OrderStatistics, stored_value
from runners.contracts.queries import HIT_COUNT_THRESHOLD
from runners.shared.validation import HDR_RANK_SLACK, NodeExpectation, es_percent_key, percentile_bounds, percentile_values


@pytest.fixture(scope="module")
def full_scale():
    params = cmgen.Params()  # the default: 1,000,000 rows per epoch, 30 nodes
    columns = cmgen.epoch_columns(params, 1)
    return cmgen.ground_truth(columns, params.rows_per_epoch, params.nodes, params.tasks), cmgen.node_names(params.nodes)


def exact_answer(entry):
    """A response's aggregations holding the exact interpolated percentiles and sums."""
    aggs = {f"{f}_pct": {"values": {f"{float(p)}": entry["percentiles"][f][str(p)] for p in PERCENTS}} for f in FIELDS}
    aggs.update({f"{f}_sum": {"value": entry["sum"][f]} for f in FIELDS})
    return aggs


@pytest.mark.parametrize("variant", ["D_td", "D_hdr"])
def test_exact_answers_pass_at_full_scale(full_scale, variant):
    truth, nodes = full_scale
    for node in nodes:
        assert not caught(exact_answer(truth[node]), NodeExpectation(truth[node], variant, PERCENTS)), node


@pytest.mark.parametrize("variant", ["D_td", "D_hdr"])
@pytest.mark.parametrize("name", list(SUBSTITUTIONS))
def test_wrong_answers_are_caught_at_full_scale(full_scale, variant, name):
    truth, nodes = full_scale
    for field in FIELDS:
        for i, node in enumerate(nodes):
            entry = truth[node]
            values = SUBSTITUTIONS[name](entry, truth[nodes[(i + 1) % len(nodes)]], field)
            if caught(substitute(exact_answer(entry), field, values), NodeExpectation(entry, variant, PERCENTS)):
                continue
            p, value = next(iter(values.items()))
            # uncaught only where the algorithm itself cannot tell
            assert within_precision(entry, field, variant, p, value), (name, field, node, rank_distance(entry, field, p, value))


# caught at every node and field, whatever the tolerances are set to: a loosened check fails here
ALWAYS_CAUGHT = [
    "0 as p50",
    "p50 doubled",
    "p50 + 2% of the value range",
    "p75 as p50",
    "p50 and p90 swapped",
    "p50 +2% of rank",
    "p50 -2% of rank",
    "p90 +2% of rank",
    "p90 -2% of rank",
]


@pytest.mark.parametrize("variant", ["D_td", "D_hdr"])
def test_the_named_wrong_answers_are_caught_at_every_node(full_scale, variant):
    truth, nodes = full_scale
    missed = []
    for name in ALWAYS_CAUGHT:
        for field in FIELDS:
            if variant == "D_hdr" and field == "mem" and "of rank" in name:
                continue  # mem is dense: 2% of its ranks lie within HDR's 0.1% of the value (within_precision)
            for i, node in enumerate(nodes):
                values = SUBSTITUTIONS[name](truth[node], truth[nodes[(i + 1) % len(nodes)]], field)
                if not caught(substitute(exact_answer(truth[node]), field, values), NodeExpectation(truth[node], variant, PERCENTS)):
                    missed.append((name, field, node))
    assert missed == []


def test_old_range_margin_would_have_passed_these():
    """The defect this replaces: a margin of 5% of the value range let a doubled net p50 pass."""
    params = cmgen.Params()
    truth = cmgen.ground_truth(cmgen.epoch_columns(params, 1), params.rows_per_epoch, params.nodes, params.tasks)["N001"]
    net = truth["percentiles"]["net"]
    assert 2 * net["50"] <= net["50"] + 0.05 * (net["100"] - net["0"])  # inside the old margin
    assert caught(substitute(exact_answer(truth), "net", {50: 2 * net["50"]}), NodeExpectation(truth, "D_td", PERCENTS))


def small_stats(values):
    cents = [round(v * 100) for v in sorted(values)]
    return OrderStatistics({"step": 1, "cents": cents}, len(cents)), [stored_value(c) for c in cents]


def test_tdigest_bounds_are_the_order_statistics_at_the_rank_tolerance():
    stats, values = small_stats(range(1000))
    low, high = percentile_bounds(stats, 1000, 50, "tdigest", compression=100)
    # rank 499.5 -/+ 1.5% of 1000 = 15 ranks, rounded outwards
    assert (low, high) == (values[math.floor(499.5 - 15)], values[math.ceil(499.5 + 15)])
    assert percentile_bounds(stats, 1000, 50, "tdigest", compression=200) == (values[492], values[507])
    assert percentile_bounds(stats, 1000, 0, "tdigest") == (values[0], values[15])
    assert percentile_bounds(stats, 1000, 100, "tdigest") == (values[984], values[999])


def test_hdr_bounds_are_the_nearest_rank_widened_by_its_precision():
    stats, values = small_stats([v + 10 for v in range(1000)])
    low, high = percentile_bounds(stats, 1000, 50, "hdr", hdr_digits=3)
    # p50 of 1000: nearest rank 500 (1-based) -> 0-based 499, one rank of slack either side
    assert low == pytest.approx(values[499 - HDR_RANK_SLACK] * (1 - 1e-3))
    assert high == pytest.approx(values[499 + HDR_RANK_SLACK] * (1 + 1e-3))
    low2, high2 = percentile_bounds(stats, 1000, 50, "hdr", hdr_digits=2)
    assert low2 < low and high2 > high  # fewer digits, wider
    assert percentile_bounds(stats, 1000, 0, "hdr")[0] == pytest.approx(values[0] * (1 - 1e-3))


def test_rank_grid_rounds_outwards():
    cents = list(range(0, 10_000, 1))  # 10,000 values, grid step 10
    grid = cmgen.rank_grid(__import__("numpy").array(cents))
    assert grid["step"] == 10 and grid["cents"][-1] == 9_999
    stats = OrderStatistics(grid, len(cents))
    assert stats.at_or_below(25) == stored_value(20) and stats.at_or_above(25) == stored_value(30)
    assert stats.at_or_below(30) == stored_value(30) and stats.at_or_above(30) == stored_value(30)
    assert stats.at_or_below(-5) == stored_value(0) and stats.at_or_above(20_000) == stored_value(9_999)
    assert stats.at_or_above(9_995) == stored_value(9_999) and stats.at_or_below(9_999) == stored_value(9_999)


class AnsweringCluster:
    """Elasticsearch's answer to variant A's _msearch without track_total_hits: each node's count, capped at the
    threshold as "gte", as the node would send it."""

    def __init__(self, counts):
        self.counts = counts

    def post(self, path, body):
        threshold = HIT_COUNT_THRESHOLD
        return {
            "responses": [
                {
                    "timed_out": False,
                    "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
                    "hits": {"total": {"value": min(c, threshold), "relation": "gte" if c > threshold else "eq"}, "hits": []},
                }
                for c in self.counts.values()
            ]
        }


@pytest.mark.parametrize("counts", [[33_367, 33_301, 33_412], [9_000, 33_301, 10_000]])
def test_variant_a_wrong_counts_are_caught_and_the_indistinguishable_one_is_named(counts):
    """At full scale (~33k rows a node) the answer is "gte 10,000" for every node: a wrong count is still caught, the
    next node's answer is not (and not counted against the proof); below the threshold it is exact, so caught too."""
    nodes = ["N001", "N002", "N003"]
    truth = {n: {"count": c} for n, c in zip(nodes, counts)}
    false_failures, tally = [], {}
    count_proof(ProofEpoch(AnsweringCluster(dict(zip(nodes, counts))), "cluster-metrics", 1, nodes, truth), false_failures, tally)
    assert not false_failures
    for name in COUNT_SUBSTITUTIONS:
        caught_, total, _, beyond = tally[(name, "A", "hits.total")]
        assert caught_ == total > 0 and beyond == 0, name
    caught_, total, _, beyond = tally[(INDISTINGUISHABLE, "A", "hits.total")]
    capped = [c > HIT_COUNT_THRESHOLD for c in counts]
    # node i gets node i+1's answer: caught unless both are capped
    assert caught_ == sum(not (capped[i] and capped[(i + 1) % 3]) for i in range(3)) and total == 3 and beyond == 0


EDGE_PERCENTS = [0.0005, 50, 99.9995]  # tail-latency work asks for these; Elasticsearch keys 0.0005 as "5.0E-4"


def test_elasticsearch_spells_a_percent_as_java_prints_its_double():
    assert [es_percent_key(p) for p in (0, 0.0005, 0.000125, 0.001, 50, 99.9995, 100)] == [
        "0.0",
        "5.0E-4",
        "1.25E-4",
        "0.001",
        "50.0",
        "99.9995",
        "100.0",
    ]
    # a key is matched by the number it spells, whatever the spelling
    assert percentile_values({"5.0E-4": 1.0, "50.0": 3.0, "x": 4.0}) == {0.0005: 1.0, 50.0: 3.0}


@pytest.mark.parametrize("variant", ["D_td", "D_hdr"])
def test_percents_at_the_edges_validate_with_elasticsearchs_keys_at_full_scale(full_scale, variant):
    """0.0005 and 99.9995 (any percent Elasticsearch accepts): the right answer, keyed as Elasticsearch keys it,
    validates on every node; a p0.0005 just outside the algorithm's bounds is still caught."""
    truth, nodes = full_scale
    for node in nodes:
        expectation = NodeExpectation(truth[node], variant, EDGE_PERCENTS)
        assert not caught(keyed_answer(expectation, truth[node]["sum"]), expectation), node
        for field in FIELDS:
            low, high, _ = expectation.percentiles[field][0.0005]
            for wrong in (low - max(abs(low), 1.0) * 1e-6, high + max(abs(high), 1.0) * 1e-6):
                answer = substitute(keyed_answer(expectation, truth[node]["sum"]), field, {0.0005: wrong})
                assert caught(answer, expectation), (node, field, wrong)
