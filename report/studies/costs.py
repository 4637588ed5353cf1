"""source-cost's table: what _source costs per mode (storage, ingest, coverage and fetch time).

A failed task is FAILED in its column and takes no part in a ratio."""

from report.shared import readers, sections
from report.shared.sections import Section
from report.studies import ingest
from runners.contracts import records
from runners.contracts.queries import SOURCE_MODES

SOURCE_BASELINE = "stored"


def _mib(value):
    return None if value is None else value / 2**20


def source_modes(race):
    """The modes this race measured, in its order."""
    return [m for m in race.param("source_modes") if m in source_records(race) or m in source_ingest(race)]


def source_rows(race):
    """{quantity label: {mode: value or "FAILED"}} for the source-cost table, in table order."""
    ops = race.op_metrics()
    rows = {}

    def put(label, mode, value):
        rows.setdefault(label, {})[mode] = value

    for mode in source_modes(race):
        storage, mode_ingest = source_records(race).get(mode, {}), source_ingest(race).get(mode, {})
        failed_storage = readers.failed(ops.get(race.task_of(measure="storage", **{"source-mode": mode})))
        for phase, label in (("ingested", "store as ingested (MiB)"), ("merged", "store, 1 segment (MiB)")):
            if phase in storage:
                put(label, mode, "FAILED" if failed_storage else _mib(storage[phase]["store_bytes"]))
        fields = storage.get("disk-usage", {}).get("fields", {})
        if fields:
            put("_source stored (MiB)", mode, _mib(fields.get("_source", {}).get("total", 0)))
            put("doc values, all fields (MiB)", mode, _mib(sum(f.get("doc_values", 0) for f in fields.values())))
        if mode_ingest.get("epochs"):
            prefix = ingest.ingest_prefix(race, **{"source-mode": mode}) or ""
            walls = [ingest.epoch_wall(ops, e, ingest.epoch_task(prefix, e["epoch"])) for e in mode_ingest["epochs"]]
            wall = sum(w for w in walls if w is not None)
            docs = sum(e["docs"] for e in mode_ingest["epochs"])
            bad = ingest.ingest_problem(race, **{"source-mode": mode}) is not None
            put("ingest wall (s)", mode, "FAILED" if bad else wall)
            put("ingest docs/s", mode, "FAILED" if bad else (docs / wall if wall else None))
            put("ES indexing time (s)", mode, sum(e["index-ms"] for e in mode_ingest["epochs"]) / 1000)
            put("merge time (s)", mode, sum(e["merge-ms"] for e in mode_ingest["epochs"]) / 1000)
        for v in race.param("source_variants"):
            for t in race.param("source_transports"):
                op = ops.get(race.task_of(variant=v, transport=t, **{"source-mode": mode}))
                if op:
                    put(f"coverage {v} {t}, median (ms)", mode, readers.op_median(op) if not readers.failed(op) else "FAILED")
        for k in race.param("fetch_kinds"):
            for t in race.param("fetch_transports"):
                op = ops.get(race.task_of(transport=t, fetch=k, **{"source-mode": mode}))
                label = f"fetch {race.param('fetch_size')} hits/node with {k} over {t}, median (ms)"
                if op:
                    put(label, mode, readers.op_median(op) if not readers.failed(op) else "FAILED")
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
        body.append([label] + [values.get(m) for m in modes] + [sections.normalized(values.get(m), base) for m in others])
    return header, body


SOURCE_NOTE = (
    "store, 1 segment: after a force merge to one segment, so every mode is compared in the same shape. _source "
    "stored and doc values: the _disk_usage API on that segment. A coverage is size 0 (aggregations only): it never "
    "reads _source. A fetch returns each node's N busiest samples (sorted by cpu): with _source (stored: read and "
    "sent as kept; synthetic: rebuilt from doc values per hit) or with docvalue_fields (the only way to get values "
    "back without a _source). Disabled has no _source fetch. Ratios are against stored, Elasticsearch's default.\n"
)


# this study's report sections, in report order
SECTIONS = [
    Section("What _source costs: storage, ingest, coverage and fetch per _source mode", source_table, "_source cost", SOURCE_NOTE),
]


def source_records(race):
    """{_source mode: its storage record} of the modes the race measured (records.source_record)."""
    return {mode: data for mode in SOURCE_MODES if (data := race.record(records.source_record(mode))) is not None}


def source_ingest(race):
    """{_source mode: its ingest record} of the modes that ingested."""
    return {mode: data for mode in SOURCE_MODES if (data := race.record(ingest.ingest_record(race, **{"source-mode": mode}))) is not None}
