"""Real `esrally race --test-mode` runs of every challenge against the session's Elasticsearch node, bad input
rejected before the cluster changes, and injected faults that must come out as failed samples."""

import configparser
import json
import os
import shutil
import subprocess
import sys

import pytest
from esrally.track import loader

from answer_proxy import AnswerProxy
from conftest import (
    PROXY_PORT,
    REMOTE_PORT,
    REPO,
    TEST_PORT,
    data_root,
    generate,
    http,
    launcher,
    rendered_tasks,
    run_race,
    track_params,
    with_rally_client,
)
from report import network as network_report
from report import races
from report import widths as report_widths
from runners import corpus, interleave, records
from runners.index_checks import shape_differences
from runners.memory import BREAKER_SETTING
from runners.operations import OPERATIONS
from runners.parameters import PARAMETERS
from runners.tasks import breaker_floor_task_name, fault_task_name
from runners.widths import SEARCH_POOL

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("es_node")]


def assert_clean(race, expected_tasks=()):
    assert race.returncode == 0, race.output[-3000:]
    rates = race.error_rates()
    assert rates, race.output[-3000:]
    failed = {task: rate for task, rate in rates.items() if rate != 0}
    assert not failed, f"error rates {failed}; failures logged: {race.failures()[-20:]}"
    for task in expected_tasks:
        assert task in rates


def doc_count():
    status, body = http("GET", "/cluster-metrics/_count")
    return body["count"] if status == 200 else None


def ensure_test_mode_ingest(rally_home):
    """The query challenges need the test-mode corpus ingested (by this suite's own corpus and track)."""
    if doc_count() != 5000 or not corpus_fingerprint_matches(rally_home):
        assert_clean(run_race(rally_home, "ingest-baseline"))


def assert_faults(race, faults, expected_tasks=()):
    """A network-faults race: every coverage under a fault failed, everything else (the healed coverages, the
    document count after) succeeded, and the race went on to the end."""
    assert race.returncode == 0, race.output[-3000:]
    failing = {fault_task_name(f, "D_td", t) for f in faults for t in ("msearch", "terms")}
    rates = race.error_rates()
    assert failing <= set(rates) and set(expected_tasks) <= set(rates), rates
    wrong = {task: rate for task, rate in rates.items() if rate != (1.0 if task in failing else 0.0)}
    assert not wrong, f"error rates {wrong}; failures logged: {race.failures()[-20:]}"


STANDARD_SHAPE = {"number_of_shards": 1, "number_of_replicas": 0, "source-mode": "stored"}


def corpus_fingerprint_matches(rally_home):
    """The index holds the test-mode corpus, in the shape the query challenges measure (not what source-cost left)."""
    status, body = http("GET", "/cluster-metrics/_mapping")
    if status != 200:
        return False
    manifest = corpus.load_manifest(data_root(rally_home))
    mappings = body["cluster-metrics"]["mappings"]
    settings = http("GET", "/cluster-metrics/_settings?flat_settings=true")[1]["cluster-metrics"]["settings"]
    found = mappings.get("_meta", {}).get(corpus.FINGERPRINT_KEY)
    return found == corpus.fingerprint(manifest, "test_mode") and not shape_differences(mappings, settings, STANDARD_SHAPE)


def race_dir(home, race):
    return home / ".rally" / "benchmarks" / "races" / race.race["race-id"]


def rendered_challenges(params=None):
    """The track's challenges as Rally renders them: a new challenge is tested without editing a list."""
    track = json.loads(loader.render_template_from_file(str(REPO / "tracks" / "cluster-metrics" / "track.json"), params or {}))
    return {c["name"]: c for c in track["challenges"]}


CHALLENGES = rendered_challenges()


MULTI_NODE_PORT = 9270


