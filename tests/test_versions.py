"""make versions in test mode (the version study's CI form, docs/versions.md): two arms, one node start each (8.17.2,
8.19.21), each start a node of its own started afresh on a port of its own, its ingest and a race of
production-comparison, all through the make targets a user runs; then its report from the races' tags: each arm's
ratio to the baseline and no verdict, one start an arm giving no spread between starts to judge by. The study's
full-scale run is in docs/versions.md; its verdicts' arithmetic, intervals and error rates over simulated node starts
are tests/report/history_versions_test.py's (a second start an arm here cost CI about a minute)."""

import json
import os
import re
import shutil
import subprocess

import pytest

from report.history import races as history_races
from report.shared.races import Files
from tests.conftest import ACTOR_SYSTEM, LAUNCHER, PYTHON, REPO, SMALL_CORPUS, wait_for_our_rally

# make it builds the node homes of the versions it races before its tests (the namespace it runs them in has no network)
pytestmark = pytest.mark.integration

STUDY_PORT = 9310  # a node of the study's own (transport 9410), beside the suite's nodes, proxies and store
# the study's baseline (local-es/esnode.py's default) and the last 8.x (the Makefile's LAST_8X_ES): this is where make it
# races the last 8.x, through make race as a user does (the version tier races every challenge on the newest 9.x)
ARMS = ("8.17.2", re.search(r"^LAST_8X_ES := (\S+)$", (REPO / "Makefile").read_text(), re.M).group(1))
VERDICT_LINE = r"{cell}: {arm} / {base} [0-9.]+ no verdict"  # a ratio, no interval, no verdict
# make's corpus variables for the suite's small corpus (tests/conftest.py SMALL_CORPUS): `make corpus` finds it made
CORPUS_VARS = dict(zip(("EPOCHS", "ROWS", "CORPUS_NODES", "TASKS"), SMALL_CORPUS[1::2]))


def make_versions(home, plan):
    """`make versions` as a user types it, in test mode, into the suite's Rally home (its races join the suite's actor
    system where there is one: the home is the daemon's)."""
    variables = dict(
        CORPUS_VARS,
        PLAN=plan,
        VERSIONS=",".join(ARMS),
        NODE_STARTS="1",
        NODE_START_RUNS="1",
        PORT=str(STUDY_PORT),
        HEAP="512m",
        RACE_ARGS="--test-mode",
    )
    wait_for_our_rally()
    ACTOR_SYSTEM.ready_for(home)
    return subprocess.run(
        ["make", "--no-print-directory", "versions", *(f"{k}={v}" for k, v in variables.items())],
        cwd=REPO,
        env=dict(os.environ, RALLY_HOME=str(home)),
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.fixture
def plan(rally_home):
    name = f"suite-{os.getpid()}"
    yield name
    stopped = subprocess.run([PYTHON, LAUNCHER, "stop", "--http-port", str(STUDY_PORT)], capture_output=True, text=True, timeout=300)
    subprocess.run([PYTHON, LAUNCHER, "wipe", "--http-port", str(STUDY_PORT)], capture_output=True, text=True, timeout=300)
    for folder in (f"node-starts-{name}", f"versions-{name}"):
        shutil.rmtree(REPO / "reports" / folder, ignore_errors=True)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr


def test_make_versions_races_each_arm_by_node_start_and_reports_its_ratio(rally_home, small_corpus, plan):
    done = make_versions(rally_home, plan)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-5000:]
    state = json.loads((REPO / "reports" / f"node-starts-{plan}" / "state.json").read_text())
    assert [(d["es"], d["start"]) for d in state["done"]] == [(v, 1) for v in ARMS], state
    assert state["design"]["race-args"] == "--test-mode"
    # every race of the plan in the Rally home, tagged with its arm and round, each start on a node of its own
    found = history_races.select(history_races.Selection((), {"node-starts": plan}), Files(rally_home))
    assert len(found.races) == 4, [r.race_id for r in found.races]
    by_start = {}
    for race in found.races:
        tags, facts = race.data.get("user-tags") or {}, history_races.facts_of(race)
        # Rally reads a tag's value as JSON where it is one: the round is a number
        assert tags.get("es") == facts.version == tags.get("arm") and tags.get("node-start") == 1, (tags, facts)
        assert facts.node_start, f"race {race.data['race-id']} recorded no node start"
        by_start.setdefault((tags["arm"], tags["node-start"]), set()).add(facts.node_start)
    assert len(by_start) == 2 and all(len(starts) == 1 for starts in by_start.values()), by_start
    assert len({start for starts in by_start.values() for start in starts}) == 2, "two node starts of the plan share a node"
    # each study cell's ratio, the newer arm against the baseline, one node start each (the ingest's series and
    # production-comparison's), and no verdict: one start an arm has no spread between starts to judge by
    base, arm = ARMS
    report = (REPO / "reports" / f"versions-{plan}" / "report.md").read_text()
    assert report.count(f"{base}: 1 node starts; {arm}: 1 node starts") == 2, report
    assert not re.search(
        r"\b(same|slower|faster)\b", "\n".join(line for line in done.stdout.splitlines() if f" / {base} " in line)
    ), done.stdout[-3000:]
    verdicts = []
    for cell in ("coverage-D_td-serial", "coverage-D_td-msearch", "coverage-D_hdr-msearch", "coverage-D_hdr-terms", "ingest wall (s)"):
        line = re.search("^" + VERDICT_LINE.format(cell=re.escape(cell), arm=arm, base=base) + "$", done.stdout, re.M)
        assert line, (cell, done.stdout[-3000:])
        verdicts.append(line.group(0))
    # resumed: nothing raced again, the same verdicts
    again = make_versions(rally_home, plan)
    assert again.returncode == 0 and "Race id is" not in again.stdout, again.stdout[-3000:]
    assert f"node-starts {plan}: 2 node starts done" in again.stdout and all(v in again.stdout for v in verdicts), again.stdout[-3000:]
