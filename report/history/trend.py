"""make trend / python -m report trend: a team's history as one report, the answer first.

    python -m report trend [--rally-home DIR | --configuration-name NAME] [--challenge C] [--user-tag k:v]
        [--es-version 9.] [--since YYYY-MM-DD] [--until YYYY-MM-DD] [--order race|version|tag:KEY]
        [--fail-on slower] [--alert-within 5] [--out reports]

Writes reports/trend-<selection>/report.md (changes newest first, then a chart per changed cell and a small multiple of
the rest, then each series' tables) and prints one line: how many changes in how many cells over how many races, and
the worst (or that nothing could be judged, and the races left out). With --fail-on slower it exits 3 when a slower
step begins among the newest --alert-within races of its series while its node start runs, or a cost drifts up over
the newest races, or (the history having left the newest races' configuration and come back to it) those races are
slower than that configuration's earlier run, an ALERT line each: a nightly job's alert (docs/team-setup.md). --until
DAY holds that day.
"""

import argparse
import hashlib
import math
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from report import ALERT_EXIT, HOST_NAMED, ReportError  # noqa: E402
from report.history import analysis  # noqa: E402
from report.history import changes as change_points  # noqa: E402
from report.history import host as history_host  # noqa: E402
from report.history import races as history_races  # noqa: E402
from report.history import series as history_series  # noqa: E402
from report.shared import sections, uncertainty  # noqa: E402
from report.shared.races import source  # noqa: E402

BASIS_TEXT = {
    change_points.BASIS_RACES: " (race as the unit: one node start)",
    change_points.BASIS_WITHIN: " on a running node (its races the unit)",
}


ADJUSTED_TEXT = ", on levels adjusted for the host"


def changes_table(rows):
    header = ["cell", "race (date)", "kind", "before", "after", "ratio [95%]", "verdict", "what changed with it"]
    body = [
        [
            c.cell,
            f"{c.race_id[:8]} ({c.when[:8]})",
            c.kind + BASIS_TEXT.get(c.basis, "") + (ADJUSTED_TEXT if c.adjusted else ""),
            series.figures[c.cell].level_text(c.before, counts=True),
            series.figures[c.cell].level_text(c.after, counts=True),
            f"{c.comparison.ratio:.3f} [{c.comparison.low:.3f}, {c.comparison.high:.3f}]",
            series.figures[c.cell].verdict_text(c.comparison.verdict),
            "; ".join(c.what_changed) or "-",
        ]
        for _, series, c in rows
    ]
    return header, body


def spread_text(a):
    """The spreads a cell's verdicts read, within the segments its changes leave: between node starts (a change at a
    node start), and between races of one node start (a change on a running node), where there is one."""
    races = a.within_start
    shown = races.sd is not None and a.spread.basis == change_points.BASIS_STARTS
    within = f"; {math.expm1(races.sd):.1%} between races of one node start ({races.df} degrees of freedom)" if shown else ""
    return a.spread.text() + within + (ADJUSTED_TEXT if a.adjusted else "")


def segment_table(a):
    header = ["segment", "races", "node starts", "first race", "last race", "level [95%]"]
    body = []
    for i, (first, end, lvl) in enumerate(a.segments):
        body.append(
            [
                i + 1,
                end - first,
                lvl.starts,
                a.points[first].race_id[:8],
                a.points[end - 1].race_id[:8],
                a.figure.level_text(lvl, counts=True),
            ]
        )
    return header, body


def points_table(a):
    figure, points = a.figure, a.points
    header = ["race", "date", "Elasticsearch", "node start", "median [95%]", "n"]
    body = []
    for p, start in zip(points, a.start_numbers()):
        interval = f" [{figure.number(p.low)}, {figure.number(p.high)}]" if p.low is not None else ""
        body.append([p.race_id[:8], p.when, p.facts.version or "?", start, f"{figure.value_text(p.median)}{interval}", p.n])
    return header, body


