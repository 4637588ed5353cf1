"""The track processor on the real track file, read by Rally's own TrackFileReader (no node, no race): parameters,
corpus checks, the index fingerprint and the context each operation gets. The same checks inside real races:
tests/test_bad_input.py and tests/test_challenges.py."""

import functools
import json
import pickle
import re
import shutil
import socket
import subprocess
import sys

import pytest
from esrally import config, exceptions, paths
from esrally.track import loader
from esrally.utils import opts

import cmgen
from runners.contracts import cells, corpus, parameters, track_files
from runners.contracts.context import CONTEXT_KEY, RaceContext
from runners.contracts.queries import FETCH_KINDS, TRANSPORTS, VARIANTS
from runners.operations import OPERATIONS, PARAM_SOURCES
from runners.processor import ClusterMetricsProcessor
from runners.shared import host_load, interleave
from runners.shared.restore import NOTES_INDEX
from runners.shared.toxiproxy import FAULTS
from runners.studies import load as load_runner
from runners.studies import network as network_runners
from runners.studies import privileges
from runners.studies.network import clear_toxics
from tests.conftest import REPO, TRACK_DIR, rendered_challenges, rendered_tasks

SMALL = cmgen.Params(epochs=5, rows_per_epoch=1500, nodes=30, tasks=20, seed=11)


@pytest.fixture(scope="module")
def corpus_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    cmgen.generate(SMALL, root)
    return root


@functools.lru_cache(maxsize=None)
def _read(track_params, challenge):
    """The track as Rally's TrackFileReader reads it with these parameters (JSON text), read once per process and kept
    pickled: the read (rendering, the schema check) is most of a load, and depends on nothing else of the
    configuration. load() unpickles a copy, since the processors change the track (as Rally's actors receive it; a
    deep copy took four times as long)."""
    cfg = config.Config()
    for section, key, value in [
        ("node", "rally.root", paths.rally_root()),
        ("track", "params", json.loads(track_params)),
        ("track", "challenge.name", challenge),
    ]:
        cfg.add(config.Scope.application, section, key, value)
    return pickle.dumps(loader.TrackFileReader(cfg).read("cluster-metrics", str(TRACK_DIR / "track.json"), str(TRACK_DIR)))


def load(root, track_params=None, test_mode=False, race_id="r-1", challenge=None, before=None, hosts=None, client=None):
    """The track as a race gets it: read by Rally, then `before` (one of Rally's own processors), then ours; `client`
    (target hosts, client options), as Rally's command line gives them."""
    cfg = config.Config()
    if hosts:
        cfg.add(config.Scope.application, "driver", "load_driver_hosts", hosts)
    if client:
        target = opts.TargetHosts(client[0])
        cfg.add(config.Scope.application, "client", "hosts", target)
        cfg.add(config.Scope.application, "client", "options", opts.ClientOptions(client[1], target_hosts=target))
    for section, key, value in [
        ("node", "rally.root", paths.rally_root()),
        ("node", "root.dir", str(root / "rally")),
        ("track", "params", track_params or {}),
        ("track", "test.mode.enabled", test_mode),
        ("track", "challenge.name", challenge),
        ("system", "race.id", race_id),
        ("benchmarks", "local.dataset.cache", str(root)),
    ]:
        cfg.add(config.Scope.application, section, key, value)
    track = pickle.loads(_read(json.dumps(track_params or {}, sort_keys=True), challenge))
    if before:
        before.on_after_load_track(track)
    processor = ClusterMetricsProcessor()
    processor.cfg = cfg
    processor.on_after_load_track(track)
    return track


def ours(track, challenge):
    """The challenge's tasks of this track's operations, those inside a parallel element (the interleaved cells) too."""
    elements = next(c for c in track.challenges if c.name == challenge).schedule
    tasks = [t for element in elements for t in (element.tasks if hasattr(element, "tasks") else [element])]
    return [t for t in tasks if t.operation.type in OPERATIONS]


def test_each_operation_gets_the_race_context(corpus_root):
    track = load(corpus_root)
    tasks = ours(track, "full")
    assert tasks and all(CONTEXT_KEY in t.operation.params for t in tasks)
    context = RaceContext.of(tasks[0].operation.params)
    assert context.epochs == (1, 2, 3, 4, 5) and context.section == "full" and context.expected_docs == 7500
    assert context.record_dir.endswith("races/r-1/cluster-metrics")
    index = next(i for i in track.indices if i.name == "cluster-metrics")
    manifest = corpus.load_manifest(corpus_root)
    assert index.body["mappings"]["_meta"][corpus.FINGERPRINT_KEY] == corpus.fingerprint(manifest, "full")
    docs = next(c for c in track.corpora if c.meta_data["epoch"] == 2).documents[0]
    assert docs.number_of_documents == 1500 and docs.document_file.endswith("cluster-metrics-epoch-2.json")


def test_the_sampler_is_told_the_target_cluster_without_its_secrets(corpus_root):
    """The host-load sampler asks the target cluster's nodes with the user's options (TLS, certificates); the password
    and API key stay out of the operation parameters (the worker's live client hands its header over a pipe)."""
    options = '{"use_ssl": true, "ca_certs": "/ca.pem", "basic_auth_user": "u", "basic_auth_password": "s3cret", "api_key": "k3y"}'
    track = load(corpus_root, client=('{"default": ["127.0.0.1:9243"], "remote": ["127.0.0.1:9201"]}', '{"default": %s}' % options))
    tasks = ours(track, "full")
    assert tasks and all(
        t.operation.params[host_load.CLUSTER_KEY]
        == {"hosts": [{"host": "127.0.0.1", "port": 9243}], "options": {"use_ssl": True, "ca_certs": "/ca.pem"}}
        for t in tasks
    )
    assert b"s3cret" not in pickle.dumps(track) and b"k3y" not in pickle.dumps(track)
    assert all(host_load.CLUSTER_KEY not in t.operation.params for t in ours(load(corpus_root), "full"))  # no target hosts given


