"""The study's tables, computed from measured data only. Each returns (header, rows), or None when the race has
no data for it, or a sentence saying why it cannot be built, so that the report can say so plainly.

A cell (task) with an error rate above 0 answered wrongly or not at all: it is marked FAILED in every table and chart
and is never a baseline, a speedup or the fastest cell."""

from report import layout_seed
from report.uncertainty import median_interval
from runners import layouts as layout_rules
from runners.queries import TRANSPORTS, VARIANTS
from runners.tasks import INGEST, VERIFY_DOC_COUNT, bulk_task_name, coverage_task_name, layout_task_name

BASELINE = ("D_td", "serial")


def service_ms(op, stat):
    """A service-time statistic in ms: 'median' (50_0) or 'p90' (90_0), as race.json holds them. With too few
    samples for that percentile (a --test-mode race has one), Rally keeps only 100_0 and mean: use the mean."""
    if not op:
        return None
    times = op.get("service_time", {})
    return times.get({"median": "50_0", "p90": "90_0"}[stat], times.get("mean"))


def failed(op):
    return op is not None and (op.get("error_rate") or 0) > 0


def failed_label(op):
    return f"FAILED ({100 * op['error_rate']:.0f}% errors)"


def coverage_cells(race):
    ops = race.op_metrics()
    return {(v, t): ops[coverage_task_name(v, t)] for v in VARIANTS for t in TRANSPORTS if coverage_task_name(v, t) in ops}


def in_study_order(keys):
    """Cells (variant, transport) in the study's order: variants, then transports, as runners/queries.py lists them."""
    return sorted(keys, key=lambda k: (list(VARIANTS).index(k[0]), TRANSPORTS.index(k[1])))


def valid_median(cells, key):
    """The cell's median service time, or None when the cell is missing or failed."""
    op = cells.get(key)
    return None if op is None or failed(op) else service_ms(op, "median")


def fastest_cell(cells):
    """The fastest cell that did not fail, or None."""
    valid = {k: valid_median(cells, k) for k in cells if valid_median(cells, k) is not None}
    return min(valid, key=valid.get) if valid else None


def epoch_wall(ops, row, bulk_task):
    """An epoch's bulk wall time in s: as the ingest task recorded it (runners/ingest.py: its first bulk's start to its
    last bulk's end, every client's), or, where each epoch was bulk-loaded in a task of its own (the live challenge, and
    every ingest in races before the ingest became one task), that task's duration in race.json; None where neither
    is known."""
    if row.get("wall-s") is not None:
        return row["wall-s"]
    duration = (ops.get(bulk_task) or {}).get("duration")
    return duration / 1000 if duration is not None else None  # race.json keeps ms


def epoch_docs_per_s(ops, row, bulk_task):
    """An epoch's bulk throughput: its documents over its recorded wall, or Rally's median throughput of its own bulk
    task (epoch_wall's older races)."""
    if row.get("wall-s"):
        return row["docs"] / row["wall-s"]
    return (ops.get(bulk_task) or {}).get("throughput", {}).get("median")


def ingest_rows(race):
    """Per epoch: wall (epoch_wall), bulk took, took/wall, /_stats deltas, throughput."""
    epochs = race.ingest.get("epochs", []) if race.ingest else []
    ops = race.op_metrics()
    if not epochs:
        return None
    rows = []
    for e in sorted(epochs, key=lambda r: r["epoch"]):
        wall = epoch_wall(ops, e, bulk_task_name(e["epoch"]))
        throughput = epoch_docs_per_s(ops, e, bulk_task_name(e["epoch"]))
        rows.append(
            {
                "epoch": e["epoch"],
                "docs": e["docs"],
                "wall_s": wall,
                "bulk_took_s": e["bulk-took-ms"] / 1000,
                "took_share": (e["bulk-took-ms"] / 1000 / wall) if wall else None,
                "index_s": e["index-ms"] / 1000,
                "refresh_s": e["refresh-ms"] / 1000,
                "merge_s": e["merge-ms"] / 1000,
                "flush_s": e["flush-ms"] / 1000,
                "merged-mb": e["merged-mb"],
                "docs_per_s": throughput,
                "requests": e["bulk-requests"],
            }
        )
    return rows


