"""A team's nights through the one command (report/nightly.py, docs/nightly.md), end to end: a local node stands in
for the team's cluster, reached through a real Toxiproxy, and a second one for its metrics store, named in the
[reporting] section of a rally.ini of the test's own. Five nights in test mode: the first finds no corpus and ingests
it; from the fourth on, a latency toxic in front of the cluster, recorded nowhere, slows every request: a slowdown only
the trend can see. The nights before the second slowed one exit 0; that one exits 3 and names the cells."""

import concurrent.futures
import fcntl
import json
import os
import signal
import subprocess
import time

import pytest

from report import nightly
from report.shared import store
from runners.contracts import corpus
from tests.conftest import (
    ACTOR_SYSTEM,
    RALLY_HOMES,
    REPO,
    SMALL_CORPUS,
    challenge_alone_track,
    http,
    launcher,
    rally_pids,
    wait_for_our_rally,
)
from tests.signals import popen_with_default_signals

pytestmark = pytest.mark.integration

CLUSTER_PORT, STORE_PORT, PROXY_LISTEN = 9340, 9341, 9342  # beside the suite's nodes (9250, 9268, 9310, 9330/9331)
PROXY, SLOWDOWN = "nightly-team-cluster", "nightly-slowdown"
LATENCY_MS = 100  # each response 100 ms later: 4-18x on the test-mode cells (their race medians 20-230 ms)
NIGHTS, SLOWED_FROM = 5, 4  # the trend leaves a node start's first race out and wants 2 races a side: nights 2-3 | 4-5
HISTORY_TAG = "team:nightly-test"
CORPUS_VARS = [f"{k}={v}" for k, v in zip(("EPOCHS", "ROWS", "CORPUS_NODES", "TASKS"), SMALL_CORPUS[1::2])]
NIGHT_VARS = [f"TARGET_HOSTS=127.0.0.1:{PROXY_LISTEN}", "RACE_ARGS=--test-mode", *CORPUS_VARS]
NIGHT_CHALLENGES = (nightly.CHALLENGE, "ingest-baseline")  # the track folder holds these alone (conftest.py: 6 s a race less)


@pytest.fixture(scope="module")
def team(tmp_path_factory, toxiproxy):
    """The team's cluster behind its proxy, its store, and a Rally home whose rally.ini names that store."""
    home = tmp_path_factory.mktemp("team")
    with concurrent.futures.ThreadPoolExecutor(2) as both:  # the two starts side by side: 12 s, not 20
        for started in both.map(lambda port: launcher("start", "--heap", "512m", port=port), (CLUSTER_PORT, STORE_PORT)):
            assert started.returncode == 0, started.stdout + started.stderr
    store.Store.local("127.0.0.1", STORE_PORT).prepare_local_node()
    store.write_config(home, "127.0.0.1", STORE_PORT, name=None)
    toxiproxy.ensure_proxy(PROXY, f"127.0.0.1:{PROXY_LISTEN}", f"127.0.0.1:{CLUSTER_PORT}")
    RALLY_HOMES.add(home)
    yield home
    wait_for_our_rally()
    toxiproxy._call("DELETE", f"/proxies/{PROXY}", missing_ok=True)
    for port in (CLUSTER_PORT, STORE_PORT):
        stopped = launcher("stop", port=port)
        launcher("wipe", port=port)
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr


def night_variables():
    """The nights' make variables: the team's cluster behind its proxy, test mode, the small corpus, and a track folder
    holding the night's challenges alone."""
    return [*NIGHT_VARS, f"TRACK_PATH={challenge_alone_track(NIGHT_CHALLENGES[0], also=NIGHT_CHALLENGES[1:])}"]


def one_night(home, out, *options, through_make=False):
    """The documented cron command (the system's python3, no terminal), or make nightly as a user types it."""
    wait_for_our_rally()
    ACTOR_SYSTEM.ready_for(home)  # a Rally home of its own: its races start their own actor system, as a team's do
    variables = night_variables()
    if through_make:
        command = ["make", "--no-print-directory", "nightly", f"NIGHTLY_TAG={HISTORY_TAG}", f"NIGHTLY_ARGS=--out {out}", *variables]
    else:
        command = ["python3", str(REPO / "report" / "nightly.py"), "--history-tag", HISTORY_TAG, "--out", str(out), *options, *variables]
    return subprocess.run(
        command, cwd=REPO, env=dict(os.environ, RALLY_HOME=str(home)), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=900
    )