def _draw(ax, a, ticks=6):
    """One cell's chart: its points, each segment's level in each node start it spans, its node starts and changes."""
    points = a.points
    x = list(range(len(points)))
    y = [p.median for p in points]
    low = [p.median - (p.low if p.low is not None else p.median) for p in points]
    high = [(p.high if p.high is not None else p.median) - p.median for p in points]
    ax.errorbar(x, y, yerr=[low, high], fmt="o", ms=3, lw=0.8, color="tab:blue")
    pieces = a.levels_by_start()
    ax.hlines(
        [level for _, _, level in pieces], [lo - 0.4 for lo, _, _ in pieces], [hi - 0.6 for _, hi, _ in pieces], colors="tab:orange", lw=1.5
    )
    if a.starts_of_several:  # node starts of several races (where every race is a start, none is marked)
        for i in a.node_starts:
            ax.axvline(i - 0.5, color="0.75", ls=":", lw=0.8)  # a node start: the unit the verdicts count
    for c in a.changes:
        ax.axvline(c.index - 0.5, color="tab:red" if c.comparison.verdict == uncertainty.SLOWER else "tab:green", ls="--", lw=1)
    ax.set_title(a.cell, fontsize=8)
    ax.set_ylabel(f"race median ({a.figure.unit})", fontsize=6)
    shown = sorted({round(k * (len(points) - 1) / (ticks - 1)) for k in range(ticks)}) if len(points) > ticks else x
    ax.set_xticks(shown)
    ax.set_xticklabels([f"{_date(points[i].when)}\n{points[i].race_id[:8]}" for i in shown], fontsize=5)
    ax.tick_params(labelsize=6)


def _date(when):
    """A race timestamp (Rally's 20261128T181917Z) as 11-28 18:19."""
    return f"{when[4:6]}-{when[6:8]} {when[9:11]}:{when[11:13]}" if len(when) >= 13 else when


def charts(analysed, out):
    """One chart per changed cell, and a small multiple of the others; returns the markdown lines."""
    lines, rest = [], []
    for n, (series, cells) in enumerate(analysed):
        for cell, a in cells.items():
            if not a.changes:
                rest.append(a)
                continue
            fig, ax = plt.subplots(figsize=(7, 3))
            _draw(ax, a)
            ax.set_xlabel(
                "race (oldest first: date, id); dotted: a node start; dashed: a change; orange: each segment's level in each node start",
                fontsize=6,
            )
            name = f"change-{n + 1}-{_slug(cell)}.png"
            fig.tight_layout()
            fig.savefig(out / name, dpi=100)
            plt.close(fig)
            lines.append(f"![{cell}]({name})\n")
    if rest:
        cols = min(4, len(rest))
        rows = math.ceil(len(rest) / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(3 * cols, 2.2 * rows), squeeze=False)
        for ax, a in zip(axes.flat, rest):
            _draw(ax, a, ticks=3)
        for ax in list(axes.flat)[len(rest) :]:
            ax.axis("off")
        fig.tight_layout()
        fig.savefig(out / "unchanged.png", dpi=100)
        plt.close(fig)
        lines.append("![the cells without a change](unchanged.png)\n")
    return lines


def configuration_lines(analysed):
    """Per cell, each configuration (version, JVM, heap, settings) over its node starts, against the first."""
    header = ["cell", "configuration", "level [95%]", "against the first [95%]"]
    body = []
    for series, cells in analysed:
        for cell, a in cells.items():
            for text, lvl, comparison in a.by_configuration:
                body.append([cell, text, a.figure.level_text(lvl, counts=True), "-" if comparison is None else comparison.text()])
    if not body:
        return []
    return [
        "## By configuration: the node start as the unit",
        "",
        sections.markdown(header, body),
        "",
        "Each configuration's level: the geometric mean of its node starts' levels; its interval and the ratio's are "
        "Student's t with the spread between node starts of one configuration, pooled (the cell's spread below). "
        "In race order a version switch is also a node start: this table is where versions are compared.",
        "",
    ]