def ingest_table(race):
    rows = ingest_rows(race)
    if rows is None:
        return None
    header = [
        "epoch",
        "docs",
        "wall (s)",
        "bulk took (s)",
        "took / wall",
        "index (s)",
        "refresh (s)",
        "merge (s)",
        "flush (s)",
        "merged MB",
        "docs/s",
    ]
    body = [
        [
            r["epoch"],
            r["docs"],
            r["wall_s"],
            r["bulk_took_s"],
            pct(r["took_share"]),
            r["index_s"],
            r["refresh_s"],
            r["merge_s"],
            r["flush_s"],
            r["merged-mb"],
            r["docs_per_s"],
        ]
        for r in rows
    ]
    totals = {
        k: sum(r[k] or 0 for r in rows)
        for k in ("docs", "wall_s", "bulk_took_s", "index_s", "refresh_s", "merge_s", "flush_s", "merged-mb")
    }
    body.append(
        [
            "total",
            totals["docs"],
            totals["wall_s"],
            totals["bulk_took_s"],
            pct(totals["bulk_took_s"] / totals["wall_s"] if totals["wall_s"] else None),
            totals["index_s"],
            totals["refresh_s"],
            totals["merge_s"],
            totals["flush_s"],
            totals["merged-mb"],
            totals["docs"] / totals["wall_s"] if totals["wall_s"] else None,
        ]
    )
    problem = ingest_problem(race)
    if problem:  # the figures stay, for what went wrong; the ingest is never a baseline
        body.append([f"FAILED: {problem}"] + [None] * (len(header) - 1))
    return header, body


def ingest_time_table(race):
    """Per epoch, where the bulk task's wall time went, from Rally's per-request times (mean x requests) and the bulk
    tooks: Elasticsearch (took), the connection and Elasticsearch's HTTP layer (service time - took), the load driver
    inside each request's runner (processing time - service time: the client building the request, Rally parsing the
    response) and between requests (wall - processing time: Rally's bulk parameter source reading the corpus and
    assembling the next body). The wall time is Rally's task duration, which ends where the last request starts, plus
    that request (a mean processing time). With several bulk clients the requests overlap and the parts do not add
    up: None."""
    ops = race.op_metrics()
    epochs = race.ingest.get("epochs", []) if race.ingest else []
    header = [
        "epoch",
        "wall (s)",
        "Elasticsearch: took (s)",
        "connection + HTTP (s)",
        "load driver: runner (s)",
        "load driver: between requests (s)",
        "load driver share",
    ]
    body, totals = [], [0.0] * 5
    for e in sorted(epochs, key=lambda r: r["epoch"]):
        if "wall-s" in e:  # the ingest task's record: each bulk's service time and window (runners/ingest.py)
            wall, service, processing = e["wall-s"], e.get("service-s"), e.get("processing-s")
            if None in (wall, service, processing) or not e["bulk-requests"]:
                return None
        else:
            bulk = ops.get(bulk_task_name(e["epoch"]), {})
            times = [bulk.get(kind, {}).get("mean") for kind in ("service_time", "processing_time")]
            if bulk.get("duration") is None or None in times or not e["bulk-requests"]:
                return None
            # Rally's task duration ends where the last request starts (the last sample's relative time): plus that request
            service, processing = (t * e["bulk-requests"] / 1000 for t in times)
            wall = bulk["duration"] / 1000 + times[1] / 1000
        if processing > wall * 1.01:
            return None
        parts = [wall, e["bulk-took-ms"] / 1000, service - e["bulk-took-ms"] / 1000, processing - service, wall - processing]
        totals = [t + p for t, p in zip(totals, parts)]
        body.append([e["epoch"], *parts, pct(ratio(parts[3] + parts[4], wall))])
    if not body:
        return None
    body.append(["total", *totals, pct(ratio(totals[3] + totals[4], totals[0]))])
    return header, body


