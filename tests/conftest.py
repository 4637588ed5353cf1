"""Shared fixtures: one real Elasticsearch node for the whole session (port 9250, its own data), an isolated Rally
home (RALLY_HOME under .rally-test/, never the user's), and a small generated corpus in it."""

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "corpora-gen"))
sys.path.insert(0, str(REPO / "local-es"))  # its localnode package: the launchers' code behind local-es/*.py

from runners.contracts import corpus  # noqa: E402
from runners.contracts.track_files import rendered_tasks  # noqa: E402,F401  (the tests import it from here)
from runners.studies import warm_up  # noqa: E402
from tests.race_record import (  # noqa: E402,F401  (the tests import them from here)
    Race,
    _appended,
    _size,
    assert_clean,
    assert_refused_before_any_timed_task,
    assert_reported,
)
from tests.rally_processes import SuiteActorSystem, oom_kills, rally_pids, thespian_log  # noqa: E402,F401
from tests.signals import popen_with_default_signals  # noqa: E402
from tests.track_render import TRACK_DIR, rendered_challenges, rendered_track  # noqa: E402,F401  (the tests import them from here)

TEST_PORT = int(os.environ.get("TEST_ES_PORT", "9250"))
# the Elasticsearch version of every node the suite starts: the launcher's default (the study's) unless TEST_ES_VERSION
# names another (make it's version tier races each challenge's `versions` test on the newer lines)
TEST_ES_VERSION = os.environ.get("TEST_ES_VERSION") or None
# the version tier races each challenge once on that version, the costliest in a smaller form (their modules say which):
# every kind of request still sent, fewer repeats of a kind the other version's tier sends in full (CI under 30 minutes)
VERSION_TIER = TEST_ES_VERSION is not None
# TEST_METRICS_STORE=yes (make test): every race of the session goes to Rally's Elasticsearch metrics store
# as well, a node of the study's version on SUITE_STORE_PORT, and every clean race's report is built twice, from the
# race's files and from the store alone, and the two compared (assert_reported)
TEST_METRICS_STORE = os.environ.get("TEST_METRICS_STORE") == "yes"
SUITE_STORE_PORT = 9268
PYTHON = sys.executable
ESRALLY = str(Path(sys.executable).with_name("esrally"))
RALLY_COMMAND = ESRALLY  # the real one: a test may stand a probe in for ESRALLY (tests/test_signals.py)
BESIDE_RACES = False  # make test runs these tests beside its races (--beside-races, pytest_configure below)
ESRALLYD = str(Path(sys.executable).with_name("esrallyd"))
RALLY_TEST_HOME = REPO / ".rally-test"  # the session's Rally home (rally_home), the suite's actor system's too
LAUNCHER = str(REPO / "local-es" / "esnode.py")
# tests/private_network/ runs only inside a private network namespace (tests/test_load_drivers.py starts it there)
collect_ignore = [] if os.environ.get("CLUSTER_METRICS_PRIVATE_NETWORK") else ["private_network"]
TEST_MODE_PASSES = warm_up.TEST_MODE_PASSES  # a warm-up-pass task's passes in a test-mode race
SMALL_CORPUS = ["--epochs", "5", "--rows-per-epoch", "3000", "--nodes", "30", "--tasks", "200"]


VERSIONS_MARK = re.compile(r'mark\.versions\("([a-z0-9-]+)"')


def challenges_raced_by_their_own_module():
    """{challenge: test module} of the challenges a study's own module races (a test marked versions("<challenge>")
    outside test_challenges.py): those that need a set-up of their own (a proxy, a remote, three nodes) or parameters
    its tests assert on. test_challenges.py races every other challenge of the track, so a new one needs no list."""
    found = {}
    for path in sorted(Path(__file__).parent.glob("test_*.py")):
        if path.name != "test_challenges.py":
            for challenge in VERSIONS_MARK.findall(path.read_text()):
                found.setdefault(challenge, path.stem)
    return found


def es_url(path="", port=TEST_PORT):
    return f"http://127.0.0.1:{port}{path}"


