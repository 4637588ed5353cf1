"""The report's core of formatting and cell reading: a race's coverage cells and their service times, a failed cell's
label, numbers and markdown tables. A study's tables live in the study's module (report/studies/ingest.py, coverage.py,
layouts.py, ...).

A cell (task) with an error rate above 0 answered wrongly or not at all: it is marked FAILED in every table and chart
and is never a baseline, a speedup or the fastest cell."""

from typing import Callable, NamedTuple, Optional, Union

from runners.contracts import records
from runners.contracts.queries import TRANSPORTS, VARIANTS

# A study's table returns (header, rows), or None when the race has no data for it, or a sentence saying why it cannot
# be built, so that the report can say so plainly.


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
    return (race.samples or {}).get(study_task(race, key))


def normalized(value, base):
    return value / base if isinstance(value, (int, float)) and isinstance(base, (int, float)) and base else None


def ratio(numerator, denominator):
    """numerator / denominator, or None where either is missing or the denominator is 0 (a took counts whole
    milliseconds: a small index answers in 0): a share or ratio of nothing is no figure, never a division error."""
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def pct(x):
    """A fraction as a percentage with one decimal, or None."""
    return None if x is None else f"{100 * x:.1f}%"


def fmt(value):
    if value is None:
        return "-"
    if isinstance(value, float):
        if abs(value) >= 100:
            return f"{value:,.0f}"
        return f"{value:,.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def markdown(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(fmt(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


class Chart(NamedTuple):
    """One chart of a race's report. A study module lists its own in CHARTS; report/catalog.py collects them, and the
    report shows each one the race has (its draw wrote the file)."""

    file: str  # the PNG's name in the race's report folder
    draw: Callable  # (race, path) -> the path written, or None when the race has nothing to draw
    caption: str


class Section(NamedTuple):
    """One section of a race's report. Each study module lists its own in SECTIONS, in report order, and
    report/__main__.py joins every study's."""

    title: str
    build: Callable  # race -> (header, rows), None when the race has no data for it, or a sentence why it cannot be built
    lacks: str  # what a race without it lacks (the report names those in one sentence)
    note: Optional[Union[str, Callable]]  # under the table: text, or race -> text
    summary: Optional[Callable] = None  # race -> the line `make report` prints of this section, when the race has it
