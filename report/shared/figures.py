"""What a trend figure is: a study's report module declares its own in TREND_FIGURES, each with its name, unit and
direction, and how to read it off a race; report/catalog.py collects them and the history (make trend, the versions
study) reads every figure through this declaration, never from its name.

A figure gives a race one or more cells: the figure's own name, or "<name>: <label>" (a crossover width per variant, an
ingest per change), or a task name (the coverage cells). A cell's value is (median, low, high, n), its 95% interval
where it has one, or why the race has no figure of it ("failed: ...")."""

import math
from dataclasses import dataclass
from typing import Callable, Optional

from report.shared import uncertainty

COST = "cost"  # up is slower: a time, a cost per round trip
PLACE = "place"  # up is higher: where something happens (the width from which terms beats an _msearch)
DIRECTIONS = (COST, PLACE)

# no sample of a race can take longer than an hour: the track's slowest coverage takes seconds at full scale (a
# 3,000-node serial sweep about 30 s), and each of its requests times out at request-timeout (120 s by default); a
# sample is also never longer than its task's duration in race.json. A wall beyond either is a broken record.
PLAUSIBLE_WALL_MS = 3_600_000.0
# nor shorter than one HTTP request over loopback takes (the fastest coverage of the 51 real records in tests/fixtures
# took 1.68 ms): a wall of 1e-6 ms is a broken record, whose "0.0 ms" points made spreads of 40,000%
LEAST_WALL_MS = 0.05


@dataclass(frozen=True)
class Figure:
    """A figure the trend follows race by race.

    name: the figure, with its unit as a reader sees it ("crossover width (nodes)"); unit: "ms", "s", "nodes",
    "ms/ms"; direction: COST or PLACE; measure: race -> {cell: value or why}; discrete: its values are a sweep's few
    steps, so a move is a whole step or none (the change points weigh it so); seed: cell -> seed 000's figure of it,
    or None."""

    name: str
    unit: str
    direction: str
    measure: Callable
    discrete: bool = False
    seed: Optional[Callable] = None

    def __post_init__(self):
        if self.direction not in DIRECTIONS:
            raise ValueError(f"figure {self.name!r}: direction must be one of {DIRECTIONS}, got {self.direction!r}")

    def cell(self, label=None):
        """The cell of one of this figure's labels: the name alone, or "<name>: <label>"."""
        return self.name if label is None else f"{self.name}: {label}"

    @property
    def digits(self):
        """The decimals its values are written with: seconds 2, a width in nodes 0, the rest 1."""
        return {"s": 2, "nodes": 0}.get(self.unit, 1)

    def number(self, value):
        return f"{value:,.{self.digits}f}"

    def value_text(self, value):
        """A value in this figure's unit: "1.23 s", "5 nodes", "132.4 ms"."""
        return f"{self.number(value)} {self.unit}"

    def level_text(self, level, counts=False):
        """A level (the history's changes.Level: median, low, high, races, starts) as the trend and the versions report
        write it: the value, its 95% interval where it has one, and with `counts` the races and node starts behind it."""
        interval = "" if level.low is None else f" [{self.number(level.low)}, {self.number(level.high)}]"
        behind = f" ({level.races} races, {level.starts} node starts)" if counts else ""
        return f"{self.value_text(level.median)}{interval}{behind}"

    @property
    def is_cost(self):
        return self.direction == COST

    def verdict_text(self, verdict):
        """A change's verdict as this figure says it: a cost slower or faster, a place higher or lower."""
        if self.is_cost:
            return verdict
        return {uncertainty.SLOWER: "higher", uncertainty.FASTER: "lower"}.get(verdict, verdict)


def cells_of(figures, race):
    """{cell: (figure, value or why)} of every figure the race has."""
    found = {}
    for figure in figures:
        for cell, value in figure.measure(race).items():
            found[cell] = (figure, value)
    return found


def implausible(values, bound, unit="ms", least=0.0):
    """Why these samples cannot be times (one that is not a number, not finite, not above 0, below `least` or beyond
    `bound`), or None: such a sample is failed, never part of a figure."""
    for value in values:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"a sample of {value!r} is not a number"
        if not math.isfinite(value) or value <= 0:
            return f"a sample of {value!r} {unit} is not a finite time above 0"
        if value < least:
            return f"a sample of {value!r} {unit} is shorter than any request takes ({least} {unit})"
        if value > bound:
            return f"a sample of {value:,.0f} {unit} is beyond any plausible time ({bound:,.0f} {unit})"
    return None


def median_or_why(values):
    """(median, low, high, n): the values' median with its 95% order-statistic interval; why not, when a value cannot be
    a time."""
    problem = implausible(values, PLAUSIBLE_WALL_MS, least=LEAST_WALL_MS)
    if problem:
        return f"failed: {problem}"
    interval = uncertainty.median_interval(values)
    return interval.median, interval.low, interval.high, interval.n


def summed_walls(walls, failed):
    """(sum, None, None, n) of an ingest's epoch walls (s); "failed" when the ingest failed or lacks a wall, or why a
    wall cannot be a time."""
    if failed or not walls or None in walls:
        return "failed"
    problem = implausible(walls, PLAUSIBLE_WALL_MS / 1000, "s")
    return f"failed: {problem}" if problem else (sum(walls), None, None, len(walls))