def test_each_ingest_writes_the_record_its_task_name_names(corpus_root):
    """The record an ingest's tasks write is named by the ingest task's prefix (runners/studies/ingest.py name_records), and
    the epoch tasks of the live challenge write to the ingest set up before them; every ingest of a challenge has its
    own record."""
    track = load(corpus_root, {"layouts": "1S0R,2S1R"})
    recorded = {}
    for challenge in track.challenges:
        for task in ours(track, challenge.name):
            if "record" in task.operation.params:
                recorded.setdefault(challenge.name, {})[task.name] = task.operation.params["record"]
    assert recorded["ingest-baseline"] == {"ingest": "ingest.json"}
    assert recorded["layout-sweep"] == {"layout-1S0R-ingest": "ingest-layout-1S0R.json", "layout-2S1R-ingest": "ingest-layout-2S1R.json"}
    assert recorded["source-cost"]["source-stored-ingest"] == "ingest-source-stored.json"
    assert recorded["ingest-changes"]["change-clients-ingest"] == "ingest-change-clients.json"
    assert set(recorded["live"].values()) == {"ingest.json"} and len(recorded["live"]) == 5
    for challenge, names in recorded.items():
        ingests = [name for name in names if name.endswith("ingest")]
        assert len({names[name] for name in ingests}) == len(ingests), challenge


def test_test_mode_uses_the_1k_files_and_their_ground_truth(corpus_root):
    track = load(corpus_root, test_mode=True)
    context = RaceContext.of(ours(track, "full")[0].operation.params)
    assert context.section == "test_mode" and context.expected_docs == 5000
    assert all(c.documents[0].document_file.endswith("-1k.json") for c in track.corpora)


def test_epochs_bound_ingest_and_queries(corpus_root):
    track = load(corpus_root, {"epochs": 3})
    assert [c.meta_data["epoch"] for c in track.corpora] == [1, 2, 3]
    coverage = [t for t in ours(track, "full") if t.operation.type == "coverage"]
    assert coverage and all(t.operation.params["epochs"] == [1, 2, 3] for t in coverage)
    assert RaceContext.of(coverage[0].operation.params).expected_docs == 4500


@pytest.mark.parametrize(
    "track_params,message",
    [
        ({"iterations": "x"}, "track parameter iterations must be an integer of at least 1, got 'x'"),
        ({"warmup_iterations": -1}, "track parameter warmup_iterations must be an integer of at least 0, got -1"),
        ({"hdr_digits": 9}, "track parameter hdr_digits must be an integer from 0 to 5, got 9"),
        ({"variants": ["E"]}, "track parameter variants must be a non-empty list"),
        ({"transports": "grpc"}, "track parameter transports must be a non-empty list"),
        ({"percents": [50, 101]}, "track parameter percents must be a non-empty list of numbers from 0 to 100"),
        ({"request_timeout": "slow"}, "track parameter request_timeout must be a positive number, got 'slow'"),
        ({"verify_corpus_checksums": "yes"}, "track parameter verify_corpus_checksums must be true or false"),
        ({"epochs": True}, "track parameter epochs must be an integer of at least 1, got True"),
        ({"bulk_size": 0}, "track parameter bulk_size must be an integer of at least 1, got 0"),
        ({"tuned_translog_durability": "never"}, "track parameter tuned_translog_durability must be one of"),
        ({"coverage_assertions": [{"property": "hits"}]}, "track parameter coverage_assertions must be a list of Rally"),
        ({"epochs": 7}, "The generated corpus has no epoch 6"),
        ({"layouts": ["2S1R", "3X"]}, "track parameter layouts must be a non-empty list (or comma-separated string) of layouts"),
        ({"search_clients": 0}, "track parameter search_clients must be an integer of at least 1, got 0"),
        (
            {"source_modes": ["zip"]},
            "track parameter source_modes must be a non-empty list (or comma-separated string) " "of stored, synthetic, disabled",
        ),
        ({"fetch_size": 0}, "track parameter fetch_size must be an integer from 1 to 1000, got 0"),
        ({"fetch_size": 1001}, "track parameter fetch_size must be an integer from 1 to 1000, got 1001"),
        ({"fetch_transports": ["terms"]}, "track parameter fetch_transports must be a non-empty list"),
        ({"memory_hdr_digits": [3, 6]}, "track parameter memory_hdr_digits must be a non-empty list of HDR digits (0 to 5)"),
        (
            {"memory_tdigest_compression": [0]},
            "track parameter memory_tdigest_compression must be a non-empty list of " "t-digest compressions",
        ),
        ({"memory_resolution": 1.5}, "track parameter memory_resolution must be a number from 0.001 to 1 (exclusive)"),
        ({"memory_resolution": 1e-6}, "track parameter memory_resolution must be a number from 0.001 to 1 (exclusive)"),
        ({"memory_attempts": "3"}, "track parameter memory_attempts must be an integer from 1 to 100, got '3'"),
        ({"source_force_merge": "no"}, "track parameter source_force_merge must be true or false"),
        ({"schedule": "shuffled"}, "track parameter schedule must be one of 'blocked', 'interleaved', got 'shuffled'"),
        ({"schedule_seed": -1}, "track parameter schedule_seed must be an integer of at least 0, got -1"),
    ],
)
def test_bad_parameters_are_named_before_the_cluster_is_touched(corpus_root, track_params, message):
    with pytest.raises(exceptions.SystemSetupError, match=re.escape(message)):
        load(corpus_root, track_params)


