"""make trend-eval: the trend's judge scored blind on real races (docs/history.md, "How well it finds a slowdown").

    python -m report.trend_eval [--histories 50] [--seed 85] [--archive A.tar.xz ...] [--shape running ...]

Every history it judges is made of real races: the fixture histories (tests/fixtures/*.tar.xz: full scale, one 1 GB
node on 2 cores, 8.17.2 and 9.5.3; a neighbour's busy loop and memory-copy loop in two of them). Per cell it reads
what real races vary by, and nothing else:

- between races of one node start: each quiet race's log median less its start's mean (races of a start with two
  quiet races or more that count: a neighbour's loaded races and an unsettled start's first race left out), scaled by
  sqrt(k / (k - 1)) for the mean it is taken from;
- between node starts: the nightly races (a node started for each), each less its version's mean, scaled alike;
- the versions' levels: the nightly 8.17.2 and 9.5.3 races' means.

A seed draws, without replacement, which real differences make each history, and where in it a slowdown begins; the
judge (report/history/analysis.py, as `make trend` runs it) sees only the races, every one with a settle record and
its node start, and answers what changed and whether the nightly alert fires (--alert-within 5). A slowdown is planted
as a slower cluster would have measured it: the races' medians multiplied by 1.2, 1.5 or 2 from the race it begins at.
Each shape's unplanted histories are judged too: how often the alert fires with nothing planted.

Prints a markdown table: shape x size -> share named at the race it began (and within a race of it), share alerted,
each with its count and Wilson 95% interval; the races a running node needs after the step; the unplanted alerts.
tests/report/trend_eval_test.py asserts the issue's bounds on a smaller draw.
"""

import argparse
import math
import sys
import tarfile
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy import stats

from report import catalog
from report.history import analysis, changes
from report.history import races as history_races
from report.history import series as history_series
from report.history.races import Facts
from report.history.series import Point
from report.history.starts import start_of
from report.shared.races import source

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
ARCHIVES = ("history-races", "host-study-races", "settle-study-races", "nightly-switch-races")
CHALLENGE = "production-comparison"
OLD, NEW = "8.17.2", "9.5.3"
# a race's user tags that say a neighbour loaded the host while it ran (tests/fixtures/pack_history.py's plans)
LOADED_TAGS = {"load": {"busy-core"}, "neighbour": {"loop", "L", "M"}}
FACTORS = (1.2, 1.5, 2.0)
ALERT_WITHIN = 5  # make trend's --alert-within default
EARLIER_START = 4  # races of the node start before a running node's (a team's history has one)
STARTS_OF_SEVERAL, RACES_A_START = 4, 5


@dataclass
class CellPool:
    """What real races of one cell vary by (log ms): race-to-race within a node start, nightly node start to node
    start, and each version's nightly level."""

    cell: str
    figure: object
    residuals: np.ndarray
    nightly: np.ndarray
    levels: dict = field(default_factory=dict)  # version -> mean log median of its nightly races


def _loaded(point):
    return any(point.tags.get(key) in values for key, values in LOADED_TAGS.items())


def _centred(groups):
    """Each value of each group of two or more less its group's mean, scaled by sqrt(k / (k - 1))."""
    out = []
    for values in groups:
        v = np.asarray(values, dtype=float)
        if len(v) > 1:
            out.extend((v - v.mean()) * math.sqrt(len(v) / (len(v) - 1)))
    return np.asarray(out)


def real_series(archive):
    """The archive's production-comparison series (series.Series), loaded as make trend loads a Rally home's races."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / ".rally" / "benchmarks" / "races"
        root.mkdir(parents=True)
        with tarfile.open(archive) as tar:
            tar.extractall(root, filter="data")
        found = history_races.select(history_races.Selection((), {}, None, None, None), source(tmp))
        return [s for s in history_series.build(found.races, catalog.TREND_FIGURES) if s.challenge == CHALLENGE]


def pools(archives):
    """{cell: CellPool} over the archives' real races."""
    within, nightly, figures = {}, {}, {}
    for archive in archives:
        for series in real_series(archive):
            for cell, points in series.cells.items():
                figures[cell] = series.figures[cell]
                starts = {}
                for p in points:
                    starts.setdefault(start_of(p), []).append(p)
                for races in starts.values():
                    if len(races) == 1:
                        nightly.setdefault(cell, {}).setdefault(races[0].facts.version, []).append(math.log(races[0].median))
                        continue
                    counted = [p for i, p in enumerate(races) if not _loaded(p) and (i > 0 or p.facts.settled is True)]
                    within.setdefault(cell, []).append([math.log(p.median) for p in counted])
    return {
        cell: CellPool(
            cell,
            figures[cell],
            _centred(within[cell]),
            _centred(nightly[cell].values()),
            {version: float(np.mean(values)) for version, values in nightly[cell].items()},
        )
        for cell in sorted(within)
        if cell in nightly and {OLD, NEW} <= set(nightly[cell])
    }


