"""make report / make compare: a race (or several) as the study's tables, markdown and PNG charts.

    python -m report [--race ID] [--rally-home DIR] [--configuration-name NAME] [--out reports]
    python -m report --race ID1 --race ID2 --compare
    python -m report --race A1,A2,A3                              (a set of repeated races: make repeat)
    python -m report --race A1,A2,A3 --race B1,B2,B3 --compare    (sets, race by race)
    python -m report trend [...]                                   (a team's history: report/history/trend.py)
    python -m report versions [...]                                (versions by node start: report/history/versions.py)

Races come from Rally's metrics store when the Rally configuration (rally.ini, or rally-NAME.ini) names an
Elasticsearch one, with every sample's service time (intervals, verdicts); otherwise from race.json files.
"""

import argparse
import sys
from pathlib import Path

from report import ReportError, catalog, client_cost, outcome, scaling
from report.shared import host_load, races, readers, sections, uncertainty
from report.studies import coverage_answer, ingest, repeats
from runners.contracts import records


def single_report(race, out_root, baseline=None):
    """reports/<race id>/report.md: every section the race has; with a baseline race (make report BASELINE=<id>),
    every cell's drift against it."""
    out = Path(out_root) / race.race_id
    out.mkdir(parents=True, exist_ok=True)
    parts = [
        f"# cluster-metrics race {race.race_id}",
        "",
        f"challenge `{race.challenge}`, Elasticsearch {race.version or '?'}, "
        f"track params `{race.data.get('track-params', {})}`, {race.data.get('race-timestamp', '')}; read from {race.source}",
        "",
    ]
    parts += outcome.outcome_lines(race)
    if not outcome.finished(race):
        return _unfinished_report(race, out, parts)
    busy = host_load.warning(race)
    parts += [f"**{busy}**", ""] if busy else []
    parts += _answers(race)
    summary, absent = ([busy] if busy else []), []
    for title, build, lacks, note, section_summary in catalog.SECTIONS:
        table = build(race)
        if not table:
            absent.append(lacks)  # only the sections this race has are shown; one sentence names the others
            continue
        parts.append(f"## {title}\n")
        # a string is why a table the race has cannot be built (a failed baseline): shown where the table would be
        parts += [f"_{table}._" if isinstance(table, str) else sections.markdown(*table), ""]
        if isinstance(table, str):
            continue
        if note:
            parts += [note(race) if callable(note) else note, ""]
        if section_summary:
            summary.append(section_summary(race))
    if absent:
        parts += [f"_Not in this race: {', '.join(absent)}._", ""]
    if baseline is not None:
        drift = (
            coverage_answer.drift_table(race, baseline)
            if outcome.finished(baseline)
            else f"race {baseline.race_id[:8]} {outcome.NOT_FINISHED}: no drift against it"
        )
        parts.append(f"## Drift against race {baseline.race_id[:8]} (make report BASELINE=...)\n")
        parts += [f"_{drift}._" if isinstance(drift, str) else sections.markdown(*drift) + "\n\n" + coverage_answer.drift_note(race), ""]
    accuracy = Path(out_root) / "accuracy.md"
    parts.append("## Percentile accuracy\n")
    parts.append(
        accuracy.read_text().split("\n", 2)[2]
        if accuracy.is_file()
        else "_no accuracy measurement yet: make accuracy (queries the running cluster)._"
    )
    parts.append("")
    parts.append("## The load driver's host during the timed cells\n")
    host = host_load.table(race)
    parts += [sections.markdown(*host) if host else f"_{host_load.NOT_RECORDED}: the race has no {records.HOST_LOAD}._", ""]
    parts += _nodes_section(race)
    parts.append("## What the load driver adds per request\n")
    parts.append(client_cost.race_section(race, out_root))
    for name, draw, caption in catalog.CHARTS:
        if draw(race, out / name):
            parts.append(f"![{caption}]({name})\n")
    path = out / "report.md"
    path.write_text("\n".join(parts))
    return path, summary


def _nodes_section(race):
    """The cluster's nodes over the same windows, as _nodes/stats tells it (a remote cluster's hosts included), or
    why the sampler could not ask them; nothing for a race recorded before the sampler asked."""
    nodes, error = host_load.nodes_table(race), host_load.nodes_error(race)
    if not nodes and not error:
        return []
    said = ["### The cluster's nodes during the timed cells (_nodes/stats)\n"]
    if nodes:
        said.append(sections.markdown(*nodes))
    if error:
        said.append(f"_the sampler could not ask the nodes{' at times' if nodes else ''}: {error}._")
    return said + [""]


