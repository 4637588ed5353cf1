"""The track processor on the real track file, read by Rally's own TrackFileReader (no node, no race): the corpus
checks, the index fingerprint and the context each operation gets, the width sets, the load-driver hosts' checks. Its
parameters: processor_parameters_test.py; what each challenge gets: processor_challenges_test.py. The same checks
inside real races: tests/test_bad_input.py and tests/test_challenges.py."""

import json
import pickle
import shutil
import socket

import pytest
from esrally import exceptions

import cmgen
from runners.contracts import corpus
from runners.contracts.context import CONTEXT_KEY, RaceContext
from runners.processor import ClusterMetricsProcessor
from runners.shared import host_load
from tests.runners.track_load import SMALL, WIDTH_PARAMS, load, ours


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


def test_numpy_version_is_recorded_and_another_one_reported(tmp_path):
    manifest = cmgen.generate(SMALL, tmp_path)
    assert manifest["made_with"]["numpy"] == cmgen.np.__version__
    assert cmgen.made_with_difference(manifest) is None
    manifest["made_with"]["numpy"] = "1.0.0"
    assert "made with numpy 1.0.0" in cmgen.made_with_difference(manifest)


def test_copied_corpus_folder_still_loads(tmp_path, corpus_root):
    shutil.copytree(corpus_root, tmp_path / "copy", ignore=shutil.ignore_patterns("rally"))
    assert load(tmp_path / "copy").corpora


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
