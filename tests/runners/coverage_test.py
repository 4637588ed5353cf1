"""The coverage runner and its parameter source with a stub client: what is sent, when answers are decoded, how
errors map to failed samples."""

import asyncio
import json

import elasticsearch
import pytest

from runners.contracts import corpus, records
from runners.contracts.context import CONTEXT_KEY
from runners.studies.coverage import Coverage, CoverageParamSource, validate_coverage
from tests.runners.stub_client import StubClient

PERCENTS = [0, 50, 90, 100]


def source(context, transport, variant="D_td", **extra):
    return CoverageParamSource(
        None, {CONTEXT_KEY: context.as_param(), "variant": variant, "transport": transport, "percents": PERCENTS, **extra}
    )


def node_answer(entry, variant="D_td", **override):
    """What a correct Elasticsearch answer for one node looks like (exact percentiles)."""
    aggs = {}
    if "sum" in variant or variant.startswith(("B", "D")):
        aggs.update({f"{f}_sum": {"value": entry["sum"][f]} for f in corpus.FIELDS})
    aggs.update({f"{f}_pct": {"values": {f"{float(p)}": entry["percentiles"][f][str(p)] for p in PERCENTS}} for f in corpus.FIELDS})
    answer = {
        "took": 3,
        "timed_out": False,
        "_shards": {"total": 1, "successful": 1, "failed": 0},
        "hits": {"total": {"value": entry["count"], "relation": "eq"}, "hits": []},
        "aggregations": aggs,
    }
    answer.update(override)
    return answer


def answers(context, transport, epoch=1):
    truth = context.truth()[str(epoch)]
    per_node = [node_answer(truth[n]) for n in context.nodes]
    if transport == "serial":
        return [(200, a) for a in per_node]
    if transport == "msearch":
        return [(200, {"took": 5, "responses": per_node})]
    buckets = [{"key": n, "doc_count": truth[n]["count"], **a["aggregations"]} for n, a in zip(context.nodes, per_node)]
    return [
        (
            200,
            {
                "took": 4,
                "timed_out": False,
                "_shards": {"total": 1, "successful": 1, "failed": 0},
                "hits": {"total": {"value": sum(truth[n]["count"] for n in context.nodes), "relation": "eq"}},
                "aggregations": {"per_node": {"sum_other_doc_count": 0, "buckets": buckets}},
            },
        )
    ]


def run(client, params):
    return asyncio.run(Coverage()(client, params))


@pytest.mark.parametrize("transport,requests", [("serial", 3), ("msearch", 1), ("terms", 1)])
def test_right_answers_pass_and_are_decoded_after_the_timed_window(context, transport, requests):
    client = StubClient(answers(context, transport))
    result = run(client, source(context, transport).params())
    assert result["success"] is True, result.get("error-description")
    assert result["requests"] == len(client.sent) == requests
    assert result["hits"] == 90 and result["checks"] > 0 and result["failed-checks"] == 0
    # every body was sent as bytes serialized ahead of time, and read only after the last request was sent
    assert all(isinstance(r["body"], bytes) for r in client.sent)
    assert client.raw and all(body.read_after == requests for body in client.bodies)


@pytest.mark.parametrize("transport", ["serial", "msearch", "terms"])
def test_requests_are_never_retried(context, transport):
    client = StubClient(answers(context, transport))
    run(client, source(context, transport).params())
    assert client.options_seen == [{"request_timeout": 120, "max_retries": 0, "retry_on_status": (), "retry_on_timeout": False}]


def test_a_429_is_a_failed_sample_naming_the_status(context):
    rejected = {"error": {"type": "es_rejected_execution_exception", "reason": "rejected execution"}, "status": 429}
    ok = answers(context, "serial")
    client = StubClient([ok[0], (429, rejected), ok[2]])
    result = run(client, source(context, "serial").params())
    assert result["success"] is False and result["http-status"] == 429
    assert result["error-description"] == (
        "D_td/serial: epoch 1 node N002, request 2 of 3: HTTP 429 " "(es_rejected_execution_exception: rejected execution); not retried"
    )
    assert len(client.sent) == 2  # the coverage stops at the failed request