@pytest.fixture(scope="module")
def multi_node_cluster():
    """A local cluster of 3 nodes for the challenges whose meta asks for more than one data node."""
    started = launcher("start", "--nodes", "3", "--heap", "1g", port=MULTI_NODE_PORT)
    assert started.returncode == 0, started.stdout + started.stderr
    yield MULTI_NODE_PORT
    stopped = launcher("stop", port=MULTI_NODE_PORT)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr


# Rally's task filter by tag rides on one challenge race: query-decomposition without its check (the tag test has
# the include filter), which every other query challenge runs
CI_ARGS = {"query-decomposition": ["--exclude-tasks=tag:check"]}


# CI runs fewer cells of the longest challenges (their defaults run at full scale; the README says what ran), and
# some with parameters other tests would otherwise need a race of their own for: full with 3 of the 5 epochs
# (only those ingested and queried), ingest-tuned with other bulk sizes and clients
CI_PARAMS = {
    "rtt-sweep": {"rtt_ms": [0, 20], "rtt_variants": ["D_td"]},
    "ccs-roundtrips": {"rtt_ms": [0, 20], "rtt_variants": ["D_hdr"]},
    "network-faults": {"faults": ["reset", "cut-mid-response"]},
    "layout-sweep": {"layouts": ["1S0R", "2S1R"], "epochs": 2},
    "coverage-load": {"load_variants": ["D_td"], "load_steps": [50, 150]},
    "aggregation-memory": {  # D_hdr at 3 and 5 digits (5 over serial only), D_td at compression 100 and 200
        "memory_variants": ["D_hdr"],
        "memory_hdr_digits": [3, 5],
        "memory_tdigest_compression": [100, 200],
    },
    "source-cost": {"source_variants": ["D_td"]},
    "full": {"epochs": 3, "variants": ["D_hdr"]},
    "production-comparison": {"schedule": "interleaved"},
    "ingest-tuned": {"tuned_bulk_size": 250, "tuned_clients": 2},
    # two widths: one below Rally's 1,000 test-mode rows, one above them (its test-mode file has a row per node), and
    # above width_serial_max_nodes; the production variants, msearch at the default and at 1 concurrent search
    "coverage-width": {"widths": [30, 1500], "width_rows_per_epoch": 3000, "width_variants": ["D_td", "D_hdr"]},
}