@dataclass
class Planted:
    """A history as the seed made it: each race's (log value, version, node start), and where the slowdowns begin (the
    judge does not see them); `alert` says whether a slowdown runs to the newest race (the alert should fire)."""

    races: list = field(default_factory=list)  # (log value, version, start)
    begins: list = field(default_factory=list)
    alert: bool = False

    def start(self, version, values):
        start = len({s for _, _, s in self.races})
        self.races.extend((v, version, start) for v in values)

    def slow(self, first, end, factor):
        """The races first..end-1 slower by factor (a stretch that began at first)."""
        self.races = [(v + math.log(factor) * (first <= i < end), version, s) for i, (v, version, s) in enumerate(self.races)]
        if factor != 1.0:
            self.begins.append(first)
            self.alert = self.alert or end == len(self.races)

    def points(self):
        return [
            Point(f"race-{n:04d}", f"2026{n:010d}", math.exp(v), None, None, 15, synthetic_facts(version, s))
            for n, (v, version, s) in enumerate(self.races)
        ]


def synthetic_facts(version, start, settings="{}", settled=True):
    """A made race's facts: one node of `version` on this machine's JVM, heap and cores, its node start named by
    `start`, settled before its cells unless said otherwise (tests/report/history_test.py's histories too)."""
    return Facts(
        version=version,
        build=f"build-{version}",
        rally="2.13.0",
        jvm="Debian 17.0.15",
        heap="1024 MB",
        processors="2",
        settings=settings,
        node_start=f"start-{start}",
        uptime_s=100.0,
        corpus="corpus",
        shape="1 node(s)",
        settled=settled,
    )


class Draw:
    """The seed's draws of one cell's real differences, each without replacement within a history."""

    def __init__(self, pool, rng):
        self.pool, self.rng = pool, rng
        self.residuals = rng.permutation(pool.residuals)
        self.nightly = rng.permutation(pool.nightly)

    def start(self, version, races):
        """One node start's races: a nightly race's difference for its level, the races' own around it."""
        level, self.nightly = self.pool.levels[version] + self.nightly[0], self.nightly[1:]
        if races == 1:
            return [level]
        own, self.residuals = self.residuals[:races], self.residuals[races:]
        return list(level + own)


# a shape: (name, its sizes, how a seed plants one history of a size: planted(draw, size, factor, rng) -> Planted)
def running(draw, before_after, factor, rng):
    """A node start before, then a running node: `before` races, then `after` slower by factor (a neighbour's load
    started after the node start's races before it, nothing recorded changing)."""
    before, after = before_after
    h = Planted()
    h.start(OLD, draw.start(OLD, EARLIER_START))
    h.start(OLD, draw.start(OLD, before + after))
    h.slow(EARLIER_START + before, len(h.races), factor)
    return h


def several(draw, _, factor, rng):
    """Four node starts of five races; in the second and in the last a loaded stretch from a race the seed picks (the
    second to the fourth) to the start's end: read as one history, each stretch named where it began."""
    h = Planted()
    for _ in range(STARTS_OF_SEVERAL):
        h.start(OLD, draw.start(OLD, RACES_A_START))
    for start in (1, STARTS_OF_SEVERAL - 1):
        first = start * RACES_A_START + int(rng.integers(1, RACES_A_START - 1))
        h.slow(first, (start + 1) * RACES_A_START, factor)
    return h


def nightly(draw, after, factor, rng):
    """Eight nightly races, a node started for each; the newest `after` slower."""
    h = Planted()
    for _ in range(8):
        h.start(OLD, draw.start(OLD, 1))
    h.slow(8 - after, 8, factor)
    return h


