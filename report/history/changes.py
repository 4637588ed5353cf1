"""Changes in a cell's series of race medians: where they begin, by how much, whether beyond the noise, and what changed
in the cluster with them.

Found by Apache Otava's E-divisive means with its t-test (otava.analysis.compute_change_points, the method of Fleming
et al., "Hunter", ICPE 2023) on the log race medians: the candidates. Judged by the project's rule with the node start
as the unit (docs/history.md): the two sides' levels are the geometric means of their node starts' levels, and the
ratio's 95% interval is Student's t with the spread between node starts of one configuration (same version, build,
JVM, heap, processors and settings), pooled over the series. A node start that runs several races is one unit, so two
starts of one version that differ by 10% do not make a 10% change. A candidate within that spread is dropped and its
neighbours judged again (as Otava's merge step drops weak points), until every change left is beyond the noise by
uncertainty.verdict, over every place the search could have put it (a search's best split makes a plain interval too
narrow). A change that a straight line over its two segments fits better than a step is a drift.

Where a series has no two starts of one configuration, the spread between starts is unknown: the race is the unit, and
the change says so (it may be a node start's, not the cluster's).
"""

import math
from dataclasses import dataclass, field

import numpy as np
from otava.analysis import compute_change_points
from scipy import stats

from report.history import series as history_series
from report.shared import uncertainty

# Otava's significance for a candidate (its max_pvalue), chosen with the spreads of the real history (docs/history.md,
# "Why Otava"): the verdict over every place a candidate could be (_judged) is what holds the rate without a change.
CANDIDATE_PVALUE = 0.001
WINDOW = 50  # Otava's sliding window (races)
STEP, DRIFT = "step", "drift"
# a crossover width's move must hold this many races and one more to be a change (tests/report/history_test.py: with a
# race's width off by a step one time in ten, moves of two races named a change in 11% of 30-race histories without one)
WIDTH_EPISODE = 2
BASIS_STARTS, BASIS_RACES = "node starts", "races"


@dataclass(frozen=True)
class Spread:
    """The log spread that a change's interval is built from: between node starts of one configuration (the unit), or,
    when no configuration has two starts, between the races of one start."""

    sd: float | None
    df: int
    basis: str

    def text(self):
        if self.sd is None:
            return "unknown (no two node starts of one configuration, no two races of one start)"
        return f"{math.expm1(self.sd):.1%} between {self.basis} ({self.df} degrees of freedom)"


@dataclass(frozen=True)
class Level:
    median: float  # the geometric mean of its units' levels (ms or s)
    low: float | None
    high: float | None
    races: int
    starts: int


@dataclass
class Change:
    cell: str
    index: int  # the first point after the change
    race_id: str
    when: str
    before: Level
    after: Level
    comparison: uncertainty.Comparison
    kind: str = STEP
    what_changed: list = field(default_factory=list)
    basis: str = BASIS_STARTS


def noise_floor(cell):
    """The smallest difference of levels a verdict names: the A/A floor of cheap cells in ms; none for a figure in
    another unit (an ingest's walls in s, where 5 would be 5 s; a width; round trips)."""
    return uncertainty.NOISE_FLOOR_MS if history_series.unit(cell) == "ms" else 0.0


def start_of(point):
    """The point's unit: its node start, or the race itself when it recorded none."""
    return point.facts.node_start or f"race {point.race_id}"


def configuration(point):
    f = point.facts
    return (f.version, f.build, f.jvm, f.heap, f.processors, f.settings)


def start_levels(points):
    """{start: mean log median of its points} in order of first appearance."""
    levels = {}
    for p in points:
        levels.setdefault(start_of(p), []).append(math.log(p.median))
    return {start: float(np.mean(v)) for start, v in levels.items()}


def pooled(groups, basis):
    """The Spread of log values around their group's mean, pooled over the groups of two or more (sd None: none)."""
    kept = [np.asarray(values, dtype=float) for values in groups if len(values) > 1]
    squares, df = sum(float(np.sum((v - v.mean()) ** 2)) for v in kept), sum(len(v) - 1 for v in kept)
    return Spread(math.sqrt(squares / df) if df else None, df, basis)