def generate_width_sets(rally_home, params):
    """The sweep's corpus sets, beside the suite's corpus, as a user makes them (corpora-gen/generate --widths)."""
    widths = ",".join(map(str, params["widths"]))
    env = dict(os.environ, RALLY_HOME=str(rally_home))
    command = [sys.executable, str(REPO / "corpora-gen" / "generate"), "--widths", widths, "--epochs", "1"]
    result = subprocess.run([*command, "--rows-per-epoch", str(params["width_rows_per_epoch"])], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("challenge", sorted(CHALLENGES))
def test_every_challenge_in_test_mode(rally_home, small_corpus, challenge, request):
    params = CI_PARAMS.get(challenge, {})
    tasks = list(rendered_tasks(rendered_challenges(params)[challenge]))
    meta = CHALLENGES[challenge].get("meta", {})
    port, extra, hosts = TEST_PORT, [f"--track-params={json.dumps(params)}"] if params else [], None
    if challenge == "coverage-width":
        generate_width_sets(rally_home, params)
    if meta.get("data_nodes", 1) > 1:
        port = request.getfixturevalue("multi_node_cluster")
    elif not any(t["operation"]["operation-type"] == "epoch-bulk" for t in tasks):
        ensure_test_mode_ingest(rally_home)
    if meta.get("network") == "http-proxy":  # through the suite's Toxiproxy, in front of the test node
        request.getfixturevalue("toxiproxy")
        port, extra = PROXY_PORT, [track_params(**params)]
    elif meta.get("network") == "ccs":  # searches to the test node, the index on the remote cluster
        remote = request.getfixturevalue("remote_cluster")
        hosts = json.dumps({"default": [f"127.0.0.1:{TEST_PORT}"], PARAMETERS["ccs_alias"][0]: [f"127.0.0.1:{remote}"]})
        extra = [track_params(**params)]
    race = run_race(rally_home, challenge, *extra, *CI_ARGS.get(challenge, []), port=port, target_hosts=hosts)
    # every task of ours is reported (Rally leaves its own admin operations such as refresh out of race.json)
    ours = [t["operation"]["name"] for t in tasks if t["operation"]["operation-type"] in OPERATIONS]
    if challenge in CI_ARGS:  # --exclude-tasks=tag:check: every task ran but the check, which Rally never started
        ours = [t["operation"]["name"] for t in tasks if t["operation"]["operation-type"] in OPERATIONS and "check" not in t["tags"]]
        assert len(ours) == len(tasks) - 1 and sorted(race.error_rates()) == sorted(ours), race.output[-3000:]
    if challenge == "network-faults":
        assert_faults(race, params.get("faults", PARAMETERS["faults"][0]), ours)
    else:
        assert_clean(race, ours)
    folder = race_dir(rally_home, race) / records.RECORD_DIR
    if challenge == "aggregation-memory":  # every cell's bisection put the breaker's limit back as it was (unset)
        assert BREAKER_SETTING not in http("GET", "/_cluster/settings?flat_settings=true")[1]["persistent"]
        rows = [json.loads(line) for line in (folder / records.MEMORY).read_text().splitlines()]
        assert [r["task"] for r in rows] == [n for n in ours if n.startswith(breaker_floor_task_name(""))]
        assert all(
            r["below-bytes"] < r["floor-bytes"]
            and (r["below-bytes"] == 0 or r["floor-bytes"] <= r["below-bytes"] * (1 + PARAMETERS["memory_resolution"][0]))
            for r in rows
        )
    if challenge == "production-comparison":  # interleaved: the cells' coverages ran in the order of the turns
        cells = sorted(t["operation"]["name"] for t in tasks if interleave.GROUP_KEY in t["operation"])
        ran = [json.loads(line)["task"] for line in (folder / records.VALIDATION).read_text().splitlines()]
        assert len(cells) == 4 + 3  # the cells and their transports' client costs
        assert [name for name in ran if name in cells] == interleave.order(cells, 2, PARAMETERS["schedule_seed"][0])
    if challenge == "source-cost":  # each mode measured in that mode; the index ends in the last one, stored
        for mode in PARAMETERS["source_modes"][0]:
            storage = json.loads((folder / records.source_record(mode)).read_text())
            assert storage["source-mode"] == mode and storage["merged"] == {
                "store_bytes": storage["merged"]["store_bytes"],
                "segments": 1,
                "docs": 5000,
            }
            source_bytes = storage["disk-usage"]["fields"].get("_source", {}).get("total", 0)
            assert (source_bytes > 0) is (mode == "stored"), (mode, source_bytes)
            ingest = json.loads((folder / records.source_ingest_record(mode)).read_text())
            assert [e["docs"] for e in ingest["epochs"]] == [1000] * 5
        settings = http("GET", "/cluster-metrics/_settings?flat_settings=true")[1]["cluster-metrics"]["settings"]
        assert settings.get("index.mapping.source.mode") == "stored"
        # source-cost leaves its force-merged index, and says so: a query challenge refuses to time it
        after = run_race(rally_home, "production-comparison")
        assert after.returncode != 0 and "not in the shape this challenge measures" in after.output
        assert "source-cost: force-merged to one segment" in after.output and "ingest-baseline" in after.output
    if challenge == "ccs-roundtrips":
        assert http("GET", "/_remote/info")[1] == {}  # the registration is removed at the end
        assert http("GET", "/cluster-metrics/_count", port=REMOTE_PORT)[1]["count"] == 5000
        header, body = network_report.ccs_table(races.load(race_dir(rally_home, race)))
        assert header[3:5] == ["0 ms", "20 ms"] and len(body) == 5  # 2 transports x 2 settings, the samples row
    if challenge == "coverage-width":  # each width ingested whole into its own index, queried, then deleted
        for width in params["widths"]:
            name = corpus.width_set(width, params["width_rows_per_epoch"])
            ingest = json.loads((folder / records.width_ingest_record(width)).read_text())
            assert [e["docs"] for e in ingest["epochs"]] == [corpus.test_mode_rows(width)]
            assert http("GET", f"/{name}/_count")[0] == 404
        pool = json.loads((folder / SEARCH_POOL).read_text())
        assert pool["data-nodes"] == 1 and pool["default-max-concurrent-searches"] >= 1
        cells = [n for n in ours if n.startswith("width-") and "-coverage-" in n]
        # serial only at 30 nodes (width_serial_max_nodes 300), D_hdr over terms too (width_hdr_terms_max_nodes 1000)
        assert len(cells) == 2 * 4 + 2 * 3 - 1 and "width-1500-coverage-D_hdr-terms" not in cells
        validated = {json.loads(line)["task"] for line in (folder / records.VALIDATION).read_text().splitlines()}
        assert validated == set(cells)
        header, body = report_widths.width_table(races.load(race_dir(rally_home, race)))
        assert [row[:2] for row in body] == [["D_td", 30], ["D_td", 1500], ["D_hdr", 30], ["D_hdr", 1500]]
    elif port == MULTI_NODE_PORT:
        placement = json.loads((race_dir(rally_home, race) / "cluster-metrics" / "layout-2S1R.json").read_text())
        nodes = [c["node"] for c in placement["ingested"]]
        assert len(set(nodes)) == 3 and len(nodes) == 4  # 2 primaries + 2 replicas over 3 nodes: one holds two
        assert http("GET", "/cluster-metrics/_count", port=port)[1]["count"] == 1000 * params["epochs"]
    elif any(t["operation"]["operation-type"] == "epoch-bulk" for t in tasks):
        # nothing lost: the epochs ingested x the 1000-doc test-mode files
        assert doc_count() == 1000 * params.get("epochs", 5)
        if challenge == "full":  # epochs 3 of 5: a coverage of epoch 4 or 5 would find nothing and fail its counts
            assert "bulk-epoch-3" in race.error_rates() and "bulk-epoch-4" not in race.error_rates()
        if challenge == "ingest-baseline":
            epochs = json.loads((race_dir(rally_home, race) / "cluster-metrics" / "ingest.json").read_text())["epochs"]
            assert [e["epoch"] for e in epochs] == [1, 2, 3, 4, 5]
            assert all(e["docs"] == 1000 and e["bulk-requests"] == 1 and e["index-ms"] >= 0 for e in epochs)
        if challenge == "ingest-tuned":
            index = http("GET", "/cluster-metrics/_settings?include_defaults=false")[1]["cluster-metrics"]["settings"]["index"]
            assert "refresh_interval" not in index and index.get("translog", {}).get("durability", "request") == "request"


def use_track_repository(rally_home, name, source):
    """Rally's tracks folder holds a clone of the repository `source` that rally.ini names `name` (offline: as is)."""
    ini_path = rally_home / ".rally" / "rally.ini"
    if not ini_path.is_file():
        run_race(rally_home, "production-comparison")  # the first race writes rally.ini
    clone = rally_home / ".rally" / "benchmarks" / "tracks" / name
    if clone.exists():
        shutil.rmtree(clone)
    subprocess.run(["git", "clone", "-q", str(source), str(clone)], check=True)
    ini = configparser.ConfigParser(interpolation=None)
    ini.read(ini_path)
    if not ini.has_section("tracks"):
        ini.add_section("tracks")
    ini.set("tracks", f"{name}.url", str(source))
    with open(ini_path, "w") as f:
        ini.write(f)
    return clone


PASSING_ASSERTIONS = {
    "coverage_assertions": [
        {"property": "failed-checks", "condition": "==", "value": 0},
        {"property": "hits", "condition": "==", "value": 1000},
    ]
}


def test_track_loads_from_a_git_track_repository(rally_home, small_corpus):
    """As a team shares it: rally.ini names the repository, Rally's tracks folder holds its clone (offline: as is).
    The race also carries Rally assertions that hold (test_rally_assertions_apply_to_coverages has the failing ones):
    one race for both keeps the suite's time."""
    ensure_test_mode_ingest(rally_home)
    clone = use_track_repository(rally_home, "team", REPO)
    # the clone holds what is committed; overlay the working tree so that uncommitted work is what gets tested
    for folder in ("tracks", "runners"):
        shutil.rmtree(clone / folder)
        shutil.copytree(REPO / folder, clone / folder, ignore=shutil.ignore_patterns("__pycache__"))
    race = run_race(
        rally_home,
        "production-comparison",
        "--track-repository=team",
        "--track-revision=main",
        "--enable-assertions",
        f"--track-params={json.dumps(PASSING_ASSERTIONS)}",
        track=["--track=tracks/cluster-metrics"],
    )
    assert_clean(race, ["coverage-D_td-serial", "coverage-D_hdr-terms"])
    assert race.race["track"] == "tracks/cluster-metrics"  # a repository names its tracks by path


def test_the_track_folder_alone_in_another_track_repository(rally_home, small_corpus, tmp_path):
    """The track folder copied alone into a team's track repository, with runners/ beside it (README: the track folder
    on its own), races: nothing of this repository's layout is needed."""
    ensure_test_mode_ingest(rally_home)
    repository = tmp_path / "team-tracks"
    shutil.copytree(REPO / "tracks" / "cluster-metrics", repository / "cluster-metrics", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "runners", repository / "runners", ignore=shutil.ignore_patterns("__pycache__"))
    git = ["git", "-C", str(repository), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "the cluster-metrics track"], check=True)
    use_track_repository(rally_home, "alone", repository)
    race = run_race(rally_home, "production-comparison", "--track-repository=alone", track=["--track=cluster-metrics"])
    assert_clean(race, ["verify-corpus", "coverage-D_td-serial", "coverage-D_hdr-terms"])
    assert race.race["track"] == "cluster-metrics"


