"""make versions / python -m report versions: Elasticsearch versions judged with the node start as the unit.

    python -m report versions --user-tag node-starts:PLAN [--baseline 8.17.2] [--rally-home DIR | --configuration-name N]
        [--challenge C] [--out reports]

Reads the races of a plan of local-es/node_starts.py (each arm's node starts alternated, each start a node started
afresh, its ingest, then several races) from a Rally home or a metrics store, and writes reports/versions-<plan>/report.md:
per cell and arm (a version, or a second label of one: the A/A arm), each node start's level, the arm's level over its
node starts, and its ratio to the baseline arm with a verdict by the project's rule. The unit is the node start: an
arm's level is the geometric mean of its starts' levels, and the ratio's interval is Student's t with the spread between
node starts of one arm, pooled over the arms, so "slower" means beyond what two starts of one version differ by. A
start's first race is not counted in its level (a node just started is slower: reported beside, with the within-start
drift and the races it touches).
"""

import argparse
import math
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from scipy import stats

from report import ReportError
from report.history import changes as change_points
from report.history import races as history_races
from report.history import series as history_series
from report.shared import tables, uncertainty
from report.shared.races import source

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
        by_start.setdefault(change_points.start_of(p), []).append(p)
    return [p for group in by_start.values() for p in (group[1:] if len(group) > 1 else group)]


def between_starts(points):
    """The Spread of node starts' levels (their counted races) around their arm's mean, pooled over the arms."""
    by_arm = {}
    for p in counted(points):
        by_arm.setdefault(arm_of(p), []).append(p)
    return change_points.pooled((list(change_points.start_levels(group).values()) for group in by_arm.values()), change_points.BASIS_STARTS)


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
        by_start.setdefault(change_points.start_of(p), []).append(p)
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
        by_start.setdefault(change_points.start_of(p), []).append(p)
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


def compare_arms(base_logs, arm_logs, unit_spread, gap, floor, family):
    """Arm against base: the ratio of geometric means of their starts' levels, its interval (Student's t with the
    unit spread, Bonferroni over the family), and the verdict."""
    diff = float(np.mean(arm_logs)) - float(np.mean(base_logs))
    if unit_spread.sd is None:
        return uncertainty.Comparison(math.exp(diff), None, None, None, "one node start per arm: the spread between starts is unknown")
    half = stats.t.ppf(1 - 0.025 / family, unit_spread.df) * unit_spread.sd * math.sqrt(1 / len(base_logs) + 1 / len(arm_logs))
    return uncertainty.verdict(math.exp(diff), math.exp(diff - half), math.exp(diff + half), uncertainty.MARGIN, gap, floor)


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
    levels = {arm: change_points.start_levels(by_arm[arm]) for arm in order}
    round_of = {change_points.start_of(p): (p.tags or {}).get(ROUND_TAG) for p in kept}
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
            gap = lvl.median - change_points.level(by_arm[base], starts_spread).median
            comparison = compare_arms(
                list(levels[base].values()), list(levels[arm].values()), unit_spread, gap, change_points.noise_floor(figure), family
            )
        versions = tuple(dict.fromkeys(p.facts.version or "?" for p in group))
        rows.append(ArmRow(arm, versions, lvl, comparison))
    return CellVerdicts(
        cell, figure, starts_spread, unit_spread, rows, start_rows(points), drift(points), change_points.first_race_effect(points)
    )


def judge_series(series, baseline=None):
    """[CellVerdicts] of a series, cells in name order."""
    return [judge_arms(cell, series.figures[cell], points, baseline) for cell, points in sorted(series.cells.items())]


def _figure(value, figure):
    unit = "s" if figure.unit == "s" else ""
    return f"{value:,.1f}{unit}" if unit else f"{value:,.0f}"


def _level_text(lvl, figure):
    if lvl.low is None:
        return _figure(lvl.median, figure)
    return f"{_figure(lvl.median, figure)} [{_figure(lvl.low, figure)}, {_figure(lvl.high, figure)}]"


def _short(verdict):
    return "same" if verdict == uncertainty.SAME else verdict or "no verdict"


def verdict_table(judged, arms):
    """One row per cell: the seed's figure, the baseline's level, each other arm's level, ratio [95%] and verdict."""
    header = ["cell", "seed 000 (8.17.2, 8 cores)", *arms]
    body = []
    for v in judged:
        row = {a.arm: a for a in v.arms}
        seed = v.figure.seed(v.cell) if v.figure.seed else None
        cells = [v.cell, "-" if seed is None else _figure(seed, v.figure)]
        for arm in arms:
            a = row.get(arm)
            if a is None:
                cells.append("-")
            elif a.comparison is None:
                cells.append(_level_text(a.level, v.figure))
            else:
                c = a.comparison
                ratio = "?" if c.ratio is None else f"{c.ratio:.2f}"
                interval = "" if c.low is None else f" [{c.low:.2f}, {c.high:.2f}]"
                cells.append(f"{_figure(a.level.median, v.figure)}: {ratio}{interval} {_short(c.verdict)}")
        body.append(cells)
    return header, body


def start_table(judged):
    header = ["cell", "arm", "node start", "race medians (first not counted)", "start level [95%]"]
    body = []
    for v in judged:
        for i, s in enumerate(sorted(v.starts, key=lambda s: s.arm)):
            medians = ", ".join(_figure(m, v.figure) for m in s.medians)
            body.append([v.cell, s.arm, _start_text(s.start), medians, _level_text(s.level, v.figure)])
    return header, body