def spread(points, cuts=()):
    """The series' Spread: node starts' levels around the mean of their configuration within their segment (between
    the cuts: a step is not spread), pooled; else races around their start's mean."""
    bounds = [*cuts, len(points)]
    segment = [next(k for k, bound in enumerate(bounds) if i < bound) for i in range(len(points))]
    # within segments first; when no segment holds two starts of one configuration (a cut at every version switch of
    # an alternated history), a configuration's starts across segments: wider if a step lies between them, never narrower
    for group_of in (lambda i: (configuration(points[i]), segment[i]), lambda i: configuration(points[i])):
        by_config = {}
        for i, p in enumerate(points):
            by_config.setdefault(group_of(i), []).append(p)
        found = pooled((list(start_levels(group).values()) for group in by_config.values()), BASIS_STARTS)
        if found.df:
            return found
    by_start = {}
    for p in points:
        by_start.setdefault(start_of(p), []).append(math.log(p.median))
    return pooled(by_start.values(), BASIS_RACES)


def level(points, unit_spread):
    """A side's Level: the geometric mean of its units (starts, or races) with its 95% t-interval."""
    units = list(start_levels(points).values()) if unit_spread.basis == BASIS_STARTS else [math.log(p.median) for p in points]
    mean, starts = float(np.mean(units)), len(start_levels(points))
    if unit_spread.sd is None:
        return Level(math.exp(mean), None, None, len(points), starts)
    half = stats.t.ppf(0.975, unit_spread.df) * unit_spread.sd / math.sqrt(len(units))
    return Level(math.exp(mean), math.exp(mean - half), math.exp(mean + half), len(points), starts)


def judge(before, after, unit_spread, floor=uncertainty.NOISE_FLOOR_MS, tail=0.975):
    """After against before: the ratio of levels, its interval (95% two-sided by default) with the units' spread, and
    the verdict."""
    count = (lambda pts: len(start_levels(pts))) if unit_spread.basis == BASIS_STARTS else len
    a, b = level(before, unit_spread), level(after, unit_spread)
    if unit_spread.sd is None:
        return uncertainty.Comparison(b.median / a.median, None, None, None, "the spread between node starts and races is unknown")
    diff = math.log(b.median) - math.log(a.median)
    half = _half(tail, unit_spread.df, unit_spread.sd * math.sqrt(1 / count(before) + 1 / count(after)))
    return uncertainty.verdict(math.exp(diff), math.exp(diff - half), math.exp(diff + half), uncertainty.MARGIN, b.median - a.median, floor)


def _half(tail, df, error):
    """The half width of a log interval: Student's t at `tail` times the error, at most 50 (e^50: as good as unbounded,
    where a family's tail with one degree of freedom would overflow math.exp)."""
    return min(50.0, float(stats.t.ppf(tail, df)) * error)


def candidates(points):
    """Otava's change points on the log medians: indexes of the first point after each. Searched over the whole series,
    and over each node start's own races (its first left out, a node just started), where the starts' levels do not
    hide a setting changed on a running node."""
    found = set(_otava([math.log(p.median) for p in points]))
    by_start = {}
    for i, p in enumerate(points):
        if p.facts.node_start:
            by_start.setdefault(p.facts.node_start, []).append(i)
    for indexes in by_start.values():
        later = indexes[1:]
        found.update(later[k] for k in _otava([math.log(points[i].median) for i in later]))
    return sorted(found)


def _otava(logs):
    if len(logs) < 3:
        return []
    found, _ = compute_change_points(logs, window_len=WINDOW, max_pvalue=CANDIDATE_PVALUE)
    return [int(cp.index) for cp in found]