def _answers(race):
    """The studies' answers, each a short table, before the detailed sections (a study declares its ANSWER)."""
    parts = []
    for title, build, _, note, _ in catalog.ANSWERS:
        table = build(race)
        if not table:
            continue
        parts += [f"### {title}\n", f"_{table}._" if isinstance(table, str) else sections.markdown(*table), ""]
        if note and not isinstance(table, str):
            parts += [note(race) if callable(note) else note, ""]
    return ["## The answer\n", *parts] if parts else []


def _unfinished_report(race, out, parts):
    """A race that did not finish: what failed (outcome_lines, already in parts) and, marked partial, what passed
    before it stopped; none of the study's sections, which would read as its answer."""
    table = outcome.partial_table(race)
    if table:
        parts += ["## Partial figures: what ran before the race stopped\n", sections.markdown(*table), "", outcome.PARTIAL_NOTE]
    path = out / "report.md"
    path.write_text("\n".join(parts))
    found = outcome.failures(race)
    first = f"; the first cause: {found[0].task}: {found[0].cause}" if found else ""
    return path, [
        f"{outcome.NOT_FINISHED}: Rally wrote no results, so this race has no answer ({len(found)} task(s) with failed samples{first})"
    ]


COMPARE_NOTE = (
    "Coverage ratios: median of the later race over the first's and its 95% interval (each median's "
    "order-statistic interval at 97.5%). " + uncertainty.VERDICT_RULE + " Ingest docs/s: the baseline ingest's "
    "documents over its epochs' summed walls; against the first race, the ratio of epoch walls paired epoch by epoch "
    "(geometric mean) with Student's t-interval over the epochs (above 1: slower), the same verdict rule without the "
    "ms floor."
)


def compare_report(race_list, out_root):
    """The coverage medians and ingest totals of several races side by side, with ratios against the first."""
    first = race_list[0]
    header = ["quantity"] + [r.label for r in race_list] + [f"ratio {r.race_id[:8]} / {first.race_id[:8]}" for r in race_list[1:]]
    verdicts = all(r.samples.individual for r in race_list)
    rows = [["Elasticsearch"] + [r.version or "-" for r in race_list] + [""] * (len(race_list) - 1)]
    cells = [readers.coverage_cells(r) for r in race_list]
    ingests = [ingest.ingest_rows(r) for r in race_list]
    keys = readers.in_study_order({k for c in cells for k in c})
    for v, t in keys:
        values = [_cell_value(r, c, (v, t)) for r, c in zip(race_list, cells)]
        rows.append(
            [f"{readers.study_label(race_list, (v, t))} median (ms)"] + values + _cell_comparisons(race_list, cells, (v, t), values)
        )
    if all(ingests):
        rows.append(_ingest_throughput_row(race_list, ingests))
    for label, key in (
        ("ingest wall (s)", "wall_s"),
        ("bulk took (s)", "bulk_took_s"),
        ("ES indexing (s)", "index_s"),
        ("refresh (s)", "refresh_s"),
        ("merge (s)", "merge_s"),
        ("flush (s)", "flush_s"),
    ):
        values = [
            (
                outcome.NOT_FINISHED
                if not outcome.finished(r)
                else "FAILED" if epochs and ingest.ingest_problem(r) else (sum(row[key] or 0 for row in epochs) if epochs else None)
            )
            for r, epochs in zip(race_list, ingests)
        ]
        if any(v is not None for v in values):
            rows.append([label] + values + _ratios(values))
    out = Path(out_root) / ("compare-" + "-".join(r.race_id[:8] for r in race_list))
    out.mkdir(parents=True, exist_ok=True)
    text = (
        f"# cluster-metrics: {len(race_list)} races side by side\n\n"
        + (sections.markdown(header, rows) if len(rows) > 1 else "_these races share no coverage or ingest tasks._")
        + "\n\n"
        + (
            COMPARE_NOTE
            if verdicts
            else "_Ratios without intervals: a race here has no measured coverage records (a race of an older track version)._"
        )
        + "\n"
    )
    (out / "compare.md").write_text(text)
    return out / "compare.md", text


def _cell_value(race, cells, key):
    """A cell's median in a compare: FAILED for a failed cell, and nothing from a race that did not finish."""
    if not outcome.finished(race):
        return outcome.NOT_FINISHED
    return "FAILED" if readers.failed(cells.get(key)) else readers.valid_median(cells, key)


def _ingest_throughput_row(race_list, ingests):
    """The baseline ingest's documents per second (all epochs' documents over their summed walls), and against the first
    race its epochs' walls paired epoch by epoch (uncertainty.compare_paired: the ratio of walls, so above 1 is slower)."""
    walls = [
        None if ingest.ingest_problem(r) or not outcome.finished(r) else [row["wall_s"] for row in epochs]
        for r, epochs in zip(race_list, ingests)
    ]
    values = [
        (
            (outcome.NOT_FINISHED if not outcome.finished(r) else "FAILED")
            if w is None
            else (sum(row["docs"] for row in epochs) / sum(w) if None not in w and sum(w) else None)
        )
        for r, w, epochs in zip(race_list, walls, ingests)
    ]
    return (
        ["ingest docs/s (vs the first: epoch walls paired)"] + values + [uncertainty.compare_paired(walls[0], w).text() for w in walls[1:]]
    )


