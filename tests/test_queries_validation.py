"""Request bodies and response validation, on real responses recorded from each Elasticsearch version the track is
raced on (tests/fixtures/responses-<version>.json, by tests/fixtures/record_fixtures.py: 8.17.2, 8.19.21, 9.5.3; a test
that reads a recorded answer runs on each version's); the ground truth comes from the recorded documents themselves."""

import copy
import json
from pathlib import Path

import numpy as np
import pytest

import cmgen
from runners.contracts import queries
from runners.shared.validation import CoverageErrors, NodeExpectation, PercentileErrors, check_node_response, check_terms_response

RECORDED = {
    json.loads(path.read_text())["version"]: json.loads(path.read_text())
    for path in sorted((Path(__file__).parent / "fixtures").glob("responses-*.json"))
}
FIXTURES = next(iter(RECORDED.values()))  # the documents: the same in every version's recording


@pytest.fixture(params=sorted(RECORDED), ids=lambda version: f"es{version}")
def responses(request):
    """The recorded answers of one version (the test runs once per version)."""
    return RECORDED[request.param]["responses"]


# the percents of the edge-percent answers, as the recording asked for them
EDGE_PERCENTS = FIXTURES["edge-percents"]


def truth_of(node):
    docs = [d for d in FIXTURES["docs"] if d["node"] == node]
    entry = {"count": len(docs), "sum": {}, "percentiles": {}, "ranks": {}}
    for field in queries.FIELDS:
        cents = np.sort(np.rint(np.array([d[field] for d in docs]) * 100).astype(np.int64))
        values = cmgen.as_float32(cents).astype(np.float64)
        entry["sum"][field] = float(values.sum())
        entry["percentiles"][field] = cmgen.exact_percentiles(values)
        entry["ranks"][field] = cmgen.rank_grid(cents)
    return entry


def expect(node, variant, percents=(0, 50, 90, 100)):
    return NodeExpectation(truth_of(node), variant, list(percents))


def check(response, variant, node="N001", percents=(0, 50, 90, 100)):
    errors, pct = CoverageErrors(), PercentileErrors()
    check_node_response(response, node, 1, expect(node, variant, percents), errors, pct)
    return errors, pct


def test_seed_query_shape():
    body = queries.node_search("D_td", 3, "N007")
    assert body["size"] == 0
    assert body["query"]["bool"]["filter"] == [{"term": {"node": "N007"}}, {"term": {"epoch": 3}}]
    assert set(body["aggs"]) == {"cpu_sum", "mem_sum", "net_sum", "cpu_pct", "mem_pct", "net_pct"}
    assert "hdr" not in body["aggs"]["cpu_pct"]["percentiles"]
    hdr = queries.node_search("C_hdr", 3, "N007", hdr_digits=2)["aggs"]["net_pct"]["percentiles"]
    assert hdr["hdr"] == {"number_of_significant_value_digits": 2}
    assert "aggs" not in queries.node_search("A", 1, "N001")
    assert set(queries.node_search("B", 1, "N001")["aggs"]) == {"cpu_sum", "mem_sum", "net_sum"}


def test_msearch_body_turns_cache_off_per_header():
    lines = queries.msearch_body("cluster-metrics", [queries.node_search("A", 1, n) for n in ("N001", "N002")]).splitlines()
    assert len(lines) == 4
    assert json.loads(lines[0]) == {"index": "cluster-metrics", "request_cache": False}
    assert json.loads(lines[3])["query"]["bool"]["filter"][0] == {"term": {"node": "N002"}}


def test_terms_body_buckets_every_node():
    body = queries.terms_search("D_hdr", 2, 30)
    assert body["query"]["bool"]["filter"] == [{"term": {"epoch": 2}}]
    assert body["aggs"]["per_node"]["terms"] == {"field": "node", "size": 30}
    assert "cpu_pct" in body["aggs"]["per_node"]["aggs"]


@pytest.mark.parametrize("bad", [lambda: queries.validate_variant("E"), lambda: queries.validate_transport("grpc")])
def test_unknown_variant_or_transport_is_named(bad):
    with pytest.raises(ValueError, match="unknown coverage (variant 'E'|transport 'grpc')"):
        bad()


@pytest.mark.parametrize("variant", ["D_td", "D_hdr", "A"])
def test_real_responses_pass(variant, responses):
    errors, pct = check(responses[f"search-{variant}-N001"], variant)
    assert not errors, errors.description()
    if variant != "A":
        assert pct.count == 12 and pct.abs_max < 30.75 - 10.25  # within the data range: 3 docs per node here


@pytest.mark.parametrize("variant", ["D_td", "D_hdr", "A"])
def test_real_terms_responses_pass(variant, responses):
    errors, pct = CoverageErrors(), PercentileErrors()
    nodes = ["N001", "N002", "N003"]
    check_terms_response(responses[f"terms-{variant}"], nodes, 1, {n: expect(n, variant) for n in nodes}, errors, pct)
    assert not errors, errors.description()


def test_msearch_sub_response_error_fails(responses):
    first, second = responses["msearch-sub-error"]["responses"]
    assert not check(first, "D_hdr")[0]
    errors, _ = check(second, "D_hdr", node="N002")
    assert errors and "index_not_found_exception" in errors.description() and "node N002" in errors.description()


def test_real_shard_failure_fails(responses):
    errors, _ = check(responses["search-shard-failure"], "B")
    assert "1 of 2 shards failed" in errors.description()
    assert "not supported for aggregation [sum]" in errors.description()


def test_timed_out_fails(responses):
    response = copy.deepcopy(responses["search-D_td-N001"])
    response["timed_out"] = True
    assert "timed_out" in check(response, "D_td")[0].description()