def test_nights_alert_on_a_slowdown_only_the_trend_can_see(team, toxiproxy, tmp_path):
    out = tmp_path / "nightly"
    # a cluster without the corpus, with --no-ingest: the night stops at the race's own verify-corpus, naming the fix,
    # and nothing on the cluster changed (no index made)
    refused = one_night(team, tmp_path / "refused", "--no-ingest")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stdout[-3000:] + refused.stderr[-2000:]
    line = refused.stdout.strip().splitlines()[-1]
    assert "the cluster does not hold the corpus (index cluster-metrics does not exist); --no-ingest" in line, line
    ran = [command for command in refused.stdout.splitlines() if command.startswith("$ make")]
    assert "make race CHALLENGE=ingest-baseline" in line and not any("CHALLENGE=ingest-baseline" in command for command in ran), ran
    assert http("GET", "/cluster-metrics", port=CLUSTER_PORT)[0] == 404
    nights = []
    try:
        for n in range(1, NIGHTS + 1):
            if n == SLOWED_FROM:
                toxiproxy.add_toxic(PROXY, SLOWDOWN, "latency", "downstream", {"latency": LATENCY_MS, "jitter": 0})
            nights.append(one_night(team, out, through_make=n == 2))
    finally:
        toxiproxy.remove_toxic(PROXY, SLOWDOWN)
    statuses = [done.returncode for done in nights]
    said = "\n\n".join(f"night {n}: exit {d.returncode}\n{d.stdout[-2500:]}{d.stderr[-1000:]}" for n, d in enumerate(nights, 1))
    # make nightly (night 2) exits 2 for an alert and a failure alike; its night's own status is its last line
    assert statuses == [0, 0, 0, 0, 3], said
    last = [d.stdout.strip().splitlines()[-1] for d in nights]
    assert all(line.startswith("nightly: 0 no slower change") for line in last[:4]) and last[4].startswith("nightly: 3 SLOWER"), last

    # the first night found no corpus, said so and ingested it; the later ones did not; nothing lost
    assert "does not hold the corpus (index cluster-metrics does not exist): it is ingested now" in nights[0].stdout, said
    assert not any("CHALLENGE=ingest-baseline" in d.stdout for d in nights[1:]), said
    manifest = corpus.load_manifest(corpus.data_root(team))
    expected = sum(f["documents"] for f in manifest["files"] if f["test_mode"])
    assert http("GET", "/cluster-metrics/_count", port=CLUSTER_PORT)[1]["count"] == expected

    # the fifth names the slowed cells, from the fourth night's race, nothing recorded changing
    dated = sorted(p for p in out.iterdir() if p.name[0].isdigit())
    facts = [json.loads((p / "night.json").read_text()) for p in dated]
    alerts = [line for line in nights[4].stdout.splitlines() if line.startswith("ALERT:")]
    step = f"a step from race {facts[SLOWED_FROM - 1]['race-id'][:8]}"
    assert alerts and all(step in a and "nothing recorded changed" in a for a in alerts), alerts
    assert "coverage-D_td-serial" in {a.split()[1] for a in alerts}, alerts  # its 30 requests a coverage: 16-18x

    # every night's race in the team's store, tagged with the history, the version and the date; the reports in place
    stored = {r["race-id"]: r for r in store.Store.local("127.0.0.1", STORE_PORT).race_documents()}
    assert [f["exit"] for f in facts] == statuses and all(f["race-id"] in stored for f in facts), (facts, list(stored))
    for f in facts:
        race = stored[f["race-id"]]
        tags, version = race["user-tags"], race["cluster"]["distribution-version"]
        assert race["challenge"] == "production-comparison" and tags["team"] == "nightly-test" and tags["es"] == version == f["es"], race
        assert str(tags["night"]) == f["night"][:10], tags
    assert all((p / "report.md").is_file() for p in dated)
    latest = json.loads((out / "latest" / "night.json").read_text())
    assert latest == facts[-1] and (out / "latest" / "report.md").read_text() == (dated[-1] / "report.md").read_text()
    assert (out / "nightly.log").read_text().count("nightly: 0 no slower change") == 4


def test_a_night_stopped_mid_race_stops_its_race_and_leaves_the_cluster_as_it_found_it(team, tmp_path):
    """cron's timeout (SIGTERM) in the middle of the night's race: the race is interrupted as Ctrl-C interrupts it, no
    Rally of the night runs on, the cluster's settings are as they were, the lock is free and the night says why."""
    before = [http("GET", path, port=CLUSTER_PORT)[1] for path in ("/_cluster/settings", "/cluster-metrics/_settings")]
    out = tmp_path / "stopped"
    wait_for_our_rally()
    ACTOR_SYSTEM.ready_for(team)
    command = ["python3", str(REPO / "report" / "nightly.py"), "--history-tag", "team:stopped", "--out", str(out), *night_variables()]
    night = popen_with_default_signals(
        command, cwd=REPO, env=dict(os.environ, RALLY_HOME=str(team)), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True
    )
    log, deadline = out / "nightly.log", time.monotonic() + 300
    # its race has begun: Rally has named the race after the night's step 3 (the race's own checks come first)
    while not (log.exists() and "Race id is" in log.read_text(errors="replace").partition("step 3 of")[2]):
        assert time.monotonic() < deadline and night.poll() is None, log.read_text(errors="replace")[-3000:] if log.exists() else ""
        time.sleep(0.2)
    time.sleep(3)  # inside its tasks
    night.send_signal(signal.SIGTERM)
    said, _ = night.communicate(timeout=300)
    last = said.strip().splitlines()[-1]
    assert night.returncode == 1 and last.startswith("nightly: 1 FAILED: stopped by SIGTERM during make race"), said[-3000:]
    wait_for_our_rally(timeout=60)  # no Rally of the night's home runs on
    assert rally_pids([team], zombies=False) == []
    after = [http("GET", path, port=CLUSTER_PORT)[1] for path in ("/_cluster/settings", "/cluster-metrics/_settings")]
    assert after == before
    with open(out / ".lock", "a+") as lock:  # free: the next night may start
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    assert json.loads((out / "latest" / "night.json").read_text())["exit"] == 1
