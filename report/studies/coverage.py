"""The 30-node coverage's tables: service time per cell, validation counts, speedup against the production query
(Rally's medians), drift within the race; the study's answer in seed 000's terms is report/studies/coverage_answer.py's.
A failed cell is marked FAILED and is never a baseline, a speedup or the fastest cell."""

from report.shared import charts, readers, uncertainty
from report.shared.readers import BASELINE, cell_samples, coverage_cells, failed, failed_label, service_ms, valid_median
from report.shared.sections import Chart, Section, pct
from report.shared.uncertainty import median_interval
from report.studies.memory import FLOOR_MEASURE
from runners.contracts.queries import TRANSPORTS, VARIANTS


def coverage_table(race):
    """Median and p90 per cell; with each sample's service time (a race from a metrics store), the median's 95%
    interval and the sample count (report/shared/uncertainty.py)."""
    cells = coverage_cells(race)
    if not cells:
        return None
    transports = [t for t in TRANSPORTS if any((v, t) in cells for v in VARIANTS)]
    stats = ("median", "p90", "95% interval") if race.samples.individual else ("median", "p90")
    header = ["variant"] + [f"{t} {s} (ms)" for t in transports for s in stats] + ["errors"]
    body = []
    for v in VARIANTS:
        if not any((v, t) in cells for t in transports):
            continue
        row = [v]
        errors = 0.0
        for t in transports:
            op = cells.get((v, t))
            if failed(op):
                row += [failed_label(op)] + ["-"] * (len(stats) - 1)
            else:
                samples = cell_samples(race, (v, t))
                # with samples, the median beside its interval is theirs (Rally's race.json median can differ by a hair)
                row += [median_interval(samples).median if samples else service_ms(op, "median"), service_ms(op, "p90")]
                if race.samples.individual:
                    row.append(median_interval(samples).text() if samples else "-")
            errors = max(errors, op.get("error_rate", 0) if op else 0)
        body.append(row + [pct(errors)])
    return header, body


def validation_table(race):
    """Per coverage task: the coverages checked against the ground truth (warm-up ones too), their checks, the failed
    ones, and the worst relative percentile error seen."""
    per_task = {}
    for row in readers.validation(race):
        per_task.setdefault(row["task"], []).append(row)
    if not per_task:
        return None
    header = ["task", "coverages", "checks", "failed checks", "worst percentile error"]
    body = []
    for task, rows in sorted(per_task.items()):
        errors = [r["percentile-rel-error-max"] for r in rows if r.get("percentile-rel-error-max") is not None]
        worst = f"{max(errors):.3%}" if errors else "-"
        body.append([task, len(rows), sum(r["checks"] or 0 for r in rows), sum(r["failed-checks"] or 0 for r in rows), worst])
    return header, body


def speedup_table(race):
    cells = coverage_cells(race)
    if BASELINE not in cells:
        return None
    if failed(cells[BASELINE]):
        return f"the baseline D_td serial {failed_label(cells[BASELINE])}: no speedup can be measured against it"
    base = valid_median(cells, BASELINE)
    transports = [t for t in TRANSPORTS if any((v, t) in cells for v in VARIANTS)]
    header = ["variant"] + [f"{t} (x)" for t in transports]
    body = []
    for v in VARIANTS:
        if any((v, t) in cells for t in transports):
            body.append(
                [v]
                + [
                    None if (v, t) not in cells else "FAILED" if failed(cells[(v, t)]) else base / valid_median(cells, (v, t))
                    for t in transports
                ]
            )
    return header, body


def coverage_note(race):
    if not race.samples.individual:
        return (
            "No interval: this race has no record of its measured coverages (a race of an older track version, "
            "before each coverage recorded its wall time and took).\n"
        )
    return (
        f"95% interval: the order-statistic interval of the median (distribution-free), n measured samples ({race.samples.source}); "
        f"from {uncertainty.min_samples(uncertainty.CONFIDENCE) - 1} samples or fewer there is none (report/shared/uncertainty.py).\n"
    )


