"""The fetch coverage with a stub client: the requests it builds, and every hit checked (a right answer passes, each
kind of wrong one fails naming node and hit)."""

import asyncio
import copy
import json

import pytest

from report import validation_proof
from runners.contracts import corpus
from runners.contracts.context import CONTEXT_KEY
from runners.shared.validation import CoverageErrors, FetchExpectation, check_fetch_response
from runners.studies.coverage import FetchCoverage, FetchCoverageParamSource, validate_fetch_coverage
from tests.runners.stub_client import StubClient

SIZE = 5


def source(context, transport="msearch", kind="source", size=SIZE):
    return FetchCoverageParamSource(None, {CONTEXT_KEY: context.as_param(), "fetch": kind, "fetch-size": size, "transport": transport})


def node_hits(context, node, epoch, kind, size=SIZE):
    """A right answer: the node's `size` top rows by cpu, as the ground truth keeps them."""
    entry = context.truth()[str(epoch)][node]
    hits = []
    for k, (task, *cents) in enumerate(entry["top"][:size]):
        cpu, mem, net = (corpus.stored_value(c) for c in cents)
        doc = {"epoch": epoch, "node": node, "task": task, "cpu": cpu, "mem": mem, "net": net}
        hit = {"_index": "cluster-metrics", "_id": f"{node}-{epoch}-{k}", "sort": [cpu]}
        hit.update({"_source": doc} if kind == "source" else {"fields": {k: [v] for k, v in doc.items()}})
        hits.append(hit)
    return {
        "took": 2,
        "timed_out": False,
        "_shards": {"total": 1, "successful": 1, "failed": 0},
        "hits": {"total": {"value": entry["count"], "relation": "eq"}, "hits": hits},
    }


def msearch_answer(context, kind, epoch=1, change=None):
    responses = [node_hits(context, n, epoch, kind) for n in context.nodes]
    if change:
        responses = copy.deepcopy(responses)
        change(responses[1])
    return [(200, {"took": 5, "responses": responses})]


def run(client, params):
    return asyncio.run(FetchCoverage()(client, params))


@pytest.mark.parametrize("kind", ["source", "docvalues"])
def test_a_right_answer_passes_and_the_request_asks_for_what_it_checks(context, kind):
    client = StubClient(msearch_answer(context, kind))
    result = run(client, source(context, kind=kind).params())
    assert result["success"] is True, result.get("error-description")
    assert result["hits"] == SIZE * len(context.nodes)
    lines = client.sent[0]["body"].decode().splitlines()
    body = json.loads(lines[1])
    assert body["size"] == SIZE and body["sort"] == [{"cpu": "desc"}]
    assert body["_source"] is (kind == "source") and ("docvalue_fields" in body) is (kind == "docvalues")


def _swap_first_two(response):
    hits = response["hits"]["hits"]
    hits[0], hits[1] = hits[1], hits[0]


def _set(field, value, hit=0):
    def change(response):
        response["hits"]["hits"][hit]["_source"][field] = value
        if field == "cpu":
            response["hits"]["hits"][hit]["sort"] = [value]

    return change


def _copy_row_of_hit(source_hit, into):
    """Another hit with the same fields (its own _id): the corpus holds that row once."""

    def change(response):
        hits = response["hits"]["hits"]
        hits[into]["_source"] = dict(hits[source_hit]["_source"])
        hits[into]["sort"] = list(hits[source_hit]["sort"])

    return change


@pytest.mark.parametrize(
    "change,message",
    [
        (_swap_first_two, "cpu"),
        (_set("node", "N999"), "node N999"),
        (_set("epoch", 2), "epoch 2"),
        (_set("cpu", 0.0), "cpu 0.0, expected"),
        (_set("mem", 1e9), "mem 1000000000.0 net"),
        (_set("task", "NOT-A-TASK"), "task NOT-A-TASK"),
        (_copy_row_of_hit(0, into=1), "is returned more often than the corpus holds it"),
        (lambda r: r["hits"]["hits"][0]["_source"].pop("net"), "no net"),
        (lambda r: r["hits"]["hits"].pop(), "4 hits returned, expected 5"),
        (lambda r: r["hits"]["total"].update(value=1), "1 hits (eq)"),
        (lambda r: r["hits"]["hits"][2].update(sort=[-1.0]), "sort value -1.0"),
        (lambda r: r["_shards"].update(failed=1, failures=[{"reason": {"reason": "boom"}}]), "1 of 1 shards failed"),
        (lambda r: r["hits"]["hits"].__setitem__(1, copy.deepcopy(r["hits"]["hits"][0])), "1 hits repeated"),
    ],
)
def test_each_wrong_answer_fails_naming_the_node(context, change, message):
    result = run(StubClient(msearch_answer(context, "source", change=change)), source(context).params())
    assert result["success"] is False
    assert context.nodes[1] in result["error-description"] and message in result["error-description"]


def test_a_sub_response_error_fails(context):
    def change(response):
        response.clear()
        response.update({"status": 500, "error": {"type": "illegal_state_exception", "reason": "no _source"}})

    result = run(StubClient(msearch_answer(context, "source", change=change)), source(context).params())
    assert result["success"] is False and "illegal_state_exception" in result["error-description"]


def test_terms_is_refused_at_load(context):
    with pytest.raises(ValueError, match="serial or msearch"):
        validate_fetch_coverage({"fetch": "source", "fetch-size": 5, "transport": "terms"}, 1, context)
    with pytest.raises(ValueError, match="fetch-size must be an integer from 1 to 1000"):
        validate_fetch_coverage({"fetch": "source", "fetch-size": 0, "transport": "msearch"}, 1, context)
    with pytest.raises(ValueError, match="unknown fetch kind"):
        validate_fetch_coverage({"fetch": "body", "fetch-size": 5, "transport": "msearch"}, 1, context)


# make validation-proof's fetch substitutions (run at full scale against real answers): each is caught here
@pytest.mark.parametrize("kind", ["source", "docvalues"])
@pytest.mark.parametrize("name", sorted(validation_proof.FETCH_SUBSTITUTIONS))
def test_each_validation_proof_substitution_is_caught_where_it_applies(context, kind, name):
    applied = 0
    for epoch in context.epochs:
        for node in context.nodes:
            entry = context.truth()[str(epoch)][node]
            expected = FetchExpectation(entry, SIZE)
            right = node_hits(context, node, epoch, kind)
            errors = CoverageErrors()
            check_fetch_response(right, node, epoch, expected, kind, errors)
            assert not errors, errors.description()
            wrong = copy.deepcopy(right)
            if validation_proof.FETCH_SUBSTITUTIONS[name](wrong, entry, expected.returned):
                applied += 1
                check_fetch_response(wrong, node, epoch, expected, kind, errors)
                assert errors, f"{name} not caught for {node} epoch {epoch}"
    assert applied or name == "a tied row returned twice"  # ties are rare in 30 rows per node
