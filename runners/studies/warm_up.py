"""The warm-up pass of a blocked schedule: one coverage of every cell the challenge measures over each of its epochs,
before the first measured cell, as the seed warmed before measuring (one full pass over every variant x transport x
epoch: 60 coverages for its 6 variants, 2 transports, 5 epochs).

The interleaved schedule warms every cell in turn (its first warm-up passes); a blocked one (a step per cell:
aggregation-memory, coverage-width) would otherwise measure its first cells on a cold JVM with a couple of warm-up
coverages of their own (race 18502de5: A over serial read 232 ms on a node started just before, 50 ms on a warm
one), and one coverage a cell did not warm it either (race 9ef0d90b: the race's first cell drifted to 0.59x).
The pass is one Rally task, so it costs one schedule step: a task names the cells it warms by their task names
("warms"), and the track processor hands it their operation parameters (bind), as the cells themselves run them.
Each cell runs its epochs' coverages one after the other (under its scope once: a remote's registration). They are
recorded as warm-ups (not measured) under "<pass>/<cell>", so no cell's measured samples change.
"""

from runners.contracts import records, rules
from runners.contracts.registry import Need, Operation
from runners.shared import interleave, results
from runners.studies import coverage, large_source, scope

# the operation types that run this module's passes over the cells they name: the pass, and the settling
# (runners/studies/settle.py: passes until they stop getting faster)
PASS_TYPES = ("warm-up-pass", "settle")
WARM_UP_PASS_TYPE = PASS_TYPES[0]
TEST_MODE_PASSES = 1  # --test-mode: a warm-up pass runs once (Rally's test mode keeps a warm-up iteration: two)
WARMS_KEY = "warms"  # operation parameter: the names of the cell tasks the pass warms, in the order it runs them
CELLS_KEY = "warm-up-cells"  # set by the track processor (bind): each warmed cell's operation parameters
KIND_KEY = "warm-up-kind"  # in a warmed cell's parameters: its operation type (one of WARMED)
# what the pass leaves out of a cell's parameters: the pass runs each cell once, alone, not taking turns
NOT_COPIED = (interleave.GROUP_KEY, interleave.ORDER_KEY, interleave.LEAD_KEY, "record-rate")
# the operation types a pass warms: {type: (its parameter source, its runner)}
WARMED = {
    "coverage": (coverage.CoverageParamSource, coverage.Coverage),
    "fetch-coverage": (coverage.FetchCoverageParamSource, coverage.FetchCoverage),
    "large-source-fetch": (large_source.LargeSourceFetchParamSource, large_source.LargeSourceFetch),
}


def bind(tasks):
    """Hands each warm-up pass among the challenge's tasks the operation parameters of the cells it warms (after the
    track processor bound every task to its corpus set); raises ValueError naming a cell that is not a coverage task
    of the challenge."""
    by_name = {task.name: task for task in tasks}
    for task in tasks:
        if task.operation.type not in PASS_TYPES:
            continue
        cells = []
        for name in task.operation.params[WARMS_KEY]:
            cell = by_name.get(name)
            if cell is None or cell.operation.type not in WARMED:
                raise ValueError(
                    f"warm-up pass {task.name} warms {name!r}, which is no task of this challenge of a type it warms ({', '.join(WARMED)})"
                )
            params = {k: v for k, v in cell.operation.params.items() if k not in NOT_COPIED}
            cells.append({**params, "name": f"{task.name}/{name}", KIND_KEY: cell.operation.type})
        task.operation.params[CELLS_KEY] = cells


def for_test_mode(tasks):
    """--test-mode: each warm-up pass runs TEST_MODE_PASSES pass, its mechanics proven; the second pass that Rally's
    test mode leaves it (one warm-up iteration, one iteration) cost a test-mode ccs-roundtrips race 6 s and warms a
    test-mode corpus of nothing a test compares."""
    for task in tasks:
        if task.operation.type == WARM_UP_PASS_TYPE:
            task.warmup_iterations, task.iterations = 0, TEST_MODE_PASSES


class WarmUpPassParamSource:
    """Each warmed cell's parameter source (as the cell's own task builds its requests), asked for one coverage of
    each of the cell's epochs (a large fetch: one fetch); every call a warm-up (not measured). Built on first use: Rally also instantiates
    parameter sources where it only looks for the corpora a race uses."""

    def __init__(self, track, params, **kwargs):
        self._track, self._params, self._sources = track, params, None
        self.infinite = True

    def partition(self, partition_index, total_partitions):
        return self

    def params(self):
        if self._sources is None:
            self._sources = [(cell[KIND_KEY], WARMED[cell[KIND_KEY]][0](self._track, cell)) for cell in self._params.get(CELLS_KEY, [])]
        cells = [
            [{**source.params(), KIND_KEY: kind, coverage.MEASURED_KEY: False} for _ in getattr(source, "epochs", (None,))]
            for kind, source in self._sources
        ]
        return {"name": self._params.get("name"), "cells": cells}


class WarmUpPass:
    """Each warmed cell's coverages (one per epoch), cell after cell, each checked against the ground truth as the
    cell's own.

    Measures: nothing a report reads (its service time spans every cell's coverages). Returns weight (the coverages
    that passed), unit "coverages" and the record operations of every coverage. Errors: a coverage that failed (any
    of the coverage's failures, runners/studies/coverage.py) fails the sample, naming the first and how many; the
    pass goes on, so every cell is warmed whatever one of them answered."""

    multi_cluster = True

    async def __call__(self, es, params):
        failed, passed, meta = [], 0, {}
        for cell in params["cells"]:
            runner = WARMED[cell[0][KIND_KEY]][1]()
            default = es["default"] if isinstance(es, dict) else es
            client = es if getattr(runner, "multi_cluster", False) else default  # what Rally hands the cell's own runner
            async with scope.applied(default, cell[0]):  # a remote's registration, as the cell's
                for one in cell:
                    result = await runner(client, one)
                    records.add(meta, {records.META_KEY: result[records.META_KEY]} if records.META_KEY in result else {})
                    if result.get("success", True):
                        passed += 1
                    else:
                        failed.append(result["error-description"])
        if failed:
            description = f"{len(failed)} of {passed + len(failed)} warm-up coverages failed; the first: {failed[0]}"
            return {**results.failed(description, "cluster-metrics-validation", "coverages", meta), "weight": passed}
        return {"weight": passed, "unit": "coverages", "success": True, **meta}

    def __repr__(self):
        return WARM_UP_PASS_TYPE


def validate_warm_up_pass(params, clients, context):
    """Load-time check: the pass names the cells it warms, one client runs it (bind names an unknown cell)."""
    warms = params.get(WARMS_KEY)
    if not isinstance(warms, list) or not warms or not all(isinstance(name, str) for name in warms):
        raise ValueError(f"a warm-up pass names the cell tasks it warms as a non-empty list (warms), got {warms!r}")
    if clients != 1:
        raise ValueError(f"a warm-up pass runs each cell once with one client, not {clients}")


# the passes a blocked schedule runs before its first measured cell: its warm-up-pass task's warm-up iterations and
# its one iteration (a just-started node is not warm after one: docs/schedule.md)
PARAMETER_RULES = {
    "warm_up_passes": rules.integer(1),
}


OPERATIONS = {
    # reads no corpus of its own: each cell it warms carries its own context (a large fetch's, of no corpus)
    WARM_UP_PASS_TYPE: Operation(
        WarmUpPass, Need("searches the index", index=("read",)), WarmUpPassParamSource, validate_warm_up_pass, reads_corpus=False
    ),
}