def beside_switch(draw, offset, factor, rng):
    """Nightly, 4 races on 8.17.2 then 4 on 9.5.3 (the real versions' levels): slower from one race before the
    switch (-1), at it (0) or one after (+1), to the newest."""
    h = Planted()
    for version in (OLD,) * 4 + (NEW,) * 4:
        h.start(version, draw.start(version, 1))
    h.slow(4 + offset, 8, factor)
    return h


def switch_back(draw, slowed, factor, rng):
    """Nightly, 8.17.2 x4, 9.5.3 x4, 8.17.2 x3 (the real nightly history's shape): the newest `slowed` races slower."""
    h = Planted()
    for version in (OLD,) * 4 + (NEW,) * 4 + (OLD,) * 3:
        h.start(version, draw.start(version, 1))
    h.slow(11 - slowed, 11, factor)
    return h


def drift(draw, races, factor, rng):
    """A node start before, then a running node of 10 races whose newest `races` grow slower a step each, to factor at
    the newest (a leak, a filling disk)."""
    h = Planted()
    h.start(OLD, draw.start(OLD, EARLIER_START))
    h.start(OLD, draw.start(OLD, 10))
    end = len(h.races)
    for k in range(races):
        h.slow(end - races + k, end, factor ** (1 / races))  # the race k of the run slower by factor^((k + 1) / races)
    h.begins = [end - races]
    return h


SHAPES = {
    "running": (running, [(b, a) for b in (1, 2, 3, 5) for a in (2, 3, 4, 5)]),
    "several": (several, [None]),
    "nightly": (nightly, [2, 3]),
    "beside-switch": (beside_switch, [-1, 0, 1]),
    "switch-back": (switch_back, [2, 3, 4, 5, 6]),
    "drift": (drift, [6]),
}


def size_text(shape, size):
    if shape == "running":
        return f"{size[0]} before, {size[1]} after"
    if shape == "beside-switch":
        return {-1: "one race before the switch", 0: "at the switch", 1: "one race after the switch"}[size]
    if shape == "switch-back":
        return f"newest {size} slowed"
    if shape == "nightly":
        return f"{size} after"
    if shape == "drift":
        return f"over the newest {size}"
    return "steps in 2 of 4 starts"


