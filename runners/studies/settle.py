"""Settling: passes over every timed cell of the challenge until they stop getting faster, before the first timed
cell, so that the race measures a settled node whatever the node ran before it (docs/schedule.md, "What settles").

A node just started compiles the query paths as they first run: its JIT compiled some 6,000 methods in 21 s of CPU
during the first race's 40 s of queries on 2 cores, 6.7 s more in the second race and 3.4 s in the third, and a
race's passes fell from 3.4-4.1 s to about 1.5 s over its first 20 passes where the challenge's 5 warm-up passes
covered the first 8 s. Nothing of it shows from outside but the passes' pace, so the rule reads that: the task runs
passes (a coverage of every warmed cell, each cell's epochs in turn, checked as runners/studies/warm_up.py's pass
checks them) until the median of the last `window` passes is no faster than the median of the `window` before them
by more than `tolerance`, or until `time-limit` seconds have passed (then the race goes on and says it measured a node that had not settled). It
removes the first race's own ramp; the compiler's tail over the next races (a few hundred C2 compilations in each of
races 2-4) it does not see, and the first race stays 5-14% slower than the next ones (docs/schedule.md).

Each pass's seconds and the cluster's process CPU over it (`_nodes/stats/process`, where the user may read it) are
recorded in settle.jsonl, a line per settling task, with what stopped it; the report names a race that did not settle
in its first lines.
"""

import json
import statistics
import time

import elasticsearch

from runners.contracts import records, rules
from runners.contracts.context import CONTEXT_KEY, RaceContext
from runners.contracts.registry import Need, Operation
from runners.shared import restore, results
from runners.studies import warm_up

SETTLE = "settle.jsonl"  # the record: a line per settling task (what it ran, how long, whether it settled)
WINDOW_KEY = "window"  # operation parameters: the rule's window (passes), tolerance (a fraction) and time limit (s)
TOLERANCE_KEY = "tolerance"
TIME_LIMIT_KEY = "time-limit"
SETTLED, TIME_LIMIT, FAILED_PASS = "settled", "time limit", "a failed pass"  # what stopped the settling, as recorded


def settled(seconds, window, tolerance):
    """True when the passes (their seconds, in the order they ran) stopped getting faster: there are at least two
    windows of them, and the median of the last `window` is no faster than the median of the `window` before it by more
    than `tolerance` (a fraction). One-sided: a slow pass (a collection, a neighbour) does not keep a node unsettled,
    a pace still falling does."""
    ratio = pace_ratio(seconds, window)
    return ratio is not None and ratio >= 1 - tolerance


def pace_ratio(seconds, window):
    """The median of the last `window` passes over the median of the `window` before them; None with fewer than two
    windows of passes."""
    if len(seconds) < 2 * window:
        return None
    return statistics.median(seconds[-window:]) / statistics.median(seconds[-2 * window : -window])


async def _process_cpu_ms(es):
    """The cluster's process CPU (ms, summed over its nodes), or None where node stats give none (an answer without the
    figure, a node that cannot say): evidence beside the pace, which alone decides."""
    try:
        stats = restore.body_of(await es.perform_request("GET", "/_nodes/stats/process"))["nodes"].values()
        return sum(node["process"]["cpu"]["total_in_millis"] for node in stats)
    except (elasticsearch.ApiError, elasticsearch.TransportError, KeyError, TypeError, AttributeError):
        return None


def one_epoch(params, n):
    """Pass n's coverages: one a cell, each cell's epochs in turn (pass 0 the first epoch), as an interleaved pass runs
    them: a pass sends what a timed pass sends (its seconds are not a timed pass's: one client runs the cells in a
    row, where the timed cells take turns)."""
    return {**params, "cells": [[cell[n % len(cell)]] for cell in params["cells"]]}


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
        default = es["default"] if isinstance(es, dict) else es
        one_pass = warm_up.WarmUpPass()
        seconds, cpu_ms, meta = [], [], {}
        started = time.perf_counter()
        stopped = None
        while stopped is None:
            cpu_before = await _process_cpu_ms(default)
            begin = time.perf_counter()
            result = await one_pass(es, one_epoch(params, len(seconds)))
            seconds.append(round(time.perf_counter() - begin, 4))
            cpu_after = await _process_cpu_ms(default)
            cpu_ms.append(None if cpu_before is None or cpu_after is None else cpu_after - cpu_before)
            records.add(meta, {records.META_KEY: result[records.META_KEY]} if records.META_KEY in result else {})
            if not result.get("success", True):
                return self._done(params, seconds, cpu_ms, started, FAILED_PASS, meta, result["error-description"])
            if settled(seconds, window, tolerance):
                stopped = SETTLED
            elif time.perf_counter() - started >= limit:
                stopped = TIME_LIMIT
        return self._done(params, seconds, cpu_ms, started, stopped, meta)

    @staticmethod
    def _done(params, seconds, cpu_ms, started, stopped, meta, error=None):
        ratio = pace_ratio(seconds, params[WINDOW_KEY])
        line = {
            "task": params.get("name"),
            "passes": seconds,
            "process-cpu-ms": cpu_ms,
            "seconds": round(time.perf_counter() - started, 3),
            "pace-ratio": None if ratio is None else round(ratio, 4),
            "stopped-by": stopped,
            "settled": stopped == SETTLED,
            WINDOW_KEY: params[WINDOW_KEY],
            TOLERANCE_KEY: params[TOLERANCE_KEY],
            TIME_LIMIT_KEY: params[TIME_LIMIT_KEY],
        }
        records.add(meta, records.append_line(RaceContext.of(params).record_dir, SETTLE, json.dumps(line, sort_keys=True)))
        if error is not None:
            description = f"settling pass {len(seconds)} failed: {error}"
            return {**results.failed(description, "cluster-metrics-validation", "passes", meta), "weight": len(seconds) - 1}
        return {"weight": len(seconds), "unit": "passes", "success": True, **meta}

    def __repr__(self):
        return "settle"


class SettleParamSource(warm_up.WarmUpPassParamSource):
    """One pass's coverages (every warmed cell over each of its epochs, as warm_up's pass builds them; the settling
    runs them pass after pass), with the rule's parameters and the race's context."""

    def params(self):
        kept = (WINDOW_KEY, TOLERANCE_KEY, TIME_LIMIT_KEY, CONTEXT_KEY)
        return {**super().params(), **{key: self._params[key] for key in kept if key in self._params}}


def validate_settle(params, clients, context):
    """Load-time check: the cells it warms as a warm-up pass's, one client, and the rule's values (the track parameters
    are checked by PARAMETER_RULES before; these are the operation's own, in a challenge file)."""
    warm_up.validate_warm_up_pass(params, clients, context)
    for key, rule in ((WINDOW_KEY, rules.integer(1)), (TOLERANCE_KEY, rules.fraction), (TIME_LIMIT_KEY, rules.positive_number)):
        try:
            rule(params.get(key))
        except rules.ParameterError as e:
            raise ValueError(f"a settling task's {key} must be {e}, got {params.get(key)!r}") from None


def for_test_mode(tasks):
    """--test-mode: a settling task of one-pass windows (two passes at least), as Rally cuts every task's iterations."""
    for task in tasks:
        if task.operation.type == SETTLE_TYPE:
            task.operation.params[WINDOW_KEY] = 1


SETTLE_TYPE = "settle"

PARAMETER_RULES = {
    "settle": rules.boolean,  # false: no settling task, the race measures the node as it finds it
    "settle_window": rules.integer(1),
    "settle_tolerance": rules.fraction,
    "settle_time_limit": rules.positive_number,
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