def _is_drift(points, cuts, direction):
    """Over a run of changes in one direction: a drift when the races rise (or fall) within the segments too, not only
    between them: a common slope fitted beside each segment's level is significant (|t| > 2) in the changes'
    direction. Steps leave flat segments; a slow drift cut into a staircase by the search leaves sloped ones. With
    several races a node start, each start has its level too, and its first race is left out (first_race_effect)."""
    firsts = _first_races(points) if len({start_of(p) for p in points}) < len(points) else set()
    kept = [i for i, p in enumerate(points) if p.race_id not in firsts]
    y = np.log([points[i].median for i in kept])
    x = np.array(kept, dtype=float)
    bounds = [0, *cuts, len(points)]
    segment = [next(k for k, hi in enumerate(bounds[1:]) if i < hi) for i in kept]
    # a level per segment, and per node start within it where starts hold several races: a new start's level is no slope
    group = [(segment[k], start_of(points[i]) if firsts else None) for k, i in enumerate(kept)]
    design = np.column_stack([np.array([g == key for g in group], dtype=float) for key in dict.fromkeys(group)] + [x])
    if len(y) <= design.shape[1] + 2 or np.linalg.matrix_rank(design) < design.shape[1]:
        return False
    coef = np.linalg.lstsq(design, y, rcond=None)[0]
    residual = y - design @ coef
    sigma2 = float(residual @ residual) / (len(y) - design.shape[1])
    error = math.sqrt(sigma2 * float(np.linalg.inv(design.T @ design)[-1, -1]))
    return error > 0 and coef[-1] / error * direction > 2


def _drift_runs(points, cuts, judged):
    """[(first, last)] indexes into cuts of runs of consecutive changes in one direction that are a drift (a slow drift
    is cut by the search into a staircase of steps, or one)."""
    runs, i = [], 0
    bounds = [0, *cuts, len(points)]
    while i < len(cuts):
        j = i
        while j + 1 < len(cuts) and judged[j + 1].verdict == judged[i].verdict:
            j += 1
        direction = 1 if judged[i].verdict == uncertainty.SLOWER else -1
        if _is_drift(points[bounds[i] : bounds[j + 2]], [c - bounds[i] for c in cuts[i : j + 1]], direction):
            runs.append((i, j))
        i = j + 1
    return runs


def what_changed(last, first):
    """What differs in the facts of the race before a change and the first after it, plainly."""
    a, b = last.facts, first.facts
    said = []
    for name, x, y in (
        ("Elasticsearch", a.version, b.version),
        ("build", a.build and a.build[:12], b.build and b.build[:12]),
        ("JVM", a.jvm, b.jvm),
        ("heap", a.heap, b.heap),
        ("processors", a.processors, b.processors),
        ("Rally", a.rally, b.rally),
    ):
        if x != y:
            said.append(f"{name} {x or '?'} -> {y or '?'}")
    if a.settings != b.settings:
        said.append("cluster settings changed" if a.settings and b.settings else "cluster settings recorded from here on")
    if b.node_start is None:
        said.append("node start not recorded")
    elif a.node_start != b.node_start:
        uptime = f", up {b.uptime_s:.0f} s when the race began" if b.uptime_s is not None else ""
        said.append(f"node started afresh{uptime}")
    else:
        said.append("same node start")
    return said


def fact_cuts(points):
    """Where the recorded configuration changes (version, build, JVM, heap, processors, settings; a node start alone is
    not one): candidates known before any search, judged as a family of their own (_judged)."""
    return [i for i in range(1, len(points)) if configuration(points[i]) != configuration(points[i - 1])]


