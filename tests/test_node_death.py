"""A node that dies mid-race (kill -9), on a real node of its own: Rally runs every remaining sample, each failing
fast, then its end-of-race telemetry fails on the dead node and it ends the race FAILURE with no results in
race.json. The track's records still count every coverage, the failed ones with their cause, and the report says the
race did not finish, names the failed cells and offers no answer (report/outcome.py)."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from report.shared import store
from runners.contracts import records
from tests.conftest import REPO, corpus_configuration, launcher, run_race, start_race, wait_for_our_rally
from tests.race_shapes import assert_no_answer

DYING_PORT = 9254  # its own node: the suite's node (TEST_PORT) stays up for the tests after this one
CONFIG = "node-death-1k"  # the Rally configuration naming the module's corpus
CELLS = [f"coverage-{v}-{t}" for v in ("D_td", "D_hdr") for t in ("serial", "msearch", "terms")]
KILL_AFTER = 10 * len(CELLS)  # coverages recorded before the node is killed: about ten per cell


@pytest.fixture(scope="module")
def dying_node(rally_home, tmp_path_factory):
    """A node of its own holding a corpus of 1,000-row epochs (in a data directory of its own, named by a Rally
    configuration of its own in the suite's Rally home): a file that small is its own test-mode file, so the fast
    test-mode ingest holds what the query race outside test mode (it needs iterations, which test mode caps at one)
    queries. Outside test mode the ingest took 32 s, most of it Rally's 5 s wake-ups between tasks."""
    own = corpus_configuration(rally_home, CONFIG, tmp_path_factory.mktemp("corpus-1k"), "--rows-per-epoch", "1000")
    started = launcher("start", "--heap", "1g", port=DYING_PORT)
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        ingest = run_race(rally_home, "ingest-baseline", own, port=DYING_PORT)
        assert ingest.returncode == 0, ingest.explained()
        yield DYING_PORT, own  # the node's port, the argument that races on the module's corpus
    finally:
        launcher("stop", port=DYING_PORT)  # the node is dead by then: the launcher forgets it
        store.config_path(rally_home, CONFIG).unlink(missing_ok=True)


def node_pid(port):
    status = launcher("status", port=port)
    found = re.findall(r"pid (\d+) running", status.stdout)
    assert len(found) == 1, status.stdout + status.stderr
    return int(found[0])


def new_record(races_dir, before, lines):
    """The validation record of the race started after `before` once it holds `lines` coverages, or None."""
    for folder in set(races_dir.iterdir()) - before:
        path = folder / records.RECORD_DIR / records.VALIDATION
        if path.is_file() and len(path.read_text().splitlines()) >= lines:
            return path
    return None


@pytest.mark.integration
@pytest.mark.own_actor_system
def test_a_node_killed_mid_race_gives_a_report_without_an_answer(rally_home, dying_node, tmp_path):
    """kill -9 of the node after about ten coverages per cell: the race ends without results, every failed coverage
    is recorded with the connection failure as its cause, and make report exits 1, saying in its first lines that the
    race did not finish, naming each cell's failed count, with no speed-up, saving or fastest cell anywhere. The race
    starts with the default signal dispositions (start_race, tests/signals.py); the node is killed by its pid, which
    this module's launcher started."""
    races_dir = rally_home / ".rally" / "benchmarks" / "races"
    races_dir.mkdir(parents=True, exist_ok=True)
    before = set(races_dir.iterdir())
    # no settling: the node is killed after the cells' own coverages begin (its passes would be recorded first)
    params = {"variants": ["D_td", "D_hdr"], "iterations": 40, "warmup_iterations": 1, "settle": False}
    port, own = dying_node
    race = start_race(
        rally_home,
        "query-decomposition",
        f"--track-params={json.dumps(params)}",
        "--exclude-tasks=tag:check",  # the cells alone: outside test mode each task before them costs 5 s of Rally's waits
        own,
        port=port,
        test_mode=False,
    )
    try:
        deadline, record = time.monotonic() + 600, None
        while record is None and race.poll() is None and time.monotonic() < deadline:
            record = new_record(races_dir, before, KILL_AFTER)
            time.sleep(0.05)
        assert record is not None, "the race never recorded its coverages"
        os.kill(node_pid(port), signal.SIGKILL)  # the node this module started
        output = race.communicate(timeout=900)[0]
    finally:
        if race.poll() is None:
            race.kill()
    wait_for_our_rally()
    assert race.returncode != 0, output[-2000:]
    folder = record.parents[1]
    assert "results" not in json.loads((folder / "race.json").read_text())  # Rally did not finish
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    failed = [line for line in lines if line.get(records.ERROR)]
    assert {line["task"] for line in failed} == set(CELLS), {line["task"] for line in failed}
    assert all("connection failed" in line[records.ERROR] or "no complete answer" in line[records.ERROR] for line in failed), failed[:3]
    report = subprocess.run(
        [sys.executable, "-m", "report", "--race", folder.name, "--rally-home", str(rally_home), "--out", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert report.returncode == 1 and "DID NOT FINISH" in report.stdout, report.stdout + report.stderr
    text = (tmp_path / folder.name / "report.md").read_text()
    assert_no_answer(text, "query-decomposition")
    head = text.splitlines()[:20]
    for cell in CELLS:
        count = sum(line["task"] == cell for line in failed)
        assert any(line.startswith(f"| {cell} | {count} of ") for line in head), (cell, count, head)
