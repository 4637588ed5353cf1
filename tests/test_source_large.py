"""source-large in a real `esrally race --test-mode` on the session's node, at small parameters (documents of 1 MB):
every task clean, the documents indexed as generated and counted, every fetch of each _source mode and format
answered and checked (JSON and CBOR from the real node), the index deleted at the end, and the report's sections built.
The checks themselves, fed wrong answers at full scale: tests/runners/large_source_test.py."""

import json

import pytest

from report.shared import races
from report.studies import large_source as report_large_source
from runners.contracts import records
from runners.contracts.queries import LARGE_SOURCE_FORMATS, LARGE_SOURCE_INDEX, LARGE_SOURCE_MODES
from runners.studies.large_source import MIB, document
from tests.conftest import assert_clean, http

pytestmark = pytest.mark.integration

PARAMS = {"large_doc_mb": 1, "large_docs": 4, "large_fetch_size": 2}
FETCHES = [f"large-fetch-{m}-{f}" for m in LARGE_SOURCE_MODES for f in LARGE_SOURCE_FORMATS]


@pytest.mark.versions("source-large")
def test_source_large_indexes_counts_fetches_and_deletes_its_documents(shared_races):
    race = shared_races.race("source-large", f"--track-params={json.dumps(PARAMS)}")
    ours = [f"large-{n}" for n in ("create-index", "index-documents", "verify-doc-count")]
    assert_clean(race, ["check-privileges", *ours, *FETCHES])  # every error rate 0, the count verified among them

    made = records.read(str(race.record_dir()), records.LARGE_SOURCE_DOCUMENTS)
    assert made["complete"] is True and made["parameters"]["large_docs"] == PARAMS["large_docs"]
    assert [(d["id"], d["bytes"], d["sha256"]) for d in made["documents"]] == [
        (digest.id, MIB, digest.sha256) for digest in (document(n, PARAMS["large_doc_mb"]).digest for n in range(PARAMS["large_docs"]))
    ]

    lines = [json.loads(line) for line in (race.record_dir() / records.LARGE_SOURCE_FETCHES).read_text().splitlines()]
    assert lines and all(line["success"] for line in lines), [line.get("error") for line in lines if not line["success"]]
    for task in FETCHES:
        measured = [line for line in lines if line["task"] == task and line["measured"]]
        assert measured and all(line["hits"] == PARAMS["large_fetch_size"] for line in measured), task
    returned = [line for line in lines if line["mode"] == "returned"]
    assert {line["source-bytes"] for line in returned} == {PARAMS["large_fetch_size"] * MIB}
    assert all(line["response-bytes"] > PARAMS["large_fetch_size"] * MIB * 0.99 for line in returned)

    assert http("HEAD", f"/{LARGE_SOURCE_INDEX}")[0] == 404  # deleted at the end of the challenge

    report = races.load(race.folder())
    header, body = report_large_source.fetch_table(report)
    assert len(body) == len(FETCHES) and not any(str(row[2]).startswith("FAILED") for row in body)
    assert report_large_source.seed_table(report) is not None
