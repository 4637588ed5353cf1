"""make validation-proof: the coverage validation, fed Elasticsearch's real answers and wrong ones.

For every epoch and node of the ingested corpus it takes the real responses of D_td (t-digest, default compression)
and D_hdr (HDR, 3 digits) over _msearch, the terms request and serial _search, and
- checks them as the track does: any failure here is a false failure (a right answer called wrong);
- substitutes one wrong answer at a time into each field's percentiles (SUBSTITUTIONS) and checks again: each must
  be caught unless it is as close to the exact answer as the algorithm's own answers may be (within_precision).
  Uncaught ones are listed with how far (in ranks) they were from the exact answer. Exit status 1 on any false
  failure or any uncaught substitution beyond the algorithm's precision.
It does the same for the fetch: the real top FETCH_SIZE hits of every epoch and node (with _source and with doc
values) must pass, and each of FETCH_SUBSTITUTIONS, one hit changed by as little as a hundredth, must be caught.
Writes reports/validation-proof.md and .json. Run it at full scale: that is where wrong answers are closest.

    python -m report.validation_proof [--target-hosts 127.0.0.1:9200] [--client-options OPTIONS] [--data-root DIR] [--out reports]
"""

import argparse
import copy
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from report.shared.cluster import add_arguments as cluster_arguments
from report.shared.cluster import from_arguments
from report.shared.sections import markdown
from runners.contracts import corpus, queries
from runners.contracts.corpus import FIELDS, OrderStatistics, stored_value
from runners.shared.validation import (
    CoverageErrors,
    FetchExpectation,
    NodeExpectation,
    PercentileErrors,
    check_fetch_response,
    check_metrics,
    check_node_response,
    check_terms_response,
    es_percent_key,
    tdigest_rank_tolerance,
)

PERCENTS = [0, 50, 90, 100]
VARIANTS = ("D_td", "D_hdr")
TRANSPORTS = ("msearch", "terms", "serial")
RANK_SHIFT = 0.02  # "a value off by 2% of rank"


def _exact(entry, field, p):
    return entry["percentiles"][field][str(p)]


def _rank_shift(entry, field, p, shift):
    stats = OrderStatistics(entry["ranks"][field], entry["count"])
    rank = p / 100 * (entry["count"] - 1) + shift * entry["count"]
    return stats.at_or_above(rank) if shift > 0 else stats.at_or_below(rank)


# name -> function(entry, other node's entry, field) -> {percent: wrong value}
SUBSTITUTIONS = {
    "0 as p50": lambda e, o, f: {50: 0.0},
    "p50 doubled": lambda e, o, f: {50: 2 * _exact(e, f, 50)},
    "p50 + 2% of the value range": lambda e, o, f: {50: _exact(e, f, 50) + 0.02 * (_exact(e, f, 100) - _exact(e, f, 0))},
    "p75 as p50": lambda e, o, f: {50: _exact(e, f, 75)},
    "another node's p50": lambda e, o, f: {50: _exact(o, f, 50)},
    "p50 and p90 swapped": lambda e, o, f: {50: _exact(e, f, 90), 90: _exact(e, f, 50)},
    "mean as p50": lambda e, o, f: {50: e["sum"][f] / e["count"]},
    "p50 +2% of rank": lambda e, o, f: {50: _rank_shift(e, f, 50, RANK_SHIFT)},
    "p50 -2% of rank": lambda e, o, f: {50: _rank_shift(e, f, 50, -RANK_SHIFT)},
    "p90 +2% of rank": lambda e, o, f: {90: _rank_shift(e, f, 90, RANK_SHIFT)},
    "p90 -2% of rank": lambda e, o, f: {90: _rank_shift(e, f, 90, -RANK_SHIFT)},
}


FETCH_SIZE = 500  # the track's default fetch_size
FETCH_KINDS = queries.FETCH_KINDS


def _hit_fields(hit):
    """The dict of one hit's values that a substitution edits: its _source, or its doc values (one-element lists)."""
    return hit["_source"] if "_source" in hit else hit["fields"]