def returned_lines(analysed):
    """Where a history left the newest races' configuration and came back to it: per cell beyond the noise, the newest
    run against that configuration's own earlier run (like with like: the nightly question after a switch and back)."""
    rows = [(cell, a) for _, cells in analysed for cell, a in cells.items() if a.returned]
    if not rows:
        return []
    beyond = [(cell, a) for cell, a in rows if a.returned.comparison.verdict in (uncertainty.SLOWER, uncertainty.FASTER)]
    what = rows[0][1].returned.what_changed[0]
    parts = ["## Back on an earlier configuration: like with like", "", f"In each cell, {what}.", ""]
    if not beyond:
        return parts + [f"_Within the noise in all {len(rows)} cell(s)._", ""]
    header = ["cell", "earlier run", "newest run", "ratio [95%]", "verdict"]
    body = [
        [
            cell,
            a.figure.level_text(a.returned.before, counts=True),
            a.figure.level_text(a.returned.after, counts=True),
            a.returned.comparison.text().rsplit(" ", 1)[0],
            a.figure.verdict_text(a.returned.comparison.verdict),
        ]
        for cell, a in beyond
    ]
    note = (
        f"{len(rows) - len(beyond)} other cell(s) within the noise. Each side after the last change found inside it; "
        "the spread the changes leave; Student's t at a fact's share of 5% (docs/history.md)."
    )
    return parts + [sections.markdown(header, body), "", note, ""]


def first_race_rule_lines(analysed):
    """Which rule each node start's first race had, per series: counted where its node settled before the timed cells
    (its settle record), else left out."""
    said = []
    for i, series_analysis in enumerate(analysed):
        counted, left_out = series_analysis.first_rule
        if counted:
            said.append(
                f"Series {i + 1}: the first race of {counted} node start(s) counts like any other (its node settled before the "
                f"timed cells: settle.jsonl); {left_out} start(s)' first race is left out (no settle record, or it did not settle)."
            )
    return said + [""] if said else []


def first_race_lines(analysed):
    """Per cell, the first race after a node start against the same start's later races."""
    body = []
    for series, cells in analysed:
        for cell, a in cells.items():
            if a.first_race:
                ratio, low, high, starts = a.first_race
                body.append([cell, starts, f"{ratio:.3f} [{low:.3f}, {high:.3f}]", a.first_race_verdict])
    if not body:
        return []
    return [
        "## A node just started: its first race against its later ones",
        "",
        sections.markdown(["cell", "node starts", "first race / later races [95%]", "verdict"], body),
        "",
        "Per node start with two races or more: the first race's median over the geometric mean of the later ones; the "
        "interval is Student's t over the node starts. Slower here: compare races on a node that has raced before.",
        "",
    ]


def contention_lines(analysed):
    """Per cell whose races met the host busy and quiet both: its level against the other processes' share of the host
    (report/history/host.py), and which levels its verdicts read."""
    body = []
    for series, cells in analysed:
        for cell, a in cells.items():
            if a.contention is not None:
                body.append(f"- {cell}: {history_host.contention_text(a.contention, a.adjusted)}")
    if not body:
        return []
    return [
        "## The load driver's host and the cells",
        "",
        *body,
        "",
        "Each cell's log race medians against the share of a core other processes took over its timed cells (the races' "
        "host record), a level per node start, each start's first race left out; the slope's 95% interval is Student's "
        "t. Where it is beyond the noise, part of the spread between races is the host's: race on a quiet host. Where "
        f"it explains {history_host.ADJUST_SHARE:.0%} of the variance or more (and every race has a host record), that "
        "cell's verdicts, levels and configurations above read its figures as on a quiet host: each race's divided by "
        "the slope to the power of its other processes' share; elsewhere the levels as measured (docs/host-load.md).",
        "",
    ]


def _slug(text):
    return "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in text)[:60]


def console_line(rows, analysed, left_out=()):
    race_count = sum(len(series.races) for series, _ in analysed)
    cells = {(id(series), c.cell) for _, series, c in rows}
    line = f"trend: {len(rows)} change(s) in {len(cells)} cell(s) over {race_count} race(s) in {len(analysed)} series"
    unjudged = analysis.unjudged_cells(analysed)
    total = sum(len(cells) for _, cells in analysed)
    if unjudged and unjudged == total:
        line += f"; nothing could be judged: {NOT_JUDGED}"
    elif unjudged:
        line += f"; {unjudged} of {total} cell(s) could not be judged ({NOT_JUDGED})"
    if left_out:
        named = ", ".join(f"{Path(str(where)).name} ({why[:80]})" for where, why in left_out[:3])
        more = f" and {len(left_out) - 3} more" if len(left_out) > 3 else ""
        line += f"; {len(left_out)} race(s) left out: {named}{more} (the report's first lines say why, whole)"
    if rows:
        _, series, worst = analysis.largest(rows)
        line += (
            f"; the largest: {worst.cell} {worst.comparison.ratio:.2f}x {series.figures[worst.cell].verdict_text(worst.comparison.verdict)} "
            f"from race {worst.race_id[:8]} ({'; '.join(worst.what_changed) or worst.kind})"
        )
    return line


