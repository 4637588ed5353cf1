"""The layout sweep's single-document indexing (runners/studies/single_doc.py): docs/s per layout, against 1S0R and against
the same shards unreplicated, beside seed 003's statements."""

from report.shared.readers import failed, failed_label
from report.shared.sections import Section, normalized
from report.shared.uncertainty import MIN_SAMPLES, median_interval, ratio_interval
from report.studies import layout_seed
from report.studies.layouts import LAYOUT_BASELINE, layout_ops, layout_records
from runners.contracts.layouts import parse_layout
from runners.studies.single_doc import RECORD_KEY


def single_doc_rows(race):
    """Per layout that indexed single documents: Rally's throughput (docs/s, median), the per-second samples of the
    track's records, the count check, and why the layout failed (None when it did not)."""
    rows = []
    ops = race.op_metrics()
    for layout in layout_ops(race):
        op = ops.get(race.task_of(layout=layout, measure="single-doc"))
        if op is None:
            continue
        check = ops.get(race.task_of(layout=layout, measure="single-doc-count"))
        record = layout_records(race).get(layout, {}).get(RECORD_KEY) or {}
        problem = None
        if failed(op):
            problem = failed_label(op)
        elif check is None or failed(check):
            problem = "FAILED (the index's count is not the acknowledged documents)" if check else "FAILED (not counted)"
        rows.append(
            {
                "layout": layout,
                "clients": record.get("clients"),
                "docs_per_s": op.get("throughput", {}).get("median"),
                "samples": record.get("per-second") or [],
                "acknowledged": record.get("acknowledged"),
                "count": record.get("count"),
                "problem": problem,
            }
        )
    return rows


def single_doc_table(race):
    """docs/s per layout (Rally's median throughput over the task), the per-second median with its 95% interval, the
    ratio to 1S0R with its interval, the ratio to the same shards unreplicated (the replica cost), the seed's
    statement, and acknowledged against counted documents. A failed layout is never a baseline."""
    rows = single_doc_rows(race)
    if not rows:
        return None
    by_layout = {r["layout"]: r for r in rows if r["problem"] is None}
    base = by_layout.get(LAYOUT_BASELINE)
    header = [
        "layout",
        "clients",
        "docs/s",
        "per-second median [95% interval]",
        f"vs {LAYOUT_BASELINE}",
        f"vs {LAYOUT_BASELINE} 95% interval",
        "vs same shards, 0 replicas",
        f"seed 003 vs {LAYOUT_BASELINE}",
        "acknowledged / counted",
    ]
    body = []
    for r in rows:
        shards, _ = parse_layout(r["layout"])
        seed = layout_seed.single_doc_ratio(r["layout"])
        counted = f"{r['acknowledged']} / {r['count']}" if r["acknowledged"] is not None else None
        if r["problem"]:
            body.append([r["layout"], r["clients"], r["problem"], "-", None, "-", None, seed, counted])
            continue
        unreplicated = by_layout.get(f"{shards}S0R")
        body.append(
            [
                r["layout"],
                r["clients"],
                r["docs_per_s"],
                _median_text(r["samples"]),
                normalized(r["docs_per_s"], base["docs_per_s"] if base else None),
                _ratio_text(base, r),
                normalized(r["docs_per_s"], unreplicated["docs_per_s"] if unreplicated else None),
                seed,
                counted,
            ]
        )
    return header, body


def _median_text(samples):
    if not samples:
        return "-"
    interval = median_interval(samples)
    return f"{interval.median:.1f} {interval.text()}"


def _ratio_text(base, row):
    """The ratio of the per-second medians to 1S0R's with its 95% interval, or why there is none."""
    if base is None:
        return "-"
    if min(len(base["samples"]), len(row["samples"])) < MIN_SAMPLES:
        return f"n={min(len(base['samples']), len(row['samples']))} (interval from {MIN_SAMPLES} seconds a side)"
    ratio, low, high = ratio_interval(base["samples"], row["samples"])
    return f"{ratio:.2f} [{low:.2f}, {high:.2f}]" if low is not None else "-"


def single_doc_note(race):
    return (
        "docs/s: Rally's median throughput of the task layout-<layout>-single-doc (one document per request, `POST "
        "/<index>/_doc`, every answer checked: created, no shard failure, every copy written). Per second: the documents "
        "acknowledged in each whole second of the task, from the track's records (the first and last partial seconds left "
        "out); the medians' intervals are order-statistic intervals, the ratio's each median's at 97.5% "
        "(report/shared/uncertainty.py). acknowledged / counted: the documents Elasticsearch acknowledged against the index's "
        f"count after the task (they must be equal). {layout_seed.SINGLE_DOC_NOTE}\n"
    )


# this study's report sections, in report order
SECTIONS = [
    Section(
        "Layout sweep: single-document indexing per layout",
        single_doc_table,
        "layout single-document indexing",
        single_doc_note,
    ),
]