@pytest.mark.parametrize(
    "track_params,message",
    [
        ({"profile_node": "N999"}, "Task [profile-D_td]: node 'N999' is not in the generated corpus"),
        ({"profile_epoch": 4, "epochs": 3}, "Task [profile-D_td]: epoch 4 is not ingested by this race"),
    ],
)
def test_bad_operation_values_of_the_selected_challenge_are_named(corpus_root, track_params, message):
    with pytest.raises(exceptions.SystemSetupError, match=re.escape(message)):
        load(corpus_root, track_params, challenge="profile-breakdown")
    with pytest.raises(exceptions.SystemSetupError, match=re.escape(message)):
        load(corpus_root, track_params, challenge="full")  # full ends with the profile
    assert load(corpus_root, track_params, challenge="query-decomposition")  # another challenge does not use them


def test_an_edited_corpus_file_of_the_same_size_is_caught_unless_checksums_are_skipped(tmp_path):
    cmgen.generate(SMALL, tmp_path)
    victim = tmp_path / "cluster-metrics-epoch-2" / "cluster-metrics-epoch-2.json"
    data = bytearray(victim.read_bytes())
    data[data.index(b'"cpu":') + 6] ^= 1  # one digit changed, same size
    victim.write_bytes(bytes(data))
    with pytest.raises(exceptions.SystemSetupError, match="sha256 differs from the manifest.*make corpus"):
        load(tmp_path)
    load(tmp_path, {"verify_corpus_checksums": False})  # a user's huge corpus: sizes only


def test_a_truncated_corpus_file_is_caught(tmp_path):
    cmgen.generate(SMALL, tmp_path)
    victim = tmp_path / "cluster-metrics-epoch-3" / "cluster-metrics-epoch-3.json"
    victim.write_bytes(victim.read_bytes()[:-100])
    with pytest.raises(exceptions.SystemSetupError, match="truncated or edited.*make corpus"):
        load(tmp_path)


def test_an_edited_ground_truth_is_caught(tmp_path):
    cmgen.generate(SMALL, tmp_path)
    path = corpus.ground_truth_path(tmp_path)
    path.write_bytes(path.read_bytes().replace(b'"count":50', b'"count":51', 1))
    with pytest.raises(exceptions.SystemSetupError, match="does not match its sha256 in the manifest"):
        load(tmp_path)


def test_a_missing_corpus_and_an_old_generator_name_the_fix(tmp_path):
    with pytest.raises(exceptions.SystemSetupError, match="does not exist; generate it with: make corpus"):
        load(tmp_path)
    cmgen.generate(SMALL, tmp_path)
    manifest = json.loads(corpus.manifest_path(tmp_path).read_text())
    manifest["generator"]["version"] = 1
    corpus.manifest_path(tmp_path).write_text(json.dumps(manifest))
    with pytest.raises(exceptions.SystemSetupError, match="generator version 1.*make corpus"):
        load(tmp_path)


def test_list_and_info_need_no_corpus(tmp_path):
    assert load(tmp_path, race_id=None).challenges  # esrally list tracks / info: no race id


def test_track_json_declarations_are_read_as_rally_renders_them():
    """Each default is read from track.json's one declaration: literals as JSON, vocabulary expressions as Jinja, and
    a declaration whose variable is not p_<its name> is refused."""
    text = """{% set p_epochs = (epochs | default(5)) %}
{% set p_target_throughput = (target_throughput | default(none)) %}
{% set p_tuned_refresh_interval = (tuned_refresh_interval | default("-1")) %}
{% set p_transports = (transports | default(vocabulary.transports)) %}"""
    declared = track_files.declared_defaults(text)
    assert declared == {"epochs": 5, "target_throughput": None, "tuned_refresh_interval": "-1", "transports": "vocabulary.transports"}
    assert isinstance(declared["transports"], track_files.Expression) and not isinstance(
        declared["tuned_refresh_interval"], track_files.Expression
    )
    with pytest.raises(ValueError, match="p_epoch from epochs"):
        track_files.declared_defaults("{% set p_epoch = (epochs | default(5)) %}")
    # the track as Rally renders it with no parameters uses the defaults read here: the epochs' corpora, the transports' cells
    rendered = json.loads(loader.render_template_from_file(str(TRACK_DIR / "track.json"), {}))
    assert len(rendered["corpora"]) == parameters.DEFAULTS["epochs"]
    full = next(c for c in rendered["challenges"] if c["name"] == "full")
    coverages = [t["operation"] for t in rendered_tasks(full) if t["operation"]["operation-type"] == "coverage"]
    study = [{"variant": v, "transport": t} for v in parameters.DEFAULTS["variants"] for t in parameters.DEFAULTS["transports"]]
    assert [cells.cell_of(operation) for operation in coverages] == study


