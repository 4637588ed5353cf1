"""Changes in a cell's series of race medians: where they begin, by how much, whether beyond the noise, and what changed
in the cluster with them.

Candidates: Apache Otava's E-divisive means with its t-test (otava.analysis.compute_change_points, the method of
Fleming et al., "Hunter", ICPE 2023) on the log race medians, over the whole series and over each node start's own
races, and every race where the recorded configuration changes. The verdict is the project's, with the node start as
the unit (docs/history.md): a change at a node start compares node starts (each side's level the geometric mean of its
starts' levels), a change inside one node start compares that start's races. The spread is pooled within the segments
the changes leave (a step is not noise). What holds the rate of changes named where there is none is the bar: a
search's candidates are judged only where the search found more than a search finds in noise (searches_that_found),
and each against the largest t a search finds in noise among as many units (max_t_critical, simulated), at 5% over all
the searches and the facts' candidates (Bonferroni's). A candidate within the noise is dropped and its neighbours
judged again (as Otava's merge step drops weak points). A run of changes in one direction whose segments slope, or
that a line fits better than any one of its steps, is a drift.

Where a series has no two starts of one configuration, the spread between starts is unknown: the race is the unit, and
the change says so (it may be a node start's, not the cluster's).
"""

import math
from dataclasses import dataclass, field

import numpy as np
from otava.analysis import compute_change_points
from scipy import stats

from report.history import host
from report.history.bar import LEAST_SIDE, MAX_EXTRA_DF, largest_t, max_t_critical
from report.history.drift import drift_runs
from report.history.starts import (
    JUDGING,
    configuration,
    first_races,
    pooled_units,
    returned_runs,
    series_codes,
    short_sides,
    start_levels,
    start_of,
    units_in,
)
from report.shared import uncertainty

# Otava's significance for a candidate (its max_pvalue): loose, since the verdict (_judged, calibrated for the largest t
# a search finds in noise) is what holds the rate without a change; at 0.001 Otava proposed no candidate at a real
# 1.8x step with 3 races after it (p = 0.005-0.007: docs/history.md)
CANDIDATE_PVALUE = 0.05
WINDOW = 50  # Otava's sliding window (races)
STEP, DRIFT = "step", "drift"
# a crossover width's move must hold this many races and one more to be a change (tests/report/history_test.py: with a
# race's width off by a step one time in ten, moves of two races named a change in 11% of 30-race histories without one)
WIDTH_EPISODE = 2
BASIS_STARTS, BASIS_RACES = "node starts", "races"
BASIS_WITHIN = "races of one node start"  # a change on a running node: its races on each side the unit


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
    # the step is the host's: every race after it met a busy load-driver host and the one before it did not, or the
    # levels adjusted for the host show no step there (analysis.with_the_hosts_steps)
    host_named: bool = False
    adjusted: bool = False  # judged, and its levels given, on figures adjusted for the host (report/history/host.py)


@dataclass(frozen=True)
class JudgeOptions:
    """How a cell's candidates are judged, built once per cell by find() and handed down whole (as Otava's
    AnalysisOptions): the facts' candidates, the noise floor, whether the figure moves by whole steps, the error
    rates."""

    known: frozenset = frozenset()  # candidates the recorded facts placed (fact_cuts), judged before any search
    floor: float = uncertainty.NOISE_FLOOR_MS  # noise_floor: the smallest difference of levels a verdict names
    discrete: bool = False  # a crossover width: it moves by a whole step or not at all, every move a candidate
    rates: tuple = (0.05, 0.05)  # (each fact candidate's, each search's) chance of a change where there is none
    short: frozenset = frozenset()  # short_sides: a node start's cut with one race before it, its search's place


def noise_floor(figure):
    """The smallest difference of levels a verdict names: the A/A floor of cheap cells in ms; none for a figure in
    another unit (an ingest's walls in s, where 5 would be 5 s; a width; round trips)."""
    return uncertainty.NOISE_FLOOR_MS if figure.unit == "ms" else 0.0


def pooled(groups, basis):
    """The Spread of log values around their group's mean, pooled over the groups of two or more (sd None: none)."""
    kept = [np.asarray(values, dtype=float) for values in groups if len(values) > 1]
    squares, df = sum(float(np.sum((v - v.mean()) ** 2)) for v in kept), sum(len(v) - 1 for v in kept)
    return Spread(math.sqrt(squares / df) if df else None, df, basis)


