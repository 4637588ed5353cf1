"""Shared fixtures: one real Elasticsearch node for the whole session (port 9250, its own data), an isolated Rally
home (RALLY_HOME under .rally-test/, never the user's), and a small generated corpus in it."""

import functools
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

from runners.contracts import corpus  # noqa: E402
from runners.contracts import records  # noqa: E402
from runners.contracts.track_files import rendered_tasks  # noqa: E402,F401  (the tests import it from here)
from runners.studies import warm_up  # noqa: E402
from tests.signals import popen_with_default_signals  # noqa: E402


def _compile_each_template_once():
    """Rally's loader makes a new Jinja environment for every render of the track (and reads it twice a load: once to
    find its parameters, once to render it), so Jinja parses and compiles the same templates again each time: most of
    the 0.3 s of a render here, and the unit tier renders the track hundreds of times. A template's code depends only
    on its text and the environment's syntax settings (the key below), so the suite parses and compiles each text once
    per process (and scans each parsed tree for its parameters once); the code runs in the environment that asked for it,
    with that environment's globals and filters."""
    import jinja2
    import jinja2.meta

    compile_template, parse_template = jinja2.Environment.compile, jinja2.Environment.parse
    compiled, parsed = {}, {}

    def settings(env):
        syntax = ("block_start_string", "block_end_string", "variable_start_string", "variable_end_string",
                  "comment_start_string", "comment_end_string", "line_statement_prefix", "line_comment_prefix",
                  "trim_blocks", "lstrip_blocks", "newline_sequence", "keep_trailing_newline", "optimized", "is_async")  # fmt: skip
        cacheable = not env.extensions and not callable(env.autoescape)
        return tuple(getattr(env, name) for name in syntax) + (env.autoescape,) if cacheable else None

    def compile_once(self, source, name=None, filename=None, raw=False, defer_init=False):
        key = settings(self)
        if key is None or not isinstance(source, str):
            return compile_template(self, source, name, filename, raw, defer_init)
        key += (source, name, filename, raw, defer_init)
        if key not in compiled:
            compiled[key] = compile_template(self, source, name, filename, raw, defer_init)
        return compiled[key]

    def parse_once(self, source, name=None, filename=None):  # Rally's parameter scan only reads the tree it gets
        key = settings(self)
        if key is None:
            return parse_template(self, source, name, filename)
        key += (source, name, filename)
        if key not in parsed:
            parsed[key] = parse_template(self, source, name, filename)
        return parsed[key]

    def find_undeclared_once(tree):  # Rally's parameter scan: once per tree parse_once keeps (alive, so ids stay theirs)
        if not any(tree is kept for kept in parsed.values()):
            return find_undeclared(tree)
        if id(tree) not in scanned:
            scanned[id(tree)] = frozenset(find_undeclared(tree))
        return set(scanned[id(tree)])

    find_undeclared, scanned = jinja2.meta.find_undeclared_variables, {}
    jinja2.Environment.compile, jinja2.Environment.parse = compile_once, parse_once
    jinja2.meta.find_undeclared_variables = find_undeclared_once


_compile_each_template_once()

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
TRACK_DIR = REPO / "tracks" / "cluster-metrics"
# tests/private_network/ runs only inside a private network namespace (tests/test_load_drivers.py starts it there)
collect_ignore = [] if os.environ.get("CLUSTER_METRICS_PRIVATE_NETWORK") else ["private_network"]
TEST_MODE_PASSES = warm_up.TEST_MODE_PASSES  # a warm-up-pass task's passes in a test-mode race
SMALL_CORPUS = ["--epochs", "5", "--rows-per-epoch", "3000", "--nodes", "30", "--tasks", "200"]


def rendered_track(params=None):
    """The track as Rally renders it (Rally's own template code), with these track parameters: a fresh copy each time,
    of a text rendered once per process and parameters (told apart by their repr, so a tuple is not taken for a list)."""
    from esrally.track import loader

    params = params or {}
    key = repr(sorted(params.items(), key=repr))
    if key not in _RENDERED:
        _RENDERED[key] = loader.render_template_from_file(str(TRACK_DIR / "track.json"), params)
    return json.loads(_RENDERED[key])


_RENDERED = {}


def rendered_challenges(params=None):
    """The track's challenges by name: a new challenge is tested without editing a list."""
    return {c["name"]: c for c in rendered_track(params)["challenges"]}


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


