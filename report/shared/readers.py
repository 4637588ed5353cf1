"""A race's coverage cells as the report reads them: the coverage record's measured lines (runners/studies/coverage.py),
Rally's op metrics and service times per study cell, and a failed cell's label. The report's types and how a table is
written are report/shared/sections.py's.

A cell (task) with an error rate above 0 answered wrongly or not at all: it is marked FAILED in every table and chart
and is never a baseline, a speedup or the fastest cell."""

from runners.contracts import records
from runners.contracts.queries import TRANSPORTS, VARIANTS

BASELINE = ("D_td", "serial")


def validation(race):
    """Each coverage's validation line, warm-ups too (the record every coverage writes: runners/studies/coverage.py)."""
    return race.record(records.VALIDATION, [])


def measured(race, task, field):
    """The task's measured coverages' values of a validation record field (runners/studies/coverage.py: wall-ms, took,
    took-sum), in the order they ran; None when the task failed (a failed cell has no figure) or a measured coverage
    lacks the field (an answer without took)."""
    op = race.op_metrics().get(task)
    if op is not None and (op.get("error_rate") or 0) > 0:
        return None
    values = [line.get(field) for line in race.derived("measured-lines", _measured_lines).get(task, [])]
    return None if any(v is None for v in values) else values


def _measured_lines(race):
    """{task: its measured coverages' validation lines} in the order the coverages started (their timed window's first
    request), indexed once: the report asks per cell and field. The record holds them in the order they ended, and a
    metrics store in the order Rally stamped them: with several clients the two differ, and the drift check (first
    third against last) must read one order whatever the race was read from."""
    by_task = {}
    for line in validation(race):
        if line.get("measured"):
            by_task.setdefault(line.get("task"), []).append(line)
    for lines in by_task.values():
        lines.sort(key=_started)  # stable: lines without a window keep their recorded order
    return by_task


def _started(line):
    window = line.get("window")
    return window[0] if isinstance(window, (list, tuple)) and window and isinstance(window[0], (int, float)) else float("inf")


def service_ms(op, stat):
    """A service-time statistic in ms: 'median' (50_0) or 'p90' (90_0), as race.json holds them. With too few
    samples for that percentile (a --test-mode race has one), Rally keeps only 100_0 and mean: use the mean."""
    if not op:
        return None
    times = op.get("service_time", {})
    return times.get({"median": "50_0", "p90": "90_0"}[stat], times.get("mean"))


def op_median(op):
    """A task's median service time in ms, or None when it is missing or failed."""
    return None if op is None or failed(op) else service_ms(op, "median")


def failed(op):
    return op is not None and (op.get("error_rate") or 0) > 0


def failed_label(op):
    return f"FAILED ({100 * op['error_rate']:.0f}% errors)"


def study_task(race, key):
    """The task that measured the study's cell key, (variant, transport) under no other condition, in this race (its
    cells record, runners/contracts/cells.py), or None."""
    variant, transport = key
    return race.task_of(variant=variant, transport=transport)


def study_label(races, key):
    """A study cell's row label in a table of several races: its task name in the first race that ran it."""
    return next(task for task in (study_task(race, key) for race in races) if task is not None)


def coverage_cells(race):
    """{(variant, transport): Rally's op metrics} of the study's cells this race reported, in the study's order."""
    ops = race.op_metrics()
    found = {(v, t): ops.get(study_task(race, (v, t))) for v in VARIANTS for t in TRANSPORTS}
    return {key: op for key, op in found.items() if op is not None}


def in_study_order(keys):
    """Cells (variant, transport) in the study's order: variants, then transports, as runners/contracts/queries.py lists them."""
    return sorted(keys, key=lambda k: (list(VARIANTS).index(k[0]), TRANSPORTS.index(k[1])))


def valid_median(cells, key):
    """The cell's median service time, or None when the cell is missing or failed."""
    op = cells.get(key)
    return None if op is None or failed(op) else service_ms(op, "median")


def fastest_cell(cells):
    """The fastest cell that did not fail, or None."""
    valid = {k: valid_median(cells, k) for k in cells if valid_median(cells, k) is not None}
    return min(valid, key=valid.get) if valid else None


def cell_samples(race, key):
    """The cell's measured service times (a race read from a metrics store), or None (no store, or a failed cell)."""
    return race.samples.of(study_task(race, key))