def test_tags_select_the_tasks_that_run(rally_home, small_corpus):
    """--include-tasks by tag: the queries of full on the ingested index, without its ingest."""
    ensure_test_mode_ingest(rally_home)
    params = {"variants": ["D_hdr"]}
    tasks = list(rendered_tasks(rendered_challenges(params)["full"]))
    selected = [t["operation"]["name"] for t in tasks if {"check", "query"} & set(t["tags"])]
    race = run_race(rally_home, "full", "--include-tasks=tag:check,tag:query", f"--track-params={json.dumps(params)}")
    assert_clean(race, selected)
    assert sorted(race.error_rates()) == sorted(selected)  # every task Rally reports; no bulk, no create-index
    assert doc_count() == 5000 and corpus_fingerprint_matches(rally_home)  # the index as it was
    # --exclude-tasks by tag: the query-decomposition race of test_every_challenge_in_test_mode (CI_ARGS)


# ---------------------------------------------------------------- bad input: clear message, cluster unchanged


def test_unknown_track_parameter_is_named(rally_home, small_corpus):
    before = doc_count()
    race = run_race(rally_home, "ingest-baseline", "--track-params=bulk_sise:500")
    assert race.returncode != 0 and "Unused track parameters ['bulk_sise']" in race.output
    assert doc_count() == before