def ingest_problem(race, prefix=""):
    """Why the race's ingest failed (a bulk with failed samples, or documents lost or duplicated), or None. prefix: that
    of the ingest's task names, where a challenge ingests several times (ingest-changes' "change-clients-")."""
    ops = race.op_metrics()
    failed_bulks = sorted(task for task, op in ops.items() if task.startswith(prefix + bulk_task_name("")) and failed(op))
    count = ops.get(prefix + VERIFY_DOC_COUNT)
    problems = [f"failed bulk requests in {', '.join(failed_bulks)}"] if failed_bulks else []
    if failed(ops.get(prefix + INGEST)):
        problems.append(f"failed samples in {prefix + INGEST}: a failed bulk, or a document count that differs from the corpus's")
    if failed(count):
        problems.append(f"the document count differs from the corpus's ({prefix + VERIFY_DOC_COUNT})")
    return "; ".join(problems) or None


def cell_samples(race, key):
    """The cell's measured service times (a race read from a metrics store), or None (no store, or a failed cell)."""
    return (race.samples or {}).get(coverage_task_name(*key))


def coverage_table(race):
    """Median and p90 per cell; with each sample's service time (a race from a metrics store), the median's 95%
    interval and the sample count (report/uncertainty.py)."""
    cells = coverage_cells(race)
    if not cells:
        return None
    transports = [t for t in TRANSPORTS if any((v, t) in cells for v in VARIANTS)]
    stats = ("median", "p90", "95% interval") if race.samples is not None else ("median", "p90")
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
                samples = cell_samples(race, (v, t)) if race.samples is not None else None
                # with samples, the median beside its interval is theirs (Rally's race.json median can differ by a hair)
                row += [median_interval(samples).median if samples else service_ms(op, "median"), service_ms(op, "p90")]
                if race.samples is not None:
                    row.append(median_interval(samples).text() if samples else "-")
            errors = max(errors, op.get("error_rate", 0) if op else 0)
        body.append(row + [pct(errors)])
    return header, body


def validation_table(race):
    """Per coverage task: the coverages checked against the ground truth (warm-up ones too), their checks, the failed
    ones, and the worst relative percentile error seen."""
    per_task = {}
    for row in race.validation:
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


LAYOUT_CELLS = (("D_td", "msearch"), ("D_td", "terms"), ("D_hdr", "msearch"), ("D_hdr", "terms"))
LAYOUT_BASELINE = "1S0R"


def _layout_ops(race):
    """{layout: {task name within the layout: op}} for the layouts the race swept (its track parameter layouts,
    else the vocabulary's), in sweep order."""
    names = race.param("layouts")
    ops = race.op_metrics()
    found = {}
    for layout in names:
        prefix = layout_task_name(layout, "")
        mine = {task[len(prefix) :]: op for task, op in ops.items() if task.startswith(prefix)}
        if mine:
            found[layout] = mine
    return found


def layout_ingest_rows(race):
    """Per layout: documents (primaries, from layout-stats), bulk wall time (its epochs', epoch_wall), docs/s."""
    rows = []
    for layout, ops in _layout_ops(race).items():
        epochs = (race.layout_ingest.get(layout) or {}).get("epochs") or []
        walls = [epoch_wall(ops, row, bulk_task_name(row["epoch"])) for row in epochs]
        if not epochs:  # a race without the layout's ingest record: its bulk tasks
            walls = [op["duration"] / 1000 for task, op in ops.items() if task.startswith(bulk_task_name(""))]
        copies = race.layouts.get(layout, {}).get("ingested", [])
        docs = sum(c["docs"] for c in copies if c["primary"])
        wall = sum(walls) if walls and None not in walls else None
        rows.append(
            {
                "layout": layout,
                "docs": docs,
                "wall_s": wall,
                "failed": ingest_problem(race, layout_task_name(layout, "")) is not None,
                "docs_per_s": docs / wall if wall and docs else None,
            }
        )
    return rows