def spread(points, cuts=()):
    """The series' Spread: node starts' levels around the mean of their configuration within their segment (between
    the cuts: a step is not spread), pooled; else races around their start's mean."""
    logs, starts, configurations = series_codes(points)
    segment = np.searchsorted(np.asarray(sorted(cuts), dtype=int), np.arange(len(points)), side="right")
    # within segments first; when no segment holds two starts of one configuration (a cut at every version switch of
    # an alternated history), a configuration's starts across segments: wider if a step lies between them, never narrower
    for group in (configurations * (len(cuts) + 1) + segment, configurations):
        found = Spread(*pooled_units(group, starts, logs), BASIS_STARTS)
        if found.df:
            return found
    return Spread(*pooled_units(starts, np.arange(len(points)), logs), BASIS_RACES)


def level(points, unit_spread):
    """A side's Level: the geometric mean of its units (starts, or races) with its 95% t-interval."""
    units = list(start_levels(points).values()) if unit_spread.basis == BASIS_STARTS else [math.log(p.median) for p in points]
    mean, starts = float(np.mean(units)), len(start_levels(points))
    if unit_spread.sd is None:
        return Level(math.exp(mean), None, None, len(points), starts)
    half = stats.t.ppf(0.975, unit_spread.df) * unit_spread.sd / math.sqrt(len(units))
    return Level(math.exp(mean), math.exp(mean - half), math.exp(mean + half), len(points), starts)


def units_of(points, unit_spread):
    """The log values a side is judged by: its node starts' levels, or its races' log medians."""
    if unit_spread.basis == BASIS_STARTS:
        return list(start_levels(points).values())
    return [math.log(p.median) for p in points]


def judge(before, after, unit_spread, floor=uncertainty.NOISE_FLOOR_MS, tail=0.975):
    """After against before: the ratio of levels, its interval (95% two-sided by default: Student's t at `tail`) with
    the units' spread, and the verdict."""
    if unit_spread.sd is None:
        a, b = level(before, unit_spread), level(after, unit_spread)
        return uncertainty.Comparison(b.median / a.median, None, None, None, "the spread between node starts and races is unknown")
    return ratio_verdict(
        units_of(before, unit_spread), units_of(after, unit_spread), unit_spread, float(stats.t.ppf(tail, unit_spread.df)), floor
    )


def ratio_verdict(a, b, unit_spread, critical, floor):
    """The one judge of a ratio: B's mean log value against A's, the interval the difference +- critical x its standard
    error (a Student's t quantile, or a search's calibrated max_t_critical), and the project's verdict on it. The
    interval's half width is at most 50 (e^50: as good as unbounded, where math.exp would overflow)."""
    if unit_spread.sd is None or not a or not b:
        return uncertainty.Comparison(None, None, None, None, "too few node starts or races on a side to judge")
    la, lb = float(np.mean(a)), float(np.mean(b))
    diff = lb - la
    half = min(50.0, critical * unit_spread.sd * math.sqrt(1 / len(a) + 1 / len(b)))
    return uncertainty.verdict(
        math.exp(diff), math.exp(diff - half), math.exp(diff + half), uncertainty.MARGIN, math.exp(lb) - math.exp(la), floor
    )


def candidates(points, starts=None):
    """Otava's change points on the log medians: indexes of the first point after each. Searched over the whole series,
    and over each node start's own races (its first left out, a node just started), where the starts' levels do not
    hide a setting changed on a running node; `starts`: only these node starts' own races (None: every start's)."""
    found = set(_otava([math.log(p.median) for p in points]))
    firsts = first_races(points)
    by_start = {}
    for i, p in enumerate(points):
        if p.facts.node_start and (starts is None or p.facts.node_start in starts):
            by_start.setdefault(p.facts.node_start, []).append(i)
    for indexes in by_start.values():
        later = [i for i in indexes if points[i].race_id not in firsts]
        found.update(later[k] for k in _otava([math.log(points[i].median) for i in later]))
    return sorted(found)