def test_a_search_that_failed_as_a_whole_is_described_by_its_cause(context):
    """Elasticsearch 9.5 answered a serial search whose reduce the parent breaker rejected with an empty reason (its
    cause in caused_by): the description names the cause and the meta counts the breaker, not the request's."""
    parent = "[parent] Data too large, data for [<reduce>] would be [1022513836/975.1mb], real usage: [1022512640/975.1mb]"
    rejected = {
        "error": {
            "type": "search_phase_execution_exception",
            "reason": "",
            "phase": "fetch",
            "caused_by": {"type": "circuit_breaking_exception", "reason": parent},
        },
        "status": 429,
    }
    client = StubClient([(429, rejected)])
    result = run(client, source(context, "serial").params())
    assert result["success"] is False and result["parent-breaker-trips"] == 1 and "request-breaker-trips" not in result
    assert result["error-description"] == (
        "D_td/serial: epoch 1 node N001, request 1 of 3: HTTP 429 (search_phase_execution_exception, caused by "
        f"circuit_breaking_exception: {parent}); not retried"
    )


def test_a_503_on_msearch_is_a_failed_sample(context):
    client = StubClient([(503, {"error": {"type": "unavailable", "reason": "no master"}, "status": 503})])
    result = run(client, source(context, "msearch").params())
    assert result["success"] is False and "HTTP 503" in result["error-description"]


def test_a_wrong_percentile_fails_naming_epoch_node_and_field(context):
    wrong = answers(context, "msearch")
    wrong[0][1]["responses"][1]["aggregations"]["net_pct"]["values"]["50.0"] *= 2
    result = run(StubClient(wrong), source(context, "msearch").params())
    assert result["success"] is False and result["failed-checks"] == 1
    assert "epoch 1 node N002 net p50" in result["error-description"]


def test_a_sub_response_error_fails(context):
    wrong = answers(context, "msearch")
    wrong[0][1]["responses"][2] = {"error": {"type": "search_phase_execution_exception", "reason": "all shards failed"}, "status": 500}
    result = run(StubClient(wrong), source(context, "msearch").params())
    assert result["success"] is False
    assert "node N003: status 500, search_phase_execution_exception" in result["error-description"]


def test_param_source_cycles_the_race_epochs_and_passes_assertions(context):
    assertions = [{"property": "hits", "condition": ">", "value": 0}]
    params = source(context, "terms", assertions=assertions)
    assert [params.params()["epoch"] for _ in range(5)] == [1, 2, 1, 2, 1]
    assert params.params()["assertions"] == assertions
    only_two = source(context, "terms", epochs=[2])
    assert {only_two.params()["epoch"] for _ in range(3)} == {2}


def test_serial_bodies_are_the_seed_query(context):
    params = source(context, "serial", variant="C_hdr").params()
    path, query, body, headers = params["requests"][1]
    assert path == "/cluster-metrics/_search" and query == {"request_cache": "false"}
    decoded = json.loads(body)
    assert decoded["query"]["bool"]["filter"] == [{"term": {"node": "N002"}}, {"term": {"epoch": 1}}]
    assert decoded["aggs"]["cpu_pct"]["percentiles"]["hdr"] == {"number_of_significant_value_digits": 3}


