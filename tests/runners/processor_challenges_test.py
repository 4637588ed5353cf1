"""What the track processor hands each challenge's tasks, on the real track file read by Rally's own TrackFileReader
(tests/runners/track_load.py): the cells each challenge records, the corpus check before its first timed query, its
needs held for the challenge that runs alone, the warm-ups after --test-mode, the interleaved order, the proxies cleared
before the benchmark, and the privileges the first task checks (the same table as make privileges)."""

import json
import re

import pytest
from esrally import config, exceptions
from esrally.track import loader

from runners.contracts import cells, corpus, parameters
from runners.contracts.queries import FETCH_KINDS, TRANSPORTS, VARIANTS
from runners.operations import OPERATIONS, PARAM_SOURCES
from runners.processor import ClusterMetricsProcessor
from runners.shared import interleave
from runners.shared.restore import NOTES_INDEX
from runners.shared.toxiproxy import FAULTS
from runners.studies import load as load_runner
from runners.studies import network as network_runners
from runners.studies import privileges
from runners.studies.network import clear_toxics
from tests.conftest import TRACK_DIR, rendered_challenges, rendered_tasks
from tests.runners.track_load import WIDTH_PARAMS, load, ours


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


def test_only_the_selected_challenge_is_held_to_its_needs(corpus_root):
    """A Toxiproxy that is not running stops a network challenge at load, naming the fix, and no other challenge."""
    assert load(corpus_root, {"toxiproxy_url": "http://127.0.0.1:8479"}, challenge="full")
    for challenge in ("network-faults", "rtt-sweep"):
        with pytest.raises(exceptions.SystemSetupError, match=r"Toxiproxy is not reachable at http://127.0.0.1:8479.*" r"make proxy-start"):
            load(corpus_root, {"toxiproxy_url": "http://127.0.0.1:8479"}, challenge=challenge)


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