def _cell_comparisons(race_list, cells, key, values):
    """Against the first race: the ratio of medians with its 95% interval and a verdict when both races carry their
    samples (report/shared/uncertainty.py), else the bare ratio. A failed cell on either side has no verdict."""
    if not all(r.samples.individual for r in race_list):
        return _ratios(values)
    sides = [None if readers.failed(c.get(key)) else readers.cell_samples(r, key) for r, c in zip(race_list, cells)]
    unfinished = f"no verdict: a race {outcome.NOT_FINISHED}"
    if not outcome.finished(race_list[0]):
        return [unfinished] * (len(race_list) - 1)
    return [
        uncertainty.compare(sides[0], other).text() if outcome.finished(r) else unfinished for r, other in zip(race_list[1:], sides[1:])
    ]


def _ratios(values):
    """Ratios against the first race; none where either side failed or is missing."""
    base = values[0]
    ok = lambda v: isinstance(v, (int, float)) and v  # noqa: E731
    return [(v / base) if ok(v) and ok(base) else None for v in values[1:]]


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["trend"]:  # a team's history: report/history/trend.py
        from report.history import trend

        return trend.main(argv[1:], catalog.TREND_FIGURES)
    if argv[:1] == ["versions"]:  # versions by node start: report/history/versions.py
        from report.history import versions

        return versions.main(argv[1:], catalog.TREND_FIGURES)
    if argv[:1] == ["host"]:  # make race's last line: how busy the load driver's host was during the timed cells
        return host_main(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--race", action="append", help="race id (a unique prefix works); repeat for --compare")
    parser.add_argument("--compare", action="store_true")
    parser.add_argument(
        "--node-scaling",
        action="store_true",
        help="the layout sweep's races on 1 and 2 pinned data nodes, side by side (make node-scaling)",
    )
    parser.add_argument("--rally-home", default=None, help="default: $RALLY_HOME or your home")
    parser.add_argument(
        "--configuration-name", default=None, help="Rally's configuration rally-NAME.ini (as esrally --configuration-name), for its store"
    )
    parser.add_argument("--baseline", default=None, help="an earlier race (id or prefix): every cell's drift against it")
    parser.add_argument("--out", default="reports")
    args = parser.parse_args(argv)
    find = races.source(args.rally_home, args.configuration_name).race  # a race by id (a unique prefix), or the newest

    sets = [[find(race_id) for race_id in arg.split(",") if race_id] for arg in args.race or []]
    if args.node_scaling:
        if sum(len(s) for s in sets) < 2:
            parser.error("--node-scaling needs the races of at least two cluster sizes: make node-scaling (or --race ID1 --race ID2)")
        path, text = scaling.scaling_report([race for s in sets for race in s], args.out)
        print(text)
        print(f"written: {path}")
        return 0
    if args.compare:
        if len(sets) < 2:
            parser.error('--compare needs at least two races or sets: make compare RACES="id1 id2" (or "a1,a2,a3 b1,b2,b3")')
        if all(len(s) == 1 for s in sets):
            path, text = compare_report([s[0] for s in sets], args.out)
        else:
            path, text = repeats.sets_report(sets, args.out)
        print(text)
        print(f"written: {path}")
        return 0
    if sets and len(sets[0]) > 1:
        path, text = repeats.repeat_report(sets[0], args.out)
        print(text)
        print(f"report: {path}")
        return 0
    race = sets[0][0] if sets else find(None)
    path, summary = single_report(race, args.out, find(args.baseline) if args.baseline else None)
    print(f"race {race.race_id} ({race.challenge})")
    for line in summary:
        print(line)
    print(f"report: {path}")
    return 0 if outcome.finished(race) else 1  # a race without an answer is no success of make report's


def host_main(argv):
    """python -m report host [--race ID]: one line on the load driver's host during the race's timed cells (the newest
    race by default), a WARNING when it was busy; exit 0 either way (the race's figures stand, named)."""
    parser = argparse.ArgumentParser(prog="python -m report host")
    parser.add_argument("--race", default=None)
    parser.add_argument("--rally-home", default=None)
    parser.add_argument("--configuration-name", default=None)
    args = parser.parse_args(argv)
    race = races.source(args.rally_home, args.configuration_name).race(args.race)
    print(host_load.summary_line(race))
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except ReportError as e:
        raise SystemExit(str(e))