@pytest.mark.parametrize(
    "params,message",
    [
        ({"variant": "E", "transport": "serial"}, "unknown coverage variant 'E'"),
        ({"variant": "A", "transport": "grpc"}, "unknown coverage transport 'grpc'"),
        ({"variant": "A", "transport": "serial", "epochs": [3]}, "epoch 3 is not ingested by this race"),
        ({"variant": "A", "transport": "serial", "percents": [50, 101]}, "percents must be a non-empty list of numbers"),
        ({"variant": "A", "transport": "serial", "hdr-digits": 9}, "hdr-digits must be an integer from 0 to 5"),
        ({"variant": "A", "transport": "serial", "nodes": ["N009"]}, "node(s) N009 are not in the generated corpus"),
        ({"variant": "A", "transport": "msearch", "max-concurrent-searches": -2}, "max-concurrent-searches must be a non-empty list"),
        ({"variant": "A", "transport": "terms", "max-concurrent-searches": 2}, "max-concurrent-searches is _msearch's"),
    ],
)
def test_load_time_validation_names_the_problem(context, params, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        validate_coverage(params, 1, context)


@pytest.mark.parametrize(
    "error,seen",
    [
        (elasticsearch.ConnectionTimeout("timed out"), "no complete answer within the request timeout of 120 s"),
        (elasticsearch.ConnectionError("Connection reset by peer"), "connection failed: Connection reset by peer"),
    ],
)
@pytest.mark.parametrize("transport", ["serial", "msearch"])
def test_network_failures_are_failed_samples_naming_the_request(context, transport, error, seen):
    ok = answers(context, transport)[:1] if transport == "serial" else []
    client = StubClient([*ok, error])
    result = run(client, source(context, transport).params())
    assert result["success"] is False and result["error-type"] == "network"
    target = "node N002, request 2 of 3" if transport == "serial" else "(all 3 nodes), request 1 of 1"
    assert result["error-description"] == f"D_td/{transport}: epoch 1 {target}: {seen}; not retried"
    assert client.marks[-1] == "end"  # Rally's service time ends where the failure was seen
    assert client.options_seen[-1]["max_retries"] == 0


def test_cross_cluster_coverage_targets_the_remote_index_with_the_round_trip_setting(context):
    for transport in ("serial", "msearch", "terms"):
        params = source(context, transport, remote="metrics-remote", **{"ccs-minimize-roundtrips": False}).params()
        path, url, body, _ = params["requests"][0]
        assert url["ccs_minimize_roundtrips"] == "false"
        if transport == "msearch":
            assert path == "/_msearch" and "request_cache" not in url
            assert json.loads(body.splitlines()[0])["index"] == "metrics-remote:cluster-metrics"
        else:
            assert path == "/metrics-remote:cluster-metrics/_search" and url["request_cache"] == "false"
    local = source(context, "msearch").params()["requests"][0]
    assert local[1] is None and json.loads(local[2].splitlines()[0])["index"] == "cluster-metrics"


def test_a_remote_cluster_that_did_not_answer_fails_the_sample(context):
    answer = answers(context, "terms")[0][1]
    answer["_clusters"] = {"total": 1, "successful": 0, "skipped": 1, "running": 0, "partial": 0, "failed": 0}
    result = run(StubClient([(200, answer)]), source(context, "terms").params())
    assert result["success"] is False
    assert "0 of 1 clusters answered (skipped 1)" in result["error-description"]


@pytest.mark.parametrize(
    "bad,message",
    [
        ({"remote": ""}, "remote must be a non-empty string"),
        ({"remote": "r", "ccs-minimize-roundtrips": "no"}, "ccs-minimize-roundtrips must be a non-empty list of true/false"),
    ],
)
def test_bad_cross_cluster_operation_parameters_are_named(context, bad, message):
    with pytest.raises(ValueError, match=message):
        validate_coverage({"variant": "D_td", "transport": "terms", **bad}, 1, context)


# ------------------------------------------------------------------ malformed and repeated answers (issue 22)


def test_a_repeated_terms_bucket_fails_even_when_the_right_one_follows(context):
    """A wrong N001 bucket followed by the right one: 4 buckets for 3 nodes, once passed as a dict kept the last."""
    status, body = answers(context, "terms")[0]
    buckets = body["aggregations"]["per_node"]["buckets"]
    wrong = json.loads(json.dumps(buckets[0]))
    wrong["cpu_sum"]["value"] *= 2
    body["aggregations"]["per_node"]["buckets"] = [wrong] + buckets
    result = run(StubClient([(status, body)]), source(context, "terms").params())
    assert result["success"] is False and result["weight"] == 0
    assert f"buckets repeated ({context.nodes[0]})" in result["error-description"]


@pytest.mark.parametrize(
    "transport,breakage",
    [
        ("terms", "bucket without doc_count"),
        ("terms", "bucket without key"),
        ("msearch", "not JSON"),
        ("serial", "not JSON"),
        ("msearch", "responses is not a list"),
        ("serial", "a sum of the wrong type"),
    ],
)
def test_a_malformed_answer_is_a_failed_sample_not_a_crashed_race(context, transport, breakage):
    replies = answers(context, transport)
    status, body = replies[0]
    if breakage == "bucket without doc_count":
        del body["aggregations"]["per_node"]["buckets"][1]["doc_count"]
    elif breakage == "bucket without key":
        del body["aggregations"]["per_node"]["buckets"][1]["key"]
    elif breakage == "not JSON":
        body = b"<html>proxy says hello</html>"
    elif breakage == "responses is not a list":
        body["responses"] = 7
    else:
        body["aggregations"]["cpu_sum"] = {"value": "twelve"}
    replies[0] = (status, body)
    result = run(StubClient(replies), source(context, transport).params())
    assert result["success"] is False and result["weight"] == 0, result
    assert result["error-description"].startswith(f"D_td/{transport}: epoch 1")
    assert result["error-type"] == "cluster-metrics-validation"


def test_a_failed_sample_carries_no_weight(context):
    """Rally's throughput counts weight: failed coverages must add nothing to it (as Rally's own failed requests)."""
    status, body = answers(context, "msearch")[0]
    body["responses"][0]["hits"]["total"]["value"] += 1
    result = run(StubClient([(status, body)]), source(context, "msearch").params())
    assert result["success"] is False and result["weight"] == 0
    http = run(
        StubClient([(429, {"error": {"type": "es_rejected_execution_exception", "reason": "busy"}})]), source(context, "msearch").params()
    )
    assert http["success"] is False and http["weight"] == 0 and http["http-status"] == 429


def test_msearch_takes_max_concurrent_searches_in_its_url_and_names_it_in_failures(context):
    """The width sweep's msearch dimension: the URL parameter, and a failure description that tells the cells apart."""
    params = source(context, "msearch", **{"max-concurrent-searches": 1}).params()
    assert params["requests"][0][1] == {"max_concurrent_searches": "1"}
    assert params["cell"] == "D_td/msearch max_concurrent_searches 1"
    assert source(context, "msearch").params()["requests"][0][1] is None  # left to Elasticsearch's default
    client = StubClient(answers(context, "msearch")[:0] + [(503, {"error": {"type": "x", "reason": "y"}})])
    result = asyncio.run(Coverage()(client, params))
    assert not result["success"] and "D_td/msearch max_concurrent_searches 1" in result["error-description"]


def test_the_parameter_source_reads_the_ground_truth_only_when_asked_for_a_coverage(context, tmp_path):
    """Rally instantiates every task's parameter source where it looks for corpora, in each process that prepares the
    track: building one must not parse the ground truth (seconds at 3000 nodes); the first coverage does."""
    moved = context.__class__(**dict(context.as_param(), ground_truth=str(tmp_path / "absent.json")))
    built = source(moved, "serial")  # no error: nothing read yet
    with pytest.raises(FileNotFoundError):
        built.params()
    assert source(context, "serial").params()["expected"]


def test_a_direct_coverage_asks_the_cluster_it_names_and_new_connections_close_the_last_one_before_each_request(context):
    """Seed 001's direct cells: Rally hands the coverage every cluster's client; it asks the one "cluster" names, and
    with new-connection drops the client's connections before each request, so each opens its own (as curl)."""
    near, default = StubClient(answers(context, "serial")), StubClient([])
    result = run({"default": default, "metrics-remote": near}, source(context, "serial", cluster="metrics-remote").params())
    assert result["success"] and len(near.sent) == 3 and default.sent == [] and "close" not in near.marks
    far = StubClient(answers(context, "serial"))
    params = source(context, "serial", cluster="metrics-remote-far", **{"new-connection": True}).params()
    assert run({"default": StubClient([]), "metrics-remote-far": far}, params)["success"]
    assert [m for m in far.marks if m == "close"] == ["close"] * 3  # one per request
    assert Coverage.multi_cluster is True


@pytest.mark.parametrize(
    "extra,message",
    [
        ({"cluster": "metrics-remote", "remote": "metrics-remote"}, "directly or goes through cross-cluster search, not both"),
        ({"new-connection": "yes"}, "new-connection must be true or false"),
    ],
)
def test_a_direct_coverage_with_conflicting_routes_is_refused_at_load(context, extra, message):
    with pytest.raises(ValueError, match=message):
        validate_coverage({"variant": "D_td", "transport": "terms", **extra}, 1, context)


def test_every_coverage_is_recorded_failed_ones_with_their_cause(context, tmp_path):
    """A race whose node dies ends without Rally's results: the records are then the only account of what ran, so a
    coverage that got no answer, an error answer or a wrong one is recorded beside those that passed, with its
    description as the cause (records.ERROR), and a passing one carries none."""
    here = context.__class__(**dict(context.as_param(), record_dir=str(tmp_path)))
    wrong = answers(context, "msearch")
    wrong[0][1]["responses"][0]["hits"]["total"]["value"] += 1
    outcomes = [
        run(StubClient(answers(context, "msearch")), source(here, "msearch", name="c", warmups=1).params()),
        run(StubClient([elasticsearch.ConnectionError("Connection refused")]), source(here, "msearch", name="c").params()),
        run(
            StubClient([(429, {"error": {"type": "es_rejected_execution_exception", "reason": "busy"}})]), source(here, "msearch").params()
        ),
        run(StubClient([(200, b"<html>")]), source(here, "msearch").params()),
        run(StubClient(wrong), source(here, "msearch").params()),
    ]
    lines = [json.loads(line) for line in (tmp_path / records.VALIDATION).read_text().splitlines()]
    assert len(lines) == len(outcomes)
    assert records.ERROR not in lines[0] and lines[0]["measured"] is False and outcomes[0]["success"] is True
    for line, outcome in zip(lines[1:], outcomes[1:]):
        assert outcome["success"] is False and line[records.ERROR] == outcome["error-description"], (line, outcome)
        assert records.META_KEY in outcome  # a metrics store's replay rebuilds the failed line too
    assert lines[1]["task"] == "c" and lines[1]["wall-ms"] is None
