"""The report's source-large sections (seed 004 at its scale): each fetch cell, a _source mode in a response format,
from the track's record of every fetch (runners/studies/large_source.py), and the seed's figures beside ours.

Each builder returns (header, rows), or None when the race has no data for it (report/shared/sections.py's contract). A cell
with a failed sample (its error rate in race.json, or a failed fetch in the record) is FAILED: it has no figure, no
ratio and no place in the comparison with the seed."""

import json
import statistics

from report.shared import readers
from report.shared.figures import COST, Figure, median_or_why
from report.shared.sections import Section
from report.shared.uncertainty import median_interval
from runners.contracts import records
from runners.contracts.queries import LARGE_SOURCE_FORMATS, LARGE_SOURCE_MODES
from runners.studies.large_source import MIB

# seed 004: JMH on a core i5, parsing one 10 MB JSON document of two fields (isbn, content) into a map, ms per parse
SEED_DOC_MB = 10
SEED_FETCH_SIZE = 20
SEED_PARSE_MS = {"ES SourceLookup": 27.826, "Jackson": 27.423, "msgpack": 11.442}
SEED_MB_PER_S = {"json": 359, "binary": 873}  # its throughput table: 10 MB over the parse time
SEED_FETCH_MS = 556  # "a search request returning 20 documents will take at least 556 ms", for the response alone
BASE_FORMAT = "json"


def large_source_records(race):
    """source-large's records: {"documents": what made the documents, "fetches": every fetch}, {} when it ran none."""
    fetches = race.record(records.LARGE_SOURCE_FETCHES, [])
    documents = race.record(records.LARGE_SOURCE_DOCUMENTS)
    return {"documents": documents, "fetches": fetches} if documents or fetches else {}


def cell(race, mode, fmt):
    """One fetch cell: {"op": race.json's task or None, "measured": its measured fetches, "failed": why it failed or
    None}; None when the race did not run it."""
    task = race.task_of(**{"source-mode": mode, "format": fmt})
    op = race.op_metrics().get(task)
    lines = [line for line in large_source_records(race).get("fetches", []) if line.get("task") == task]
    if op is None and not lines:
        return None
    bad = [line for line in lines if not line.get("success")]
    failed = None
    if readers.failed(op):
        failed = readers.failed_label(op)
    elif bad:
        failed = f"FAILED ({len(bad)} of {len(lines)} fetches)"
    measured = [line for line in lines if line.get("measured") and line.get("success")]
    if failed is None and not measured:
        failed = "FAILED (no measured fetch recorded)"
    return {"op": op, "measured": measured, "failed": failed}


def cells(race):
    """{(mode, format): cell} of the cells this race ran, in the vocabulary's order."""
    found = {}
    for mode in LARGE_SOURCE_MODES:
        for fmt in LARGE_SOURCE_FORMATS:
            c = cell(race, mode, fmt)
            if c is not None:
                found[(mode, fmt)] = c
    return found


def figures(c):
    """A passed cell's figures: n, median took and wall (ms), the wall's interval, response and _source MB, MB/s of
    _source (the _source MB over the median wall); None for a failed cell."""
    if c is None or c["failed"]:
        return None
    walls = [line["wall-ms"] for line in c["measured"]]
    tooks = [line["took"] for line in c["measured"] if isinstance(line.get("took"), (int, float))]
    source_mb = statistics.median(line["source-bytes"] for line in c["measured"]) / MIB
    wall = median_interval(walls)
    return {
        "n": wall.n,
        "took": statistics.median(tooks) if tooks else None,
        "wall": wall.median,
        "interval": wall.text(),
        "response_mb": statistics.median(line["response-bytes"] for line in c["measured"]) / MIB,
        "source_mb": source_mb,
        "mb_per_s": source_mb / (wall.median / 1000) if source_mb and wall.median > 0 else None,
    }


def settings(race):
    """(document MB, documents fetched) of this race."""
    return race.param("large_doc_mb"), race.param("large_fetch_size")


def fetch_table(race):
    """A row per (mode, format): n, median took and wall with the wall's 95% interval, response MB, _source MB and
    MB/s, and the wall against the same mode's JSON cell (none where either failed)."""
    found = cells(race)
    if not found:
        return None
    header = [
        "_source",
        "format",
        "n",
        "median took (ms)",
        "median wall (ms)",
        "95% interval of the wall (ms)",
        "response (MB)",
        "_source handled (MB)",
        "MB/s of _source",
        f"wall / {BASE_FORMAT}",
    ]
    body = []
    for (mode, fmt), c in found.items():
        mine, base = figures(c), figures(found.get((mode, BASE_FORMAT)))
        if mine is None:
            body.append([mode, fmt, c["failed"]] + ["-"] * (len(header) - 3))
            continue
        ratio = mine["wall"] / base["wall"] if fmt != BASE_FORMAT and base and base["wall"] else None
        row = [mine[k] for k in ("n", "took", "wall", "interval", "response_mb", "source_mb", "mb_per_s")]
        body.append([mode, fmt, *row, ratio])
    return header, body