def test_the_study_challenges_record_every_cell_of_the_vocabulary_once():
    """query-decomposition and full: each (variant, transport) of the vocabulary is one task's cell under no other
    condition, so the report finds it in the race's cells record (report/shared/tables.study_task); production-comparison
    races the production variants, each cell once too."""
    rendered = json.loads(loader.render_template_from_file(str(TRACK_DIR / "track.json"), {}))
    study = sorted(cells.key({"variant": v, "transport": t}) for v in VARIANTS for t in TRANSPORTS)
    for name in ("query-decomposition", "full", "production-comparison"):
        challenge = next(c for c in rendered["challenges"] if c["name"] == name)
        recorded = cells.of_tasks((t["operation"]["name"], t["operation"]) for t in rendered_tasks(challenge))
        found = sorted(cells.key(cell) for cell in recorded.values() if cells.key(cell) in study)
        assert found == sorted(set(found)) and len(found) == (4 if name == "production-comparison" else len(study)), name
        assert name == "production-comparison" or found == study
    full = next(c for c in rendered["challenges"] if c["name"] == "full")
    names = [t["operation"]["name"] for t in rendered_tasks(full)]
    # an ingest is one task, whatever its epochs: the index set up, every epoch, the count
    assert ["ingest"] == [n for n in names if n.startswith("ingest")]
    assert [f"change-{c}-ingest" for c in ("bulk-size", "clients", "refresh", "translog", "all")] == [
        n for n in names if n.startswith("change-") and n.endswith("-ingest")
    ]
    for challenge in rendered["challenges"]:
        for task in rendered_tasks(challenge):
            operation = task["operation"]
            source = operation.get("param-source")
            assert source is None or source in PARAM_SOURCES or source in OPERATIONS and OPERATIONS[source].param_source, source


def test_the_first_task_records_every_cell_of_the_challenge_that_runs(corpus_root, monkeypatch):
    """check-privileges gets the selected challenge's cells (runners/contracts/cells.py): each task that names its condition, with
    its variant and transport; within a challenge no two tasks measure the same cell."""
    monkeypatch.setattr(network_runners.Toxiproxy, "require_proxy", lambda self, proxy: None)  # no Toxiproxy here
    track = load(corpus_root, {"rtt_ms": [0, 50]}, challenge="rtt-sweep")
    check = next(t for t in ours(track, "rtt-sweep") if t.operation.type == "check-privileges")
    recorded = check.operation.params[cells.CELLS_KEY]
    expected = [(v, t, r) for r in (0, 50) for v in parameters.DEFAULTS["rtt_variants"] for t in TRANSPORTS]
    assert sorted((c["variant"], c["transport"], c["rtt-ms"]) for c in recorded.values()) == sorted(expected)
    assert recorded["coverage-D_td-serial-rtt-50ms"] == {"variant": "D_td", "transport": "serial", "rtt-ms": 50}
    rendered = json.loads(loader.render_template_from_file(str(TRACK_DIR / "track.json"), {}))
    for challenge in rendered["challenges"]:
        found = cells.of_tasks((t["operation"]["name"], t["operation"]) for t in rendered_tasks(challenge))
        assert len({cells.key(c) for c in found.values()}) == len(found), challenge["name"]
    sources = cells.of_tasks(
        (t["operation"]["name"], t["operation"])
        for t in rendered_tasks(next(c for c in rendered["challenges"] if c["name"] == "source-cost"))
    )
    fetches = {(c["source-mode"], c["fetch"]) for c in sources.values() if "fetch" in c}
    assert fetches == {(m, k) for m in parameters.DEFAULTS["source_modes"] for k in FETCH_KINDS if not (k == "source" and m == "disabled")}
    faults = cells.of_tasks(
        (t["operation"]["name"], t["operation"])
        for t in rendered_tasks(next(c for c in rendered["challenges"] if c["name"] == "network-faults"))
    )
    assert {(c["fault"], c["phase"]) for c in faults.values() if "fault" in c} == {(f, p) for f in FAULTS for p in ("under", "healed")}


def test_query_challenges_check_the_corpus_before_the_first_timed_query():
    rendered = json.loads(loader.render_template_from_file(str(TRACK_DIR / "track.json"), {}))
    checked = []
    for challenge in rendered["challenges"]:
        tasks = list(rendered_tasks(challenge))
        types = [t["operation"]["operation-type"] for t in tasks]
        # a timed query of the generated corpus: tagged query, of an operation that reads it (registry.Operation)
        timed = [i for i, t in enumerate(tasks) if "query" in t["tags"] and getattr(OPERATIONS.get(types[i]), "reads_corpus", False)]
        if timed:
            assert "verify-corpus" in types[: timed[0]], (
                f"{challenge['name']}.json: its first timed query {tasks[timed[0]]['operation']['name']} runs before any "
                'verify-corpus: put {"operation": {"name": "verify-corpus", "operation-type": "verify-corpus", "shape": '
                '{{ standard_shape | tojson }}}, "tags": ["check"]} before it, so a race on an index that holds another corpus stops '
                "before anything is timed"
            )
        checked.append(bool(timed))
    assert sum(checked) >= 12, checked  # the query challenges (not the ingests, nor source-large's own index)


def test_numpy_version_is_recorded_and_another_one_reported(tmp_path):
    manifest = cmgen.generate(SMALL, tmp_path)
    assert manifest["made_with"]["numpy"] == cmgen.np.__version__
    assert cmgen.made_with_difference(manifest) is None
    manifest["made_with"]["numpy"] = "1.0.0"
    assert "made with numpy 1.0.0" in cmgen.made_with_difference(manifest)


def test_copied_corpus_folder_still_loads(tmp_path, corpus_root):
    shutil.copytree(corpus_root, tmp_path / "copy", ignore=shutil.ignore_patterns("rally"))
    assert load(tmp_path / "copy").corpora


def test_only_the_selected_challenge_is_held_to_its_needs(corpus_root):
    """A Toxiproxy that is not running stops a network challenge at load, naming the fix, and no other challenge."""
    assert load(corpus_root, {"toxiproxy_url": "http://127.0.0.1:8479"}, challenge="full")
    for challenge in ("network-faults", "rtt-sweep"):
        with pytest.raises(exceptions.SystemSetupError, match=r"Toxiproxy is not reachable at http://127.0.0.1:8479.*" r"make proxy-start"):
            load(corpus_root, {"toxiproxy_url": "http://127.0.0.1:8479"}, challenge=challenge)