def _set_value(hit, field, value):
    fields = _hit_fields(hit)
    fields[field] = value if "_source" in hit else [value]


def _get_value(hit, field):
    value = _hit_fields(hit)[field]
    return value if "_source" in hit else value[0]


def _below_the_cut(entry, returned):
    """The node's first row below the fetch's last hit, when its cpu is lower (a tied row would be a right answer)."""
    top = entry["top"]
    if returned < len(top) and top[returned][1] < top[returned - 1][1]:
        return top[returned]
    return None


def _replace_last_by_next_row(response, entry, returned):
    row = _below_the_cut(entry, returned)
    if row is None:
        return False
    hit = response["hits"]["hits"][-1]
    task, *cents = row
    for field, value in zip(("task", "cpu", "mem", "net"), [task, *(stored_value(c) for c in cents)]):
        _set_value(hit, field, value)
    hit["sort"] = [stored_value(cents[0])]
    return True


def _shift(field, hundredths, k=-1):
    def change(response, entry, returned):
        hit = response["hits"]["hits"][k]
        _set_value(hit, field, stored_value(round(_get_value(hit, field) * 100) + hundredths))
        return True

    return change


def _next_task(response, entry, returned):
    """The last hit's task becomes its neighbour's name (T007 -> T006, T001 -> T002)."""
    hit = response["hits"]["hits"][-1]
    task = _get_value(hit, "task")
    number = int(task[1:])
    _set_value(hit, "task", f"T{number - 1 if number > 1 else 2:0{len(task) - 1}d}")
    return True


def _repeat_a_row(response, entry, returned):
    """The last hit becomes a copy of the one before it (its own _id): a row returned twice."""
    hits = response["hits"]["hits"]
    if len(hits) < 2 or _get_value(hits[-1], "cpu") != _get_value(hits[-2], "cpu"):
        return False  # only between tied hits is a repeat not already a wrong cpu
    keep = hits[-1]["_id"]
    hits[-1] = copy.deepcopy(hits[-2])
    hits[-1]["_id"] = keep
    return True


# name -> function(response, node's entry, hits returned) -> whether it applied (it edits the response in place)
FETCH_SUBSTITUTIONS = {
    "last hit: the row just below the cut": _replace_last_by_next_row,
    "last hit: mem + 0.01": _shift("mem", 1),
    "last hit: net - 0.01": _shift("net", -1),
    "first hit: mem - 0.01": _shift("mem", -1, k=0),
    "last hit: another task": _next_task,
    "a tied row returned twice": _repeat_a_row,
}


@dataclass(frozen=True)
class ProofEpoch:
    """One epoch of the corpus to prove on: the cluster asked, the corpus index, the epoch, its nodes and each node's
    ground truth in it."""

    cluster: object
    index: str
    epoch: int
    nodes: list
    truth: dict  # node -> its ground-truth entry in this epoch


def fetch_proof(proof, kind, false_failures, tally):
    """One fetch of every node of one epoch (a ProofEpoch), checked real and with each substitution."""
    searches = [queries.fetch_search(proof.epoch, n, FETCH_SIZE, kind) for n in proof.nodes]
    responses = proof.cluster.post("/_msearch", queries.msearch_body(proof.index, searches))["responses"]
    for node, response in zip(proof.nodes, responses):
        expected = FetchExpectation(proof.truth[node], FETCH_SIZE)
        errors = CoverageErrors()
        check_fetch_response(response, node, proof.epoch, expected, kind, errors)
        if errors:
            false_failures.append(f"fetch-{kind} epoch {proof.epoch}: {errors.description()}")
            continue
        for name, change in FETCH_SUBSTITUTIONS.items():
            wrong = copy.deepcopy(response)
            if not change(wrong, proof.truth[node], expected.returned):
                continue
            errors = CoverageErrors()
            check_fetch_response(wrong, node, proof.epoch, expected, kind, errors)
            cell = tally.setdefault((name, f"fetch-{kind}"), [0, 0])
            cell[0] += bool(errors)
            cell[1] += 1