def test_non_positive_bulk_size_is_named(rally_home, small_corpus):
    before = doc_count()
    race = run_race(rally_home, "ingest-baseline", "--track-params=bulk_size:0")
    assert race.returncode != 0
    assert "track parameter bulk_size must be an integer of at least 1, got 0" in race.output
    assert doc_count() == before


def test_unknown_variant_is_named(rally_home, small_corpus):
    race = run_race(rally_home, "query-decomposition", "--track-params=variants:E_td")
    assert race.returncode != 0
    assert "track parameter variants must be a non-empty list (or comma-separated string) of A, B" in race.output


def test_missing_corpus_names_make_corpus(tmp_path, es_node):
    before = doc_count()
    race = run_race(tmp_path / "empty-home", "ingest-baseline")
    assert race.returncode != 0 and "make corpus" in race.output and "does not exist" in race.output
    assert doc_count() == before


def test_truncated_corpus_names_make_corpus(tmp_path, es_node):
    home = tmp_path / "home"
    generate(home)
    victim = data_root(home) / "cluster-metrics-epoch-3" / "cluster-metrics-epoch-3-1k.json"
    victim.write_bytes(victim.read_bytes()[:-100])
    before = doc_count()
    race = run_race(home, "ingest-baseline")
    assert race.returncode != 0 and "truncated or edited" in race.output and "make corpus" in race.output
    assert doc_count() == before