@pytest.mark.parametrize(
    "params,message",
    [
        ({"rtt_ms": [0, -5]}, "track parameter rtt_ms must be a non-empty list of round-trip times"),
        ({"rtt_ms": 50}, "track parameter rtt_ms must be a non-empty list"),
        ({"ccs_proxy_address": "localhost"}, "track parameter ccs_proxy_address must be host:port"),
        ({"ccs_minimize_roundtrips": ["yes"]}, "track parameter ccs_minimize_roundtrips must be a non-empty list of true/false"),
        ({"faults": ["flood"]}, "track parameter faults must be a non-empty list"),
        ({"toxiproxy_url": "127.0.0.1:8474"}, "track parameter toxiproxy_url must be an http URL with a port"),
    ],
)
def test_bad_network_parameters_are_named_at_load(corpus_root, params, message):
    with pytest.raises(exceptions.SystemSetupError, match=message):
        load(corpus_root, params, challenge="rtt-sweep")


@pytest.mark.parametrize(
    "challenge,track_params,message",
    [
        ("query-decomposition", {"hdr_digits": 5}, "task coverage-C_hdr-msearch runs HDR with 5 digits over msearch"),
        ("coverage-load", {"hdr_digits": 5, "load_transports": ["terms"]}, "runs HDR with 5 digits over terms"),
        ("aggregation-memory", {"hdr_digits": 5}, "above memory_parallel_hdr_digits_max (4)"),
        ("live", {"epochs": 1}, "Challenge [live]: needs at least 2 epochs, this race has 1 (track parameter epochs)"),
        (
            "query-decomposition",
            {"schedule": "interleaved", "coverage_clients": 2},
            "schedule interleaved runs one coverage at a time, at its own pace: it takes no coverage_clients",
        ),
        ("production-comparison", {"schedule": "interleaved", "target_throughput": 2}, "it takes no coverage_clients or target_throughput"),
    ],
)
def test_challenge_wide_rules_are_named_at_load(corpus_root, challenge, track_params, message):
    with pytest.raises(exceptions.SystemSetupError, match=re.escape(message)):
        load(corpus_root, track_params, challenge=challenge)


def test_hdr_5_digits_pass_over_serial_and_with_a_raised_limit(corpus_root):
    load(corpus_root, {"hdr_digits": 5, "transports": ["serial"]}, challenge="query-decomposition")
    load(corpus_root, {"hdr_digits": 5, "memory_parallel_hdr_digits_max": 5}, challenge="query-decomposition")


@pytest.mark.parametrize("test_mode", [False, True])
def test_a_calibration_records_after_the_warmup_the_task_really_runs(corpus_root, test_mode):
    """Rally's --test-mode cuts warmup-iterations to the task's clients (1): the calibration then records all but that
    one; outside test mode, all but the challenge's 2."""
    cfg = config.Config()
    cfg.add(config.Scope.application, "track", "test.mode.enabled", test_mode)
    # Rally runs its own processors (test mode's among them) before the track's
    track = load(corpus_root, test_mode=test_mode, challenge="coverage-load", before=loader.TestModeTrackProcessor(cfg))
    calibrations = [t for t in ours(track, "coverage-load") if t.operation.params.get("record-rate")]
    assert calibrations and all(t.operation.params["warmups"] == t.warmup_iterations == (1 if test_mode else 2) for t in calibrations)


@pytest.mark.parametrize("test_mode", [False, True])
def test_the_profile_pairs_know_their_warmups_and_are_enough_for_an_interval(corpus_root, test_mode):
    """profile-breakdown's runner marks the warm-up pairs by the warm-up count the processor hands it (after --test-mode's
    cut to 1), and by default measures profile_iterations pairs: at least 15 samples a side."""
    cfg = config.Config()
    cfg.add(config.Scope.application, "track", "test.mode.enabled", test_mode)
    track = load(corpus_root, test_mode=test_mode, challenge="profile-breakdown", before=loader.TestModeTrackProcessor(cfg))
    (task,) = [t for t in ours(track, "profile-breakdown") if t.operation.type == "profile-breakdown"]
    assert task.name == "profile-D_td" and task.operation.param_source == "profile-breakdown"
    defaults = (parameters.DEFAULTS["warmup_iterations"], parameters.DEFAULTS["profile_iterations"])
    warmups, iterations = (1, 1) if test_mode else defaults
    assert task.operation.params["warmups"] == task.warmup_iterations == warmups and task.iterations == iterations
    assert test_mode or iterations >= 15


def test_a_network_challenge_clears_its_proxies_before_the_benchmark_starts(corpus_root):
    """on_prepare_track runs before Rally's telemetry first crosses the proxy: a fault an aborted race left would
    otherwise slow (or break) those requests before the challenge's first task can clear it."""
    track = load(corpus_root)
    processor = ClusterMetricsProcessor()
    for name, proxies in (("rtt-sweep", ["cluster-metrics-http"]), ("network-faults", ["cluster-metrics-http"]), ("full", None)):
        for challenge in track.challenges:
            challenge.selected = challenge.name == name
        steps = list(processor.on_prepare_track(track, str(corpus_root)))
        if proxies is None:
            assert steps == []
        else:
            assert [(f, p["params"]["proxies"]) for f, p in steps] == [(clear_toxics, proxies)]


def prepare(track, data_root_dir):
    """What Rally's track preparator runs on a load-driver host: our processor's on_prepare_track, to the end."""
    return list(ClusterMetricsProcessor().on_prepare_track(track, str(data_root_dir)))