# name -> function(real total, the next node's real total, the truth's count) -> the wrong hits.total (variant A)
COUNT_SUBSTITUTIONS = {
    "A: no hits (0 eq)": lambda real, other, count: {"value": 0, "relation": "eq"},
    "A: one below the threshold (9,999 eq)": lambda real, other, count: {"value": queries.HIT_COUNT_THRESHOLD - 1, "relation": "eq"},
    "A: the threshold as an exact count (10,000 eq)": lambda real, other, count: {"value": queries.HIT_COUNT_THRESHOLD, "relation": "eq"},
    "A: the truth's count one off (eq)": lambda real, other, count: {"value": count - 1, "relation": "eq"},
}
# the next node's real answer: above the threshold it is the same "gte 10,000", which nothing in the answer can tell
# apart without exact counts; listed to say so, never a failure of the proof
INDISTINGUISHABLE = "A: the next node's real answer"


def count_proof(proof, false_failures, tally):
    """Variant A over _msearch with the seed's body (no track_total_hits) on one epoch (a ProofEpoch): each node's real
    hits.total must pass, and each wrong one (COUNT_SUBSTITUTIONS) must be caught; the next node's answer is tallied
    apart (INDISTINGUISHABLE)."""
    searches = [queries.node_search("A", proof.epoch, n, PERCENTS) for n in proof.nodes]
    responses = proof.cluster.post("/_msearch", queries.msearch_body(proof.index, searches))["responses"]
    for i, (node, response) in enumerate(zip(proof.nodes, responses)):
        expected = NodeExpectation(proof.truth[node], "A", PERCENTS)
        errors = CoverageErrors()
        check_node_response(response, node, proof.epoch, expected, errors, PercentileErrors())
        if errors:
            false_failures.append(f"A/msearch epoch {proof.epoch}: {errors.description()}")
            continue
        other = responses[(i + 1) % len(proof.nodes)]["hits"]["total"]
        wrongs = {name: make(response["hits"]["total"], other, expected.count) for name, make in COUNT_SUBSTITUTIONS.items()}
        wrongs[INDISTINGUISHABLE] = dict(other)
        for name, total in wrongs.items():
            if total == response["hits"]["total"] and name != INDISTINGUISHABLE:
                continue  # the substitution would be the right answer
            wrong = copy.deepcopy(response)
            wrong["hits"]["total"] = total
            errors = CoverageErrors()
            check_node_response(wrong, node, proof.epoch, expected, errors, PercentileErrors())
            cell = tally.setdefault((name, "A", "hits.total"), [0, 0, [], 0])
            cell[0] += bool(errors)
            cell[1] += 1
            cell[3] += not errors and name != INDISTINGUISHABLE


def substitute(aggs, field, values):
    """A copy of one node's aggregations with the field's percentiles replaced by `values`."""
    wrong = copy.deepcopy(aggs)
    for p, value in values.items():
        wrong[f"{field}_pct"]["values"][es_percent_key(p)] = value
    return wrong


def keyed_answer(expectation, sums):
    """One node's aggregations as Elasticsearch spells them (es_percent_key: "5.0E-4" for 0.0005), holding the
    expectation's exact value of every percent and the node's sums: a right answer at any percents (substitute makes
    it wrong)."""
    aggs = {f"{f}_pct": {"values": {es_percent_key(p): exact for p, (_, _, exact) in expectation.percentiles[f].items()}} for f in FIELDS}
    aggs.update({f"{f}_sum": {"value": sums[f]} for f in FIELDS})
    return aggs


def caught(aggs, expectation):
    errors = CoverageErrors()
    check_metrics(aggs, expectation, "", errors, PercentileErrors())
    return bool(errors)


def rank_distance(entry, field, p, value):
    """How far `value` is from percent p of the node's values, in % of its count (from the rank grid)."""
    stats = OrderStatistics(entry["ranks"][field], entry["count"])
    below = sum(1 for v in stats.values if v < value) * stats.step
    return 100 * (below / entry["count"] - p / 100)