def _start_text(start):
    """A node start's start time(s), epoch ms as recorded, shown in UTC."""
    if start.startswith("race "):
        return start
    times = [datetime.fromtimestamp(int(ms) / 1000, timezone.utc) for ms in start.split(",") if ms.isdigit()]
    return ", ".join(f"{t:%Y-%m-%d %H:%M:%S}" for t in times) or start


def spread_lines(judged):
    body = []
    for v in judged:
        first = "-" if v.first_race is None else "{:.2f} [{:.2f}, {:.2f}] over {} starts".format(*v.first_race)
        d = v.drift
        drift_text = "-" if d is None else f"{d.per_race:.3f} [{d.low:.3f}, {d.high:.3f}] a race, {_short(d.verdict)}"
        named = "-" if d is None or not d.races else f"{len(d.races)} (listed below)"
        body.append([v.cell, v.spread.text(), v.unit_spread.text() if v.unit_spread is not v.spread else "-", first, drift_text, named])
    header = [
        "cell",
        "spread between node starts",
        "the same, rounds paired",
        "first race / later",
        "drift within a start",
        "races it touches",
    ]
    touched = [
        f"- {v.cell}, a drift within starts touches: {', '.join(r[:8] for r in v.drift.races)}" for v in judged if v.drift and v.drift.races
    ]
    return "\n".join([tables.markdown(header, body), *([""] + touched if touched else [])])


def plan_of(selection):
    return selection.tags.get(PLAN_TAG) or "selection"


def write_report(judged_series, found, selection, out_root, baseline):
    out = Path(out_root) / f"versions-{plan_of(selection)}"
    out.mkdir(parents=True, exist_ok=True)
    parts = [
        "# cluster-metrics: Elasticsearch versions, the node start as the unit",
        "",
        f"{len(found.races)} race(s) from {found.where}; selected: {selection.text()}.",
        "",
    ]
    for series, judged in judged_series:
        arms = list(dict.fromkeys(a.arm for v in judged for a in v.arms))
        starts = {}
        for v in judged:
            for s in v.starts:
                starts.setdefault(s.arm, set()).add(s.start)
        design = "; ".join(f"{arm}: {len(starts.get(arm, ()))} node starts" for arm in arms)
        parts += [f"## {series.describe()}", "", f"{len(series.races)} race(s); {design}.", ""]
        parts += [tables.markdown(*verdict_table(judged, arms)), ""]
        parts += [spread_lines(judged), ""]
        parts += ["Each node start's level:", "", tables.markdown(*start_table(judged)), ""]
        if series.excluded:
            parts += ["Excluded (never counted): " + "; ".join(f"{r[:8]} {c or ''} {why}".strip() for r, c, why in series.excluded), ""]
    parts += [VERDICT_NOTE, ""]
    path = out / "report.md"
    path.write_text("\n".join(parts))
    return path


VERDICT_NOTE = (
    "An arm's level: the geometric mean of its node starts' levels; a start's level: the geometric mean of its races' "
    "medians, its first race not counted (a node just started: the 'first race / later' column). The ratio's 95% "
    "interval is Student's t with the spread between node starts of one arm, pooled over the arms, Bonferroni over a "
    "cell's comparisons with the baseline. " + uncertainty.VERDICT_RULE + " A drift within a start: the mean slope of a "
    "start's log race medians over its counted races, its interval over the starts; named when beyond 0 and beyond the "
    "margin over a start's races."
)


def console_lines(judged_series):
    lines = []
    for series, judged in judged_series:
        for v in judged:
            for a in v.arms[1:]:
                c = a.comparison
                ratio = "?" if c.ratio is None else f"{c.ratio:.2f}"
                interval = "" if c.low is None else f" [{c.low:.2f}, {c.high:.2f}]"
                lines.append(f"{v.cell}: {a.arm} / {v.arms[0].arm} {ratio}{interval} {_short(c.verdict)}")
    return lines


def main(argv, figures):
    """python -m report versions: `figures` are the studies' trend figures (report/catalog.py)."""
    parser = argparse.ArgumentParser(
        prog="python -m report versions", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rally-home", default=None)
    parser.add_argument("--configuration-name", default=None, help="Rally's rally-NAME.ini, whose metrics store holds the races")
    parser.add_argument("--challenge", action="append", default=[])
    parser.add_argument("--user-tag", action="append", default=[], help="key:value, e.g. node-starts:versions (all must match)")
    parser.add_argument("--baseline", default=None, help="the arm the others are judged against (default: the first raced)")
    parser.add_argument("--out", default="reports")
    args = parser.parse_args(argv)
    selection = history_races.Selection(tuple(args.challenge), history_races.parse_tags(args.user_tag))
    found = history_races.select(selection, source(args.rally_home, args.configuration_name))
    history_races.check_found(found, selection)
    judged_series = [(series, judge_series(series, args.baseline)) for series in history_series.build(found.races, figures) if series.cells]
    if not judged_series:
        raise ReportError(f"{len(found.races)} race(s) selected, none with a cell to judge")
    path = write_report(judged_series, found, selection, args.out, args.baseline)
    for line in console_lines(judged_series):
        print(line)
    print(f"report: {path}")
    return 0
