"""The report's source-large sections on a fixture race written to disk as a race leaves it (race.json and the track's
records beside it): each cell's figures from its measured fetches, a failed cell FAILED with no figure and no ratio,
the seed's figures beside ours, and both sections in the report."""

import json

import pytest

from report.__main__ import single_report
from report.shared import races
from report.studies import large_source
from runners.contracts import records
from runners.contracts.queries import LARGE_SOURCE_FORMATS, LARGE_SOURCE_MODES
from runners.studies.large_source import MIB, document, made_of

RACE_ID = "5" * 36
DOC_MB, DOCS, FETCH = 10, 40, 20  # the seed's settings
WARMUPS, MEASURED = 2, 10
# (mode, format) -> the walls of its measured fetches (ms): CBOR slower than JSON for a whole _source (converted)
WALLS = {
    ("returned", "json"): [600 + 10 * k for k in range(MEASURED)],  # median 645 ms
    ("returned", "cbor"): [900 + 10 * k for k in range(MEASURED)],
    ("excluded", "json"): [5 + k for k in range(MEASURED)],
    ("excluded", "cbor"): [6 + k for k in range(MEASURED)],
    ("filtered", "json"): [300 + k for k in range(MEASURED)],
    ("filtered", "cbor"): [310 + k for k in range(MEASURED)],
}


def fetch_line(mode, fmt, wall, measured, success=True):
    source = 0 if mode == "excluded" else FETCH * DOC_MB * MIB
    response = source + 2000 if mode == "returned" else 2000
    line = {"task": f"large-fetch-{mode}-{fmt}", "mode": mode, "format": fmt, "measured": measured, "success": success}
    if success:
        line.update(
            {
                "took": round(wall * 0.9, 1),
                "wall-ms": wall,
                "response-bytes": response,
                "source-bytes": source,
                "hits": FETCH,
                "mb-per-s": source / MIB / wall * 1000,
            }
        )
    else:
        line["error"] = f"large-fetch-{mode}-{fmt} hit 3 (9781000000023): content's sha256 differs"
    return line