def drifts(race):
    """{task: its drift Comparison} of every coverage task whose measured samples repeat one measurement
    (uncertainty.drifts: last third against first, judged together), from each coverage's recorded wall time: the same
    on every path (a race from its files or from a metrics store, whose replayed records are the same lines); not a
    breaker floor's, whose samples are the steps of its bisection."""
    walls = {}
    for task in sorted({line.get("task") for line in readers.validation(race) if line.get("measured")}):
        if (race.cells.get(task) or {}).get("measure") == FLOOR_MEASURE:
            continue
        found = readers.measured(race, task, "wall-ms")
        if found:
            walls[task] = found
    return uncertainty.drifts(walls)


def drifting(found):
    """Of drifts(race)'s {task: comparison}, the tasks whose samples drift within the race beyond noise."""
    return {task: d for task, d in found.items() if d.verdict in (uncertainty.FASTER, uncertainty.SLOWER)}


def drift_table(race):
    """Per measured task: its samples, the geometric means of their first and last thirds, and the ratio with its
    interval and verdict (uncertainty.drifts); None for a race without measured records."""
    found = drifts(race)
    if not found:
        return None
    header = ["task", "measured", "first third (ms, geometric mean)", "last third (ms, geometric mean)", "last / first [95%] verdict"]
    body = []
    for task, comparison in found.items():
        samples = readers.measured(race, task, "wall-ms")
        k = len(samples) // 3
        thirds = [uncertainty.geometric_mean(part) if k else None for part in (samples[:k], samples[len(samples) - k :])]
        body.append([task, len(samples), *thirds, comparison.text()])
    return header, body


DRIFT_NOTE = uncertainty.DRIFT_RULE + " A cell that drifts is named in the report's first lines.\n"


# this study's report sections, in report order
SECTIONS = [
    Section("30-node coverage: service time per coverage", coverage_table, "coverage", coverage_note),
    Section("Validation: every coverage checked against the ground truth", validation_table, "validation counts", None),
    Section("Drift within the race: each cell's last third against its first", drift_table, "measured coverage records", DRIFT_NOTE),
]


def coverage_bars(race, path):
    """Grouped bars: median service time per coverage, one group per variant, one bar per transport (log scale)."""
    cells = readers.coverage_cells(race)
    if not any((readers.valid_median(cells, key) or 0) > 0 for key in cells):
        return None  # every cell failed (or took 0 ms): no bar to draw on a log scale; the tables say FAILED
    variants = [v for v in VARIANTS if any((v, t) in cells for t in TRANSPORTS)]
    transports = [t for t in TRANSPORTS if any((v, t) in cells for v in variants)]
    width = 0.8 / len(transports)
    fig, ax = charts.plt.subplots(figsize=(9, 4.5))
    for i, t in enumerate(transports):
        # a failed cell answered wrongly or not at all: no bar (its time means nothing), a FAILED mark instead
        valid = [(j, v) for j, v in enumerate(variants) if readers.valid_median(cells, (v, t)) is not None]
        xs = [j + i * width for j, _ in valid]
        ys = [readers.valid_median(cells, (v, t)) for _, v in valid]
        bars = ax.bar(xs, ys, width, label=t)
        ax.bar_label(bars, labels=[f"{y:.0f}" for y in ys], fontsize=7)
        for j, v in enumerate(variants):
            if readers.failed(cells.get((v, t))):
                ax.text(
                    j + i * width,
                    0.02,
                    "FAILED",
                    transform=ax.get_xaxis_transform(),
                    rotation=90,
                    ha="center",
                    va="bottom",
                    color="red",
                    fontsize=8,
                    fontweight="bold",
                )
    ax.set_xticks([j + width * (len(transports) - 1) / 2 for j in range(len(variants))], variants)
    charts.axes(ax, "", "median service time per 30-node coverage (ms)", legend=10)
    return charts.save(fig, path, f"30-node coverage by variant and transport — race {race.race_id[:8]}")


CHARTS = (Chart("coverage.png", coverage_bars, "Coverage by variant and transport"),)