def _otava(logs):
    if len(logs) < 3:
        return []
    found, _ = compute_change_points(logs, window_len=WINDOW, max_pvalue=CANDIDATE_PVALUE)
    return [int(cp.index) for cp in found]


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
    host_said = host.what_changed(a.host, b.host)
    if not said and not host.either_busy(a.host, b.host):
        said.append("nothing recorded changed")
    if b.node_start is None:
        said.append("node start not recorded")
    elif a.node_start != b.node_start:
        uptime = f", up {b.uptime_s:.0f} s when the race began" if b.uptime_s is not None else ""
        said.append(f"node started afresh{uptime}")
    else:
        said.append("same node start")
    return said + host_said


def fact_cuts(points):
    """Where the recorded configuration changes (version, build, JVM, heap, processors, settings; a node start alone is
    not one), or the load driver's host turns busy or quiet again (report/shared/host_load.py): candidates known before
    any search, judged as a family of their own (_judged)."""
    return [
        i
        for i in range(1, len(points))
        if configuration(points[i]) != configuration(points[i - 1]) or host.busy(points[i]) != host.busy(points[i - 1])
    ]


def searches(points):
    """{search: its units' log values in order}: the searches that place candidates. None: the whole series, its units
    node starts (or races, when no configuration has two starts); a node start's id: that start's races after its
    first (a node just started; the first too where it settled: first_races), where the starts' levels do not hide a
    change on a running node. A series of one node start is searched as that start alone."""
    recorded = {p.facts.node_start for p in points}
    # one node start all along: its own search is the series' (less the node's first race)
    found = {} if len(recorded) == 1 and None not in recorded else {None: units_of(points, spread(points))}
    firsts = first_races(points)
    by_start = {}
    for p in points:
        if p.facts.node_start and p.race_id not in firsts:
            by_start.setdefault(p.facts.node_start, []).append(math.log(p.median))
    found.update({start: logs for start, logs in by_start.items() if len(logs) >= 2})
    return found


def error_rates(found, facts):
    """(each fact comparison's, each search's) chance of naming a change where there is none: together at most 5%
    (Bonferroni's): half for the `facts` comparisons planned before any search (each fact candidate, and the newest
    races against their configuration's earlier ones where the history came back to it: returned_runs), shared among
    them, and half shared among the searches (`found`: searches); all of it to the searches where there is no fact."""
    alpha, count = 1 - uncertainty.CONFIDENCE, max(1, len(found))
    if not facts:
        return alpha, alpha / count
    return alpha / 2 / facts, alpha / 2 / count


def searches_that_found(found, search_alpha, split=None):
    """The searches whose largest t over all their places is beyond what a search finds in noise, each at
    `search_alpha` (error_rates), of `found` (searches). A candidate of any other search is not judged: a history without a change then
    names one in at most 5%, however many candidates the searches put in it, and however they would shrink each
    other's spread (judged each with the spread all cuts leave, spurious cuts held each other up). A node start's
    search reads the other starts' spread too: around each one's mean, or within its segments in `split`
    (start_segments: the cuts placed so far, a step in another start not taken for noise)."""
    fired = set()
    for search, values in found.items():
        if len(values) < 2:
            continue
        others = [] if search is None else [k for k, v in found.items() if k is not None and k != search and len(v) > 1]
        others = [np.asarray(v) for k in others for v in (split[k] if split else [found[k]]) if len(v) > 1]
        extra_squares = sum(float(np.sum((v - v.mean()) ** 2)) for v in others)
        extra_df = sum(len(v) - 1 for v in others)
        # a node start's own search has one place more, its short side (short_sides)
        least_left = 1 if search is not None else LEAST_SIDE
        critical = max_t_critical(len(values), min(MAX_EXTRA_DF, extra_df), 1 - search_alpha, least_left)
        if float(largest_t(np.array([values]), extra_squares, extra_df, least_left)[0]) > critical:
            fired.add(search)
    return fired


def start_segments(points, cuts):
    """{node start: [its counted races' log values (first_races) in each segment the cuts leave]}."""
    firsts, bounds, found = first_races(points), [*cuts, len(points)], {}
    for i, p in enumerate(points):
        if p.facts.node_start and p.race_id not in firsts:
            segment = next(k for k, bound in enumerate(bounds) if i < bound)
            found.setdefault(p.facts.node_start, {}).setdefault(segment, []).append(math.log(p.median))
    return {start: list(segments.values()) for start, segments in found.items()}


def search_of(points, cut):
    """The search a candidate belongs to: its node start's, when it lies inside one, else the whole series'."""
    return start_of(points[cut]) if _within_start(points, cut) else None