NOT_JUDGED = "no two node starts of one configuration and no two races of one node start to measure the noise by"


def alert_line(c):
    """An alert as a nightly job prints it: the cell, the race it begins at, the ratio with its interval, what changed."""
    what = "; ".join(c.what_changed) or (
        "a drift up over the newest races" if c.kind == change_points.DRIFT else "nothing recorded changed"
    )
    return (
        f"ALERT: {c.cell} {c.comparison.ratio:.2f}x [{c.comparison.low:.2f}, {c.comparison.high:.2f}] slower, a {c.kind} from race "
        f"{c.race_id[:8]} ({c.when}){ADJUSTED_TEXT if c.adjusted else ''}: {what}"
    )


def write_report(analysed, found, selection, out_root, order):
    digest = hashlib.sha256((found.where + selection.text() + order).encode()).hexdigest()[:8]
    out = Path(out_root) / f"trend-{digest}"
    if out.exists() and not out.is_dir():
        raise ReportError(f"{out} is a file where the trend writes this selection's report: move it, or give another --out")
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob("*.png"):  # a chart of an earlier run of the same selection, whose cell may have no change now
        stale.unlink()
    rows = analysis.changes_newest_first(analysed)
    parts = [
        "# cluster-metrics: the trend over a team's races",
        "",
        f"{sum(len(s.races) for s, _ in analysed)} race(s) from {found.where}; selected: {selection.text()}; order: {order}.",
        "",
    ]
    if found.left_out:
        parts += ["Left out (never a point):", ""] + [f"- {where}: {why}" for where, why in found.left_out] + [""]
    if analysis.unjudged_cells(analysed):
        parts += [f"Could not be judged: {analysis.unjudged_cells(analysed)} cell(s), {NOT_JUDGED}.", ""]
    parts += ["## Changes, newest first", ""]
    parts += [sections.markdown(*changes_table(rows)), ""] if rows else ["_No change beyond the noise in any cell._", ""]
    parts += [CHANGE_NOTE, ""]
    parts += configuration_lines(analysed)
    parts += returned_lines(analysed)
    parts += first_race_rule_lines(analysed)
    parts += first_race_lines(analysed)
    parts += contention_lines(analysed)
    parts += charts(analysed, out)
    if len(analysed) > 1:
        parts += ["## Series", "", "Races that measured different things are separate series:", ""]
        parts += [f"- series {i + 1}: {s.describe()} ({len(s.races)} races)" for i, (s, _) in enumerate(analysed)]
        parts += [
            f"- series {i + 1} against series 1: {history_series.how_they_differ(s.key, analysed[0][0].key)}"
            for i, (s, _) in enumerate(analysed)
            if i
        ]
        parts.append("")
    for i, (series, cells) in enumerate(analysed):
        parts += [f"## Series {i + 1}: {series.describe()}", ""]
        for cell, a in cells.items():
            parts += [f"### {cell}", "", f"Spread used for its verdicts: {spread_text(a)}.", ""]
            parts += [sections.markdown(*segment_table(a)), ""]
            if a.outliers:
                parts += [f"Outlier race(s), alone between a step and its way back: {', '.join(r[:8] for r in a.outliers)}.", ""]
            parts += [sections.markdown(*points_table(a)), ""]
        if series.excluded:
            parts += ["Excluded (never a point):", ""]
            parts += [f"- race {race_id[:8]}{'' if cell is None else ' cell ' + cell}: {why}" for race_id, cell, why in series.excluded]
            parts.append("")
    if found.skipped:
        parts += ["Not selected: " + "; ".join(f"{n} x {why}" for why, n in sorted(found.skipped.items())) + ".", ""]
    path = out / "report.md"
    path.write_text("\n".join(parts))
    return path, console_line(rows, analysed, found.left_out)