def within_precision(entry, field, variant, p, value):
    """Whether a wrong value is as close to the exact answer as the variant's algorithm itself may be: t-digest,
    within its rank tolerance (plus the rank grid's step); HDR, within its relative precision of the exact value
    (plus the data's 0.01 steps). No check that accepts the algorithm's own answers can reject such a value."""
    if queries.percentile_algorithm(variant) == "tdigest":
        grid = 100 * OrderStatistics(entry["ranks"][field], entry["count"]).step / entry["count"]
        return abs(rank_distance(entry, field, p, value)) <= 100 * tdigest_rank_tolerance() + grid
    exact = entry["percentiles"][field][str(p)]
    return abs(value - exact) <= 2 * 10.0**-queries.DEFAULT_HDR_DIGITS * abs(exact) + 0.02


def node_aggregations(proof, variant, transport):
    """{node: aggregations} of one epoch's (a ProofEpoch's) real responses, after checking them as the track does; and the
    errors."""
    nodes = proof.nodes
    expected = {n: NodeExpectation(proof.truth[n], variant, PERCENTS) for n in nodes}
    searches = [queries.node_search(variant, proof.epoch, n, PERCENTS) for n in nodes]
    errors = CoverageErrors()
    if transport == "terms":
        response = proof.cluster.post(
            f"/{proof.index}/_search?request_cache=false",
            queries.json_bytes(queries.terms_search(variant, proof.epoch, len(nodes), PERCENTS)),
        )
        check_terms_response(response, nodes, proof.epoch, expected, errors, PercentileErrors())
        buckets = {b["key"]: b for b in response["aggregations"][queries.TERMS_AGG]["buckets"]}
        return {n: buckets[n] for n in nodes}, expected, errors
    if transport == "msearch":
        responses = proof.cluster.post("/_msearch", queries.msearch_body(proof.index, searches))["responses"]
    else:
        responses = [proof.cluster.post(f"/{proof.index}/_search?request_cache=false", queries.json_bytes(s)) for s in searches]
    for node, response in zip(nodes, responses):
        check_node_response(response, node, proof.epoch, expected[node], errors, PercentileErrors())
    return {n: r["aggregations"] for n, r in zip(nodes, responses)}, expected, errors


def prove(cluster, root):
    manifest = corpus.require_manifest(root)
    truth = corpus.load_ground_truth(root, manifest)
    section = cluster.section(manifest)
    nodes = manifest["nodes"]
    false_failures, checked, checked_fetches = [], 0, 0
    fetch_tally = {}  # (substitution, fetch kind) -> [caught, total]
    tally = {}  # (substitution, variant, field) -> [caught, total, [uncaught rank distances], uncaught beyond precision]
    for epoch_key, by_node in sorted(truth["epochs"][section].items(), key=lambda kv: int(kv[0])):
        epoch = int(epoch_key)
        proving = ProofEpoch(cluster, manifest["index"], epoch, nodes, by_node)
        for variant in VARIANTS:
            for transport in TRANSPORTS:
                aggs, expected, errors = node_aggregations(proving, variant, transport)
                checked += 1
                if errors:
                    false_failures.append(f"{variant}/{transport} epoch {epoch}: {errors.description()}")
                if transport != "msearch":
                    continue  # substitutions once per answer set; the other transports prove the real answers pass
                for i, node in enumerate(nodes):
                    other = by_node[nodes[(i + 1) % len(nodes)]]
                    for name, make in SUBSTITUTIONS.items():
                        for field in FIELDS:
                            values = make(by_node[node], other, field)
                            cell = tally.setdefault((name, variant, field), [0, 0, [], 0])
                            cell[1] += 1
                            if caught(substitute(aggs[node], field, values), expected[node]):
                                cell[0] += 1
                            else:
                                p, value = next(iter(values.items()))
                                cell[2].append(rank_distance(by_node[node], field, p, value))
                                cell[3] += not within_precision(by_node[node], field, variant, p, value)
        count_proof(proving, false_failures, tally)
        for kind in FETCH_KINDS:
            fetch_proof(proving, kind, false_failures, fetch_tally)
            checked_fetches += 1
    return section, checked, false_failures, tally, checked_fetches, fetch_tally