def _within_start(points, cut):
    return bool(points[cut].facts.node_start) and start_of(points[cut - 1]) == start_of(points[cut])


def _judged(points, cuts, options):
    """Each cut judged between its neighbours (judge_cut): [Comparison] in the cuts' order."""
    bounds = [0, *cuts, len(points)]
    return [
        judge_cut(points, bounds[i], cut, bounds[i + 2], cuts[:i] + cuts[i + 1 :] if options.discrete else cuts, options)[0]
        for i, cut in enumerate(cuts)
    ]


def judge_cut(points, lo, cut, hi, segments, options):
    """(Comparison, strength) of a cut between lo and hi, the spread pooled within the segments that `segments` leave.
    A cut inside one node start (a setting changed on a running node, or a neighbour's load) compares that start's
    races on its two sides, its first race left out, with the spread between races of one start; a cut at a node start
    compares node starts, with the spread between starts of one configuration. The segments hold the cut itself: a
    step is not noise (judged with the spread the step itself makes, a step of any size widened its own interval as
    fast as it grew, and a 1.8x step with 3 races after it went unnamed). What holds the rate without a change is the
    critical value: a cut the search placed is judged against the largest t a search finds in noise among the units
    between lo and hi (max_t_critical), at its search's share of 5% (error_rates), with LEAST_SIDE units a side; a cut
    `known` from the facts, placed before any search, against Student's t at its share. Strength: |t| over the
    critical value (beyond the noise from 1 up; None: no verdict).
    A discrete figure (options.discrete: a crossover width, which moves by a whole step or not at all, every move a
    candidate): a segment without a move has no spread, so the segments are the other cuts', and the cut is judged over
    the n - 1 places."""
    known, floor, rates = options.known, options.floor, options.rates
    before, after = points[lo:cut], points[cut:hi]
    if _within_start(points, cut):
        unit_spread = within_start_spread(points, segments)
        a, b = (_logs(side) for side in _start_sides(start_of(points[cut]), first_races(points), before, after))
    else:
        unit_spread = spread(points, segments)
        a, b = units_in(points, lo, cut, unit_spread.basis == BASIS_STARTS), units_in(points, cut, hi, unit_spread.basis == BASIS_STARTS)
    if unit_spread.sd is None or not a or not b:
        return ratio_verdict(a, b, unit_spread, math.inf, floor), None
    if cut in known or options.discrete:
        alpha = rates[0] if cut in known else (1 - uncertainty.CONFIDENCE) / max(1, len(points) - 1)
        critical = float(stats.t.ppf(1 - alpha / 2, unit_spread.df))
    elif min(len(a), len(b)) < LEAST_SIDE and not (cut in options.short and len(a) == 1 and len(b) >= LEAST_SIDE):
        # its ratio kept: the merge drops the weakest candidate first, and this one may be the strong one of a pair
        ratio = math.exp(float(np.mean(b)) - float(np.mean(a)))
        return uncertainty.Comparison(ratio, None, None, None, f"fewer than {LEAST_SIDE} units on a side"), None
    else:
        units = len(a) + len(b)
        extra = min(MAX_EXTRA_DF, max(0, unit_spread.df - (units - 2)))
        critical = max_t_critical(units, extra, 1 - rates[1], 1 if cut in options.short else LEAST_SIDE)
    error = unit_spread.sd * math.sqrt(1 / len(a) + 1 / len(b))
    strength = abs(float(np.mean(b)) - float(np.mean(a))) / error / critical if error > 0 and critical > 0 else math.inf
    return ratio_verdict(a, b, unit_spread, critical, floor), strength


def _top_down(points, candidates, kept, options):
    """The searched candidates kept by splitting from the whole series down (binary segmentation): in each segment
    that the cuts kept so far leave, the candidate that is most beyond its bar is kept when beyond the noise, and each
    side is split again; a segment with no candidate beyond the noise is left whole. A change up and back again (an
    episode of a few races) is then named only when a search over its segment finds it, not because its two cuts
    hold each other up."""
    kept = sorted(kept)
    pending = [(lo, hi) for lo, hi in zip([0, *kept], [*kept, len(points)])]
    while pending:
        lo, hi = pending.pop()
        best = None
        for cut in (c for c in candidates if lo < c < hi and c not in kept):
            comparison, strength = judge_cut(points, lo, cut, hi, sorted([*kept, cut]), options)
            beyond = comparison.verdict in (uncertainty.SLOWER, uncertainty.FASTER)
            if beyond and strength is not None and (best is None or strength > best[1]) and not _starves(points, cut, kept, options):
                best = (cut, strength)
        if best:
            kept = sorted([*kept, best[0]])
            pending += [(lo, best[0]), (best[0], hi)]
    return kept


