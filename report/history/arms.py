"""Versions judged with the node start as the unit, the analysis (report/history/versions.py renders it): per cell and
arm (a version, or a second label of one: the A/A arm), each node start's level, the arm's level over its starts, its
ratio to the baseline arm judged by the history's one judge of a ratio (changes.ratio_verdict, Bonferroni over a cell's
comparisons), the drift within starts and the first race's effect. A start's first race is not counted in its level."""

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from report import ReportError
from report.history import changes as change_points
from report.history.starts import start_levels, start_of
from report.shared import uncertainty

ARM_TAG = "arm"  # the user tag local-es/node_starts.py gives each race (its TAGS); absent: the race's version is its arm
PLAN_TAG = "node-starts"
ROUND_TAG = "node-start"  # its n: the round of the plan (A B C of round n ran one after another)
BASIS_PAIRED = "node starts, arm and round taken out"


def arm_of(point):
    return (point.tags or {}).get(ARM_TAG) or point.facts.version or "version not recorded"


def counted(points):
    """The points that make a node start's level: each start's races less its first when it ran two or more."""
    by_start = {}
    for p in points:
        by_start.setdefault(start_of(p), []).append(p)
    return [p for group in by_start.values() for p in (group[1:] if len(group) > 1 else group)]


def between_starts(points):
    """The Spread of node starts' levels (their counted races) around their arm's mean, pooled over the arms."""
    by_arm = {}
    for p in counted(points):
        by_arm.setdefault(arm_of(p), []).append(p)
    return change_points.pooled((list(start_levels(group).values()) for group in by_arm.values()), change_points.BASIS_STARTS)


@dataclass(frozen=True)
class StartRow:
    arm: str
    start: str  # the node start (its start time, or the race when none was recorded)
    medians: tuple  # every race's median, in race order (the first one not counted when there are two or more)
    level: object  # changes.Level over its counted races


@dataclass(frozen=True)
class ArmRow:
    arm: str
    versions: tuple  # the Elasticsearch versions its races ran (one, unless the plan mislabelled a race)
    level: object  # changes.Level over its node starts
    comparison: object  # uncertainty.Comparison against the baseline arm, None for the baseline


@dataclass(frozen=True)
class Drift:
    """Within node starts: the mean change per race over a start's counted races (a ratio per race), its interval over
    the starts, the verdict, and when it is a drift the races it touches."""

    per_race: float
    low: float
    high: float
    starts: int
    verdict: str
    races: tuple


@dataclass(frozen=True)
class CellVerdicts:
    cell: str
    figure: object  # its figure (report/shared/figures.py): unit, direction, the seed's figure
    spread: object  # changes.Spread between node starts of one arm (its levels' intervals)
    unit_spread: object  # the Spread of its ratios: the starts' left when arm and round are taken out, or spread
    arms: list  # [ArmRow], the baseline first
    starts: list  # [StartRow]
    drift: Drift | None
    first_race: tuple | None  # changes.first_race_effect


def start_rows(points):
    """[StartRow] in order of first race; a start's interval is Student's t with the races' spread within starts."""
    race_spread = change_points.within_start_spread(points)
    by_start = {}
    for p in points:
        by_start.setdefault(start_of(p), []).append(p)
    kept = set(p.race_id for p in counted(points))
    return [
        StartRow(
            arm_of(group[0]),
            start,
            tuple(p.median for p in group),
            change_points.level([p for p in group if p.race_id in kept], race_spread),
        )
        for start, group in by_start.items()
    ]


def drift(points):
    """The within-start drift: per start with three counted races or more, the least-squares slope of its log race
    medians over race order; their mean over the starts with a t-interval, named when beyond 1 and the margin over a
    start's races. None with fewer than 3 such starts."""
    by_start = {}
    for p in counted(points):
        by_start.setdefault(start_of(p), []).append(p)
    fits = []
    for group in by_start.values():
        if len(group) >= 3:
            x = np.arange(len(group), dtype=float)
            y = np.log([p.median for p in group])
            fits.append((group, float(np.polyfit(x, y, 1)[0])))
    if len(fits) < 3:
        return None
    slopes = np.array([slope for _, slope in fits])
    half = stats.t.ppf(0.975, len(fits) - 1) * float(np.std(slopes, ddof=1)) / math.sqrt(len(fits))
    mean = float(slopes.mean())
    beyond = (mean - half > 0 or mean + half < 0) and abs(math.expm1(mean)) * (len(fits[0][0]) - 1) > uncertainty.MARGIN
    verdict = (uncertainty.SLOWER if mean > 0 else uncertainty.FASTER) if beyond else uncertainty.SAME
    # the races it touches: those after the first counted one, in the starts that move the drift's way
    named = tuple(p.race_id for group, slope in fits if beyond and slope * mean > 0 for p in group[1:])
    return Drift(math.exp(mean), math.exp(mean - half), math.exp(mean + half), len(fits), verdict, named)


