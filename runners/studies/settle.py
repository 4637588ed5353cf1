"""Settling: passes over every timed cell of the challenge until they stop getting faster and the node has served
the searches its compiler needs, before the first timed cell, so that the race measures a settled node whatever the
node ran before it (docs/schedule.md, "What settles between races").

A node just started compiles the query paths as they first run: its JIT compiled some 6,000 methods in 21 s of CPU
during the first race's 40 s of queries on 2 cores, 6.7 s more in the second race and 3.4 s in the third, and a
race's passes fell from 3.4-4.1 s to about 1.5 s over its first 20 passes. Two things are read: the passes' pace (the
task runs passes, a coverage of every warmed cell, each cell's epochs in turn, checked as runners/studies/warm_up.py's
pass checks them, until the median of the last `window` passes is no faster than the median of the `window` before
them by more than `tolerance`), and the node's own count of query phases since it started (`_nodes/stats`), which must
reach `node-searches`: C2 compiles the per-request and per-shard code after thousands of calls, over a node's first
three races or so, in steps a pass's pace cannot show (the first race ran 5-14% slower than the next ones with the
pace alone, within 2% with both). The settling stops when both hold, or at `time-limit` seconds (then the race goes
on and says it measured a node that had not settled).

Each pass's seconds, the cluster's process CPU over it and the searching nodes' count (one node-stats read between
passes, where the user may read them: monitor) are recorded in settle.jsonl, a line per settling task, with what
stopped it; the report names a race that did not settle in its first lines.
"""

import json
import statistics
import time
from dataclasses import dataclass, field

import elasticsearch

from runners.contracts import records, rules
from runners.contracts.context import CONTEXT_KEY, RaceContext
from runners.contracts.registry import Need, Operation
from runners.contracts.settle_record import (  # noqa: F401 (the record's names, read by the report too)
    BULK_REQUESTS_KEY,
    FAILED_PASS,
    NODE_SEARCHES_KEY,
    SEARCHES_BEFORE_KEY,
    SETTLE,
    SETTLED,
    TIME_LIMIT,
    WINDOW_KEY,
)
from runners.shared import restore, results
from runners.studies import warm_up

TOLERANCE_KEY = "tolerance"  # operation parameters beside the window (settle_record.WINDOW_KEY): a fraction ...
TIME_LIMIT_KEY = "time-limit"  # ... and seconds
NO_FLOOR = 0  # node-searches when a challenge file leaves it out: the pace alone
FEWEST_PASSES_KEY = "fewest-passes"  # the passes it runs before the time limit may stop it
FEWEST_PASSES = 2  # a pace is read over two passes at least: the time limit stops the settling only after them
TEST_MODE_TIME_LIMIT = 1.0  # s, --test-mode's bound: its record's shape, not a settled node (a test-mode pace of
# one-pass windows on a node just started kept falling for 14 s of passes through a proxy)
TEST_MODE_FEWEST_PASSES = 1  # --test-mode reads no pace it could trust: a pass longer than its bound is the only one


def settled(seconds, window, tolerance):
    """True when the passes (their seconds, in the order they ran) stopped getting faster: there are at least two
    windows of them, and the median of the last `window` is no faster than the median of the `window` before it by more
    than `tolerance` (a fraction). One-sided: a slow pass (a collection, a neighbour) does not keep a node unsettled,
    a pace still falling does."""
    ratio = pace_ratio(seconds, window)
    return ratio is not None and ratio >= 1 - tolerance


def warmed(searches, floor):
    """True when the searching nodes have each served at least `floor` query phases since they started (0: no floor),
    or where that cannot be read (None: the pace alone decides, and the record says so)."""
    return floor == NO_FLOOR or searches is None or searches >= floor


def pace_ratio(seconds, window):
    """The median of the last `window` passes over the median of the `window` before them; None with fewer than two
    windows of passes."""
    if len(seconds) < 2 * window:
        return None
    return statistics.median(seconds[-window:]) / statistics.median(seconds[-2 * window : -window])


NODE_STATS_PATH = "/_nodes/stats/jvm,process,indices/search"
NODE_STATS_FIELDS = "nodes.*.process.cpu.total_in_millis,nodes.*.indices.search.query_total,nodes.*.jvm.uptime_in_millis"


async def _read_nodes(es, path, fields, read):
    """read(body) of a GET of path, filtered to fields, or None where the nodes give no answer to read (a refused
    request, a node that cannot say, an answer without the figures)."""
    try:
        return read(restore.body_of(await es.perform_request("GET", path, params={"filter_path": fields})))
    except (elasticsearch.ApiError, elasticsearch.TransportError, KeyError, TypeError, AttributeError):
        return None


async def _node_stats(es):
    """Each node's (process CPU ms, query phases since it started, JVM uptime ms), or None where node stats give none:
    read once between passes."""

    def each_node(body):
        return {
            node_id: (node["process"]["cpu"]["total_in_millis"], node["indices"]["search"]["query_total"], node["jvm"]["uptime_in_millis"])
            for node_id, node in body["nodes"].items()
        }

    return await _read_nodes(es, NODE_STATS_PATH, NODE_STATS_FIELDS, each_node)