def _normalized(value, base):
    return value / base if isinstance(value, (int, float)) and isinstance(base, (int, float)) and base else None


def layout_ingest_table(race):
    rows = layout_ingest_rows(race)
    if not rows:
        return None
    base = next((r["docs_per_s"] for r in rows if r["layout"] == LAYOUT_BASELINE and not r["failed"]), None)
    header = ["layout", "shards", "replicas", "docs", "bulk wall (s)", "docs/s", f"vs {LAYOUT_BASELINE}"]
    body = []
    for r in rows:
        shards, replicas = layout_rules.parse_layout(r["layout"])
        rate = "FAILED" if r["failed"] else r["docs_per_s"]
        body.append([r["layout"], shards, replicas, r["docs"], r["wall_s"], rate, _normalized(rate, base)])
    return header, body


def layout_data_nodes(race):
    """The race's data nodes (its search-pool record), else the seed's 3 (the layout sweep's meta data_nodes)."""
    return (race.search_pool or {}).get("data-nodes") or layout_seed.SEED_DATA_NODES


def layout_query_table(race):
    """Coverage throughput (coverages/s, median, all search clients together) per layout and cell; beside the mean
    ratio to 1S0R, seed 003's q/s model on the race's data nodes, normalized to 1S0R as the seed's chart is
    (report/layout_seed.py)."""
    found = _layout_ops(race)
    if not found:
        return None
    header = ["layout"] + [f"{v} {t} (cov/s)" for v, t in LAYOUT_CELLS] + [f"mean vs {LAYOUT_BASELINE}", f"seed 003 vs {LAYOUT_BASELINE}"]
    nodes = layout_data_nodes(race)

    def rate(ops, v, t):
        op = ops.get(coverage_task_name(v, t))
        if op is None:
            return None
        return "FAILED" if failed(op) else op.get("throughput", {}).get("median")

    base = [rate(found.get(LAYOUT_BASELINE, {}), v, t) for v, t in LAYOUT_CELLS]
    body = []
    for layout, ops in found.items():
        rates = [rate(ops, v, t) for v, t in LAYOUT_CELLS]
        ratios = [_normalized(r, b) for r, b in zip(rates, base)]
        valid = [x for x in ratios if x is not None]
        mean = sum(valid) / len(valid) if valid and len(valid) == len(ratios) else None
        body.append([layout] + rates + [mean, layout_seed.query_ratio(layout, nodes)])
    return header, body


def layout_placement_table(race):
    """Per layout: each node's shard copies, share of indexing and of search work; the busiest node."""
    if not race.layouts:
        return None
    header = ["layout", "node", "shard copies", "indexing share", "search share", "bottleneck"]
    body = []
    for layout, record in race.layouts.items():
        ingested, searched = record.get("ingested", []), record.get("searched", [])
        indexing = layout_rules.node_shares(ingested, "index_total")
        search = layout_rules.node_shares(searched, "query_total") if searched else {}
        bottleneck = layout_rules.bottleneck(indexing)
        for node in sorted(indexing):
            copies = " ".join(f"{'P' if c['primary'] else 'R'}{c['shard']}" for c in ingested if c["node"] == node)
            body.append([layout, node, copies, pct(indexing[node]), pct(search.get(node)), "indexing" if node == bottleneck else ""])
    return header, body


def ratio(numerator, denominator):
    """numerator / denominator, or None where either is missing or the denominator is 0 (a took counts whole
    milliseconds: a small index answers in 0): a share or ratio of nothing is no figure, never a division error."""
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def pct(x):
    """A fraction as a percentage with one decimal, or None."""
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