def test_unreachable_cluster_is_reported(rally_home, small_corpus):
    race = run_race(rally_home, "production-comparison", port=9299)
    assert race.returncode != 0 and ("9299" in race.output or "connect" in race.output.lower())


# ---------------------------------------------------------------- wrong type, wrong corpus: named before any timed request


def test_wrong_type_of_track_parameter_is_named(rally_home, small_corpus):
    before = doc_count()
    race = run_race(rally_home, "full", "--track-params=iterations:x")
    assert race.returncode != 0
    assert "track parameter iterations must be an integer of at least 1, got 'x'" in race.output
    assert "JSONDecodeError" not in race.output and doc_count() == before


def test_edited_corpus_of_the_same_size_is_caught(tmp_path, es_node):
    home = tmp_path / "home"
    generate(home)
    victim = data_root(home) / "cluster-metrics-epoch-2" / "cluster-metrics-epoch-2-1k.json"
    data = bytearray(victim.read_bytes())
    data[data.index(b'"mem":') + 6] ^= 1
    victim.write_bytes(bytes(data))
    before = doc_count()
    race = run_race(home, "ingest-baseline")
    assert race.returncode != 0 and "sha256 differs from the manifest" in race.output and "make corpus" in race.output
    assert doc_count() == before


def test_index_holding_another_corpus_stops_before_any_timed_query(rally_home, small_corpus):
    """Ingested from one corpus, ground truth of another of the same scale (other seed): the race must stop at the
    untimed corpus check, naming the fix, not run and fail timed coverages."""
    ensure_test_mode_ingest(rally_home)
    generate(rally_home, "--seed", "4242")
    try:
        race = run_race(rally_home, "query-decomposition")
        assert race.returncode != 0
        assert "holds another corpus" in race.output and "seed 42 there, 4242 here" in race.output
        assert "ingest-baseline" in race.output
        assert race.race is None or not any(t.startswith("coverage-") for t in race.error_rates())
    finally:
        generate(rally_home)


def test_layouts_needing_more_nodes_stop_before_anything_is_created(rally_home, small_corpus):
    ensure_test_mode_ingest(rally_home)
    race = run_race(rally_home, "layout-sweep", '--track-params={"layouts": ["1S0R", "2S1R"]}')
    assert race.returncode != 0
    assert "layout(s) 2S1R need more than the cluster's 1 data node(s)" in race.output and "NODES=3" in race.output
    assert corpus_fingerprint_matches(rally_home) and doc_count() == 5000  # the index was not touched


def test_missing_index_stops_before_any_timed_query(rally_home, small_corpus):
    http("DELETE", "/cluster-metrics")
    race = run_race(rally_home, "production-comparison")
    assert race.returncode != 0 and "index cluster-metrics does not exist" in race.output


def test_closed_index_stops_before_any_timed_query(rally_home, small_corpus):
    ensure_test_mode_ingest(rally_home)
    http("POST", "/cluster-metrics/_close")
    try:
        race = run_race(rally_home, "production-comparison")
        assert race.returncode != 0 and "index cluster-metrics cannot be searched (HTTP 400" in race.output
    finally:
        http("POST", "/cluster-metrics/_open")
        http("GET", "/_cluster/health/cluster-metrics?wait_for_status=green&timeout=60s")


