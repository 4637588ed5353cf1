"""report/nightly.py before anything reaches a cluster: its arguments, the lock against an overlapping night, a store
that is down, a Rally already running, which failure of a race is the corpus's, and `make race` against a remote
cluster starting no local node. The nights themselves, against a real cluster and store behind a real Toxiproxy, are
tests/test_nightly.py's."""

import fcntl
import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

from report import HOST_NAMED, nightly
from report.shared import store
from runners.contracts import corpus
from tests.conftest import REPO
from tests.signals import popen_with_default_signals


def night(tmp_path, *args, home=None, timeout=60):
    """The documented command, as cron runs it: the system's python3 (which makes the venv and runs itself in it),
    no terminal, its own Rally home."""
    home = home or tmp_path / "home"
    (home / ".rally").mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        ["python3", str(REPO / "report" / "nightly.py"), "--out", str(tmp_path / "nightly"), *args],
        cwd=tmp_path,
        env=dict(os.environ, RALLY_HOME=str(home)),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def last_line(done):
    return done.stdout.strip().splitlines()[-1]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    "args, named",
    [
        (["--history-tag", "nightly"], "give one key:value"),
        (["--history-tag", "es:8.17.2"], "the night's own tags"),
        (["--alert-within", "0"], "--alert-within takes 1 or more"),
        (["TARGET_HOSTS"], "give make variables as NAME=value"),
        (["--wait-for-rally", "-1"], "--wait-for-rally takes 0 or more"),
    ],
)
def test_bad_arguments_are_named_with_their_fix(args, named):
    with pytest.raises(SystemExit) as exited:
        nightly.arguments(args)
    assert exited.value.code == 2


def test_bad_arguments_exit_2_naming_the_input(tmp_path):
    done = night(tmp_path, "--history-tag", "es:9.5.3")
    assert done.returncode == 2 and "the night's own tags" in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_a_night_that_finds_another_running_does_not_start(tmp_path):
    out = tmp_path / "nightly"
    out.mkdir()
    with open(out / ".lock", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("pid 4242, started 2026-12-01 02:00:00 UTC\n")
        held.flush()
        done = night(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    line = last_line(done)
    assert (
        line.startswith("nightly: 1 FAILED: another night is running (pid 4242, started 2026-12-01 02:00:00 UTC") and "space them" in line
    )
    assert sorted(p.name for p in out.iterdir()) == [".lock"], "a night that did not start wrote a folder or a log"
    # released with its holder: the next night takes it (and stops at the next check, the store, here none)
    again = night(tmp_path, "--local-store")
    assert "another night" not in again.stdout and "no Rally configuration" in last_line(again), again.stdout


def test_an_out_folder_that_cannot_be_written_is_named(tmp_path):
    (tmp_path / "a-file").write_text("")
    done = night(tmp_path, "--out", str(tmp_path / "a-file" / "nightly"))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
    assert last_line(done).startswith(f"nightly: 1 FAILED: --out {tmp_path / 'a-file' / 'nightly'} cannot be written"), done.stdout


def test_a_store_that_is_down_stops_the_night_before_any_race(tmp_path):
    home = tmp_path / "home"
    port = free_port()
    values = {"datastore.type": "elasticsearch", "datastore.host": "127.0.0.1", "datastore.port": str(port), "datastore.secure": "False"}
    store.write_named_config(home, None, values)
    done = night(tmp_path, home=home)
    assert done.returncode == 1, done.stdout + done.stderr
    line = last_line(done)
    assert f"cannot read Rally's metrics store at http://127.0.0.1:{port}" in line, line
    assert "datastore.host/datastore.port in the [reporting] section of " + str(home / ".rally" / "rally.ini") in line, line
    assert "$ make" not in done.stdout, "a make ran before the store's check"
    facts = (tmp_path / "nightly" / "latest" / "night.json").read_text()
    assert '"exit": 1' in facts and "cannot read Rally's metrics store" in facts


def test_the_local_store_asked_for_and_never_made_is_named(tmp_path):
    done = night(tmp_path, "--local-store")
    assert done.returncode == 1 and f"rally-{store.CONFIG_NAME}.ini: make metrics-store writes it" in last_line(done), done.stdout


@pytest.mark.rally_process  # its stand-in is a Rally process to Rally's own check: a race beside it would refuse to start
def test_a_rally_already_running_is_waited_for_then_named(tmp_path):
    stand_in = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "esrally-stand-in"])
    try:
        done = night(tmp_path, "--wait-for-rally", "1")
    finally:
        stand_in.kill()
        stand_in.wait()
    assert done.returncode == 1, done.stdout + done.stderr
    line = last_line(done)
    assert (
        "Rally is busy on this machine after 1 s" in line
        and re.search(rf"PIDs \[[0-9, ]*\b{stand_in.pid}\b", line)
        and "--wait-for-rally" in line
    ), line
    assert "$ make" not in done.stdout, "a make ran beside another Rally"