def test_each_load_driver_host_checks_the_corpus_it_will_read(tmp_path):
    """The coordinator hands its corpus paths to every load-driver host; a host without that corpus, or whose own
    data directory (where Rally's preparator looks) is elsewhere, stops the race naming itself and the fix."""
    cmgen.generate(SMALL, tmp_path)
    track = load(tmp_path, challenge="query-decomposition")
    assert prepare(track, tmp_path) == []  # the host holds it, at the same path

    with pytest.raises(exceptions.SystemSetupError, match=rf"Load-driver host {socket.gethostname()}: this host's Rally data directory"):
        prepare(track, tmp_path / "elsewhere")
    victim = tmp_path / "cluster-metrics-epoch-2" / "cluster-metrics-epoch-2.json"
    victim.write_bytes(victim.read_bytes()[:-10])
    with pytest.raises(
        exceptions.SystemSetupError, match=r"Load-driver host .*epoch-2.json: \d+ bytes, the manifest says .*copy that folder"
    ):
        prepare(track, tmp_path)
    shutil.rmtree(tmp_path / corpus.INDEX)
    with pytest.raises(exceptions.SystemSetupError, match=r"Load-driver host .*No cluster-metrics corpus: .* does not exist; generate it"):
        prepare(track, tmp_path)


@pytest.mark.parametrize("test_mode,passes", [(False, 20), (True, 2)])
def test_interleaved_cells_get_one_order_of_the_passes_that_run(corpus_root, test_mode, passes):
    """Every cell of query-decomposition, under its usual name, with the order of the passes the race will run
    (warm-up + measured coverages, after --test-mode's reduction); the blocked schedule has no order."""
    cfg = config.Config()
    cfg.add(config.Scope.application, "track", "test.mode.enabled", test_mode)
    rally_test_mode = loader.TestModeTrackProcessor(cfg)
    track = load(
        corpus_root, {"schedule": "interleaved", "schedule_seed": 3}, test_mode, challenge="query-decomposition", before=rally_test_mode
    )
    (element,) = [t for t in next(c for c in track.challenges if c.name == "query-decomposition").schedule if hasattr(t, "tasks")]
    names = sorted(t.name for t in element.tasks)
    assert names == sorted(f"coverage-{v}-{t}" for v in VARIANTS for t in TRANSPORTS)
    orders = {json.dumps(t.operation.params[interleave.ORDER_KEY]) for t in element.tasks}
    assert orders == {json.dumps(interleave.order(names, passes, 3))}
    blocked = load(corpus_root, {"schedule": "blocked"}, challenge="query-decomposition")
    assert not any(interleave.ORDER_KEY in t.operation.params for t in ours(blocked, "query-decomposition"))


def test_interleaved_cells_refuse_several_load_driver_hosts(corpus_root):
    with pytest.raises(
        exceptions.SystemSetupError, match=re.escape("has 2 (--load-driver-hosts=10.0.0.1,10.0.0.2); add --track-params=schedule:blocked")
    ):
        load(corpus_root, {"schedule": "interleaved"}, challenge="production-comparison", hosts=["10.0.0.1", "10.0.0.2"])
    load(corpus_root, {"schedule": "interleaved"}, challenge="production-comparison", hosts=["127.0.0.1"])


WIDTH_PARAMS = {"widths": [12, 1200], "width_rows_per_epoch": 2400, "width_variants": ["D_td"]}


@pytest.fixture(scope="module")
def width_root(tmp_path_factory):
    """Only the width sets (no main corpus): a coverage-width race needs nothing else."""
    root = tmp_path_factory.mktemp("width-data")
    for width in WIDTH_PARAMS["widths"]:
        params = cmgen.Params(epochs=1, rows_per_epoch=2400, nodes=width, tasks=20, seed=11)
        cmgen.generate(params, root, corpus_set=corpus.width_set(width, 2400))
    return root


def test_each_width_task_is_bound_to_its_width_set(width_root):
    track = load(width_root, WIDTH_PARAMS, test_mode=True, challenge="coverage-width")
    steps = next(c for c in track.challenges if c.name == "coverage-width").schedule
    tasks = [t for step in steps for t in step]  # a parallel step iterates over its tasks, a task over itself
    for width in WIDTH_PARAMS["widths"]:
        name = corpus.width_set(width, 2400)
        mine = [t for t in tasks if t.operation.params.get("corpus-width") == width]
        contexts = [RaceContext.of(t.operation.params) for t in mine if CONTEXT_KEY in t.operation.params]
        (context,) = {(c.index, c.nodes, c.section, c.expected_docs) for c in contexts}
        assert context == (name, tuple(cmgen.node_names(width)), "test_mode", max(1000, width))
        # Rally's own operations and the bulk name the set's index and corpus, which track.json does not spell
        by_type = {t.operation.type: t.operation.params for t in mine}
        for operation in ("ingest-epochs", "delete-index"):
            assert by_type[operation]["index"] == name, operation
        assert RaceContext.of(by_type["ingest-epochs"]).index == name
        index = next(i for i in track.indices if i.name == name)
        assert index.body["mappings"]["_meta"][corpus.FINGERPRINT_KEY]["ground_truth_sha256"] == (
            corpus.load_manifest(width_root, name)["ground_truth"]["sha256"]
        )
        (data_set,) = [c for c in track.corpora if c.name == corpus.corpus_name(1, name)]
        assert data_set.documents[0].target_index == name and data_set.documents[0].number_of_documents == max(1000, width)
    names = [t.name for t in tasks]
    assert "width-12-coverage-D_td-serial" in names and "width-1200-coverage-D_td-serial" not in names  # above 300
    assert "width-1200-coverage-D_td-msearch-msc-1" in names and "width-1200-coverage-D_td-terms" in names
    # the main index keeps its plain body: create-index filters by name, so it is never created by this race
    assert "_meta" not in (next(i for i in track.indices if i.name == corpus.INDEX).body.get("mappings") or {})


