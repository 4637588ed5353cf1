"""The study's tables, computed from measured data only. Each returns (header, rows) or None when the race has
no data for it, so that the report can say so plainly."""

VARIANTS = ("A", "B", "C_td", "C_hdr", "D_td", "D_hdr")
TRANSPORTS = ("serial", "msearch", "terms")
BASELINE = ("D_td", "serial")


def service_ms(op, stat):
    """A service-time statistic in ms: 'median' (50_0) or 'p90' (90_0), as race.json holds them. With too few
    samples for that percentile (a --test-mode race has one), Rally keeps only 100_0 and mean: use the mean."""
    if not op:
        return None
    times = op.get("service_time", {})
    return times.get({"median": "50_0", "p90": "90_0"}[stat], times.get("mean"))


def coverage_cells(race):
    ops = race.op_metrics()
    return {(v, t): ops.get(f"coverage-{v}-{t}") for v in VARIANTS for t in TRANSPORTS
            if ops.get(f"coverage-{v}-{t}") is not None}


def ingest_rows(race):
    """Per epoch: wall (bulk task duration), bulk took, took/wall, /_stats deltas, throughput."""
    epochs = race.ingest.get("epochs", []) if race.ingest else []
    ops = race.op_metrics()
    if not epochs:
        return None
    rows = []
    for e in sorted(epochs, key=lambda r: r["epoch"]):
        bulk = ops.get(f"bulk-epoch-{e['epoch']}", {})
        wall = bulk["duration"] / 1000 if bulk.get("duration") is not None else None  # race.json keeps ms
        throughput = bulk.get("throughput", {}).get("median")
        rows.append({"epoch": e["epoch"], "docs": e["docs"], "wall_s": wall, "bulk_took_s": e["bulk_took_ms"] / 1000,
                     "took_share": (e["bulk_took_ms"] / 1000 / wall) if wall else None,
                     "index_s": e["index_ms"] / 1000, "refresh_s": e["refresh_ms"] / 1000,
                     "merge_s": e["merge_ms"] / 1000, "flush_s": e["flush_ms"] / 1000, "merged_mb": e["merged_mb"],
                     "docs_per_s": throughput, "requests": e["bulk_requests"]})
    return rows


def ingest_table(race):
    rows = ingest_rows(race)
    if rows is None:
        return None
    header = ["epoch", "docs", "wall (s)", "bulk took (s)", "took / wall", "index (s)", "refresh (s)", "merge (s)",
              "flush (s)", "merged MB", "docs/s (median)"]
    body = [[r["epoch"], r["docs"], r["wall_s"], r["bulk_took_s"], _pct(r["took_share"]), r["index_s"], r["refresh_s"],
             r["merge_s"], r["flush_s"], r["merged_mb"], r["docs_per_s"]] for r in rows]
    totals = {k: sum(r[k] or 0 for r in rows) for k in ("docs", "wall_s", "bulk_took_s", "index_s", "refresh_s",
                                                          "merge_s", "flush_s", "merged_mb")}
    body.append(["total", totals["docs"], totals["wall_s"], totals["bulk_took_s"],
                 _pct(totals["bulk_took_s"] / totals["wall_s"] if totals["wall_s"] else None), totals["index_s"],
                 totals["refresh_s"], totals["merge_s"], totals["flush_s"], totals["merged_mb"],
                 totals["docs"] / totals["wall_s"] if totals["wall_s"] else None])
    return header, body


def coverage_table(race):
    cells = coverage_cells(race)
    if not cells:
        return None
    transports = [t for t in TRANSPORTS if any((v, t) in cells for v in VARIANTS)]
    header = ["variant"] + [f"{t} {s} (ms)" for t in transports for s in ("median", "p90")] + ["errors"]
    body = []
    for v in VARIANTS:
        if not any((v, t) in cells for t in transports):
            continue
        row = [v]
        errors = 0.0
        for t in transports:
            op = cells.get((v, t))
            row += [service_ms(op, "median"), service_ms(op, "p90")]
            errors = max(errors, op.get("error_rate", 0) if op else 0)
        body.append(row + [_pct(errors)])
    return header, body


def attribution_table(race):
    """Subtractive attribution per transport from median service time per coverage, as the seed did with took."""
    cells = coverage_cells(race)
    transports = [t for t in TRANSPORTS if all((v, t) in cells for v in ("A", "B", "C_td", "C_hdr"))]
    if not transports:
        return None
    med = {k: service_ms(op, "median") for k, op in cells.items()}
    header = ["component"] + [f"{t} (ms)" for t in transports]
    body = [
        ["filter + framework (A)"] + [med[("A", t)] for t in transports],
        ["3x sum (B - A)"] + [med[("B", t)] - med[("A", t)] for t in transports],
        ["3x t-digest percentiles (C_td - A)"] + [med[("C_td", t)] - med[("A", t)] for t in transports],
        ["3x HDR percentiles (C_hdr - A)"] + [med[("C_hdr", t)] - med[("A", t)] for t in transports],
    ]
    return header, body


def speedup_table(race):
    cells = coverage_cells(race)
    if BASELINE not in cells:
        return None
    base = service_ms(cells[BASELINE], "median")
    transports = [t for t in TRANSPORTS if any((v, t) in cells for v in VARIANTS)]
    header = ["variant"] + [f"{t} (x)" for t in transports]
    body = []
    for v in VARIANTS:
        if any((v, t) in cells for t in transports):
            body.append([v] + [(base / service_ms(cells[(v, t)], "median")) if (v, t) in cells else None
                               for t in transports])
    return header, body


def profile_table(race):
    if not race.profile:
        return None
    parts = sorted(race.profile["parts"].items(), key=lambda kv: -kv[1]["nanos"])
    header = ["part", "time (ms, profiled)", "share"]
    return header, [[name, p["nanos"] / 1e6, _pct(p["share"])] for name, p in parts]


def _pct(x):
    return None if x is None else f"{100 * x:.1f}%"


def fmt(value):
    if value is None:
        return "-"
    if isinstance(value, float):
        if abs(value) >= 100:
            return f"{value:,.0f}"
        return f"{value:,.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def markdown(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(fmt(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