NODE_USAGE_PATH = "/_nodes/usage/rest_actions"
BULK_ACTION = "bulk_action"  # the REST action of _bulk in the nodes' usage (8.x and 9.x alike)


async def _bulk_requests(es):
    """The bulk requests the nodes' REST layers served since they started (summed over the nodes; 0 for none: the
    filter leaves such a node out), or None where node usage cannot be read: read once, before the first pass. On 9.5.3
    the first race in a process that ran the ingest read the serial t-digest about 7% slow, and the settling does not
    remove it (docs/schedule.md, "What it goes with"): the record and the report say when a race measured such a node."""

    def summed(body):
        return sum(node["rest_actions"][BULK_ACTION] for node in (body or {}).get("nodes", {}).values())

    return await _read_nodes(es, NODE_USAGE_PATH, f"nodes.*.rest_actions.{BULK_ACTION}", summed)


def searching_nodes(first, now):
    """The nodes that served the settling's searches (their query phases grew since its first reading): the ones whose
    JIT it warms. None where either reading is missing."""
    if first is None or now is None:
        return None
    return sorted(node for node in now if node in first and now[node][1] > first[node][1])


def node_searches(first, now):
    """The fewest query phases any searching node has served since it started (its JVM's count of the per-request
    and per-shard code that C2 compiles after thousands of calls), or None where it cannot be read."""
    nodes = searching_nodes(first, now)
    return min(now[node][1] for node in nodes) if nodes else None


def searches_before(first, last):
    """The fewest query phases a searching node had served when the settling began (below the floor: the node's first
    race since it started), or None where it cannot be read."""
    nodes = searching_nodes(first, last)
    return min(first[node][1] for node in nodes) if nodes else None


def process_cpu_ms(before, after):
    """The cluster's process CPU over a pass (ms, summed over the nodes read both times), or None."""
    if before is None or after is None:
        return None
    return sum(after[node][0] - before[node][0] for node in after if node in before)


def one_epoch(params, n):
    """Pass n's coverages: one a cell, each cell's epochs in turn (pass 0 the first epoch), as an interleaved pass runs
    them: a pass sends what a timed pass sends (its seconds are not a timed pass's: one client runs the cells in a
    row, where the timed cells take turns)."""
    return {**params, "cells": [[cell[n % len(cell)]] for cell in params["cells"]]}


@dataclass
class _Passes:
    """A settling so far: when it started, the node stats before the first pass and after the last one, the bulk
    requests served before; each pass's seconds, the cluster's process CPU over it (ms) and the searching nodes'
    query phases; the passes' sample meta."""

    started: float
    first: dict
    last: dict
    bulk_requests: object
    seconds: list = field(default_factory=list)
    cpu_ms: list = field(default_factory=list)
    served: list = field(default_factory=list)
    meta: dict = field(default_factory=dict)


class Settle:
    """Passes of one coverage a cell (runners/studies/warm_up.py WarmUpPass, each checked against the ground truth; the
    cells' epochs in turn) until the passes stop getting faster (settled) or the time limit.

    Measures: nothing a report compares (its service time is the settling's). Returns weight (the passes run), unit
    "passes", and the record of settle.jsonl: each pass's seconds and process CPU, the pace ratio at the end, what
    stopped it. Errors: a pass with a failed coverage fails the sample, naming the pass and the first failure, and stops
    the settling (the cells then fail alike)."""

    multi_cluster = True

    async def __call__(self, es, params):
        window, tolerance, limit = params[WINDOW_KEY], params[TOLERANCE_KEY], params[TIME_LIMIT_KEY]
        floor, fewest = _floor_and_fewest(params)
        default = es["default"] if isinstance(es, dict) else es
        one_pass = warm_up.WarmUpPass()
        started = time.perf_counter()
        first = await _node_stats(default)
        # what the process served before: read once, before the passes
        passes = _Passes(started, first, first, await _bulk_requests(default))
        seconds, stopped = passes.seconds, None
        while stopped is None:
            begin = time.perf_counter()
            result = await one_pass(es, one_epoch(params, len(seconds)))
            seconds.append(round(time.perf_counter() - begin, 4))
            before, passes.last = passes.last, await _node_stats(default)
            passes.cpu_ms.append(process_cpu_ms(before, passes.last))
            passes.served.append(node_searches(first, passes.last))
            records.add(passes.meta, {records.META_KEY: result[records.META_KEY]} if records.META_KEY in result else {})
            if not result.get("success", True):
                return self._done(params, passes, FAILED_PASS, result["error-description"])
            if settled(seconds, window, tolerance) and warmed(passes.served[-1], floor):
                stopped = SETTLED
            elif len(seconds) >= fewest and time.perf_counter() - started >= limit:
                stopped = TIME_LIMIT
        return self._done(params, passes, stopped)

    @staticmethod
    def _done(params, passes, stopped, error=None):
        """The settling's record line and its sample: passes (_Passes), what stopped it, the failed pass's error."""
        seconds, cpu_ms, served, meta = passes.seconds, passes.cpu_ms, passes.served, passes.meta
        first, last, bulk_requests = passes.first, passes.last, passes.bulk_requests
        window, (floor, fewest) = params[WINDOW_KEY], _floor_and_fewest(params)
        ratio = pace_ratio(seconds, window)
        uptimes = [first[node][2] for node in first] if first else []
        line = {
            "task": params.get("name"),
            "passes": seconds,
            "process-cpu-ms": cpu_ms,
            "served-searches": served,
            "jvm-uptime-s": round(min(uptimes) / 1000, 1) if uptimes else None,
            "seconds": round(time.perf_counter() - passes.started, 3),
            "pace-ratio": None if ratio is None else round(ratio, 4),
            "paced": settled(seconds, window, params[TOLERANCE_KEY]),
            "warmed": warmed(served[-1] if served else None, floor),
            "stopped-by": stopped,
            "settled": stopped == SETTLED,
            WINDOW_KEY: window,
            TOLERANCE_KEY: params[TOLERANCE_KEY],
            TIME_LIMIT_KEY: params[TIME_LIMIT_KEY],
            NODE_SEARCHES_KEY: floor,
            FEWEST_PASSES_KEY: fewest,
            BULK_REQUESTS_KEY: bulk_requests,
            SEARCHES_BEFORE_KEY: searches_before(first, last),
        }
        records.add(meta, records.append_line(RaceContext.of(params).record_dir, SETTLE, json.dumps(line, sort_keys=True)))
        if error is not None:
            description = f"settling pass {len(seconds)} failed: {error}"
            return {**results.failed(description, "cluster-metrics-validation", "passes", meta), "weight": len(seconds) - 1}
        return {"weight": len(seconds), "unit": "passes", "success": True, **meta}

    def __repr__(self):
        return "settle"