def test_a_missing_width_set_names_the_command_that_makes_it(width_root):
    with pytest.raises(exceptions.SystemSetupError) as error:
        load(width_root, dict(WIDTH_PARAMS, widths=[12, 300]), challenge="coverage-width")
    assert "corpora-gen/generate --widths 300 --rows-per-epoch 2400 --epochs 1" in str(error.value)
    with pytest.raises(exceptions.SystemSetupError) as error:
        load(width_root, dict(WIDTH_PARAMS, width_rows="per-node", width_rows_per_node=200), challenge="coverage-width")
    assert "corpora-gen/generate --widths 1200 --rows-per-epoch 240000 --epochs 1" in str(error.value)  # 1200 x 200 rows
    with pytest.raises(exceptions.SystemSetupError) as error:
        load(width_root, dict(WIDTH_PARAMS, width_epochs=2), challenge="coverage-width")
    assert "has no epoch 2" in str(error.value) and "--epochs 2" in str(error.value)


@pytest.mark.parametrize(
    "track_params,message",
    [
        ({"widths": [30, 0]}, "track parameter widths must be a non-empty list of node counts"),
        ({"width_rows": "per-shard"}, "track parameter width_rows must be one of 'per-epoch', 'per-node'"),
        ({"width_max_concurrent_searches": [0, -1]}, "width_max_concurrent_searches must be a non-empty list"),
        ({"width_serial_max_nodes": "all"}, "width_serial_max_nodes must be an integer"),
    ],
)
def test_bad_width_parameters_are_named(width_root, track_params, message):
    with pytest.raises(exceptions.SystemSetupError, match=re.escape(message)):
        load(width_root, dict(WIDTH_PARAMS, **track_params), challenge="coverage-width")


def test_corpus_checksums_are_read_once_per_race_and_an_edit_is_still_caught(tmp_path, monkeypatch):
    """Rally loads the track in several processes per race: the first one hashes each file, the others trust its note
    as long as the file's size and modification time are those it noted."""
    cmgen.generate(SMALL, tmp_path)
    hashed = []
    original = corpus.sha256_of
    monkeypatch.setattr(corpus, "sha256_of", lambda path: hashed.append(path) or original(path))
    load(tmp_path, race_id="r-once")
    first = len(hashed)
    assert first == 6  # the 5 epoch files and the ground truth
    load(tmp_path, race_id="r-once")
    load(tmp_path, race_id="r-once")
    assert len(hashed) == first  # later loads of the same race trust the note
    load(tmp_path, race_id="r-other")
    assert len(hashed) == 2 * first  # another race checks again
    victim = tmp_path / corpus.corpus_name(2) / corpus.file_name(2)
    data = bytearray(victim.read_bytes())
    data[5] = ord("9") if data[5] != ord("9") else ord("8")
    victim.write_bytes(bytes(data))  # same size, new modification time
    with pytest.raises(exceptions.SystemSetupError, match="sha256 differs from the manifest"):
        load(tmp_path, race_id="r-once")


def check_privileges_params(track, challenge):
    (task,) = [t for t in ours(track, challenge) if t.operation.type == "check-privileges"]
    return task.operation.params


def test_the_privilege_check_gets_what_the_challenge_that_runs_asks_of_the_cluster(corpus_root):
    params = check_privileges_params(load(corpus_root, challenge="aggregation-memory"), "aggregation-memory")
    assert params["challenge"] == "aggregation-memory" and params["cluster"] == ["manage", "monitor"]
    assert params["index"] == {"cluster-metrics": ["read", "view_index_metadata"], NOTES_INDEX: ["create_index", "read", "write"]}
    assert params["needed-by"]["cluster:manage"] == ["breaker-floor"]
    query = check_privileges_params(load(corpus_root, challenge="production-comparison"), "production-comparison")
    assert query["cluster"] == ["monitor"] and query["index"] == {"cluster-metrics": ["read", "view_index_metadata"], NOTES_INDEX: ["read"]}
    # an ingest deletes its index by name (no cluster setting to lift, as Rally's delete-index does): no cluster manage;
    # manage on the index only where it unsets the settings it changed for its bulks
    ingest = check_privileges_params(load(corpus_root, challenge="ingest-baseline"), "ingest-baseline")
    assert ingest["cluster"] == ["monitor"] and "manage" not in ingest["index"]["cluster-metrics"]
    tuned = check_privileges_params(load(corpus_root, challenge="ingest-tuned"), "ingest-tuned")
    assert tuned["needed-by"]["index:cluster-metrics:manage"] == ["ingest-epochs"]


def test_coverage_load_shares_its_calibration_through_the_cluster_only_on_several_hosts(corpus_root):
    """One host: the share tasks send nothing, and the challenge needs nothing more. Two: each share task knows it,
    names its cell's share index, and the privilege check asks for what the share does there and on its alias."""
    one = load(corpus_root, challenge="coverage-load", race_id="r-share")
    shares = [t for t in ours(one, "coverage-load") if t.operation.type == "share-calibration"]
    assert shares and all(load_runner.HOSTS_KEY not in t.operation.params for t in shares)
    assert all(t.clients == t.operation.params["clients"] == 4 for t in shares)
    assert not [name for name in check_privileges_params(one, "coverage-load")["index"] if "calibration" in name]
    two = load(corpus_root, challenge="coverage-load", race_id="r-share", hosts=["10.0.0.1", "10.0.0.2"])
    shares = [t for t in ours(two, "coverage-load") if t.operation.type == "share-calibration"]
    assert all(t.operation.params[load_runner.HOSTS_KEY] == 2 for t in shares)
    index = "cluster-metrics-calibration-r-share-coverage-d_td-serial-load-calibration"
    assert shares[0].operation.params["index"] == index and len({t.operation.params["index"] for t in shares}) == len(shares)
    params = check_privileges_params(two, "coverage-load")
    for name in (index, f"{index}-shared"):
        assert params["index"][name] == ["create_index", "delete_index", "manage", "read", "write"]
        assert params["needed-by"][f"index:{name}:write"] == ["share-calibration"]