def _judged(points, cuts, known=(), floor=uncertainty.NOISE_FLOOR_MS):
    """Each cut judged between its neighbours, with the spread the other cuts leave (the cut judged does not shrink
    the spread it is judged by: it was placed where the two sides differ most). A cut inside one node start (a setting
    changed on a running node) compares that start's races on its two sides, the race as the unit; a cut at a node
    start compares node starts. Each at 95% over its family (Bonferroni's): the cuts `known` from the facts are a
    family of their number; a cut the search placed is one of the n - 1 places it could have put one in n races, so a
    long history, with more places, names no more changes without one than a short one (judged at 95% over the
    candidates alone, 100 nightly races named one in 6% of histories without one; 5 node starts of 20 races, 17%)."""
    bounds = [0, *cuts, len(points)]
    judged = []
    for i, cut in enumerate(cuts):
        before, after, others = points[bounds[i] : cut], points[cut : bounds[i + 2]], cuts[:i] + cuts[i + 1 :]
        family = max(1, len(known)) if cut in known else max(1, len(points) - 1)
        tail = 1 - (1 - uncertainty.CONFIDENCE) / 2 / family
        if start_of(points[cut - 1]) == start_of(points[cut]) and points[cut].facts.node_start:
            judged.append(judge_within_start(before, after, within_start_spread(points, others), floor, tail))
        else:
            judged.append(judge(before, after, spread(points, others), floor, tail))
    return judged


def _later_races(points, start, firsts):
    """The points of one start, less the start's first race (a node just started: first_race_effect)."""
    return [p for p in points if start_of(p) == start and p.race_id not in firsts]


def _first_races(points):
    firsts = {}
    for p in points:
        firsts.setdefault(start_of(p), p.race_id)
    return set(firsts.values())


def within_start_spread(points, cuts=()):
    """The log spread between races of one node start (its first race left out), within segments, pooled."""
    bounds = [*cuts, len(points)]
    firsts = _first_races(points)
    groups = {}
    for i, p in enumerate(points):
        if p.race_id not in firsts:
            groups.setdefault((start_of(p), next(k for k, bound in enumerate(bounds) if i < bound)), []).append(math.log(p.median))
    return pooled(groups.values(), BASIS_RACES)


def judge_within_start(before, after, race_spread, floor=uncertainty.NOISE_FLOOR_MS, tail=0.975):
    """A cut inside one node start: its races after against its races before (the start's first race left out)."""
    start = start_of(after[0])
    firsts = _first_races(before + after)
    a, b = _later_races(before, start, firsts), _later_races(after, start, firsts)
    if not a or not b or race_spread.sd is None:
        return uncertainty.Comparison(None, None, None, None, "too few races of the node start on a side")
    la, lb = float(np.mean([math.log(p.median) for p in a])), float(np.mean([math.log(p.median) for p in b]))
    half = _half(tail, race_spread.df, race_spread.sd * math.sqrt(1 / len(a) + 1 / len(b)))
    diff = lb - la
    return uncertainty.verdict(
        math.exp(diff), math.exp(diff - half), math.exp(diff + half), uncertainty.MARGIN, math.exp(lb) - math.exp(la), floor
    )


def _beyond_noise(points, cuts, known, floor):
    """The cuts left when each judged within the noise is dropped, the weakest first (the ratio closest to 1), its
    neighbours judged again with their wider sides: Otava's merge step with the project's verdict."""
    cuts = list(cuts)
    while cuts:
        judged = _judged(points, cuts, known, floor)
        weak = [i for i, c in enumerate(judged) if c.verdict not in (uncertainty.SLOWER, uncertainty.FASTER)]
        if not weak:
            break
        del cuts[min(weak, key=lambda i: abs(math.log(judged[i].ratio)) if judged[i].ratio else 0.0)]
    return cuts