class Race:
    def __init__(self, returncode, output, race, log="", home=None):
        self.returncode, self.output, self.race, self.log, self.home = returncode, output, race, log, home
        self.left = {}  # what the race left on the cluster, when a test reads it right after (SharedRaces' after)
        self.actors_log, self.oom_kills = "", None  # thespian's log of the race, the OOM killer's kills meanwhile
        self.in_suite_store = False  # raced into the suite's metrics store too (TEST_METRICS_STORE)

    def failures(self):
        """The failed samples' descriptions our runners logged during this race (Rally's log, WARNING and above)."""
        return [
            line
            for line in self.log.splitlines()
            if "cluster-metrics" in line or "runners." in line
            if " WARNING " in line or " ERROR " in line
        ]

    def explained(self, tail=3000):
        """What an assertion on this race prints: the command's output tail, every ERROR record of Rally's log with the
        traceback under it, and what Thespian logged of its actors' exits and signals (a worker that "exited
        prematurely" is explained only there: the output says no more)."""
        errors, keep = [], False
        for line in self.log.splitlines():
            if re.match(r"\d{4}-\d\d-\d\d ", line):
                keep = " ERROR " in line
            if keep:
                errors.append(line)
        actors = [
            line
            for line in self.actors_log.splitlines()
            if not re.search(r" p\d+ I ", line) or re.search(r"exit|signal|died|dead", line, re.IGNORECASE)
        ]
        return (
            self.output[-tail:]
            + ("\nRally's log, its errors:\n" + "\n".join(errors[-200:]) if errors else "")
            + ("\nThespian's log (exits, signals, warnings):\n" + "\n".join(actors[-100:]) if actors else "")
            + (f"\nOOM kills during the race: {self.oom_kills}" if self.oom_kills else "")
        )

    def error_rates(self):
        """Per task; empty for a race that ended before it measured anything (its race.json has no results)."""
        return {op["task"]: op["error_rate"] for op in self.race.get("results", {}).get("op_metrics", [])}

    def op_metrics(self):
        return {op["task"]: op for op in self.race["results"]["op_metrics"]}

    def folder(self):
        """The race's folder in its Rally home (race.json, and the track's records under records.RECORD_DIR)."""
        return self.home / ".rally" / "benchmarks" / "races" / self.race["race-id"]

    def record_dir(self):
        return self.folder() / records.RECORD_DIR


# every Rally home this session raced in: a race waits until the previous one's processes of these homes are gone
RALLY_HOMES = set()


def rally_pids(homes, zombies=True):
    """The processes of the Rallies started with one of these Rally homes: the command and its actor system, which
    Rally daemonizes into a session of its own. Rally's own test of what a Rally process is (the one that makes a
    second race refuse to start), zombies included as Rally counts them until they are reaped: waiting for none of
    ours is waiting for what Rally waits for. zombies=False: the live ones only."""
    import psutil
    from esrally.utils.process import is_rally_process

    wanted, pids = {str(home) for home in homes}, []
    for process in psutil.process_iter():
        try:
            if not is_rally_process(process):
                continue
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue  # as Rally's own check does
        try:
            zombie = process.status() == psutil.STATUS_ZOMBIE
            ours = zombie or process.environ().get("RALLY_HOME") in wanted
        except psutil.ZombieProcess:
            zombie = ours = True
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if ours and (zombies or not zombie):
            pids.append(process.pid)
    return pids


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


def thespian_log(home):
    """Thespian's own log (Rally's actor system), kept in the Rally home at INFO: why an actor process ended (a worker
    that "exited prematurely") is written only there, and by default to a 50 KB file in the system's temp folder."""
    path = home / ".rally" / "logs" / "thespian.log"
    return {"THESPLOG_FILE": str(path), "THESPLOG_THRESHOLD": "INFO", "THESPLOG_FILE_MAXSIZE": str(20 << 20)}


class SuiteActorSystem:
    """One Rally actor system (esrallyd on 127.0.0.1) for the races of the session's Rally home, when the suite runs in
    a private network namespace (tests/loopback_only.py, make it): Rally joins an actor system it finds on port 1900
    and leaves it running, so those races no longer spend seconds starting and stopping their own. The daemon runs with
    that Rally home, since its actors read their host's rally.ini from their own (the data directory, the races'
    folder: Rally's driver.load_local_config, made for load-driver hosts) and log there: a race's corpus, records and
    log lines are where they would be without it. Started before the first such race, stopped after the last, only if
    this session started it (another's, a user's daemon, is joined as any race would, and never stopped).
    A race from another Rally home, or of a test marked own_actor_system (it kills a Rally, presses Ctrl-C or kills
    the node under a race), runs with the daemon stopped: it starts an actor system of its own, as a user's race does,
    and whatever it breaks ends with it."""

    PORT = 1900  # Rally's: thespian's default admin port, which Rally gives no option for

    def __init__(self, home):
        self.home, self.started = home, False
        self.own_for_this_test = False  # the running test is marked own_actor_system (set per test below)

    @staticmethod
    def enabled():
        from tests.loopback_only import FLAG

        return os.environ.get(FLAG) == "1"

    def running(self):
        import socket

        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", self.PORT)) == 0

    def _esrallyd(self, command):
        env = dict(os.environ, RALLY_HOME=str(self.home), **thespian_log(self.home))
        args = [ESRALLYD, command] + (["--node-ip=127.0.0.1", "--coordinator-ip=127.0.0.1"] if command == "start" else [])
        # its output to a file, not a pipe: the daemon it leaves behind keeps the descriptors, and a pipe would stay open
        out = self.home / ".rally" / "logs" / "esrallyd.out"
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("a") as f:
            done = subprocess.run(args, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, timeout=120)
        assert done.returncode == 0, f"esrallyd {command} exited {done.returncode}: {out.read_text()[-2000:]}"

    def ready_for(self, home):
        """Before a race from this Rally home: the suite's actor system running when the race may join it, none of
        ours when it needs its own."""
        if not self.enabled():
            return
        own = self.own_for_this_test or Path(home).resolve() != self.home.resolve()
        if own and self.started:
            self.stop()
        elif not own and not self.started and not self.running():
            self.home.mkdir(parents=True, exist_ok=True)
            self._esrallyd("start")
            self.started = True

    def stop(self):
        if self.started:
            self._esrallyd("stop")
            deadline = time.monotonic() + 60
            while self.running() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert not self.running(), "the suite's actor system still listens on 127.0.0.1:1900 a minute after esrallyd stop"
            self.started = False