def _floor_and_fewest(params):
    """The rule's two values a challenge file may leave out, with their defaults: the node-searches floor, and the
    passes run before the time limit may stop the settling."""
    return params.get(NODE_SEARCHES_KEY, NO_FLOOR), params.get(FEWEST_PASSES_KEY, FEWEST_PASSES)


class SettleParamSource(warm_up.WarmUpPassParamSource):
    """One pass's coverages (every warmed cell over each of its epochs, as warm_up's pass builds them; the settling
    runs them pass after pass), with the rule's parameters and the race's context."""

    def params(self):
        kept = (WINDOW_KEY, TOLERANCE_KEY, TIME_LIMIT_KEY, NODE_SEARCHES_KEY, FEWEST_PASSES_KEY, CONTEXT_KEY)
        return {**super().params(), **{key: self._params[key] for key in kept if key in self._params}}


def validate_settle(params, clients, context):
    """Load-time check: the cells it warms as a warm-up pass's, one client, and the rule's values (the track parameters
    are checked by PARAMETER_RULES before; these are the operation's own, in a challenge file)."""
    warm_up.validate_warm_up_pass(params, clients, context)
    own = (  # (key, its rule, its value when the challenge file leaves it out)
        (WINDOW_KEY, rules.integer(1), None),
        (TOLERANCE_KEY, rules.fraction, None),
        (TIME_LIMIT_KEY, rules.positive_number, None),
        (NODE_SEARCHES_KEY, rules.integer(0), NO_FLOOR),
        (FEWEST_PASSES_KEY, rules.integer(1), FEWEST_PASSES),
    )
    for key, rule, absent in own:
        try:
            rule(params.get(key, absent))
        except rules.ParameterError as e:
            raise ValueError(f"a settling task's {key} must be {e}, got {params.get(key)!r}") from None


def for_test_mode(tasks):
    """--test-mode: a settling task of one-pass windows, one pass at least, bounded by TEST_MODE_TIME_LIMIT, as Rally
    cuts every task's iterations (a pass of ccs-roundtrips or coverage-width takes about 5 s in test mode: a second one
    would only double the record's shape)."""
    for task in tasks:
        if task.operation.type == SETTLE_TYPE:
            task.operation.params[WINDOW_KEY] = 1
            task.operation.params[TIME_LIMIT_KEY] = min(task.operation.params[TIME_LIMIT_KEY], TEST_MODE_TIME_LIMIT)
            task.operation.params[NODE_SEARCHES_KEY] = NO_FLOOR  # a test-mode corpus cannot afford thousands of searches
            task.operation.params[FEWEST_PASSES_KEY] = TEST_MODE_FEWEST_PASSES


SETTLE_TYPE = "settle"

PARAMETER_RULES = {
    "settle": rules.boolean,  # false: no settling task, the race measures the node as it finds it
    "settle_window": rules.integer(1),
    "settle_tolerance": rules.fraction,
    "settle_time_limit": rules.positive_number,
    "settle_node_searches": rules.integer(0),  # 0: no floor, the pace alone
}

OPERATIONS = {
    SETTLE_TYPE: Operation(
        Settle,
        Need("searches the index; reads the nodes' process CPU (monitor: Rally's own need too)", cluster=("monitor",), index=("read",)),
        SettleParamSource,
        validate_settle,
        reads_corpus=False,
    ),
}