CHANGE_NOTE = (
    "A change: where Apache Otava's E-divisive (its t-test at p < "
    f"{change_points.CANDIDATE_PVALUE}) places a candidate in a cell's log race medians, or where the recorded "
    "configuration changes, kept only when the levels on its two sides differ beyond the noise: at a node start, node "
    "starts are the unit (each side's level the geometric mean of its starts' levels); inside one node start, its races "
    "(its first race left out). The spread is pooled within the segments the changes leave (a step is not noise), and "
    "the ratio's 95% interval is as wide as the largest t a search finds among as many units without a change (over "
    "the searches made), or Student's t where the facts placed the change (docs/history.md). "
    + uncertainty.VERDICT_RULE
    + " A drift: a run of changes in one direction whose segments slope too. What changed with it: the facts of the last "
    "race before against the first after (runners/shared/cluster_facts.py)."
)


def main(argv, figures):
    """make trend (python -m report trend): `figures` are the studies' trend figures (report/catalog.py)."""
    parser = argparse.ArgumentParser(
        prog="python -m report trend", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rally-home", default=None)
    parser.add_argument("--configuration-name", default=None, help="Rally's rally-NAME.ini, whose metrics store holds the races")
    parser.add_argument("--challenge", action="append", default=[])
    parser.add_argument("--user-tag", action="append", default=[], help="key:value (as esrally race --user-tag); all must match")
    parser.add_argument("--es-version", default=None, help="a version or its prefix: 9. or 8.17.2")
    parser.add_argument("--since", default=None)
    parser.add_argument("--until", default=None)
    parser.add_argument("--order", default="race", help="race (default), version, or tag:KEY")
    parser.add_argument("--fail-on", choices=["slower"], default=None)
    parser.add_argument("--alert-within", type=int, default=5, help="races: a slower change this recent alerts (default 5)")
    parser.add_argument("--out", default="reports")
    args = parser.parse_args(argv)
    if args.order not in ("race", "version") and not (args.order.startswith("tag:") and len(args.order) > 4):
        parser.error(f"--order {args.order!r}: race, version or tag:KEY")
    if args.alert_within < 1:
        parser.error("--alert-within takes 1 or more races")
    since, until = history_races.date_range(args.since, args.until)
    selection = history_races.Selection(tuple(args.challenge), history_races.parse_tags(args.user_tag), args.es_version, since, until)
    check_out(args.out)
    found = history_races.select(selection, source(args.rally_home, args.configuration_name))
    history_races.check_found(found, selection)
    analysed = analysis.analyse(history_series.build(found.races, figures, found.left_out), args.order)
    if not any(cells for _, cells in analysed):
        raise ReportError(
            f"{len(found.races)} race(s) selected, but none has a cell with samples to follow: "
            + "; ".join(f"{race_id[:8]} {cell or ''} {why}".strip() for s, _ in analysed for race_id, cell, why in s.excluded[:5])
        )
    path, line = write_report(analysed, found, selection, args.out, args.order)
    print(line)
    print(f"report: {path}")
    found_slower = analysis.alerts(analysed, args.alert_within) if args.fail_on else []
    raised = [c for c in found_slower if not c.host_named]
    for c in raised:
        print(alert_line(c))
    for c in found_slower:
        if c.host_named:  # a neighbour's load named, not called a regression
            print(HOST_NAMED + alert_line(c).removeprefix("ALERT: "))
    return ALERT_EXIT if raised else 0


def check_out(out):
    """--out names a folder (made if missing), not a file, and not empty text, where a file can be written (a name
    too long, a read-only or missing file system): said with the fix before any work."""
    if not str(out).strip():
        raise ReportError("--out is empty: give a folder for the report (default: reports)")
    try:
        if Path(out).exists() and not Path(out).is_dir():
            raise ReportError(f"--out {out} is a file: give a folder for the report (default: reports)")
        Path(out).mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as e:
        raise ReportError(f"--out {_short(out)} cannot be written ({e.strerror or e}): give a folder you can write to (default: reports)")


def _short(path, keep=120):
    text = str(path)
    return text if len(text) <= keep else f"{text[:keep]}... ({len(text)} characters)"
