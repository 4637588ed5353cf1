"""The report's cost sections on race data built by hand: a failed task is FAILED and takes no part in a ratio."""

import json
from pathlib import Path

from report.shared import races
from report.studies import costs
from report.studies import ingest as ingest_report
from report.studies import memory
from runners.contracts import records


def op(task, median, error_rate=0.0, duration=None):
    result = {"task": task, "error_rate": error_rate, "service_time": {"50_0": median}}
    if duration is not None:
        result["duration"] = duration
    return result


def source_race(failed_fetch=False):
    ops, sources, ingest = [], {}, {}
    for mode, store, source_bytes, ms in (("disabled", 100, 0, 300), ("stored", 200, 100, 310)):
        ops += [
            op(f"source-{mode}-bulk-epoch-1", None, duration=10_000),
            op(f"source-{mode}-storage", None),
            op(f"source-{mode}-coverage-D_td-msearch", ms),
            op(f"source-{mode}-fetch-docvalues-msearch", 50),
        ]
        if mode != "disabled":
            ops.append(op(f"source-{mode}-fetch-source-msearch", 80, error_rate=0.5 if failed_fetch else 0.0))
        sources[mode] = {
            "source-mode": mode,
            "ingested": {"store_bytes": store * 2**20 * 1.5},
            "merged": {"store_bytes": store * 2**20},
            "disk-usage": {"fields": {"_source": {"total": source_bytes * 2**20}, "cpu": {"total": 5, "doc_values": 5}}},
        }
        ingest[mode] = {"epochs": [{"epoch": 1, "docs": 1000, "index-ms": 2000, "merge-ms": 500}]}
    r = races.Race(
        "r" * 36,
        Path("."),
        {
            "race-id": "r" * 36,
            "challenge": "source-cost",
            "results": {"op_metrics": ops},
            "track-params": {"source_modes": ["disabled", "stored"], "source_variants": ["D_td"]},
        },
    )
    # the records as the race folder holds them: each mode's storage and ingest record by its name
    r.record_texts.update({records.source_record(mode): json.dumps(data) for mode, data in sources.items()})
    r.record_texts.update({ingest_report.ingest_record(r, **{"source-mode": mode}): json.dumps(data) for mode, data in ingest.items()})
    return r


def test_the_source_table_has_each_mode_and_its_ratio_to_stored():
    header, body = costs.source_table(source_race())
    assert header == ["quantity", "disabled", "stored", "disabled / stored"]
    rows = {row[0]: row[1:] for row in body}
    assert rows["store, 1 segment (MiB)"] == [100, 200, 0.5]
    assert rows["_source stored (MiB)"] == [0, 100, 0]
    assert rows["ingest docs/s"] == [100.0, 100.0, 1.0]
    assert rows["coverage D_td msearch, median (ms)"] == [300, 310, 300 / 310]
    assert rows["fetch 500 hits/node with source over msearch, median (ms)"][0] == "n/a (no _source)"


def test_a_failed_fetch_is_failed_and_has_no_ratio():
    rows = {row[0]: row[1:] for row in costs.source_table(source_race(failed_fetch=True))[1]}
    assert rows["fetch 500 hits/node with source over msearch, median (ms)"][1:] == ["FAILED", None]


def memory_race(tmp_path, floor_failed=False):
    cells = [
        ("D_td", "terms", None, 100, 120_000, 110_000, 0.0, 150),
        ("D_hdr", "terms", 3, None, 250_000, 240_000, 2.0, 100),
        ("A", "msearch", None, None, 1024, 0, 0.0, 50),
    ]
    ops, rows = [], []
    for variant, transport, digits, compression, floor, below, gcs, ms in cells:
        cell = f"{variant}-{transport}" + (f"-hdr-{digits}" if digits else f"-compression-{compression}" if compression else "")
        ops += [
            op(f"memory-{cell}", ms),
            op(f"breaker-floor-{cell}", None, error_rate=1.0 if floor_failed and variant == "D_hdr" else 0),
        ]
        if not (floor_failed and variant == "D_hdr"):
            rows.append(
                {
                    "task": f"breaker-floor-{cell}",
                    "variant": variant,
                    "transport": transport,
                    "hdr-digits": digits or 3,
                    "tdigest-compression": compression,
                    "floor-bytes": floor,
                    "below-bytes": below,
                    "young-gcs-per-coverage": gcs,
                    "gc-ms-per-coverage": 4 * gcs,
                }
            )
    data = {"race-id": "m" * 36, "challenge": "aggregation-memory", "results": {"op_metrics": ops}, "track-params": {}}
    return races.Race("m" * 36, Path("."), data, record_texts={records.MEMORY: "".join(json.dumps(row) + "\n" for row in rows)})


def test_the_memory_table_gives_each_cell_its_floor_gcs_and_time(tmp_path):
    header, body = memory.memory_table(memory_race(tmp_path))
    assert body[0] == ["D_td", "t-digest 100", "terms", 150, 120_000 / 1024, 110_000 / 1024, 0.0, 0.0]
    assert body[1][:2] == ["D_hdr", "hdr 3 digits"] and body[1][6] == 2.0
    assert body[2][4] == "< 1"  # passed at the lowest limit tried
    assert memory.memory_tradeoff(memory_race(tmp_path), tmp_path / "memory.png").is_file()


def test_a_failed_floor_is_failed_and_left_out_of_the_chart(tmp_path):
    race = memory_race(tmp_path, floor_failed=True)
    body = memory.memory_table(race)[1]
    assert body[1][:5] == ["D_hdr", "hdr 3 digits", "terms", 100, "FAILED"]
    assert [p[0] for p in memory.memory_points(race)] == ["D_td t-digest 100", "A -"]