def write_race(root, failed=(), params=None):
    """A race folder as Rally and the track leave it; `failed`: cells with one failed measured fetch (and an error
    rate in race.json)."""
    folder = root / RACE_ID
    record_dir = folder / records.RECORD_DIR
    record_dir.mkdir(parents=True)
    ops, lines = [], []
    for (mode, fmt), walls in WALLS.items():
        task = f"large-fetch-{mode}-{fmt}"
        bad = (mode, fmt) in failed
        ops.append({"task": task, "error_rate": 1 / MEASURED if bad else 0.0, "service_time": {"50_0": sorted(walls)[MEASURED // 2]}})
        lines += [fetch_line(mode, fmt, walls[0] * 1.5, measured=False) for _ in range(WARMUPS)]
        lines += [fetch_line(mode, fmt, w, measured=True, success=not (bad and k == 3)) for k, w in enumerate(walls)]
    ops.append({"task": "large-index-documents", "error_rate": 0.0, "service_time": {"50_0": 30_000}})
    data = {
        "race-id": RACE_ID,
        "challenge": "source-large",
        "track": "cluster-metrics",
        "race-timestamp": "20260101T000000Z",
        "track-params": params or {},
        "cluster": {"distribution-version": "8.17.2"},
        "results": {"op_metrics": ops},
    }
    (folder / "race.json").write_text(json.dumps(data))
    (record_dir / records.LARGE_SOURCE_FETCHES).write_text("".join(json.dumps(line) + "\n" for line in lines))
    digests = [document(n, 1).digest for n in range(3)]  # the record's shape (a small stand-in for the 40 documents)
    documents = [{"id": d.id, "bytes": DOC_MB * MIB, "sha256": d.sha256, "wall-ms": 300.0 + n} for n, d in enumerate(digests)]
    made = {"parameters": made_of(DOC_MB, DOCS), "complete": True, "documents": documents}
    (record_dir / records.LARGE_SOURCE_DOCUMENTS).write_text(json.dumps(made))
    return races.load(folder)


def rows_of(table):
    header, body = table
    return header, {(row[0], row[1]): dict(zip(header, row)) for row in body}


def test_each_cell_gives_its_measured_fetches_figures(tmp_path):
    race = write_race(tmp_path)
    assert large_source.large_source_records(race)["documents"]["parameters"]["large_doc_mb"] == DOC_MB
    header, rows = rows_of(large_source.fetch_table(race))
    assert list(rows) == [(m, f) for m in LARGE_SOURCE_MODES for f in LARGE_SOURCE_FORMATS]
    json_cell = rows[("returned", "json")]
    assert json_cell["n"] == MEASURED and json_cell["median wall (ms)"] == 645  # warm-ups left out
    assert json_cell["median took (ms)"] == 580.5 and json_cell["_source handled (MB)"] == FETCH * DOC_MB
    assert json_cell["MB/s of _source"] == pytest.approx(200 / 0.645)
    assert json_cell["95% interval of the wall (ms)"] == "[610.0, 680.0] n=10"  # the order statistics of 10 samples
    assert rows[("returned", "cbor")]["wall / json"] == pytest.approx(945 / 645)
    assert rows[("excluded", "json")]["_source handled (MB)"] == 0 and rows[("excluded", "json")]["MB/s of _source"] is None
    note = large_source.fetch_note(race)
    assert "first 20 of the documents of 10 MB" in note and "3 documents of 10485760 bytes" in note and "median 301 ms" in note


def test_a_failed_cell_is_failed_with_no_figure_and_no_ratio(tmp_path):
    race = write_race(tmp_path, failed={("returned", "json")})
    header, rows = rows_of(large_source.fetch_table(race))
    failed = rows[("returned", "json")]
    assert failed["n"].startswith("FAILED") and all(failed[h] == "-" for h in header[3:])
    assert rows[("returned", "cbor")]["wall / json"] is None  # never a baseline
    seed = {row[0]: row for row in large_source.seed_table(race)[1]}
    assert seed["MB/s of _source"][2] == "FAILED" and seed["MB/s of _source"][4] == pytest.approx(200 / 0.945)


def test_a_failed_sample_in_the_record_fails_the_cell_even_without_an_error_rate(tmp_path):
    race = write_race(tmp_path, failed={("filtered", "cbor")})
    op = next(op for op in race.data["results"]["op_metrics"] if op["task"] == "large-fetch-filtered-cbor")
    op["error_rate"] = 0.0  # a race.json that does not show it: the record still does
    assert rows_of(large_source.fetch_table(race))[1][("filtered", "cbor")]["n"] == "FAILED (1 of 12 fetches)"


def test_the_seeds_figures_stand_beside_ours(tmp_path):
    header, body = large_source.seed_table(write_race(tmp_path))
    assert header == ["quantity", "seed 004: JSON", "this race: JSON", "seed 004: msgpack", "this race: CBOR"]
    rows = {row[0]: row[1:] for row in body}
    assert rows["ms per 10 MB of _source"] == [
        "27.8 (ES SourceLookup), 27.4 (Jackson)",
        pytest.approx(645 / 20),
        "11.4",
        pytest.approx(945 / 20),
    ]
    assert rows["MB/s of _source"][0] == 359 and rows["MB/s of _source"][2] == 873
    assert rows["a fetch of 20 documents of 10 MB (ms)"] == [">= 556", 645, "-", 945]


def test_at_other_settings_the_seeds_bound_is_its_rate_at_ours(tmp_path):
    rows = {row[0]: row[1:] for row in large_source.seed_table(write_race(tmp_path, params={"large_doc_mb": 1, "large_fetch_size": 2}))[1]}
    assert rows["a fetch of 2 documents of 1 MB (ms)"][0] == ">= 6 (the seed's 359 MB/s at these settings)"


def test_the_report_has_both_sections_and_a_race_without_them_says_so(tmp_path):
    race = write_race(tmp_path / "races")
    path, _ = single_report(race, tmp_path / "reports")
    text = path.read_text()
    assert "## Large _source (seed 004 at its scale): a fetch per _source mode and response format" in text
    assert "## Large _source: the seed's figures beside this race's" in text and "core i5" in text
    assert "runs Elasticsearch 8.17.2 with a 1 GB heap" in text  # the race's version, beside the seed's machine
    other = races.Race("o" * 36, tmp_path, {"race-id": "o" * 36, "results": {"op_metrics": []}, "track-params": {}})
    assert large_source.fetch_table(other) is None and large_source.seed_table(other) is None
