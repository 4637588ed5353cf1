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
from datetime import datetime, timezone
from pathlib import Path

from report import ReportError
from report.history import arms as arm_analysis
from report.history import races as history_races
from report.history import series as history_series
from report.shared import sections, uncertainty
from report.shared.races import source


def _short(verdict):
    return "same" if verdict == uncertainty.SAME else verdict or "no verdict"


def _comparison_text(c):
    """An arm's ratio to the baseline, its interval where it has one, and the verdict: "1.05 [0.98, 1.12] same"."""
    ratio = "?" if c.ratio is None else f"{c.ratio:.2f}"
    interval = "" if c.low is None else f" [{c.low:.2f}, {c.high:.2f}]"
    return f"{ratio}{interval} {_short(c.verdict)}"


def verdict_table(judged, arms):
    """One row per cell: the seed's figure, the baseline's level, each other arm's level, ratio [95%] and verdict."""
    header = ["cell", "seed 000 (8.17.2, 8 cores)", *arms]
    body = []
    for v in judged:
        row = {a.arm: a for a in v.arms}
        seed = v.figure.seed(v.cell) if v.figure.seed else None
        cells = [v.cell, "-" if seed is None else v.figure.value_text(seed)]
        for arm in arms:
            a = row.get(arm)
            if a is None:
                cells.append("-")
            elif a.comparison is None:
                cells.append(v.figure.level_text(a.level))
            else:
                cells.append(f"{v.figure.value_text(a.level.median)}: {_comparison_text(a.comparison)}")
        body.append(cells)
    return header, body


def start_table(judged):
    header = ["cell", "arm", "node start", "race medians (first not counted)", "start level [95%]"]
    body = []
    for v in judged:
        for i, s in enumerate(sorted(v.starts, key=lambda s: s.arm)):
            medians = ", ".join(v.figure.number(m) for m in s.medians)
            body.append([v.cell, s.arm, _start_text(s.start), medians, v.figure.level_text(s.level)])
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
    return "\n".join([sections.markdown(header, body), *([""] + touched if touched else [])])


def plan_of(selection):
    return selection.tags.get(arm_analysis.PLAN_TAG) or "selection"


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
        parts += [sections.markdown(*verdict_table(judged, arms)), ""]
        parts += [spread_lines(judged), ""]
        parts += ["Each node start's level:", "", sections.markdown(*start_table(judged)), ""]
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
                lines.append(f"{v.cell}: {a.arm} / {v.arms[0].arm} {_comparison_text(a.comparison)}")
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
    judged_series = [
        (series, arm_analysis.judge_series(series, args.baseline)) for series in history_series.build(found.races, figures) if series.cells
    ]
    if not judged_series:
        raise ReportError(f"{len(found.races)} race(s) selected, none with a cell to judge")
    path = write_report(judged_series, found, selection, args.out, args.baseline)
    for line in console_lines(judged_series):
        print(line)
    print(f"report: {path}")
    return 0
