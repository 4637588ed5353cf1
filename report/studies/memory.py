"""aggregation-memory's table: per cell its request breaker floor and GC activity beside its time (seed 002's question
on the query DSL's aggregations)."""

from report.shared import charts, readers
from report.shared.sections import Chart, Section
from runners.contracts import queries, records

KIB = 1024
FLOOR_MEASURE = "breaker-floor"  # a floor task's cell measure: its samples are the bisection's steps, not repeats of one cell


def _setting(row):
    if row.get("hdr-digits") is not None and queries.percentile_algorithm(row["variant"]) == "hdr":
        return f"hdr {row['hdr-digits']} digits"
    if queries.percentile_algorithm(row["variant"]) == "tdigest":
        return f"t-digest {row.get('tdigest-compression') or queries.DEFAULT_COMPRESSION}"
    return "-"


def memory_cells(race):
    """[(cell, floor record or None, timed op, floor op)] of the aggregation-memory cells, in run order: each breaker
    floor's task (its cell measures "breaker-floor") beside the timed coverages of the same cell."""
    ops, cells = race.op_metrics(), race.cells
    rows = {r["task"]: r for r in race.record(records.MEMORY, [])}
    return [
        (cells[task], rows.get(task), ops.get(race.task_of(**{**cells[task], "measure": "time"})), op)
        for task, op in ops.items()
        if cells.get(task, {}).get("measure") == FLOOR_MEASURE
    ]


def memory_table(race):
    found = memory_cells(race)
    if not found:
        return None
    header = [
        "variant",
        "setting",
        "transport",
        "median (ms)",
        "breaker floor (KiB)",
        "trips at (KiB)",
        "young GCs / coverage",
        "GC ms / coverage",
    ]
    body = []
    for cell, row, timed, floor in found:
        if row is None or readers.failed(floor):
            body.append(
                [
                    cell["variant"],
                    _setting(cell),
                    cell["transport"],
                    readers.op_median(timed) if timed and not readers.failed(timed) else "FAILED",
                    "FAILED",
                    None,
                    None,
                    None,
                ]
            )
            continue
        floor_kib = row["floor-bytes"] / KIB
        body.append(
            [
                row["variant"],
                _setting(row),
                row["transport"],
                readers.op_median(timed) if not readers.failed(timed) else "FAILED",
                floor_kib if row["below-bytes"] else f"< {floor_kib:.0f}",
                row["below-bytes"] / KIB or None,
                row["young-gcs-per-coverage"],
                row["gc-ms-per-coverage"],
            ]
        )
    return header, body


MEMORY_NOTE = (
    "breaker floor: the lowest indices.breaker.request.limit at which memory_attempts coverages in a row succeeded "
    "(trips at: the highest limit at which one tripped the request breaker; the floor is within memory_resolution of "
    "it). It is the memory the request breaker accounts to one coverage on an idle node: on the coordinating node, "
    "the reservation for the shard results it reduces, plus terms buckets and other BigArrays; for msearch, summed "
    "over the searches running at once. In Elasticsearch 8.17 (read in its source) the shard-level t-digest and HDR states are created outside "
    "the breaker, so their size shows only through what is serialized back to the coordinator. young GCs / GC ms: "
    "young-generation collections per coverage at the node's own limit (the node's JVM statistics, over the "
    "memory_attempts baseline coverages), which count every allocation, breaker-accounted or not. Seed 002 (ES|QL's "
    "rate buffers: 10,000 series x 30 buckets x 16 KB pages, ~4.9 GB reserved per driver) is not reproduced: ES|QL is "
    "x-pack, which no distribution here has (the node is built from the Apache-licensed server jars); this table "
    "measures instead what the query DSL's aggregations reserve per coverage, and not ES|QL's buffers, its drivers "
    "or its page sizes.\n"
)


def memory_points(race):
    """[(label, transport, algorithm, floor KiB, median ms, young GCs per coverage)] of the cells that passed."""
    points = []
    for cell, row, timed, floor in memory_cells(race):
        if row is None or readers.failed(floor) or timed is None or readers.failed(timed):
            continue
        points.append(
            (
                f"{row['variant']} {_setting(row)}",
                row["transport"],
                queries.percentile_algorithm(row["variant"]) or "none",
                row["floor-bytes"] / KIB,
                readers.op_median(timed),
                row["young-gcs-per-coverage"],
            )
        )
    return points


# this study's report sections, in report order
SECTIONS = [
    Section(
        "Aggregation memory: request breaker floor and GC activity per cell, beside its time",
        memory_table,
        "aggregation memory",
        MEMORY_NOTE,
    ),
]


def memory_tradeoff(race, path):
    """Time against memory per aggregation-memory cell: median coverage time against the request breaker floor
    (left) and against young GCs per coverage (right); colour by percentile algorithm, marker by transport."""
    points = memory_points(race)
    if not points:
        return None
    colours = {"tdigest": "tab:blue", "hdr": "tab:red", "none": "tab:grey"}
    markers = {"serial": "o", "msearch": "s", "terms": "^"}
    fig, axes = charts.plt.subplots(1, 2, figsize=(13, 5.5))
    for ax, index, xlabel in (
        (axes[0], 3, "request breaker floor per coverage (KiB, log)"),
        (axes[1], 5, "young GCs per coverage (JVM statistics)"),
    ):
        for point in points:
            label, transport, algorithm = point[:3]
            ax.scatter(point[index], point[4], color=colours[algorithm], marker=markers.get(transport, "o"), s=36)
            ax.annotate(f"{label} {transport}", (point[index], point[4]), fontsize=6, xytext=(3, 2), textcoords="offset points")
        charts.axes(ax, xlabel, "median coverage time (ms, log)", legend=None)
        if index == 3:
            ax.set_xscale("log")
    handles = [charts.plt.Line2D([], [], color=c, marker="o", ls="", label=a) for a, c in colours.items()] + [
        charts.plt.Line2D([], [], color="black", marker=m, ls="", label=t) for t, m in markers.items()
    ]
    axes[1].legend(handles=handles, fontsize=7, loc="best")
    return charts.save(fig, path, f"Time against memory per cell — race {race.race_id[:8]} (failed cells left out)")


CHARTS = (Chart("memory.png", memory_tradeoff, "Coverage time against memory per cell"),)
