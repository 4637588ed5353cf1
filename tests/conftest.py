"""Shared fixtures: one real Elasticsearch node for the whole session (port 9250, its own data), an isolated Rally
home (RALLY_HOME under .rally-test/, never the user's), and a small generated corpus in it."""

import json
import os
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

from runners import corpus  # noqa: E402

TEST_PORT = int(os.environ.get("TEST_ES_PORT", "9250"))
PYTHON = sys.executable
ESRALLY = str(Path(sys.executable).with_name("esrally"))
LAUNCHER = str(REPO / "local-es" / "esnode.py")
# tests/private_network/ runs only inside a private network namespace (tests/test_load_drivers.py starts it there)
collect_ignore = [] if os.environ.get("CLUSTER_METRICS_PRIVATE_NETWORK") else ["private_network"]
SMALL_CORPUS = ["--epochs", "5", "--rows-per-epoch", "3000", "--nodes", "30", "--tasks", "200"]


def rendered_tasks(challenge):
    """A rendered challenge's tasks, those inside a parallel element included, in schedule order."""
    for element in challenge["schedule"]:
        yield from element["parallel"]["tasks"] if "parallel" in element else [element]


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
        factory = EsClientFactory(
            hosts=[{"host": "127.0.0.1", "port": port}], client_options={}, distribution_version="8.17.2", distribution_flavor="default"
        )
        es = factory.create_async(client_id=0)
        try:
            with es.new_request_context():
                return await work(es)
        finally:
            await es.close()

    return asyncio.run(run())


def launcher(*args, env=None, port=TEST_PORT):
    return subprocess.run(
        [sys.executable, LAUNCHER, *args, "--http-port", str(port)],
        capture_output=True,
        text=True,
        env=env or os.environ.copy(),
        timeout=300,
    )


@pytest.fixture(scope="session")
def es_node():
    result = launcher("start", "--heap", "1g")
    assert result.returncode == 0, result.stdout + result.stderr
    yield es_url()
    stopped = launcher("stop")
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr


@pytest.fixture(scope="session")
def rally_home():
    home = REPO / ".rally-test"
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


@pytest.fixture(scope="session")
def small_corpus(rally_home):
    generate(rally_home)
    return data_root(rally_home)


class Race:
    def __init__(self, returncode, output, race, log=""):
        self.returncode, self.output, self.race, self.log = returncode, output, race, log

    def failures(self):
        """The failed samples' descriptions our runners logged during this race (Rally's log, WARNING and above)."""
        return [
            line
            for line in self.log.splitlines()
            if "cluster-metrics" in line or "runners." in line
            if " WARNING " in line or " ERROR " in line
        ]

    def error_rates(self):
        """Per task; empty for a race that ended before it measured anything (its race.json has no results)."""
        return {op["task"]: op["error_rate"] for op in self.race.get("results", {}).get("op_metrics", [])}


def run_race(home, challenge, *extra, track=None, port=TEST_PORT, test_mode=True, target_hosts=None):
    """A real `esrally race`; waits while another Rally of ours is still shutting down."""
    env = dict(os.environ, RALLY_HOME=str(home))
    track_args = track or [f"--track-path={REPO / 'tracks' / 'cluster-metrics'}"]
    cmd = [
        ESRALLY,
        "race",
        *track_args,
        f"--challenge={challenge}",
        "--pipeline=benchmark-only",
        "--offline",
        f"--target-hosts={target_hosts or f'127.0.0.1:{port}'}",
        *extra,
    ]
    if test_mode:
        cmd.append("--test-mode")
    races = home / ".rally" / "benchmarks" / "races"
    before = set(races.glob("*/race.json")) if races.exists() else set()
    log_file = home / ".rally" / "logs" / "rally.log"
    log_start = log_file.stat().st_size if log_file.exists() else 0
    for _ in range(30):
        result = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1200)
        output = result.stdout + result.stderr
        if "other Rally processes running" not in output:
            break
        time.sleep(2)
    after = set(races.glob("*/race.json")) if races.exists() else set()
    new = sorted(after - before, key=lambda p: p.stat().st_mtime)
    race = json.loads(new[-1].read_text()) if new else None
    log = ""
    if log_file.exists():
        with log_file.open("rb") as f:
            f.seek(log_start if log_file.stat().st_size >= log_start else 0)
            log = f.read().decode("utf-8", "replace")
    return Race(result.returncode, output, race, log)


# the network: a Toxiproxy of the suite's own (never a user's on 8474), a proxy in front of the test node, and a
# remote cluster for cross-cluster search with a proxy in front of its transport port (the launcher's HTTP + 100)
TOXIPROXY_PORT, PROXY_PORT = 8475, 9291
REMOTE_PORT, REMOTE_PROXY_PORT, REMOTE_SHARDS = 9280, 9391, 5
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
    from runners.toxiproxy import Toxiproxy

    yield Toxiproxy(NETWORK_PARAMS["toxiproxy_url"])
    stopped = toxiproxy_launcher("stop")
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr


@pytest.fixture(scope="session")
def remote_cluster(toxiproxy, rally_home, small_corpus):
    """A second cluster holding the test-mode corpus in REMOTE_SHARDS shards, behind its transport proxy."""
    started = launcher("start", "--heap", "1g", port=REMOTE_PORT)
    assert started.returncode == 0, started.stdout + started.stderr
    made = toxiproxy_launcher("proxy", "--role", "remote", "--listen", str(REMOTE_PROXY_PORT), "--upstream", str(REMOTE_PORT + 100))
    assert made.returncode == 0, made.stdout + made.stderr
    ingest = run_race(rally_home, "ingest-baseline", f"--track-params=number_of_shards:{REMOTE_SHARDS}", port=REMOTE_PORT)
    assert ingest.returncode == 0, ingest.output[-2000:]
    yield REMOTE_PORT
    stopped = launcher("stop", port=REMOTE_PORT)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr


def pytest_collection_modifyitems(items):
    """A test that uses the node or a Rally home is an integration test, whether or not its module says so."""
    for item in items:
        if {"es_node", "rally_home", "toxiproxy", "remote_cluster"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="module")
def context(tmp_path_factory):
    """For runner unit tests: a small generated corpus (2 epochs x 90 rows, 3 nodes) and the race context a track
    load would build for it."""
    import cmgen
    from runners.context import RaceContext

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