def http(method, path, body=None, port=TEST_PORT):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(es_url(path, port), data=data, method=method, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def with_rally_client(work, port=TEST_PORT):
    """Runs work(es), a coroutine function, with the asynchronous client Rally gives runners, on the real node."""
    import asyncio

    from esrally.client.factory import EsClientFactory

    async def run():
        version = http("GET", "/", port=port)[1]["version"]["number"]  # as Rally asks the cluster before a race
        factory = EsClientFactory(
            hosts=[{"host": "127.0.0.1", "port": port}], client_options={}, distribution_version=version, distribution_flavor="default"
        )
        es = factory.create_async(client_id=0)
        try:
            with es.new_request_context():
                return await work(es)
        finally:
            await es.close()

    return asyncio.run(run())


def launcher(*args, env=None, port=TEST_PORT):
    version = ["--version", TEST_ES_VERSION] if TEST_ES_VERSION and args[:1] == ("start",) else []
    return subprocess.run(
        [sys.executable, LAUNCHER, *args, *version, "--http-port", str(port)],
        capture_output=True,
        text=True,
        env=env or os.environ.copy(),
        timeout=300,
    )


@pytest.fixture(scope="session")
def es_node():
    result = launcher("start", "--heap", "1g")
    assert result.returncode == 0, result.stdout + result.stderr
    http("DELETE", f"/{PRISTINE}")  # a copy kept by an earlier session may hold an earlier corpus
    yield es_url()
    stopped = launcher("stop")
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr


@pytest.fixture(scope="session")
def rally_home():
    home = RALLY_TEST_HOME
    ACTOR_SYSTEM.stop()  # started with this home: not while it is emptied
    if home.exists():
        shutil.rmtree(home)
    home.mkdir()
    return home


def data_root(home):
    return corpus.data_root(home)


def generate(home, *extra):
    env = dict(os.environ, RALLY_HOME=str(home))
    result = subprocess.run(
        [PYTHON, str(REPO / "corpora-gen" / "generate"), *SMALL_CORPUS, *extra], capture_output=True, text=True, env=env
    )
    assert result.returncode == 0, result.stderr
    return result


def corpus_configuration(home, name, folder, *extra):
    """A corpus of its own (generate's, with these arguments) in `folder`, and a Rally configuration `name` in the Rally
    home `home` whose data directory is that corpus's: the returned --configuration-name argument races on it, in the
    suite's actor system too (its actors read a race's configuration by name from that home)."""
    from report.shared import store

    generate(folder, *extra)
    store.write_named_config(home, name, {"local.dataset.cache": corpus.data_root(folder)})
    return f"--configuration-name={name}"


@pytest.fixture(scope="session")
def small_corpus(rally_home):
    generate(rally_home)
    return data_root(rally_home)


# every Rally home this session raced in: a race waits until the previous one's processes of these homes are gone
RALLY_HOMES = set()


def wait_for_our_rally(timeout=180):
    """One Rally at a time: the previous race's processes take a moment to exit after its command returns. Waits for
    ours by their processes (never kills); another user's Rally is left alone, and the race that follows says so."""
    deadline = time.monotonic() + timeout
    while (pids := rally_pids(RALLY_HOMES)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not pids, f"a Rally of this suite's is still running after {timeout} s (PIDs {pids})"


def run_rally(home, *args, timeout=1200):
    """Any Rally command of the suite (race, info, list) with its own Rally home, after the previous one of the
    suite has exited: Rally refuses to start beside another Rally process, whatever its command."""
    return _rally(home, args, subprocess.run, capture_output=True, timeout=timeout)


def _rally(home, args, start, **how):
    """esrally with these arguments and its own Rally home, once the previous Rally of the suite has exited; a race
    in the suite's actor system where there is one (SuiteActorSystem), in one of its own when its test says so."""
    if BESIDE_RACES and ESRALLY == RALLY_COMMAND:
        pytest.fail(
            f"this test starts a Rally process (esrally {args[0] if args else ''}) while make test's races run beside it, and "
            "Rally refuses to race beside another Rally process: mark it rally_process (make test runs those after its races)"
        )
    wait_for_our_rally()
    if args and args[0] == "race":
        ACTOR_SYSTEM.ready_for(home)
    RALLY_HOMES.add(home)
    return start([ESRALLY, *args], text=True, env=dict(os.environ, RALLY_HOME=str(home), **thespian_log(home)), **how)


ACTOR_SYSTEM = SuiteActorSystem(RALLY_TEST_HOME, ESRALLYD)


@pytest.fixture(autouse=True)
def _actor_system_of_this_test(request):
    ACTOR_SYSTEM.own_for_this_test = request.node.get_closest_marker("own_actor_system") is not None
    yield
    ACTOR_SYSTEM.own_for_this_test = False


@pytest.fixture(scope="session", autouse=True)
def _suite_actor_system():
    yield
    wait_for_our_rally()
    ACTOR_SYSTEM.stop()


CHALLENGE_ALONE_ROOT = RALLY_TEST_HOME / "challenge-alone"  # emptied with the session's Rally home, made again on use


def default_challenge():
    """The challenge the track marks default (Rally refuses a track without one)."""
    return next(name for name, c in rendered_challenges().items() if c.get("default"))


def challenge_alone_track(challenge, root=CHALLENGE_ALONE_ROOT, also=()):
    """The track folder holding `challenge` alone, beside the default challenge Rally requires: every file a link to
    the repository's own (track.json, track.py, index.json, tasks/, ...; challenges/ with those two files), and runners/
    beside it as in the repository. Rally renders, reads and hands between its actors every challenge of the track in
    every race: on 2 cores that was 6 s of a test-mode race's 9 s before its first task, the whole track against
    this folder (docs/tests.md), and the suite runs about a hundred races. The challenge renders the same in both
    (tests/test_track_files.py); make versions and the team-repository test race the whole track, and the unit tier
    reads it whole with Rally's reader. A challenge without a file of its name gets the whole track. `also`: more
    challenges in the same folder, for a test whose command races several (tests/test_nightly.py)."""
    names = (challenge, *also)
    if not all((TRACK_DIR / "challenges" / f"{name}.json").is_file() for name in names):
        return TRACK_DIR
    folder = root / "+".join(names)
    track = folder / "tracks" / TRACK_DIR.name
    if not track.is_dir():
        building = root / f".{folder.name}.{os.getpid()}"
        shutil.rmtree(building, ignore_errors=True)
        made = building / "tracks" / TRACK_DIR.name
        (made / "challenges").mkdir(parents=True)
        for entry in TRACK_DIR.iterdir():
            if entry.name not in ("challenges", "__pycache__"):
                (made / entry.name).symlink_to(entry)
        for name in {*names, default_challenge()}:
            (made / "challenges" / f"{name}.json").symlink_to(TRACK_DIR / "challenges" / f"{name}.json")
        (building / "runners").symlink_to(REPO / "runners")
        building.rename(folder)
    return track


def race_args(challenge, *extra, track=None, port=TEST_PORT, test_mode=True, target_hosts=None):
    """The arguments of `esrally race` for a challenge of the track (test mode unless told), from the track folder
    that holds it alone (challenge_alone_track) unless `track` names another."""
    track_args = track or [f"--track-path={challenge_alone_track(challenge)}"]
    cmd = [
        "race",
        *track_args,
        f"--challenge={challenge}",
        "--pipeline=benchmark-only",
        "--offline",
        f"--target-hosts={target_hosts or f'127.0.0.1:{port}'}",
        *extra,
    ]
    return cmd + (["--test-mode"] if test_mode else [])


def start_race(home, challenge, *extra, **kwargs):
    """A real `esrally race` started in the background (a test that interrupts it), after the previous Rally of this
    suite has exited; with the default signal dispositions (tests/signals.py), so that the SIGINT a test sends it is
    a Ctrl-C even when the suite runs as a background job, which inherits SIGINT ignored."""
    cmd = race_args(challenge, *extra, **kwargs)
    return _rally(home, cmd + into_suite_store(home, cmd), popen_with_default_signals, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def into_suite_store(home, cmd):
    """With TEST_METRICS_STORE=yes, the arguments that send a race that names no configuration of its own to the
    suite's metrics store: a configuration in `home` that is the home's own rally.ini (a track repository, ...) or
    Rally's defaults, its [reporting] section pointed at the store."""
    import configparser

    from report.shared import store

    if not TEST_METRICS_STORE or any(arg.startswith("--configuration-name") for arg in cmd):
        return []
    path = store.write_config(home, "127.0.0.1", SUITE_STORE_PORT)
    own = home / ".rally" / "rally.ini"
    if own.is_file():
        written, merged = configparser.ConfigParser(interpolation=None), configparser.ConfigParser(interpolation=None)
        written.read(path)
        merged.read(own)
        merged["reporting"] = dict(written["reporting"])
        with path.open("w") as f:
            merged.write(f)
    return [f"--configuration-name={store.CONFIG_NAME}"]


@pytest.fixture(scope="session", autouse=TEST_METRICS_STORE)
def suite_metrics_store():
    """The suite's metrics store (TEST_METRICS_STORE=yes): a node of the launcher's default version, whatever version
    the tier races, as a team's store often is; made ready for Rally's metrics as make metrics-store makes it."""
    from report.shared import store

    start = [PYTHON, LAUNCHER, "start", "--heap", "512m", "--http-port", str(SUITE_STORE_PORT)]
    started = subprocess.run(start, capture_output=True, text=True, timeout=300)
    assert started.returncode == 0, started.stdout + started.stderr
    store.Store.local("127.0.0.1", SUITE_STORE_PORT).prepare_local_node()
    yield
    stopped = subprocess.run([PYTHON, LAUNCHER, "stop", "--http-port", str(SUITE_STORE_PORT)], capture_output=True, text=True, timeout=300)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr


def run_race(
    home, challenge, *extra, track=None, port=TEST_PORT, test_mode=True, target_hosts=None
):  # parameters: esrally race's arguments, each a keyword with the suite's default
    """A real `esrally race`, after the previous Rally of this suite has exited."""
    cmd = race_args(challenge, *extra, track=track, port=port, test_mode=test_mode, target_hosts=target_hosts)
    stored = into_suite_store(home, cmd)
    cmd += stored
    races = home / ".rally" / "benchmarks" / "races"
    before = set(races.glob("*/race.json")) if races.exists() else set()
    log_file, actors_file = home / ".rally" / "logs" / "rally.log", Path(thespian_log(home)["THESPLOG_FILE"])
    log_start, actors_start = _size(log_file), _size(actors_file)
    oom_before = oom_kills()
    result = run_rally(home, *cmd)
    output = result.stdout + result.stderr
    after = set(races.glob("*/race.json")) if races.exists() else set()
    new = sorted(after - before, key=lambda p: p.stat().st_mtime)
    race = json.loads(new[-1].read_text()) if new else None
    log = _appended(log_file, log_start)
    race = Race(result.returncode, output, race, log, home)
    race.actors_log = _appended(actors_file, actors_start)
    race.oom_kills = None if oom_before is None else oom_kills() - oom_before
    race.in_suite_store = bool(stored)
    return race


class SharedRaces:
    """One race per challenge and arguments for the whole session: every test that reads a race asserts on the same
    one, and none is raced twice."""

    def __init__(self, home):
        self.home, self._races = home, {}

    def race(self, challenge, *extra, before=None, after=None, **kwargs):
        """The race of `challenge` with these arguments: raced on first use (`before()` first, `after(race)` once it
        ended), then the same race for every test."""
        key = (challenge, extra, tuple(sorted((k, json.dumps(v)) for k, v in kwargs.items())))
        if key not in self._races:
            if before:
                before()
            self._races[key] = run_race(self.home, challenge, *extra, **kwargs)
            if after:
                after(self._races[key])
        return self._races[key]


@pytest.fixture(scope="session")
def shared_races(rally_home, small_corpus, es_node):
    return SharedRaces(rally_home)


# ---------------------------------------------------------------- the test index: the suite's corpus, ingested once

INDEX = "cluster-metrics"
PRISTINE = "pristine-cluster-metrics"  # a write-blocked clone of the first complete ingest: restores cost a clone
STANDARD_SHAPE = {"number_of_shards": 1, "number_of_replicas": 0, "source-mode": "stored"}


def doc_count(port=TEST_PORT, index=INDEX):
    status, body = http("GET", f"/{index}/_count", port=port)
    return body["count"] if status == 200 else None


def holds_the_test_corpus(rally_home, index=INDEX, port=TEST_PORT, shape=STANDARD_SHAPE):
    """The index holds the test-mode corpus, all of it, in the shape the query challenges measure (or `shape`)."""
    from runners.studies.index_checks import shape_differences

    status, body = http("GET", f"/{index}/_mapping", port=port)
    if status != 200:
        return False
    manifest = corpus.load_manifest(data_root(rally_home))
    mappings = body[index]["mappings"]
    settings = http("GET", f"/{index}/_settings?flat_settings=true", port=port)[1][index]["settings"]
    found = mappings.get("_meta", {}).get(corpus.FINGERPRINT_KEY)
    return (
        found == corpus.fingerprint(manifest, "test_mode")
        and not shape_differences(mappings, settings, shape)
        and doc_count(port=port, index=index) == 1000 * manifest["generator"]["epochs"]
        and settings.get("index.blocks.write") != "true"
    )


def _clone(source, target, settings):
    status, body = http("POST", f"/{source}/_clone/{target}?wait_for_active_shards=1", {"settings": settings})
    assert status == 200, body
    http("GET", f"/_cluster/health/{target}?wait_for_status=green&timeout=60s")


def keep_pristine(rally_home):
    """Keeps a write-blocked clone of the index, when it holds the whole test corpus and no clone is kept yet."""
    if http("HEAD", f"/{PRISTINE}")[0] == 200 or not holds_the_test_corpus(rally_home):
        return
    assert http("PUT", f"/{INDEX}/_settings", {"index.blocks.write": True})[0] == 200  # a clone's source must be
    try:
        _clone(INDEX, PRISTINE, {"index.number_of_replicas": 0})
    finally:
        assert http("PUT", f"/{INDEX}/_settings", {"index.blocks.write": None})[0] == 200


def ensure_test_index(shared_races):
    """The query challenges need the suite's test-mode corpus in the index, in the standard shape: kept if it is
    there, cloned from the pristine copy otherwise (a test that changed the index needs no re-ingest), and ingested
    only when there is no copy yet (by the session's ingest-baseline race, which every test then shares)."""
    home = shared_races.home
    if holds_the_test_corpus(home):
        keep_pristine(home)
        return
    http("DELETE", f"/{INDEX}")
    if http("HEAD", f"/{PRISTINE}")[0] == 200:
        _clone(PRISTINE, INDEX, {"index.number_of_replicas": 0, "index.blocks.write": None})
    else:
        assert_clean(shared_races.race("ingest-baseline"))
        keep_pristine(home)
    assert holds_the_test_corpus(home)


# the network: a Toxiproxy of the suite's own (never a user's on 8474) and a proxy in front of the test node
TOXIPROXY_PORT, PROXY_PORT = 8475, 9291
TOXIPROXY_LAUNCHER = str(REPO / "local-es" / "toxiproxy_launcher.py")
NETWORK_PARAMS = {"toxiproxy_url": f"http://127.0.0.1:{TOXIPROXY_PORT}"}


def toxiproxy_launcher(*args):
    return subprocess.run(
        [sys.executable, TOXIPROXY_LAUNCHER, *args, "--api-port", str(TOXIPROXY_PORT)], capture_output=True, text=True, timeout=600
    )


def track_params(**extra):
    return f"--track-params={json.dumps({**NETWORK_PARAMS, **extra})}"


@pytest.fixture(scope="session")
def toxiproxy(es_node):
    """A real Toxiproxy (installed with go install on first use) with the HTTP proxy in front of the test node."""
    started = toxiproxy_launcher("start")
    assert started.returncode == 0, started.stdout + started.stderr
    made = toxiproxy_launcher("proxy", "--role", "http", "--listen", str(PROXY_PORT), "--upstream", str(TEST_PORT))
    assert made.returncode == 0, made.stdout + made.stderr
    from runners.shared.toxiproxy import Toxiproxy

    yield Toxiproxy(NETWORK_PARAMS["toxiproxy_url"])
    stopped = toxiproxy_launcher("stop")
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr


# a secured cluster's TLS (tests/secure_stand_in.py): a CA made for the session, and another that signed nothing of ours
@pytest.fixture(scope="session")
def certs(tmp_path_factory):
    from tests.secure_stand_in import make_ca

    return make_ca(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="session")
def other_certs(tmp_path_factory):
    from tests.secure_stand_in import make_other_ca

    return make_other_ca(tmp_path_factory.mktemp("other-tls"))


def pytest_addoption(parser):
    parser.addoption(
        "--beside-races",
        action="store_true",
        help="make test runs the unit tests beside its races: a test that starts a Rally process fails, naming its mark",
    )


def pytest_configure(config):
    global BESIDE_RACES
    BESIDE_RACES = config.getoption("--beside-races")


def pytest_collection_modifyitems(config, items):
    """A test that uses the node or a Rally home (directly or through another fixture) is an integration test; a
    test that starts a node of its own says so with its own mark. A run of the version tier (-m versions) races every
    challenge of the track, or one whose race holds all its tasks (raced_within), but for a race its module leaves out
    with its reason (versions(<challenge>, left_out=<why>)): a challenge none of them names stops it before anything
    starts. Beside make test's races, the unit tests marked slow go first, so that none of them is left to run alone
    after the races end."""
    for item in items:
        if {"es_node", "rally_home"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.integration)
    if BESIDE_RACES:
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: the slow ones first, in order
    if "versions" in (config.getoption("markexpr") or ""):
        # a race its module leaves out of the version tier, with the reason it gives (versions(..., left_out=why))
        left_out = [item for item in items if any(mark.kwargs.get("left_out") for mark in item.iter_markers("versions"))]
        if left_out:
            config.hook.pytest_deselected(items=left_out)
            items[:] = [item for item in items if item not in left_out]
        raced = {mark.args[0] for item in [*items, *left_out] for mark in item.iter_markers("versions")}
        raced |= {
            item.callspec.params["challenge"] for item in items for mark in item.iter_markers("raced_within") if mark.args[0] in raced
        }
        missing = sorted(set(rendered_challenges()) - raced)
        if missing:
            raise pytest.UsageError(
                f"no test marked versions(<challenge>) races {', '.join(missing)}, nor a raced challenge that holds its tasks "
                "(raced_within): the version tier races every challenge"
            )


@pytest.fixture(scope="module")
def context(tmp_path_factory):
    """For runner unit tests: a small generated corpus (2 epochs x 90 rows, 3 nodes) and the race context a track
    load would build for it."""
    import cmgen
    from runners.contracts.context import RaceContext

    root = tmp_path_factory.mktemp("data")
    manifest = cmgen.generate(cmgen.Params(epochs=2, rows_per_epoch=90, nodes=3, tasks=5, seed=3), root)
    return RaceContext(
        index="cluster-metrics",
        nodes=tuple(manifest["nodes"]),
        epochs=(1, 2),
        section="full",
        ground_truth=str(corpus.ground_truth_path(root)),
        ground_truth_sha256=manifest["ground_truth"]["sha256"],
        epoch_docs={"1": 90, "2": 90},
        record_dir=str(root / "records"),
        fingerprint=corpus.fingerprint(manifest, "full"),
    )
