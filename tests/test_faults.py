"""Injected faults in real races: a rejected request, a wrong answer and a failed assertion each come out as what
they are, never as a fast success; a lost document fails the count check on the real node."""

import json
import re

import pytest

from report.shared import races
from runners.contracts.context import CONTEXT_KEY
from runners.studies.index_checks import VerifyDocCount
from tests.answer_proxy import AnswerProxy
from tests.conftest import INDEX, TEST_PORT, assert_clean, ensure_test_index, http, run_race, with_rally_client

CELLS = ["coverage-D_td-serial", "coverage-D_td-msearch", "coverage-D_hdr-msearch", "coverage-D_hdr-terms"]  # production-comparison's


def faulty(race, *tasks):
    assert race.race is not None, race.explained()
    rates = race.error_rates()
    assert all(rates[task] > 0 for task in tasks), rates


@pytest.mark.smoke
def test_429_is_a_failed_sample_never_retried_away(shared_races):
    """Every search answered 429 by a loopback proxy unless it repeats the one before: with client retries each
    coverage would succeed."""
    ensure_test_index(shared_races)
    proxy = AnswerProxy(TEST_PORT, mode="pass")
    try:
        proxy.mode = "429-unless-retried"  # Rally's own start-up requests go through unchanged
        race = run_race(shared_races.home, "production-comparison", "--track-params=warmup_iterations:0", port=proxy.port)
    finally:
        proxy.close()
    assert proxy.rejected > 0
    faulty(race, *CELLS)
    assert "HTTP 429 (es_rejected_execution_exception: rejected by the test proxy); not retried" in race.log


@pytest.mark.smoke
def test_wrong_answers_from_the_cluster_are_failed_samples(shared_races):
    """A proxy doubles every net p50 of Elasticsearch's real answers: every cell with percentiles must fail."""
    ensure_test_index(shared_races)
    proxy = AnswerProxy(TEST_PORT, mode="double-net-p50")
    try:
        race = run_race(shared_races.home, "query-decomposition", "--track-params=variants:'C_td',warmup_iterations:0", port=proxy.port)
    finally:
        proxy.close()
    faulty(race, "coverage-C_td-serial", "coverage-C_td-msearch", "coverage-C_td-terms")
    assert any("net p50" in line for line in race.failures()), race.failures()


def test_percents_elasticsearch_spells_otherwise_validate_and_a_wrong_one_fails(shared_races):
    """percents [0.0005, 50, 99.9995] (tail-latency work; Elasticsearch keys 0.0005 as 5.0E-4): production-comparison
    validates every cell; through a proxy that puts each p0.0005 far off, every cell fails, naming it."""
    ensure_test_index(shared_races)
    params = "--track-params=" + json.dumps({"percents": [0.0005, 50, 99.9995], "warmup_iterations": 0})
    assert_clean(shared_races.race("production-comparison", params), CELLS)
    proxy = AnswerProxy(TEST_PORT, mode="far-off-p0.0005")
    try:
        race = run_race(shared_races.home, "production-comparison", params, port=proxy.port)
    finally:
        proxy.close()
    faulty(race, *CELLS)
    assert any("p0.0005" in line for line in race.failures()), race.failures()


def test_rally_assertions_apply_to_coverages(shared_races):
    """A Rally assertion that does not hold ends the race, naming it (the ones that hold are raced by
    tests/test_track_repository.py)."""
    ensure_test_index(shared_races)
    failing = json.dumps({"coverage_assertions": [{"property": "hits", "condition": "==", "value": 0}]})
    race = run_race(shared_races.home, "production-comparison", "--enable-assertions", f"--track-params={failing}")
    # whichever cell's worker reports first (the next cell may take its turn before Rally checks the previous answer)
    cells = "|".join(re.escape(t) for t in races.rendered_cells("production-comparison", "{}"))
    named = re.search(rf"Expected \[hits\] in \[({cells})\] to be == \[0\] but was \[1000\]", race.output)
    assert race.returncode != 0 and named, race.explained()


def test_lost_documents_fail_the_count_check(shared_races):
    """verify-doc-count against an index that lost one document after ingest (no _delete_by_query on this node:
    the reindex module is not published, so one document is deleted by id). The runner itself, on the real node
    through Rally's client; the next test that needs the index clones it back."""
    ensure_test_index(shared_races)
    hit = http("POST", f"/{INDEX}/_search", {"size": 1, "query": {"term": {"epoch": 2}}})[1]["hits"]["hits"][0]
    assert http("DELETE", f"/{INDEX}/_doc/{hit['_id']}?refresh=true")[0] == 200
    context = {  # the runner reads only the index and the document counts
        "index": INDEX,
        "epoch_docs": {str(e): 1000 for e in range(1, 6)},
        "nodes": (),
        "epochs": (),
        "section": "test_mode",
        "ground_truth": "",
        "ground_truth_sha256": "",
        "record_dir": "",
        "fingerprint": {},
    }
    result = with_rally_client(lambda es: VerifyDocCount()(es, {CONTEXT_KEY: context}))
    assert result["success"] is False
    assert result["error-description"] == f"index {INDEX} holds 4999 documents, the ingested corpus has 5000"