ACTOR_SYSTEM = SuiteActorSystem(RALLY_TEST_HOME)


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


def oom_kills():
    """The kernel's count of processes its OOM killer ended in this machine's cgroup (None where it is not readable)."""
    try:
        return int(dict(line.split() for line in open("/sys/fs/cgroup/memory.events"))["oom_kill"])
    except (OSError, KeyError, ValueError):
        return None


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


def run_race(home, challenge, *extra, track=None, port=TEST_PORT, test_mode=True, target_hosts=None):
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


def _size(path):
    return path.stat().st_size if path.exists() else 0


def _appended(path, start):
    """What a log file gained since it was start bytes long (all of it if it was rotated meanwhile)."""
    if not path.exists():
        return ""
    with path.open("rb") as f:
        f.seek(start if path.stat().st_size >= start else 0)
        return f.read().decode("utf-8", "replace")


def assert_clean(race, expected_tasks=()):
    """The race succeeded, every task it reports has error rate 0, and each expected task is among them."""
    assert race.returncode == 0, race.explained()
    rates = race.error_rates()
    assert rates, race.explained()
    failed = {task: rate for task, rate in rates.items() if rate != 0}
    assert not failed, f"error rates {failed}; failures logged: {race.failures()[-20:]}"
    missing = [task for task in expected_tasks if task not in rates]
    assert not missing, f"tasks not reported: {missing}"
    assert_reported(race)


def assert_reported(race):
    """A race that succeeded gives its report (python -m report's single report, read from the race's files), whatever
    its challenge: every clean race of the suite, so that no challenge's race breaks a table unseen. A race raced into
    the suite's metrics store gives it from the store alone as well, its folder moved away meanwhile, and the two
    reports say the same: the same lines, where only the numbers may differ (the store's samples are Rally's service
    times, the files' the track's own walls) and each names its source."""
    import difflib
    import tempfile

    from report.__main__ import single_report
    from report.shared import host_load, races, store

    host_cells = {}

    def report(loaded, out):
        text = single_report(loaded, out)[0].read_text()
        assert f"challenge `{race.race['challenge']}`" in text, text[:500]
        # the host record reaches the store with the samples that carry it: the seconds after a race's last sample
        # stay on the load driver's disk (runners/shared/host_load.py), so the store's cells are some of the files'
        host_cells[loaded.source] = [row[0] for row in (host_load.table(loaded) or (None, []))[1]]
        text = re.sub(r"(## The load driver's host during the timed cells\n\n)(.*?)(\n## )", r"\1<host>\3", text, flags=re.S)
        text = re.sub(r"\*\*WARNING host busy.*\n\n", "", text)  # the line and the blank one after it
        return re.sub(
            r"\d[\d,.]*", "#", text.replace(f"read from {loaded.source}", "read from <source>").replace(loaded.samples.source, "<samples>")
        )

    with tempfile.TemporaryDirectory() as out:
        from_files = report(races.load(race.folder()), out)
        if not race.in_suite_store:
            return
        away = race.folder().rename(race.folder().with_name(race.folder().name + ".away"))
        try:
            from_store = report(races.Stored(store.Store.local("127.0.0.1", SUITE_STORE_PORT)).race(race.race["race-id"]), out)
        finally:
            away.rename(race.folder())
    files_cells, store_cells = host_cells.values()
    assert set(store_cells) <= set(files_cells), host_cells
    differing = "\n".join(difflib.unified_diff(from_files.splitlines(), from_store.splitlines(), "files", "store", n=1, lineterm=""))
    assert not differing, differing[:6000]


def assert_refused_before_any_timed_task(race, *phrases):
    """A bad input: the race failed, its output says each phrase, and no coverage was timed."""
    assert race.returncode != 0, race.explained()
    missing = [phrase for phrase in phrases if phrase not in race.output]
    assert not missing, f"not said: {missing}; output: {race.explained()}"
    assert race.race is None or not any(task.startswith("coverage-") for task in race.error_rates())


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
