"""The ingest tables: per epoch, its wall, bulk took, the node's indexing, refresh, merge and flush time, and where an
epoch's wall time goes; each returns (header, rows), None without data, or a sentence saying why it cannot be built."""

from report.shared import charts
from report.shared.readers import failed
from report.shared.sections import Chart, Section, pct, ratio
from runners.contracts import records


def ingest_task(race, **condition):
    """The task of this race's ingest under a condition (layout="2S1R", change="clients"; none: the challenge's one
    ingest), found by its cell (runners/contracts/cells.py); None when the race ran no such ingest."""
    return race.task_of(measure="ingest", **condition)


def ingest_prefix(race, **condition):
    """The prefix of that ingest's task names (records.ingest_prefix), or None when the race ran no such ingest."""
    task = ingest_task(race, **condition)
    return None if task is None else records.ingest_prefix(task)


def ingest_record(race, **condition):
    """The record file of that ingest's per-epoch cost (records.ingest_record), or None."""
    prefix = ingest_prefix(race, **condition)
    return None if prefix is None else records.ingest_record(prefix)


# Names of tasks an ingest had in races from before it became one task, which the report still reads in those races:
# each epoch's bulk load, and the count check after the last (the live and network-faults challenges' count check
# keeps that name, prefix "")
def epoch_task(prefix, epoch):
    return f"{prefix}bulk-epoch-{epoch}"


def count_task(prefix):
    return f"{prefix}verify-doc-count"


def epoch_wall(ops, row, bulk_task):
    """An epoch's bulk wall time in s: as the ingest task recorded it (runners/studies/ingest.py: its first bulk's start to its
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
    epochs = ingest_of(race).get("epochs", [])
    ops = race.op_metrics()
    if not epochs:
        return None
    rows = []
    prefix = ingest_prefix(race) or ""
    for e in sorted(epochs, key=lambda r: r["epoch"]):
        wall = epoch_wall(ops, e, epoch_task(prefix, e["epoch"]))
        throughput = epoch_docs_per_s(ops, e, epoch_task(prefix, e["epoch"]))
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
    ops, prefix = race.op_metrics(), ingest_prefix(race) or ""
    epochs = ingest_of(race).get("epochs", [])
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
        if "wall-s" in e:  # the ingest task's record: each bulk's service time and window (runners/studies/ingest.py)
            wall, service, processing = e["wall-s"], e.get("service-s"), e.get("processing-s")
            if None in (wall, service, processing) or not e["bulk-requests"]:
                return None
        else:
            bulk = ops.get(epoch_task(prefix, e["epoch"]), {})
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


def ingest_problem(race, **condition):
    """Why the race's ingest under a condition failed (a bulk with failed samples, or documents lost or duplicated), or
    None; the condition as for ingest_task, where a challenge ingests several times (ingest-changes' change="clients")."""
    task = ingest_task(race, **condition)
    if task is None:
        return None
    prefix, ops = records.ingest_prefix(task), race.op_metrics()
    failed_bulks = sorted(name for name, op in ops.items() if name.startswith(epoch_task(prefix, "")) and failed(op))
    count = ops.get(count_task(prefix))
    problems = [f"failed bulk requests in {', '.join(failed_bulks)}"] if failed_bulks else []
    if failed(ops.get(task)):
        problems.append(f"failed samples in {task}: a failed bulk, or a document count that differs from the corpus's")
    if failed(count):
        problems.append(f"the document count differs from the corpus's ({count_task(prefix)})")
    return "; ".join(problems) or None


INGEST_NOTE = (
    "wall: from the epoch's first bulk start to its last bulk end, as the ingest task recorded them (races whose "
    "epochs were tasks of their own: the duration of task bulk-epoch-N in race.json). docs/s: the epoch's documents over "
    "its wall (those races: Rally's median throughput of the task). bulk took: the sum of the bulk responses' "
    "`took` (Elasticsearch's clock ticks every 200 ms, so only sums are meaningful; with several "
    "clients the requests overlap and took / wall can exceed 100%). index / refresh / merge / "
    "flush: `/_stats` deltas, summed over shards and threads.\n"
)

INGEST_TIME_NOTE = (
    "From each bulk's Rally service time and its runner call's window as the ingest task recorded them, added up per "
    "epoch (races whose epochs were tasks of their own: Rally's mean service and processing time x the bulk requests): "
    "Elasticsearch is the bulk tooks; connection + HTTP is service time - took; the load driver's runner is the bulk "
    "calls' windows - service time (the client building the request, Rally reading the response); between requests is "
    "wall - the windows (Rally's bulk parameter source reading the corpus and assembling the next body). wall: the "
    "epoch's first bulk start to its last bulk end (those races: Rally's task duration plus one mean processing time). "
    "Shown for one bulk client only: several overlap.\n"
)

# this study's report sections, in report order
SECTIONS = [
    Section("Ingest per epoch", ingest_table, "ingest", INGEST_NOTE),
    Section("Ingest: where an epoch's wall time goes", ingest_time_table, "ingest time breakdown", INGEST_TIME_NOTE),
]


def ingest_stacked(race, path):
    """Per epoch: the bulk wall time split into ES indexing, refresh, merge, flush (from /_stats) and the rest."""
    rows = ingest_rows(race)
    if not rows:
        return None
    epochs = [str(r["epoch"]) for r in rows]
    phases = [("index_s", "indexing"), ("refresh_s", "refresh"), ("merge_s", "merge"), ("flush_s", "flush")]
    fig, ax = charts.plt.subplots(figsize=(10, 4.5))
    bottom = [0.0] * len(rows)
    for key, label in phases:
        values = [r[key] for r in rows]
        ax.bar(epochs, values, bottom=bottom, label=label)
        bottom = [b + v for b, v in zip(bottom, values)]
    rest = [max((r["wall_s"] or 0) - b, 0) for r, b in zip(rows, bottom)]
    ax.bar(epochs, rest, bottom=bottom, label="rest of wall (client, network, coordination)", color="#cccccc")
    ax.plot(epochs, [r["bulk_took_s"] for r in rows], "k_", markersize=30, mew=2, label="sum of bulk took")
    charts.axes(ax, "epoch", "seconds", yscale="linear", legend=None)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return charts.save(fig, path, f"Ingest per epoch — race {race.race_id[:8]}")


CHARTS = (Chart("ingest.png", ingest_stacked, "Ingest per epoch by phase"),)


def ingest_of(race):
    """The race's own ingest record (records.INGEST: its per-epoch cost), {} without one."""
    return race.record(records.INGEST, {})