def rounds_of(levels_by_arm):
    """{arm: {round: log level}} when every arm has one node start in each of the same two or more rounds (the plan's
    node-start:<n> tag: the starts of round n ran one after another), else None."""
    rounds = [set(by_round) for by_round in levels_by_arm.values()]
    if len(rounds) < 2 or any(r != rounds[0] for r in rounds) or len(rounds[0]) < 2 or None in rounds[0]:
        return None
    return levels_by_arm


def paired_spread(by_round):
    """The Spread of node starts left when each arm's level and each round's are taken out (two-way, additive): what
    two starts of one version differ by beyond what the machine's state at the time gives every arm of a round."""
    arms, rounds = list(by_round), sorted(next(iter(by_round.values())))
    table = np.array([[by_round[a][r] for r in rounds] for a in arms])
    residual = table - table.mean(axis=1, keepdims=True) - table.mean(axis=0, keepdims=True) + table.mean()
    df = (len(arms) - 1) * (len(rounds) - 1)
    return change_points.Spread(math.sqrt(float(np.sum(residual**2)) / df), df, BASIS_PAIRED)


def compare_arms(base_logs, arm_logs, unit_spread, floor, family):
    """Arm against base: the ratio of geometric means of their starts' levels, judged by changes.ratio_verdict with
    Student's t at the unit spread, Bonferroni over the family."""
    if unit_spread.sd is None:
        ratio = math.exp(float(np.mean(arm_logs)) - float(np.mean(base_logs)))
        return uncertainty.Comparison(ratio, None, None, None, "one node start per arm: the spread between starts is unknown")
    critical = float(stats.t.ppf(1 - 0.025 / family, unit_spread.df))
    return change_points.ratio_verdict(base_logs, arm_logs, unit_spread, critical, floor)


def judge_arms(cell, figure, points, baseline=None):
    """CellVerdicts of one cell's points: every arm against the baseline arm (the first raced, unless named), the
    comparisons of a cell one family (Bonferroni). When the arms' starts were raced in rounds (A B C, A B C, ...),
    the ratio is the mean of its rounds' ratios and its spread what is left of the starts' once arm and round are
    taken out; otherwise the starts' spread around their arm's level."""
    kept = counted(points)
    by_arm = {}
    for p in kept:
        by_arm.setdefault(arm_of(p), []).append(p)
    if baseline is not None and baseline not in by_arm:
        raise ReportError(f"--baseline {baseline}: no race of that arm in {cell}; the arms raced: {', '.join(by_arm)}")
    base = baseline or next(iter(by_arm))
    order = [base, *(a for a in by_arm if a != base)]
    levels = {arm: start_levels(by_arm[arm]) for arm in order}
    round_of = {start_of(p): (p.tags or {}).get(ROUND_TAG) for p in kept}
    by_round = {}
    for arm in order:
        for start, value in levels[arm].items():
            by_round.setdefault(arm, {})[round_of[start]] = value
    blocked = rounds_of(by_round) if all(len(levels[a]) == len(by_round[a]) for a in order) else None
    starts_spread = between_starts(points)
    unit_spread = paired_spread(blocked) if blocked else starts_spread
    family = max(1, len(order) - 1)
    rows = []
    for arm in order:
        group = by_arm[arm]
        lvl = change_points.level(group, starts_spread)
        comparison = None
        if arm != base:
            floor = change_points.noise_floor(figure)
            comparison = compare_arms(list(levels[base].values()), list(levels[arm].values()), unit_spread, floor, family)
        versions = tuple(dict.fromkeys(p.facts.version or "?" for p in group))
        rows.append(ArmRow(arm, versions, lvl, comparison))
    return CellVerdicts(
        cell, figure, starts_spread, unit_spread, rows, start_rows(points), drift(points), change_points.first_race_effect(points)
    )


def judge_series(series, baseline=None):
    """[CellVerdicts] of a series, cells in name order."""
    return [judge_arms(cell, series.figures[cell], points, baseline) for cell, points in sorted(series.cells.items())]
