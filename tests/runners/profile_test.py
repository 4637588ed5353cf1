"""The profile-breakdown runner and its parameter source with a stub client: a profile OFF and a profile ON call per
iteration in alternating order, each recorded with its took and wall, warm-ups marked, wrong answers failed samples."""

import asyncio
import json
import time

import elasticsearch
import pytest

from runners.contracts import records
from runners.contracts.context import CONTEXT_KEY
from runners.studies.profile import ProfileBreakdown, ProfileParamSource, breakdown, phase, read_calls, validate_profile
from tests.runners.coverage_test import node_answer
from tests.runners.stub_client import StubClient

PERCENTS = [0, 50, 90, 100]
NODE = "N002"
TOOK = {False: 5, True: 9}  # the stub's took of the OFF and the ON call


def private(context, tmp_path):
    """The module's context with a record folder of the test's own."""
    return context.__class__(**{**context.__dict__, "record_dir": str(tmp_path / "records")})


def source(context, **extra):
    params = {CONTEXT_KEY: context.as_param(), "name": "profile-D_td", "variant": "D_td", "epoch": 1, "node": NODE, "percents": PERCENTS}
    return ProfileParamSource(None, {**params, **extra})


def profile_section(filter_nanos=1_000_000, pct_nanos=3_000_000, sum_nanos=500_000, build_nanos=200_000):
    """What Elasticsearch's profile of the D_td search looks like (one shard): the query tree, a collector, and the six
    aggregations with their breakdown."""
    aggs = [
        {
            "type": kind,
            "description": f"{field}_{suffix}",
            "time_in_nanos": nanos,
            "breakdown": {"initialize": 10, "collect": nanos - build_nanos - 10, "build_aggregation": build_nanos, "reduce": 0},
        }
        for field in ("cpu", "mem", "net")
        for kind, suffix, nanos in (("TDigestPercentilesAggregator", "pct", pct_nanos), ("SumAggregator", "sum", sum_nanos))
    ]
    searches = [
        {
            "query": [{"type": "BooleanQuery", "description": "#node:N002 #epoch:1", "time_in_nanos": filter_nanos, "children": []}],
            "rewrite_time": 1000,
            # the collector's time contains the aggregations' collect time: never a part of its own
            "collector": [{"name": "MultiCollector", "reason": "search_multi", "time_in_nanos": 99_000_000}],
        }
    ]
    return {"shards": [{"id": "[n][cluster-metrics][0]", "searches": searches, "aggregations": aggs}]}


def answer(context, profiled, **profile):
    body = node_answer(context.truth()["1"][NODE], took=TOOK[profiled])
    if profiled:
        body["profile"] = profile_section(**profile)
    return body


def answers(context, params, off=None, on=None, **profile):
    """The stub's answers in the order the runner sends the pair (the parameter source's profile-first)."""
    pair = {False: off or answer(context, False), True: on or answer(context, True, **profile)}
    order = (True, False) if params["profile-first"] else (False, True)
    return [(200, pair[profiled]) for profiled in order]


def run(client, params):
    return asyncio.run(ProfileBreakdown()(client, params))


def test_each_iteration_sends_the_search_off_and_on_in_alternating_order(context, tmp_path):
    params = source(private(context, tmp_path))
    sent = []
    for _ in range(4):
        p = params.params()
        client = StubClient(answers(context, p))
        assert run(client, p)["success"] is True
        sent.append([json.loads(r["body"]) for r in client.sent])
        assert all(r["params"] == {"request_cache": "false"} and r["path"] == "/cluster-metrics/_search" for r in client.sent)
        assert client.options_seen == [{"request_timeout": 120, "max_retries": 0, "retry_on_status": (), "retry_on_timeout": False}]
    # OFF first in odd iterations, ON first in even ones; the ON body is the OFF body with profile: true, nothing else
    assert [["profile" in body for body in pair] for pair in sent] == [[False, True], [True, False], [False, True], [True, False]]
    off, on = sent[0]
    assert on.pop("profile") is True and on == off and off["query"]["bool"]["filter"] == [{"term": {"node": NODE}}, {"term": {"epoch": 1}}]


