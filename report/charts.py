"""PNG charts with matplotlib (Agg backend: no display needed)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from report import tables  # noqa: E402


def coverage_bars(race, path):
    """Grouped bars: median service time per coverage, one group per variant, one bar per transport (log scale)."""
    cells = tables.coverage_cells(race)
    if not cells:
        return None
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
                ax.text(j + i * width, 0.02, "FAILED", transform=ax.get_xaxis_transform(), rotation=90,
                        ha="center", va="bottom", color="red", fontsize=8, fontweight="bold")
    ax.set_xticks([j + width * (len(transports) - 1) / 2 for j in range(len(variants))], variants)
    ax.set_yscale("log")
    ax.set_ylabel("median service time per 30-node coverage (ms)")
    ax.set_title(f"30-node coverage by variant and transport — race {race.race_id[:8]}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def ingest_stacked(race, path):
    """Per epoch: the bulk wall time split into ES indexing, refresh, merge, flush (from /_stats) and the rest."""
    rows = tables.ingest_rows(race)
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
    ax.set_xlabel("epoch")
    ax.set_ylabel("seconds")
    ax.set_title(f"Ingest per epoch — race {race.race_id[:8]}")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