# ---------------------------------------------------------------- injected faults: failed samples, never successes


def _faulty(race, task):
    assert race.race is not None, race.output[-2000:]
    assert race.error_rates()[task] > 0, race.error_rates()


def rally_log(home):
    return (home / ".rally" / "logs" / "rally.log").read_text()


def test_429_is_a_failed_sample_never_retried_away(rally_home, small_corpus):
    """Every other search answered 429 by a loopback proxy: with client retries the coverage would succeed."""
    ensure_test_mode_ingest(rally_home)
    proxy = AnswerProxy(TEST_PORT, mode="pass")
    try:
        proxy.mode = "429-every-other"  # Rally's own start-up requests go through unchanged
        race = run_race(rally_home, "production-comparison", port=proxy.port)
    finally:
        proxy.close()
    assert proxy.rejected > 0
    for task in ("coverage-D_td-serial", "coverage-D_td-msearch", "coverage-D_hdr-msearch", "coverage-D_hdr-terms"):
        _faulty(race, task)
    assert "HTTP 429 (es_rejected_execution_exception: rejected by the test proxy); not retried" in rally_log(rally_home)


def test_wrong_answers_from_the_cluster_are_failed_samples(rally_home, small_corpus):
    """A proxy doubles every net p50 of Elasticsearch's real answers: every cell with percentiles must fail."""
    ensure_test_mode_ingest(rally_home)
    proxy = AnswerProxy(TEST_PORT, mode="double-net-p50")
    try:
        race = run_race(rally_home, "query-decomposition", "--track-params=variants:'C_td',warmup_iterations:0", port=proxy.port)
    finally:
        proxy.close()
    for task in ("coverage-C_td-serial", "coverage-C_td-msearch", "coverage-C_td-terms"):
        _faulty(race, task)
    assert "net p50" in rally_log(rally_home)


def test_rally_assertions_apply_to_coverages(rally_home, small_corpus):
    ensure_test_mode_ingest(rally_home)
    failing = json.dumps({"coverage_assertions": [{"property": "hits", "condition": "==", "value": 0}]})
    race = run_race(rally_home, "production-comparison", "--enable-assertions", f"--track-params={failing}")
    assert race.returncode != 0 and "Expected [hits] in [coverage-D_td-serial] to be == [0] but was [1000]" in race.output
    # the assertions that hold are raced by test_track_loads_from_a_git_track_repository (PASSING_ASSERTIONS)


def test_lost_documents_fail_the_count_check(rally_home, small_corpus):
    """verify-doc-count against an index that lost one document after ingest (no _delete_by_query on this node:
    the reindex module is not published, so one document is deleted by id)."""
    assert_clean(run_race(rally_home, "ingest-baseline"))
    hit = http("POST", "/cluster-metrics/_search", {"size": 1, "query": {"term": {"epoch": 2}}})[1]["hits"]["hits"][0]
    assert http("DELETE", f"/cluster-metrics/_doc/{hit['_id']}?refresh=true")[0] == 200
    from runners.index_checks import VerifyDocCount  # the runner itself, on the real node through Rally's client

    context = {"index": "cluster-metrics", "epoch_docs": {str(e): 1000 for e in range(1, 6)}}
    result = with_rally_client(lambda es: VerifyDocCount()(es, {"cluster-metrics": _context_fields(context)}))
    assert result["success"] is False
    assert result["error-description"] == "index cluster-metrics holds 4999 documents, the ingested corpus has 5000"
    http("DELETE", "/cluster-metrics")  # the next test ingests afresh


def _context_fields(values):
    fields = dict(
        nodes=(), epochs=(), section="test_mode", ground_truth="", ground_truth_sha256="", epoch_docs={}, record_dir="", fingerprint={}
    )  # the runner reads only the index and the document counts
    return fields | values
