"""Bad input, end to end: one real race per kind (a track parameter, a missing corpus, an edited corpus, an index
holding another corpus, a missing index, an unreachable cluster), each refused with a message naming the input and
the fix before anything changes on the cluster. Every parameter's own rule and message is proven at load, without a
race (tests/runners/processor_parameters_test.py); the checks that read the cluster run here on the real node, through the
client Rally gives runners, without a race."""

import pytest

from runners.contracts import corpus, records
from runners.contracts.context import CONTEXT_KEY
from runners.processor import CorpusChecks, TrackLoad, set_context
from runners.studies.index_checks import CorpusError, VerifyCorpus
from runners.studies.layouts import CheckLayouts, LayoutError
from tests.conftest import (
    INDEX,
    assert_refused_before_any_timed_task,
    data_root,
    doc_count,
    ensure_test_index,
    generate,
    http,
    run_race,
    with_rally_client,
)


@pytest.mark.smoke
def test_a_track_parameter_of_the_wrong_type_is_named(rally_home, small_corpus, es_node):
    before = doc_count()
    race = run_race(rally_home, "full", "--track-params=iterations:x")
    assert_refused_before_any_timed_task(race, "track parameter iterations must be an integer of at least 1, got 'x'")
    assert "JSONDecodeError" not in race.output and doc_count() == before


def test_a_missing_corpus_names_make_corpus(tmp_path, es_node):
    before = doc_count()
    race = run_race(tmp_path / "empty-home", "ingest-baseline")
    assert_refused_before_any_timed_task(race, "does not exist", "make corpus")
    assert doc_count() == before


def test_an_edited_corpus_of_the_same_size_is_caught(tmp_path, es_node):
    """The hardest edit to see: one bit of one value, the file's size and line count unchanged (a truncated file is
    refused by the same check: tests/runners/processor_test.py)."""
    home = tmp_path / "home"
    generate(home)
    victim = data_root(home) / "cluster-metrics-epoch-2" / "cluster-metrics-epoch-2-1k.json"
    data = bytearray(victim.read_bytes())
    data[data.index(b'"mem":') + 6] ^= 1
    victim.write_bytes(bytes(data))
    before = doc_count()
    race = run_race(home, "ingest-baseline")
    assert_refused_before_any_timed_task(race, "sha256 differs from the manifest", "make corpus")
    assert doc_count() == before


def test_an_index_holding_another_corpus_stops_before_any_timed_query(shared_races):
    """Ingested from one corpus, ground truth of another of the same scale (other seed): the race must stop at the
    untimed corpus check, naming the fix, not run and fail timed coverages."""
    ensure_test_index(shared_races)
    generate(shared_races.home, "--seed", "4242")
    try:
        race = run_race(shared_races.home, "query-decomposition")
        assert_refused_before_any_timed_task(race, "holds another corpus", "seed 42 there, 4242 here", "ingest-baseline")
    finally:
        generate(shared_races.home)


def test_a_missing_index_stops_before_any_timed_query(shared_races):
    http("DELETE", f"/{INDEX}")  # the next test that needs it clones it back (ensure_test_index)
    race = run_race(shared_races.home, "production-comparison")
    assert_refused_before_any_timed_task(race, f"index {INDEX} does not exist", "ingest-baseline")


def test_an_unreachable_cluster_ends_the_race_before_the_track_loads(rally_home, small_corpus):
    """Rally's own version check is the first request of a race, before any track code runs: its error is what the
    user sees, and nothing was measured."""
    race = run_race(rally_home, "production-comparison", port=9299)
    assert_refused_before_any_timed_task(race, "cluster_distribution_version", "Failed to establish a new connection", "Connection refused")
    assert race.race is None or not race.error_rates()


def _verify_corpus(rally_home):
    """The corpus check of a query challenge, on the suite's index, with the context a track load builds."""
    root = data_root(rally_home)
    manifest = corpus.load_manifest(root)
    race_root = str(rally_home / "check-race")
    checks = CorpusChecks(race_root, checksum=True)
    request = TrackLoad(root, True, {}, record_dir=str(rally_home / "check-race" / records.RECORD_DIR), verified=checks)
    context = set_context(manifest, range(1, 6), request)
    return with_rally_client(lambda es: VerifyCorpus()({"default": es}, {CONTEXT_KEY: context.as_param()}))


def test_a_closed_index_is_named_by_the_corpus_check_on_the_real_node(shared_races):
    ensure_test_index(shared_races)
    assert _verify_corpus(shared_races.home)["success"]  # the check passes on the index as it is
    http("POST", f"/{INDEX}/_close")
    try:
        with pytest.raises(CorpusError, match=f"index {INDEX} cannot be searched \\(HTTP 400"):
            _verify_corpus(shared_races.home)
    finally:
        http("POST", f"/{INDEX}/_open")
        http("GET", f"/_cluster/health/{INDEX}?wait_for_status=green&timeout=60s")


def test_layouts_needing_more_nodes_are_named_by_the_real_nodes_count(es_node):
    fits = with_rally_client(lambda es: CheckLayouts()(es, {"layouts": ["1S0R"]}))
    assert fits["success"] and len(fits["data-node-names"]) == 1
    with pytest.raises(LayoutError, match=r"layout\(s\) 2S1R need more than the cluster's 1 data node\(s\).*NODES=3"):
        with_rally_client(lambda es: CheckLayouts()(es, {"layouts": ["1S0R", "2S1R"]}))