def find(cell, points):
    """(changes, spread, outlier race ids) of one cell's series: every change beyond the noise, oldest first; a run of
    changes in one direction that a line explains is one drift, from the first segment's level to the last's."""
    floor = noise_floor(cell)
    known = set(fact_cuts(points))
    found = set(candidates(points)) | known
    run = 1
    if history_series.unit(cell) == "nodes":
        # a crossover width: one of the sweep's few widths, where a race's width moves by a whole step or not at all
        # (Otava's t-test weighs no such series): every move is a candidate, and a move of two races is an episode
        found |= {i for i in range(1, len(points)) if points[i].median != points[i - 1].median}
        run = WIDTH_EPISODE
    found = sorted(found)
    cuts, outliers = _without_outliers(_beyond_noise(points, found, known, floor), len(points), run)
    cuts = _beyond_noise(points, cuts, known, floor)
    judged = _judged(points, cuts, known, floor)
    drifts = dict(_drift_runs(points, cuts, judged))
    bounds = [0, *cuts, len(points)]
    changes, i = [], 0
    while i < len(cuts):
        last = drifts.get(i, i)
        cut, others = cuts[i], cuts[:i] + cuts[last + 1 :]
        before, after = points[bounds[i] : cut], points[cut : bounds[last + 2]]
        within = start_of(points[cut - 1]) == start_of(points[cut]) and points[cut].facts.node_start
        own = within_start_spread(points, others) if within else spread(points, others)
        if i in drifts:
            first_segment, last_segment = points[bounds[i] : cut], points[cuts[last] : bounds[last + 2]]
            comparison = (
                judge_within_start(first_segment, last_segment, own, floor) if within else judge(first_segment, last_segment, own, floor)
            )
            change = Change(
                cell,
                cut,
                points[cut].race_id,
                points[cut].when,
                level(first_segment, own),
                level(last_segment, own),
                comparison,
                DRIFT,
                [],
                own.basis,
            )
        else:
            change = Change(
                cell,
                cut,
                points[cut].race_id,
                points[cut].when,
                level(before, own),
                level(after, own),
                judged[i],
                STEP,
                what_changed(points[cut - 1], points[cut]),
                own.basis,
            )
        changes.append(change)
        i = last + 1
    return changes, spread(points, cuts), [points[i].race_id for i in outliers]


def _without_outliers(cuts, count, run=1):
    """Races alone between two changes (up, then back), at most `run` of them, are outlier races, not two changes: both
    cuts are dropped and the races named. The newest races after a change are kept as a change: they may start one."""
    kept, outliers, i = [], [], 0
    while i < len(cuts):
        if i + 1 < len(cuts) and cuts[i + 1] - cuts[i] <= run:
            outliers.extend(range(cuts[i], cuts[i + 1]))
            i += 2
            continue
        kept.append(cuts[i])
        i += 1
    return kept, outliers


def by_configuration(points, unit_spread, floor=uncertainty.NOISE_FLOOR_MS):
    """[(configuration text, Level, Comparison against the first configuration or None)] in order of first appearance:
    each configuration's level over its node starts, judged with the spread between node starts of one configuration."""
    groups = {}
    for p in points:
        groups.setdefault(configuration(p), []).append(p)
    if len(groups) < 2:
        return []
    first = next(iter(groups.values()))
    rows = []
    for config, group in groups.items():
        text = ", ".join(str(v) for v in (group[0].facts.version, group[0].facts.jvm, group[0].facts.heap) if v) or "not recorded"
        settings = group[0].facts.settings
        if settings and settings != first[0].facts.settings:
            text += ", other cluster settings"
        rows.append((text, level(group, unit_spread), None if group is first else judge(first, group, unit_spread, floor)))
    return rows


def first_race_effect(points):
    """The first race of each node start against the same start's later races: (ratio, low, high, starts) with the
    t-interval over the starts of the log difference, or None with fewer than 3 starts of 2 races or more."""
    by_start = {}
    for p in points:
        if p.facts.node_start:
            by_start.setdefault(p.facts.node_start, []).append(math.log(p.median))
    excess = [logs[0] - float(np.mean(logs[1:])) for logs in by_start.values() if len(logs) > 1]
    if len(excess) < 3:
        return None
    mean, sem = float(np.mean(excess)), float(np.std(excess, ddof=1)) / math.sqrt(len(excess))
    half = stats.t.ppf(0.975, len(excess) - 1) * sem
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half), len(excess)


def segments(points, changes):
    """[(first, end)] index ranges between a cell's changes."""
    bounds = [0, *(c.index for c in changes), len(points)]
    return list(zip(bounds[:-1], bounds[1:]))