def test_the_privilege_check_names_the_indices_the_race_really_uses(width_root):
    params = check_privileges_params(load(width_root, WIDTH_PARAMS, test_mode=True, challenge="coverage-width"), "coverage-width")
    assert sorted(params["index"]) == sorted([NOTES_INDEX, *(corpus.width_set(w, 2400) for w in WIDTH_PARAMS["widths"])])
    widths = [p for name, p in params["index"].items() if name != NOTES_INDEX]
    assert all({"create_index", "index", "read"} <= set(p) for p in widths), params["index"]


def table_rows(text):
    """{challenge: (cluster privileges, the indices', the notes index's)} of make privileges' table."""
    rows = {}
    for line in text.splitlines():
        columns = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(columns) == 4:
            rows[columns[0].strip("`")] = tuple(sorted(re.findall(r"`([a-z_]+)`", c)) for c in columns[1:])
    return rows


class AnyProxy:
    """Toxiproxy with every proxy a network challenge names (its load-time check), for loading those challenges."""

    def __init__(self, url, timeout=10.0):
        pass

    def require_proxy(self, name):
        return {"name": name, "listen": "127.0.0.1:9290"}


def test_make_privileges_prints_what_the_processor_hands_each_challenges_check(corpus_root, width_root, monkeypatch):
    """make privileges sums each challenge's needs from the track rendered with the parameters, before any race and
    without a corpus; the processor sums them at load from the race's corpus sets: the same table."""
    from runners.studies import network

    monkeypatch.setattr(network, "Toxiproxy", AnyProxy)
    found = {}
    for challenge in [c["name"] for c in json.loads(loader.render_template_from_file(str(TRACK_DIR / "track.json"), {}))["challenges"]]:
        root, params, test_mode = (width_root, WIDTH_PARAMS, True) if challenge == "coverage-width" else (corpus_root, {}, False)
        needs = check_privileges_params(load(root, params, test_mode, challenge=challenge), challenge)
        corpus_index = sorted({p for name, privileges in needs["index"].items() if name != NOTES_INDEX for p in privileges})
        found[challenge] = (needs["cluster"], corpus_index, needs["index"].get(NOTES_INDEX, []))
    printed = privileges.table(WIDTH_PARAMS, OPERATIONS)
    assert table_rows(printed) == found and len(found) == len(rendered_challenges({}))
    # least privilege: a query challenge reads, only the challenges that change a cluster setting manage the cluster
    assert found["query-decomposition"] == (["monitor"], ["read", "view_index_metadata"], ["read"])
    assert {name for name, (cluster, _, _) in found.items() if "manage" in cluster} == {
        "aggregation-memory",
        "ccs-roundtrips",
        "coverage-width",
        "source-large",
    }


def test_every_default_passes_its_own_rule_and_make_params_names_what_each_accepts():
    for name, default in parameters.DEFAULTS.items():
        parameters.all_rules()[name](default)  # a default the processor would refuse: track.json and the rule disagree
    listed = subprocess.run(
        [sys.executable, "-m", "runners.listings", "params"], capture_output=True, text=True, cwd=REPO, check=True
    ).stdout
    assert (
        "epochs = 5\n    an integer of at least 1\n" in listed
        and "schedule = \"interleaved\"\n    one of 'blocked', 'interleaved'" in listed
    )
    assert listed.count("\n    ") == len(parameters.DEFAULTS)


def test_each_parameter_is_ruled_by_one_module_and_every_rule_names_a_declared_parameter():
    """The rules are collected from the study modules (runners/contracts/parameters.py all_rules): each study's parameters by its
    own module; a parameter ruled twice, ruled nowhere, or a rule of no declared parameter is refused, named."""
    from runners.studies import layouts, memory, network, widths

    ruled = parameters.all_rules()
    assert ruled.keys() == parameters.DEFAULTS.keys()
    assert ruled["memory_resolution"] is memory.PARAMETER_RULES["memory_resolution"] and "rtt_ms" in network.PARAMETER_RULES
    assert "layouts" in layouts.PARAMETER_RULES and "widths" in widths.PARAMETER_RULES and "epochs" in parameters.PARAMETER_RULES
    from runners import studies

    ruling = {name for name, _ in studies.tables("PARAMETER_RULES")}
    assert ruling >= {"ingest", "layouts", "load", "memory", "network", "profile", "widths"}
    tables = [("parameters", parameters.PARAMETER_RULES), ("network", network.PARAMETER_RULES)]
    with pytest.raises(RuntimeError, match="'rtt_ms' is ruled by runners/studies/network.py and runners/studies/memory.py"):
        parameters.collect(tables + [("memory", {"rtt_ms": memory.resolution})], set(parameters.DEFAULTS))
    with pytest.raises(RuntimeError, match=r"without a rule: \['memory_attempts'"):
        parameters.collect(tables, set(parameters.PARAMETER_RULES) | set(network.PARAMETER_RULES) | {"memory_attempts"})
    with pytest.raises(RuntimeError, match=r"rules without a declaration: \['rtt_ms'"):
        parameters.collect(tables, set(parameters.PARAMETER_RULES) | set(network.PARAMETER_RULES) - {"rtt_ms"})
