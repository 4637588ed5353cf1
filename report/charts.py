"""PNG charts with matplotlib (Agg backend: no display needed)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from report.shared import tables, uncertainty  # noqa: E402
from report.studies import ingest, load, memory, network, widths  # noqa: E402


def _axes(ax, xlabel, ylabel, title=None, yscale="log", legend=8):
    """One panel's labels, scale and legend (legend: its font size, or None for none)."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_yscale(yscale)
    if title:
        ax.set_title(title)
    if legend:
        ax.legend(fontsize=legend)


def _save(fig, path, title=None):
    """Every chart ends alike: its title, laid out, written at one resolution, closed (pyplot keeps figures open)."""
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def coverage_bars(race, path):
    """Grouped bars: median service time per coverage, one group per variant, one bar per transport (log scale)."""
    cells = tables.coverage_cells(race)
    if not any((tables.valid_median(cells, key) or 0) > 0 for key in cells):
        return None  # every cell failed (or took 0 ms): no bar to draw on a log scale; the tables say FAILED
    variants = [v for v in tables.VARIANTS if any((v, t) in cells for t in tables.TRANSPORTS)]
    transports = [t for t in tables.TRANSPORTS if any((v, t) in cells for v in variants)]
    width = 0.8 / len(transports)
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for i, t in enumerate(transports):
        # a failed cell answered wrongly or not at all: no bar (its time means nothing), a FAILED mark instead
        valid = [(j, v) for j, v in enumerate(variants) if tables.valid_median(cells, (v, t)) is not None]
        xs = [j + i * width for j, _ in valid]
        ys = [tables.valid_median(cells, (v, t)) for _, v in valid]
        bars = ax.bar(xs, ys, width, label=t)
        ax.bar_label(bars, labels=[f"{y:.0f}" for y in ys], fontsize=7)
        for j, v in enumerate(variants):
            if tables.failed(cells.get((v, t))):
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
    _axes(ax, "", "median service time per 30-node coverage (ms)", legend=10)
    return _save(fig, path, f"30-node coverage by variant and transport — race {race.race_id[:8]}")


def ingest_stacked(race, path):
    """Per epoch: the bulk wall time split into ES indexing, refresh, merge, flush (from /_stats) and the rest."""
    rows = ingest.ingest_rows(race)
    if not rows:
        return None
    epochs = [str(r["epoch"]) for r in rows]
    phases = [("index_s", "indexing"), ("refresh_s", "refresh"), ("merge_s", "merge"), ("flush_s", "flush")]
    fig, ax = plt.subplots(figsize=(10, 4.5))
    bottom = [0.0] * len(rows)
    for key, label in phases:
        values = [r[key] for r in rows]
        ax.bar(epochs, values, bottom=bottom, label=label)
        bottom = [b + v for b, v in zip(bottom, values)]
    rest = [max((r["wall_s"] or 0) - b, 0) for r, b in zip(rows, bottom)]
    ax.bar(epochs, rest, bottom=bottom, label="rest of wall (client, network, coordination)", color="#cccccc")
    ax.plot(epochs, [r["bulk_took_s"] for r in rows], "k_", markersize=30, mew=2, label="sum of bulk took")
    _axes(ax, "epoch", "seconds", yscale="linear", legend=None)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _save(fig, path, f"Ingest per epoch — race {race.race_id[:8]}")


def _lines(series, path, title, model=None):
    """Median service time against RTT, one line per series; failed points are left out and marked FAILED."""
    if not series:
        return None
    fig, ax = plt.subplots(figsize=(9, 5))
    for label, points in series.items():
        valid = [(r, network._median(op)) for r, op in points if network._median(op) is not None]
        (line,) = ax.plot([r for r, _ in valid], [m for _, m in valid], "o-", label=" ".join(map(str, label)))
        if model and valid:
            rounds = model(label)
            base = network.model_base(valid, rounds)
            xs = [r for r, _ in points]
            ax.plot(xs, [base + rounds * r for r in xs], "--", color=line.get_color(), alpha=0.6)
        for r, op in points:
            if tables.failed(op):
                ax.annotate("FAILED", (r, 0.03), xycoords=("data", "axes fraction"), color="red", fontsize=7, rotation=90, ha="center")
    _axes(ax, "round-trip time added by Toxiproxy (ms)", "median service time per coverage (ms)")
    return _save(fig, path, title)


def rtt_lines(race, path):
    """The RTT sweep: measured (solid) and the model base + round trips x RTT (dashed, same colour)."""
    return _lines(
        network.rtt_series(race),
        path,
        f"Coverage time against RTT — race {race.race_id[:8]} " "(dashed: model)",
        model=lambda label: network.model_round_trips(label[1]),
    )