@dataclass
class Score:
    """Of the planted slowdowns (a history's stretch in one cell): named at the race they began, within a race of it,
    and the histories' cells whose alert fired."""

    named: int = 0
    near: int = 0
    stretches: int = 0
    alerted: int = 0
    cells: int = 0
    elsewhere: int = 0  # cells whose alert names a change other than a recorded switch (unplanted: a false alert)

    def add(self, other):
        for name in ("named", "near", "stretches", "alerted", "cells", "elsewhere"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


def judged(cell, figure, planted, drifting):
    """Score of one history of one cell: the judge's changes and alert against what was planted."""
    points = planted.points()
    a = analysis.analyse_cell(cell, figure, points)
    slower = [c for c in a.changes if c.comparison.verdict == "slower" and (c.kind == changes.STEP or drifting)]
    fired = [c for c in analysis.alerts([analysis.SeriesAnalysis(None, {cell: a})], ALERT_WITHIN) if not c.host_named]
    switches = {i for i in range(1, len(points)) if points[i].facts.version != points[i - 1].facts.version}
    score = Score(stretches=len(planted.begins), alerted=bool(fired), cells=1, elsewhere=any(c.index not in switches for c in fired))
    for first in planted.begins:
        if drifting:  # a drift is named where its run begins or anywhere after: its first races differ least
            score.named += any(c.index >= first - 1 for c in slower)
            score.near += any(c.index >= first - 1 for c in slower)
            continue
        score.named += any(c.index == first for c in slower)
        score.near += any(abs(c.index - first) <= 1 for c in slower)
    return score


def interval(k, n):
    """k of n as a share with its Wilson 95% interval."""
    if not n:
        return "-"
    ci = stats.binomtest(k, n).proportion_ci(method="wilson")
    return f"{k / n:.0%} [{ci.low:.0%}, {ci.high:.0%}] ({k}/{n})"


@dataclass(frozen=True)
class EvalOptions:
    """One evaluation: how many histories a row (each judged in every cell), the seed, which shapes and factors."""

    histories: int = 50
    seed: int = 85
    shapes: tuple = tuple(SHAPES)
    factors: tuple = FACTORS


def rows_of(options):
    """(shape, size, factor) of every row options asks for: each shape's sizes x factors, and one unplanted row a shape
    (factor 1.0, its middle size: every size's unplanted history is of the same kind)."""
    found = []
    for shape in options.shapes:
        sizes = SHAPES[shape][1]
        found.append((shape, sizes[len(sizes) // 2], 1.0))
        found += [(shape, size, factor) for size in sizes for factor in options.factors]
    return found


def evaluate(cell_pools, options, rows=None, told=None):
    """{(shape, size, factor): Score} of each row (rows_of(options) unless given), options.histories histories a row
    and every cell; each row's draws from its own seed (options.seed and the row), so a row reads the same alone.
    told(done, of, row, score) is told each row as it is done."""
    rows = rows or rows_of(options)
    results = {}
    for key in rows:
        shape, size, factor = key
        plant = SHAPES[shape][0]
        rng = np.random.default_rng([options.seed, zlib.crc32(repr(key).encode())])
        score = Score()
        for _ in range(options.histories):
            for cell, pool in cell_pools.items():
                score.add(judged(cell, pool.figure, plant(Draw(pool, rng), size, factor, rng), shape == "drift"))
        results[key] = score
        if told:
            told(len(results), len(rows), key, score)
    return results


def table(results):
    lines = ["| shape | where | slowdown | named where it began | within a race | alerted |", "|---|---|---|---|---|---|"]
    for (shape, size, factor), s in results.items():
        if factor == 1.0:
            continue
        lines.append(
            f"| {shape} | {size_text(shape, size)} | {factor}x | {interval(s.named, s.stretches)} | "
            f"{interval(s.near, s.stretches)} | {interval(s.alerted, s.cells)} |"
        )
    lines += ["", "| shape | unplanted: alerted | of them not at a recorded version switch |", "|---|---|---|"]
    lines += [
        f"| {shape} | {interval(s.alerted, s.cells)} | {interval(s.elsewhere, s.cells)} |"
        for (shape, _, factor), s in results.items()
        if factor == 1.0
    ]
    return "\n".join(lines)


def races_needed(results, share=0.9):
    """Running node: per (races before, factor), the fewest races after the step at which it is named where it began
    in `share` of the histories (None: not within 5)."""
    found = {}
    for (shape, size, factor), s in results.items():
        if shape != "running" or factor == 1.0:
            continue
        before, after = size
        met = after if s.stretches and s.named / s.stretches >= share else None
        found[(before, factor)] = min(filter(None, [found.get((before, factor)), met]), default=None)
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m report.trend_eval", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--histories", type=int, default=EvalOptions.histories, help="histories a row, each judged in every cell")
    parser.add_argument("--seed", type=int, default=EvalOptions.seed)
    parser.add_argument("--archive", action="append", default=[], help="a packed history of real races (default: the fixtures)")
    parser.add_argument("--shape", action="append", choices=list(SHAPES), default=[])
    args = parser.parse_args(argv)
    if args.histories < 1:
        parser.error("--histories takes 1 or more")
    archives = args.archive or [FIXTURES / f"{name}.tar.xz" for name in ARCHIVES]
    cell_pools = pools(archives)
    options = EvalOptions(args.histories, args.seed, tuple(args.shape) or tuple(SHAPES))
    began = time.monotonic()

    def told(done, of, key, score):
        shape, size, factor = key
        spent = time.monotonic() - began
        print(
            f"row {done} of {of}: {shape} {size_text(shape, size)} {factor}x, {spent:.0f} s, about {spent / done * (of - done):.0f} s left",
            file=sys.stderr,
        )

    for cell, pool in cell_pools.items():
        print(
            f"{cell}: {len(pool.residuals)} race differences within a node start (sd {np.std(pool.residuals, ddof=1):.1%}), "
            f"{len(pool.nightly)} between nightly starts (sd {np.std(pool.nightly, ddof=1):.1%}), 9.5.3 at "
            f"{math.exp(pool.levels[NEW] - pool.levels[OLD]):.2f}x 8.17.2",
            file=sys.stderr,
        )
    results = evaluate(cell_pools, options, told=told)
    print(f"{options.histories} histories a row x {len(cell_pools)} cells, seed {options.seed}, {time.monotonic() - began:.0f} s\n")
    print(table(results))
    needed = races_needed(results)
    if needed:
        print("\n| running node: races before | slowdown | races after needed for 90% named |\n|---|---|---|")
    for (before, factor), after in needed.items():
        print(f"| {before} | {factor}x | {after if after else 'more than 5'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
