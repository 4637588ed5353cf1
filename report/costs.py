"""The report's cost sections: what _source costs per mode (storage, ingest, coverage and fetch time), and what each
aggregation cell costs in memory (request breaker floor, young GCs) beside its time.

A failed task is FAILED in its column and takes no part in a ratio."""

from report import ingest, tables
from runners import queries
from runners.tasks import breaker_floor_task_name, bulk_task_name, coverage_task_name, fetch_task_name, memory_task_name, source_task_name

SOURCE_BASELINE = "stored"
KIB = 1024


def _median(op):
    return None if op is None or tables.failed(op) else tables.service_ms(op, "median")


def _mib(value):
    return None if value is None else value / 2**20


def source_modes(race):
    """The modes this race measured, in its order."""
    return [m for m in race.param("source_modes") if m in race.sources or m in race.source_ingest]


def source_rows(race):
    """{quantity label: {mode: value or "FAILED"}} for the source-cost table, in table order."""
    ops = race.op_metrics()
    rows = {}

    def put(label, mode, value):
        rows.setdefault(label, {})[mode] = value

    for mode in source_modes(race):
        storage, mode_ingest = race.sources.get(mode, {}), race.source_ingest.get(mode, {})
        failed_storage = tables.failed(ops.get(source_task_name(mode, "storage")))
        for phase, label in (("ingested", "store as ingested (MiB)"), ("merged", "store, 1 segment (MiB)")):
            if phase in storage:
                put(label, mode, "FAILED" if failed_storage else _mib(storage[phase]["store_bytes"]))
        fields = storage.get("disk-usage", {}).get("fields", {})
        if fields:
            put("_source stored (MiB)", mode, _mib(fields.get("_source", {}).get("total", 0)))
            put("doc values, all fields (MiB)", mode, _mib(sum(f.get("doc_values", 0) for f in fields.values())))
        if mode_ingest.get("epochs"):
            walls = [ingest.epoch_wall(ops, e, source_task_name(mode, bulk_task_name(e["epoch"]))) for e in mode_ingest["epochs"]]
            wall = sum(w for w in walls if w is not None)
            docs = sum(e["docs"] for e in mode_ingest["epochs"])
            bad = ingest.ingest_problem(race, source_task_name(mode, "")) is not None
            put("ingest wall (s)", mode, "FAILED" if bad else wall)
            put("ingest docs/s", mode, "FAILED" if bad else (docs / wall if wall else None))
            put("ES indexing time (s)", mode, sum(e["index-ms"] for e in mode_ingest["epochs"]) / 1000)
            put("merge time (s)", mode, sum(e["merge-ms"] for e in mode_ingest["epochs"]) / 1000)
        for v in race.param("source_variants"):
            for t in race.param("source_transports"):
                op = ops.get(source_task_name(mode, coverage_task_name(v, t)))
                if op:
                    put(f"coverage {v} {t}, median (ms)", mode, _median(op) if not tables.failed(op) else "FAILED")
        for k in race.param("fetch_kinds"):
            for t in race.param("fetch_transports"):
                op = ops.get(source_task_name(mode, fetch_task_name(k, t)))
                label = f"fetch {race.param('fetch_size')} hits/node with {k} over {t}, median (ms)"
                if op:
                    put(label, mode, _median(op) if not tables.failed(op) else "FAILED")
                elif k == "source" and mode == "disabled":
                    put(label, mode, "n/a (no _source)")
    return rows


def source_table(race):
    """Rows: quantities; columns: the modes, then each mode against stored."""
    modes = source_modes(race)
    if not modes:
        return None
    others = [m for m in modes if m != SOURCE_BASELINE] if SOURCE_BASELINE in modes else []
    header = ["quantity"] + modes + [f"{m} / {SOURCE_BASELINE}" for m in others]
    body = []
    for label, values in source_rows(race).items():
        base = values.get(SOURCE_BASELINE)
        body.append([label] + [values.get(m) for m in modes] + [tables.normalized(values.get(m), base) for m in others])
    return header, body


SOURCE_NOTE = (
    "store, 1 segment: after a force merge to one segment, so every mode is compared in the same shape. _source "
    "stored and doc values: the _disk_usage API on that segment. A coverage is size 0 (aggregations only): it never "
    "reads _source. A fetch returns each node's N busiest samples (sorted by cpu): with _source (stored: read and "
    "sent as kept; synthetic: rebuilt from doc values per hit) or with docvalue_fields (the only way to get values "
    "back without a _source). Disabled has no _source fetch. Ratios are against stored, Elasticsearch's default.\n"
)


def _setting(row):
    if row.get("hdr-digits") is not None and queries.percentile_algorithm(row["variant"]) == "hdr":
        return f"hdr {row['hdr-digits']} digits"
    if queries.percentile_algorithm(row["variant"]) == "tdigest":
        return f"t-digest {row.get('tdigest-compression') or queries.DEFAULT_COMPRESSION}"
    return "-"


def memory_cells(race):
    """[(cell name, floor record or None, timed op, floor op)] of the aggregation-memory cells, in run order."""
    ops = race.op_metrics()
    rows = {r["task"]: r for r in race.memory}
    prefix = breaker_floor_task_name("")
    return [
        (task[len(prefix) :], rows.get(task), ops.get(memory_task_name(task[len(prefix) :])), op)
        for task, op in ops.items()
        if task.startswith(prefix)
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
        if row is None or tables.failed(floor):
            variant, transport, *setting = cell.split("-")  # "D_hdr-msearch-hdr-4"
            body.append(
                [
                    variant,
                    _setting(
                        {
                            "variant": variant,
                            "hdr-digits": setting[-1] if setting else None,
                            "tdigest-compression": setting[-1] if setting else None,
                        }
                    ),
                    transport,
                    _median(timed) if timed and not tables.failed(timed) else "FAILED",
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
                _median(timed) if not tables.failed(timed) else "FAILED",
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
        if row is None or tables.failed(floor) or timed is None or tables.failed(timed):
            continue
        points.append(
            (
                f"{row['variant']} {_setting(row)}",
                row["transport"],
                queries.percentile_algorithm(row["variant"]) or "none",
                row["floor-bytes"] / KIB,
                _median(timed),
                row["young-gcs-per-coverage"],
            )
        )
    return points