def _starves(points, cut, kept, options):
    """Whether placing `cut` leaves a searched cut kept beside it too few units on that side to be judged (a fact one
    race beside a step: the race between them alone would undo the step when the cuts are judged again)."""
    cuts = sorted([*kept, cut])
    bounds = [0, *cuts, len(points)]
    at = cuts.index(cut)
    for k in (at - 1, at + 1):
        if 0 <= k < len(cuts) and cuts[k] not in options.known:
            _, strength = judge_cut(points, bounds[k], cuts[k], bounds[k + 2], cuts, options)
            if strength is None:
                return True
    return False


def _start_sides(start, firsts, before, after):
    """One node start's races on each side of a cut inside it, its first race left out (a node just started)."""
    return _later_races(before, start, firsts), _later_races(after, start, firsts)


def _logs(points):
    return [math.log(p.median) for p in points]


def _later_races(points, start, firsts):
    """The points of one start, less the start's first race (a node just started: first_race_effect)."""
    return [p for p in points if start_of(p) == start and p.race_id not in firsts]


def within_start_spread(points, cuts=()):
    """The log spread between races of one node start (its first race left out), within segments, pooled."""
    bounds = [*cuts, len(points)]
    firsts = first_races(points)
    groups = {}
    for i, p in enumerate(points):
        if p.race_id not in firsts:
            groups.setdefault((start_of(p), next(k for k, bound in enumerate(bounds) if i < bound)), []).append(math.log(p.median))
    return pooled(groups.values(), BASIS_RACES)


def judge_within_start(before, after, race_spread, floor=uncertainty.NOISE_FLOOR_MS, tail=0.975):
    """A cut inside one node start: its races after against its races before (the start's first race left out)."""
    a, b = (_logs(side) for side in _start_sides(start_of(after[0]), first_races(before + after), before, after))
    if not a or not b or race_spread.sd is None:
        return uncertainty.Comparison(None, None, None, None, "too few races of the node start on a side")
    return ratio_verdict(a, b, race_spread, float(stats.t.ppf(tail, race_spread.df)), floor)


def _beyond_noise(points, cuts, options):
    """The cuts left when each judged within the noise is dropped, the weakest first (the ratio closest to 1), its
    neighbours judged again with their wider sides: Otava's merge step with the project's verdict."""
    cuts = list(cuts)
    while cuts:
        judged = _judged(points, cuts, options)
        weak = [i for i, c in enumerate(judged) if c.verdict not in (uncertainty.SLOWER, uncertainty.FASTER)]
        if not weak:
            break
        del cuts[min(weak, key=lambda i: abs(math.log(judged[i].ratio)) if judged[i].ratio else 0.0)]
    return cuts


def find(cell, points, figure):
    """(changes, spread, outlier race ids) of one cell's series: every change beyond the noise, oldest first; a run of
    changes in one direction that a line explains is one drift, from the first segment's level to the last's."""
    token = JUDGING.set((points, series_codes(points)))
    try:
        return _find(cell, points, figure)
    finally:
        JUDGING.reset(token)