def test_each_call_is_recorded_with_its_took_and_wall_and_the_warmups_are_marked(context, tmp_path):
    context = private(context, tmp_path)
    params = source(context, warmups=2)
    for _ in range(4):
        p = params.params()
        client = StubClient(answers(context, p))
        client.on_send = lambda: time.sleep(0.01)  # each request takes at least 10 ms
        result = run(client, p)
        assert result["success"] is True and (result["took-off"], result["took-on"]) == (TOOK[False], TOOK[True])
        # both answers decoded after the second request was sent: no decoding inside either call's clock
        assert client.raw and [body.read_after for body in client.bodies] == [2, 2]
    calls = read_calls(context.record_dir)
    assert [(c["iteration"], c["profile"], c["measured"]) for c in calls] == [
        (1, False, False),
        (1, True, False),
        (2, True, False),
        (2, False, False),
        (3, False, True),
        (3, True, True),
        (4, True, True),
        (4, False, True),
    ]
    assert all(c["took-ms"] == TOOK[c["profile"]] and c["wall-ms"] >= 10 and c["decode-ms"] >= 0 for c in calls)
    assert all(c["success"] and c["error"] is None and c["hits"] == context.truth()["1"][NODE]["count"] for c in calls)
    assert [c["position"] for c in calls] == [1, 2] * 4
    on = [c for c in calls if c["profile"]]
    aggs = {f"{f}_pct (TDigestPercentilesAggregator)" for f in ("cpu", "mem", "net")} | {
        f"{f}_sum (SumAggregator)" for f in ("cpu", "mem", "net")
    }
    assert len(on) == 4 and all(set(c["parts"]) == {"query (filter)"} | aggs for c in on)
    assert all(c["parts"]["cpu_pct (TDigestPercentilesAggregator)"] == {"nanos": 3_000_000, "build-nanos": 200_000} for c in on)
    assert not any("parts" in c for c in calls if not c["profile"])


def test_the_shares_come_from_the_measured_on_calls_only(context, tmp_path):
    context = private(context, tmp_path)
    params = source(context, warmups=1)
    # the warm-up's profile is dominated by the filter (a cold cache); the measured ones by the percentiles
    for filter_nanos in (50_000_000, 1_000_000, 3_000_000):
        p = params.params()
        assert run(StubClient(answers(context, p, filter_nanos=filter_nanos)), p)["success"]
    profile = json.loads((tmp_path / "records" / records.PROFILE).read_text())
    parts = profile["parts"]
    assert profile["calls"] == 2 and profile["took_ms"] == TOOK[True] and profile["node"] == NODE
    assert parts["query (filter)"]["nanos"] == pytest.approx(2_000_000)  # the mean of the two measured calls
    total = 2_000_000 + 3 * 3_000_000 + 3 * 500_000
    assert parts["cpu_pct (TDigestPercentilesAggregator)"]["share"] == pytest.approx(3_000_000 / total)
    assert sum(p["share"] for p in parts.values()) == pytest.approx(1.0)


def test_no_shares_are_written_during_the_warmup(context, tmp_path):
    context = private(context, tmp_path)
    params = source(context, warmups=3)
    p = params.params()
    assert run(StubClient(answers(context, p)), p)["success"]
    assert not (tmp_path / "records" / records.PROFILE).exists() and len(read_calls(context.record_dir)) == 2


@pytest.mark.parametrize("profiled", [False, True])
def test_a_wrong_answer_is_a_failed_sample_naming_the_call(context, tmp_path, profiled):
    context = private(context, tmp_path)
    p = source(context).params()
    wrong = answer(context, profiled)
    wrong["aggregations"]["mem_sum"]["value"] += 1
    result = run(StubClient(answers(context, p, **({"on": wrong} if profiled else {"off": wrong}))), p)
    assert result["success"] is False and result["weight"] == 0 and result["error-type"] == "cluster-metrics-validation"
    which = "ON" if profiled else "OFF"
    assert result["error-description"].startswith(f"profile-D_td profile {which}: epoch 1 node {NODE} mem_sum: ")
    calls = {c["profile"]: c for c in read_calls(context.record_dir)}
    assert calls[profiled]["success"] is False and "mem_sum" in calls[profiled]["error"] and calls[profiled]["failed-checks"] == 1
    assert calls[not profiled]["success"] is True  # the other call's answer was right, and is recorded as such
    assert not (tmp_path / "records" / records.PROFILE).exists()  # a failed pair adds nothing to the shares