@pytest.mark.rally_process  # as above: a Rally stand-in
def test_a_night_stopped_while_it_waits_ends_at_once_saying_so(tmp_path):
    stand_in = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "esrally-stand-in"])
    (tmp_path / "home" / ".rally").mkdir(parents=True)
    command = ["python3", str(REPO / "report" / "nightly.py"), "--out", str(tmp_path / "nightly"), "--wait-for-rally", "60"]
    try:
        waiting = popen_with_default_signals(
            command, env=dict(os.environ, RALLY_HOME=str(tmp_path / "home")), stdout=subprocess.PIPE, text=True, cwd=tmp_path
        )
        log = tmp_path / "nightly" / "nightly.log"
        deadline = time.monotonic() + 30
        while not (log.exists() and "waiting up to 60 s" in log.read_text(errors="replace")):
            assert time.monotonic() < deadline and waiting.poll() is None, "the night never waited for the stand-in"
            time.sleep(0.1)
        stopped_at = time.monotonic()
        waiting.send_signal(signal.SIGTERM)
        out, _ = waiting.communicate(timeout=30)
    finally:
        stand_in.kill()
        stand_in.wait()
    assert waiting.returncode == 1 and time.monotonic() - stopped_at < 10, out
    assert out.strip().splitlines()[-1] == "nightly: 1 FAILED: stopped by SIGTERM; run the night again", out
    assert '"failed": "stopped by SIGTERM; run the night again"' in (tmp_path / "nightly" / "latest" / "night.json").read_text()


def test_only_verify_corpus_refusals_mean_an_ingest():
    refused = (
        "[ERROR] Cannot race. Error in load generator [0]\n\tCannot run task [verify-corpus]: index cluster-metrics does not "
        f"exist: {corpus.INGEST_FIX}.\n"
    )
    assert nightly.corpus_refusal(refused) == "index cluster-metrics does not exist"
    other = f"index cluster-metrics holds another corpus than this race's ground truth describes (epochs 5 != 3): {corpus.INGEST_FIX}."
    assert nightly.corpus_refusal(other).startswith("index cluster-metrics holds another corpus")
    for failure in (
        "[ERROR] Cannot race. Error in load generator [0]\n\tCannot run task [check-privileges]: missing privilege monitor",
        "Cannot reach Elasticsearch at http://127.0.0.1:9200 (connection refused): start it with make es-start",
        "",
    ):
        assert nightly.corpus_refusal(failure) is None, failure


def test_the_last_line_says_the_exit_status():
    facts = {"race-id": "0123456789abcdef", "report": "reports/nightly/latest/report.md"}
    assert nightly.last_line(0, facts).startswith("nightly: 0 no slower change")
    alerts = ["ALERT: coverage-D_td-serial 2.10x [1.50, 2.90] slower, a step from race 01234567 (20261202): nothing recorded changed"]
    line = nightly.last_line(3, facts, alerts)
    assert line.startswith("nightly: 3 SLOWER: 1 alert(s) in coverage-D_td-serial") and "01234567" in line
    assert nightly.last_line(1, facts, why="the race failed").startswith("nightly: 1 FAILED: the race failed")
    # a slower step that is the busy host's: exit 0, and the last line says it rather than "no slower change"
    held = [HOST_NAMED + "coverage-D_td-msearch 1.92x [1.77, 2.07] slower, a step from race a904eed5 (20261202): host busy"]
    line = nightly.last_line(0, {**facts, "host-named": held})
    assert line.startswith("nightly: 0 no slower change of Elasticsearch's; 1 slower step(s) the busy host's, in coverage-D_td-msearch")


def make_n(*words):
    shown = subprocess.run(["make", "-n", *words], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert shown.returncode == 0, shown.stderr
    return shown.stdout


@pytest.mark.parametrize("target", ["race", "cluster-check", "source-large"])
def test_a_race_against_a_remote_cluster_starts_no_local_node(target):
    assert "esnode.py start" in make_n(target)
    remote = make_n(target, "TARGET_HOSTS=es1.example:9200")
    assert "esnode.py" not in remote and "--target-hosts=es1.example:9200" in remote.replace("--target-hosts ", "--target-hosts=")
    assert "esnode.py start" in make_n(target, "TARGET_HOSTS=127.0.0.1:9333", "PORT=9333")
    assert "esnode.py" not in make_n(target, "LOCAL_NODE=no")


def test_make_nightly_hands_its_race_arguments_and_store_to_the_night():
    shown = make_n("nightly", "RACE_ARGS=--test-mode --on-error=abort", "METRICS_STORE=yes", "NIGHTLY_TAG=team:perf")
    assert "-m report.nightly --history-tag team:perf --local-store" in shown and '"RACE_ARGS=--test-mode --on-error=abort"' in shown, shown
    assert "--local-store" not in make_n("nightly") and "RACE_ARGS" not in make_n("nightly")