def report(section, checked, false_failures, tally, checked_fetches, fetch_tally):
    header = [
        "substitution",
        "variant",
        "field",
        "caught",
        "uncaught: rank distance from the exact (% of n)",
        "uncaught beyond the algorithm's precision",
    ]
    rows = [
        [name, variant, field, f"{c}/{t}", ", ".join(f"{d:+.2f}" for d in sorted(misses)[:6]) or "-", beyond]
        for (name, variant, field), (c, t, misses, beyond) in tally.items()
    ]
    caught_total, total = sum(v[0] for v in tally.values()), sum(v[1] for v in tally.values())
    beyond_total = sum(v[3] for v in tally.values())
    text = (
        f"# Validation proof ({section} corpus)\n\n"
        f"Real answers: {checked} coverages (D_td, D_hdr x msearch, terms, serial x every epoch), "
        f"**{len(false_failures)} false failures**.\n\n"
        f"Wrong answers substituted into the real _msearch answers: **{caught_total} of {total} caught**; "
        f"of the {total - caught_total} not caught, **{beyond_total}** lie beyond the algorithm's own precision "
        "(t-digest: its rank tolerance; HDR: its relative precision), the rest are as close to the exact answer as "
        "the algorithm's own answers may be. Variant A (size 0, no aggregation, the seed's body without "
        'track_total_hits) carries only its hit count: below 10,000 exact, above it "gte 10,000"; each wrong count '
        f"is caught, and {INDISTINGUISHABLE.removeprefix('A: ')} (the same \"gte 10,000\" at full scale) cannot be told "
        "apart from the answer alone: only track_total_hits: true, or the terms transport's exact buckets, can.\n\n"
        + markdown(header, rows)
        + "\n"
    )
    fetch_caught, fetch_total = sum(v[0] for v in fetch_tally.values()), sum(v[1] for v in fetch_tally.values())
    text += (
        f"\nFetch: {checked_fetches} fetches of the top {FETCH_SIZE} hits of every node (_source and doc values x every "
        f"epoch) checked real; wrong hits substituted one at a time: **{fetch_caught} of {fetch_total} caught** "
        "(a substitution that would be a right answer, such as a row tied with the last hit, is not made).\n\n"
        + markdown(["substitution", "fetch", "caught"], [[name, kind, f"{c}/{t}"] for (name, kind), (c, t) in fetch_tally.items()])
        + "\n"
    )
    if false_failures:
        text += "\nFalse failures:\n\n" + "\n".join(f"- {f}" for f in false_failures[:20]) + "\n"
    return text


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cluster_arguments(parser)
    parser.add_argument("--data-root", default=None, help="default: Rally's data dir ($RALLY_HOME/.rally/benchmarks/data)")
    parser.add_argument("--out", default="reports")
    args = parser.parse_args(argv)
    cluster = from_arguments(parser, args)
    with cluster.command_line():
        result = prove(cluster, args.data_root or corpus.data_root())
    text = report(*result)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "validation-proof.md").write_text(text)
    section, checked, false_failures, tally, checked_fetches, fetch_tally = result
    (out / "validation-proof.json").write_text(
        json.dumps(
            {
                "section": section,
                "checked": checked,
                "false_failures": false_failures,
                "substitutions": [
                    {"substitution": k[0], "variant": k[1], "field": k[2], "caught": v[0], "total": v[1], "uncaught_beyond_precision": v[3]}
                    for k, v in tally.items()
                ],
                "fetches_checked": checked_fetches,
                "fetch_substitutions": [
                    {"substitution": k[0], "fetch": k[1], "caught": v[0], "total": v[1]} for k, v in fetch_tally.items()
                ],
            },
            indent=1,
        )
    )
    print(text)
    print(f"written: {out / 'validation-proof.md'}")
    return 1 if false_failures or any(v[3] for v in tally.values()) or any(c < t for c, t in fetch_tally.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