def _find(cell, points, figure):
    known, short = frozenset(fact_cuts(points)), frozenset() if figure.discrete else short_sides(points, LEAST_SIDE)
    if figure.discrete:
        # a crossover width: one of the sweep's few widths, where a race's width moves by a whole step or not at all
        # (Otava's t-test weighs no such series): every move is a candidate, and a move of two races is an episode
        found = set(candidates(points)) | known | {i for i in range(1, len(points)) if points[i].median != points[i - 1].median}
        rates = ((1 - uncertainty.CONFIDENCE) / max(1, len(known)), None)
    else:
        # each search's candidates only where the search found more than noise does (searches_that_found); Otava is
        # asked only then (in a history without a change, mostly never)
        found_searches = searches(points)
        rates = error_rates(found_searches, len(known) + (returned_runs(points) is not None))
        fired = searches_that_found(found_searches, rates[1])
    options = JudgeOptions(known, noise_floor(figure), figure.discrete, rates, short)
    if options.discrete:
        cuts, outliers = _without_outliers(_beyond_noise(points, sorted(found), options), len(points), WIDTH_EPISODE)
    else:
        cuts, outliers = _placed(points, fired, options), []
        # a step in one node start widens the spread another start's search is gated with: once cuts are placed, the
        # searches that did not fire are gated again with every start's spread within its segments. In a history
        # without a change this happens only after a change was named already: the rate without one stays
        while more := searches_that_found(found_searches, rates[1], start_segments(points, cuts)) - fired:
            fired |= more
            cuts = _placed(points, fired, options)
    cuts = _beyond_noise(points, cuts, options)
    judged = _judged(points, cuts, options)
    drifts = dict(drift_runs(points, cuts, judged))
    bounds = [0, *cuts, len(points)]
    changes, i = [], 0
    while i < len(cuts):
        last = drifts.get(i, i)
        cut, others = cuts[i], cuts[:i] + cuts[last + 1 :]
        within = _within_start(points, cut)
        # a step's sides as it was judged (every cut a segment's bound); a drift's slope within its run is its spread
        own = (within_start_spread if within else spread)(points, others if i in drifts or options.discrete else cuts)
        if i in drifts:
            # its first segment against its last
            before, after = points[bounds[i] : cut], points[cuts[last] : bounds[last + 2]]
            comparison = (judge_within_start if within else judge)(before, after, own, options.floor)
            kind, said, hosts = DRIFT, [], False
        else:
            before, after = points[bounds[i] : cut], points[cut : bounds[i + 2]]
            comparison, kind = judged[i], STEP
            said = what_changed(points[cut - 1], points[cut]) + host.resting_on_busy(after)
            hosts = host.named(points[cut - 1], after)
        i = last + 1
        if comparison.verdict not in (uncertainty.SLOWER, uncertainty.FASTER):
            continue  # a drift whose first segment against its last is within the noise: steps of a slope too gentle
        a, b = _sides(points, cut, before, after, within)
        basis = BASIS_WITHIN if within else own.basis
        changes.append(
            Change(cell, cut, points[cut].race_id, points[cut].when, level(a, own), level(b, own), comparison, kind, said, basis, hosts)
        )
    return changes, spread(points, cuts), [points[i].race_id for i in outliers]


def _placed(points, fired, options):
    """The cuts placed: the facts' beyond the noise first (placed before any search: there and back again, two cuts
    hold each other's sides), then the `fired` searches' candidates (and their short sides) from the top down. A fact
    between node starts (a version switched) with a search's candidate beside it, between its neighbours, competes
    with that candidate instead, each against its own bar: a step beside the switch is placed where its races show
    it, not snapped onto the switch."""
    searched = set(candidates(points, fired) if fired else []) | options.short
    found = sorted(options.known | {c for c in searched if search_of(points, c) in fired})
    facts_kept = _beyond_noise(points, sorted(options.known), options)
    kept = [k for k in facts_kept if not _contested(points, k, facts_kept, found)]
    return _top_down(points, [c for c in found if c not in kept], kept, options)


def _contested(points, fact, kept, found):
    """Whether a fact's cut between node starts has a search's candidate (not a fact's) between its kept neighbours."""
    if _within_start(points, fact):
        return False
    lo = max([0, *(k for k in kept if k < fact)])
    hi = min([len(points), *(k for k in kept if k > fact)])
    return any(lo < c < hi and c != fact and c not in kept for c in found)


def _sides(points, cut, before, after, within):
    """The races a change's levels are of: inside one node start, that start's races on each side (its first left
    out), as it was judged; else the segments on each side."""
    if not within:
        return before, after
    a, b = _start_sides(start_of(points[cut]), first_races(points), before, after)
    return a or before, b or after


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


def configuration_text(point, reference=None):
    """A point's configuration as a reader names it: its version, JVM and heap, and ", other cluster settings" where its
    settings differ from `reference`'s."""
    facts = point.facts
    text = ", ".join(str(v) for v in (facts.version, facts.jvm, facts.heap) if v) or "not recorded"
    if reference is not None and facts.settings and facts.settings != reference.facts.settings:
        text += ", other cluster settings"
    return text


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
        text = configuration_text(group[0], first[0])
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