def fetch_note(race):
    doc_mb, size = settings(race)
    documents = large_source_records(race).get("documents") or {}
    made = documents.get("documents") or []
    walls = sorted(d["wall-ms"] for d in made)
    loaded = (
        f" The load: {len(made)} documents of {made[0]['bytes']} bytes, one index request each, median "
        f"{statistics.median(walls):.0f} ms per document; each one's sha256 is in the race's record ({records.LARGE_SOURCE_DOCUMENTS})."
        if made
        else ""
    )
    return (
        f"Each fetch asks for the first {size} of the documents of {doc_mb} MB (MB = 2^20 bytes) by id, with _source "
        "returned whole, excluded (`_source: false`) or filtered (content excluded), answered as JSON or CBOR; every answer "
        "is checked (ids in order, each content's byte length and sha256). wall: first byte sent to last byte received "
        "(decoding and checks after it); took: Elasticsearch's. _source handled: the stored _source of the hits, which a "
        "filtered fetch reads and parses too; MB/s: that over the median wall. 95% interval: the order-statistic "
        "interval of the median wall (report/shared/uncertainty.py)." + loaded + "\n"
    )


def _ours(found, fmt, key, scale=1.0):
    """One of this race's figures of the returned cell in a format, or FAILED, or None when it did not run."""
    c = found.get(("returned", fmt))
    if c is None:
        return None
    mine = figures(c)
    return "FAILED" if mine is None else (None if mine[key] is None else mine[key] * scale)


def seed_table(race):
    """The seed's figures beside this race's whole-_source fetch: ms per 10 MB of _source, MB/s, and the whole
    fetch (the seed's lower bound at this race's settings: the documents over its 359 MB/s)."""
    found = cells(race)
    if ("returned", "json") not in found and ("returned", "cbor") not in found:
        return None
    doc_mb, size = settings(race)
    per_10mb = SEED_DOC_MB / (size * doc_mb)  # a fetch's wall -> ms per 10 MB of _source
    at_seed = (doc_mb, size) == (SEED_DOC_MB, SEED_FETCH_SIZE)
    bound = SEED_FETCH_MS if at_seed else size * doc_mb / SEED_MB_PER_S["json"] * 1000
    header = ["quantity", "seed 004: JSON", "this race: JSON", "seed 004: msgpack", "this race: CBOR"]
    body = [
        [
            "ms per 10 MB of _source",
            f"{SEED_PARSE_MS['ES SourceLookup']:.1f} (ES SourceLookup), {SEED_PARSE_MS['Jackson']:.1f} (Jackson)",
            _ours(found, "json", "wall", per_10mb),
            f"{SEED_PARSE_MS['msgpack']:.1f}",
            _ours(found, "cbor", "wall", per_10mb),
        ],
        [
            "MB/s of _source",
            SEED_MB_PER_S["json"],
            _ours(found, "json", "mb_per_s"),
            SEED_MB_PER_S["binary"],
            _ours(found, "cbor", "mb_per_s"),
        ],
        [
            f"a fetch of {size} documents of {doc_mb} MB (ms)",
            f">= {bound:.0f}" + ("" if at_seed else " (the seed's 359 MB/s at these settings)"),
            _ours(found, "json", "wall"),
            "-",
            _ours(found, "cbor", "wall"),
        ],
    ]
    return header, body


def seed_note(race):
    """The one sentence on why the seed's figures and ours differ."""
    version = race.version or "8.17.2"
    return (
        "The seed timed parsing alone (JMH on a core i5: one 10 MB JSON document into a map, Elasticsearch's "
        "SourceLookup, Jackson, and the same document as msgpack), where this machine has 2 cores and runs "
        f"Elasticsearch {version} with a 1 GB heap and our figure is the whole fetch: reading and decompressing the "
        "stored _source, serializing the response (the stored JSON copied as it is, or converted to CBOR on every fetch: "
        "Elasticsearch keeps _source as JSON, so CBOR here is a wire format, not the seed's binary document), the "
        "loopback network and the client reading every byte; ours is the fetch's whole cost, the seed's a lower bound "
        "of one of its steps. A FAILED cell has no figure here.\n"
    )


# this study's report sections, in report order
SECTIONS = [
    Section(
        "Large _source (seed 004 at its scale): a fetch per _source mode and response format",
        fetch_table,
        "large _source fetches",
        fetch_note,
    ),
    Section(
        "Large _source: the seed's figures beside this race's",
        seed_table,
        "large _source against the seed",
        seed_note,
    ),
]


def fetch_figures(race):
    """Each large fetch's wall (its median and interval), or why it failed."""
    found = {}
    for (mode, fmt), fetch in cells(race).items() if large_source_records(race) else ():
        walls = [line.get("wall-ms") for line in fetch["measured"]]
        found[LARGE_FETCH.cell(f"{mode} {fmt}")] = fetch["failed"] or median_or_why(walls)
    return found


LARGE_FETCH = Figure("large fetch wall (ms)", "ms", COST, fetch_figures)
TREND_FIGURES = (LARGE_FETCH,)