def test_wrong_hit_count_fails(responses):
    response = copy.deepcopy(responses["search-D_td-N001"])
    response["hits"]["total"]["value"] += 1
    assert "4 hits (eq), expected 3" in check(response, "D_td")[0].description()


def test_capped_hit_count_fails(responses):
    response = copy.deepcopy(responses["search-A-N001"])
    response["hits"]["total"]["relation"] = "gte"
    assert check(response, "A")[0]


def test_the_body_is_the_seeds_and_exact_counting_is_an_option():
    """The seed's body key for key (size, query, aggs; no track_total_hits), serialized as its client did (json.dumps
    defaults); track_total_hits: true only when asked for."""
    body = queries.node_search("D_td", 1, "N001")
    assert list(body) == ["size", "query", "aggs"] and "track_total_hits" not in queries.terms_search("A", 1, 30)
    assert queries.json_bytes({"size": 0, "query": {"bool": {}}}) == b'{"size": 0, "query": {"bool": {}}}'
    exact = queries.node_search("A", 1, "N001", exact_hits=True)
    assert exact["track_total_hits"] is True and list(exact) == ["size", "track_total_hits", "query"]


# a node and epoch at full scale (5 x 1,000,000 rows over 30 nodes: ~33,333 each), where a count beyond the default
# threshold is all variant A's answer carries without track_total_hits
FULL_SCALE_COUNT = 33_367


def a_answer(value, relation):
    return {
        "took": 1,
        "timed_out": False,
        "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
        "hits": {"total": {"value": value, "relation": relation}, "max_score": None, "hits": []},
    }


def check_a(response, count, exact_hits):
    truth = {**truth_of("N001"), "count": count}
    errors = CoverageErrors()
    check_node_response(response, "N001", 1, NodeExpectation(truth, "A", [50], exact_hits=exact_hits), errors, PercentileErrors())
    return errors


@pytest.mark.parametrize(
    "value,relation,count,exact_hits,wrong",
    [
        (10_000, "gte", FULL_SCALE_COUNT, False, False),  # the seed's body at full scale: "at least 10,000"
        (10_000, "eq", FULL_SCALE_COUNT, False, True),  # claims exactly 10,000 where the truth holds 33,367
        (9_999, "eq", FULL_SCALE_COUNT, False, True),  # a node that lost documents below the threshold
        (0, "eq", FULL_SCALE_COUNT, False, True),  # the wrong epoch or node: nothing found
        (10_000, "gte", 9_000, False, True),  # "at least 10,000" where the truth holds 9,000
        (9_000, "eq", 9_000, False, False),  # below the threshold the count is exact without asking
        (FULL_SCALE_COUNT, "eq", FULL_SCALE_COUNT, True, False),  # track_total_hits: exact
        (FULL_SCALE_COUNT - 1, "eq", FULL_SCALE_COUNT, True, True),  # one document off: only exact counting sees it
        (10_000, "gte", FULL_SCALE_COUNT, True, True),  # exact counting asked for, a capped count answered
    ],
)
def test_variant_a_without_exact_counts_rejects_what_its_answer_can_show(value, relation, count, exact_hits, wrong):
    """Without track_total_hits (the seed's body) A's answer carries the count below 10,000 and "at least 10,000"
    above it: each wrong answer that contradicts the truth is a failed check; one document off above the threshold
    needs exact counting (an option), or the terms transport, whose buckets count exactly."""
    errors = check_a(a_answer(value, relation), count, exact_hits)
    assert bool(errors) == wrong, errors.description()
    if wrong:
        assert f"{value} hits ({relation}), expected" in errors.description()


def test_wrong_sum_fails_naming_node_epoch_and_field(responses):
    response = copy.deepcopy(responses["search-D_td-N001"])
    response["aggregations"]["mem_sum"]["value"] += 0.01
    description = check(response, "D_td")[0].description()
    assert "epoch 1 node N001 mem_sum" in description


def test_far_off_percentile_fails_and_close_one_is_measured(responses):
    response = copy.deepcopy(responses["search-D_hdr-N001"])
    response["aggregations"]["cpu_pct"]["values"]["50.0"] = 99.0
    errors, pct = check(response, "D_hdr")
    assert "cpu p50" in errors.description()
    assert pct.abs_max == pytest.approx(99.0 - 20.5)


def test_missing_terms_bucket_fails(responses):
    response = copy.deepcopy(responses["terms-D_td"])
    response["aggregations"]["per_node"]["buckets"].pop()
    errors = CoverageErrors()
    nodes = ["N001", "N002", "N003"]
    check_terms_response(response, nodes, 1, {n: expect(n, "D_td", [50]) for n in nodes}, errors, PercentileErrors())
    assert "buckets differ from the nodes (missing N00" in errors.description()


@pytest.mark.parametrize("variant", ["D_td", "D_hdr"])
def test_percents_elasticsearch_spells_otherwise_validate_and_a_wrong_one_fails(responses, variant):
    """The real answer to percents [0, 0.0005, 50, 99.9995, 100] (keys as the version spells the double, 5.0E-4 where
    Python says 0.0005) passes; the same answer with p0.0005 far off fails, naming it."""
    response = responses[f"search-{variant}-N001-edge-percents"]
    values = response["aggregations"]["cpu_pct"]["values"]
    assert sorted(map(float, values)) == EDGE_PERCENTS and "0.0005" not in values
    errors, pct = check(response, variant, percents=EDGE_PERCENTS)
    assert not errors, errors.description()
    wrong = copy.deepcopy(response)
    key = next(k for k in wrong["aggregations"]["cpu_pct"]["values"] if float(k) == 0.0005)
    wrong["aggregations"]["cpu_pct"]["values"][key] = 1000.0
    assert "cpu p0.0005" in check(wrong, variant, percents=EDGE_PERCENTS)[0].description()