def ccs_lines(race, path):
    """Cross-cluster search with and without minimized round trips against the RTT between the clusters."""
    series = {(v, t, f"minimize {str(m).lower()}"): points for (v, t, m), points in network.ccs_series(race).items()}
    return _lines(series, path, f"Cross-cluster coverage against RTT — race {race.race_id[:8]}")


def load_lines(race, path):
    """Latency (p50 solid, tail dashed) against the achieved rate, one panel per transport, one line per variant."""
    found = load.cells(race)
    if not found:
        return None
    transports = [t for t in tables.TRANSPORTS if any(t == key[1] for key in found)]
    fig, axes = plt.subplots(1, len(transports), figsize=(5 * len(transports), 4.5), squeeze=False)
    for ax, t in zip(axes[0], transports):
        for (v, cell_t), cell in found.items():
            if cell_t != t:
                continue
            ok = [
                (load.achieved_rate(race, op), op.get("latency", {}).get("50_0"), load.tail_latency(op)[0])
                for _, op, _ in cell["steps"]
                if not tables.failed(op)
            ]
            ok = [p for p in ok if None not in p]
            (line,) = ax.plot([p[0] for p in ok], [p[1] for p in ok], "o-", label=f"{v} p50")
            ax.plot([p[0] for p in ok], [p[2] for p in ok], "s--", color=line.get_color(), label=f"{v} tail")
        ax.axhline(race.param("redline_latency_ms"), color="grey", lw=0.8, ls=":")
        _axes(ax, "achieved coverages per second", "latency (ms)", t, legend=7)
    return _save(fig, path, f"Coverage latency against rate — race {race.race_id[:8]} (dotted: redline limit)")


def memory_tradeoff(race, path):
    """Time against memory per aggregation-memory cell: median coverage time against the request breaker floor
    (left) and against young GCs per coverage (right); colour by percentile algorithm, marker by transport."""
    points = memory.memory_points(race)
    if not points:
        return None
    colours = {"tdigest": "tab:blue", "hdr": "tab:red", "none": "tab:grey"}
    markers = {"serial": "o", "msearch": "s", "terms": "^"}
    fig, axes = plt.subplots(1, 2, figsize=(13, 5.5))
    for ax, index, xlabel in (
        (axes[0], 3, "request breaker floor per coverage (KiB, log)"),
        (axes[1], 5, "young GCs per coverage (JVM statistics)"),
    ):
        for point in points:
            label, transport, algorithm = point[:3]
            ax.scatter(point[index], point[4], color=colours[algorithm], marker=markers.get(transport, "o"), s=36)
            ax.annotate(f"{label} {transport}", (point[index], point[4]), fontsize=6, xytext=(3, 2), textcoords="offset points")
        _axes(ax, xlabel, "median coverage time (ms, log)", legend=None)
        if index == 3:
            ax.set_xscale("log")
    handles = [plt.Line2D([], [], color=c, marker="o", ls="", label=a) for a, c in colours.items()] + [
        plt.Line2D([], [], color="black", marker=m, ls="", label=t) for t, m in markers.items()
    ]
    axes[1].legend(handles=handles, fontsize=7, loc="best")
    return _save(fig, path, f"Time against memory per cell — race {race.race_id[:8]} (failed cells left out)")


def width_lines(race, path):
    """coverage-width: median service time against the width (log-log), one panel per variant, one line per
    transport; each point's 95% interval as an error bar when the race has its samples; failed points left out."""
    cells = widths.width_cells(race)
    if not cells:
        return None
    variants = widths.variants_of(cells)
    columns = min(3, len(variants))
    rows = -(-len(variants) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(5 * columns, 4 * rows), squeeze=False)
    for ax, v in zip(axes.flat, variants):
        for t in widths.transports_of(cells):
            points = []
            for w in widths.widths_of(cells):
                op = cells.get((w, v, t))
                if op is None or tables.failed(op):
                    continue
                samples = widths._samples(race, (w, v, t))
                interval = uncertainty.median_interval(samples) if samples else None
                # the point and its bar from the same samples (the coverage's recorded wall time, or Rally's service
                # time from a store): Rally's median from race.json can lie a hair outside the records' interval
                median = interval.median if interval else tables.service_ms(op, "median")
                low, high = (interval.low, interval.high) if interval and interval.low is not None else (median, median)
                points.append((w, median, median - low, high - median))
            if points:
                ax.errorbar(
                    [p[0] for p in points],
                    [p[1] for p in points],
                    yerr=[[p[2] for p in points], [p[3] for p in points]],
                    fmt="o-",
                    capsize=3,
                    label=widths.label(t),
                )
        ax.set_xscale("log")
        _axes(ax, "monitored nodes (width)", "median per coverage (ms)", v, legend=7)
    for ax in list(axes.flat)[len(variants) :]:
        ax.set_visible(False)
    return _save(fig, path, f"Coverage time against width — race {race.race_id[:8]}")