def test_an_on_answer_without_its_profile_fails(context, tmp_path):
    context = private(context, tmp_path)
    p = source(context).params()
    result = run(StubClient(answers(context, p, on=answer(context, False))), p)
    assert result["success"] is False and "profile ON" in result["error-description"]
    assert "the answer has no profile" in result["error-description"]


def test_a_malformed_profile_is_a_failed_sample_not_a_crash(context, tmp_path):
    context = private(context, tmp_path)
    p = source(context).params()
    on = answer(context, True)
    del on["profile"]["shards"][0]["aggregations"][0]["time_in_nanos"]
    result = run(StubClient(answers(context, p, on=on)), p)
    assert result["success"] is False and "malformed answer (KeyError" in result["error-description"]


def test_an_http_error_or_a_network_failure_ends_the_pair_as_a_failed_sample(context, tmp_path):
    context = private(context, tmp_path)
    params = source(context)
    p = params.params()  # OFF first
    rejected = {"error": {"type": "es_rejected_execution_exception", "reason": "rejected execution"}, "status": 429}
    client = StubClient([(200, answer(context, False)), (429, rejected)])
    result = run(client, p)
    assert result["success"] is False and result["error-type"] == "http" and result["http-status"] == 429 and result["unit"] == "ops"
    assert result["error-description"] == (
        f"profile-D_td profile ON: epoch 1 node {NODE}: HTTP 429 (es_rejected_execution_exception: rejected execution); not retried"
    )
    p = params.params()  # ON first
    client = StubClient([elasticsearch.ConnectionError("Connection reset by peer")])
    result = run(client, p)
    assert result["success"] is False and result["error-type"] == "network" and len(client.sent) == 1
    assert "profile ON" in result["error-description"] and "Connection reset by peer" in result["error-description"]
    assert client.marks[-1] == "end"
    assert read_calls(context.record_dir) == []  # a pair without both answers has no call to record


def test_the_records_travel_as_sample_meta(context, tmp_path):
    context = private(context, tmp_path)
    params = source(context, warmups=1)
    metas = []
    for _ in range(3):
        p = params.params()
        metas.append(run(StubClient(answers(context, p)), p)[records.META_KEY])
    rebuilt = tmp_path / "rebuilt"
    records.replay(str(rebuilt), metas)
    for name in (records.PROFILE_CALLS, records.PROFILE):
        assert (rebuilt / name).read_text() == (tmp_path / "records" / name).read_text(), name


def test_breakdown_keeps_build_time_apart_and_names_phases():
    parts = breakdown(profile_section(build_nanos=300_000))
    assert "MultiCollector" not in str(parts)
    assert parts["net_pct (TDigestPercentilesAggregator)"]["build-nanos"] == 300_000 and "build-nanos" not in parts["query (filter)"]
    assert {phase(name) for name in parts} == {"filter", "percentiles", "sums"}
    assert phase("cpu_pct (HDRPercentilesAggregator)") == "percentiles" and phase("x (CardinalityAggregator)") == "other aggregations"


@pytest.mark.parametrize(
    "params,clients,message",
    [
        ({}, 2, "clients must be 1, not 2"),
        ({"node": "N999"}, 1, "node 'N999' is not in the generated corpus"),
        ({"epoch": 3}, 1, "epoch 3 is not ingested by this race"),
        ({"request-timeout": 0}, 1, "request-timeout must be a positive number"),
    ],
)
def test_load_time_validation_names_the_problem(context, params, clients, message):
    good = {"variant": "D_td", "node": NODE, "epoch": 1}
    validate_profile(good, 1, context)
    with pytest.raises(ValueError, match=message):
        validate_profile({**good, **params}, clients, context)
