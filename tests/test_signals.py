"""tests/signals.py: a process a test signals gets the default signal dispositions and an empty signal mask even when
the suite runs as a background job (SIGINT and SIGQUIT ignored), under nohup (SIGHUP) or `trap "" TERM`; a child
started the plain way keeps what the suite was given, so each test here fails without the helper (issue 55).
No node, no race: a tiny Python child, started from this process with those signals ignored or blocked."""

import json
import signal
import subprocess
import sys
import threading
from contextlib import contextmanager

import pytest

from tests import conftest
from tests.signals import DEFAULT_SIGNALS, popen_with_default_signals

# the child's own view: which of the signals named in its arguments it has ignored, and which it has blocked
PROBE = """
import json, signal, sys
wanted = [signal.Signals[name] for name in sys.argv[1:]]
blocked = signal.pthread_sigmask(signal.SIG_BLOCK, [])
print(json.dumps({
    "ignored": sorted(s.name for s in wanted if signal.getsignal(s) is signal.SIG_IGN),
    "blocked": sorted(s.name for s in wanted if s in blocked),
}))
"""
# a child that waits to be signalled, once it runs (the signal is sent after the preexec_fn, never before)
WAITER = "import time; print('ready', flush=True); time.sleep(60)"
NAMES = [s.name for s in DEFAULT_SIGNALS]
MASKED = [signal.SIGUSR1, signal.SIGUSR2]  # blocked (not ignored) beside them: the mask is put back on its own


@contextmanager
def ignoring(signals):
    """This process with these signals ignored, as a background job of a non-interactive shell has SIGINT and
    SIGQUIT; put back as they were afterwards (also when pytest itself runs with SIGINT ignored)."""
    saved = {number: signal.signal(number, signal.SIG_IGN) for number in signals}
    try:
        yield
    finally:
        for number, handler in saved.items():
            signal.signal(number, handler)


@contextmanager
def blocking(signals):
    """This thread with these signals blocked (a child inherits the mask across fork and exec); unblocked afterwards."""
    saved = signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, saved)


@pytest.fixture
def launched_in_the_background():
    """Every signal of DEFAULT_SIGNALS ignored and SIGUSR1, SIGUSR2 blocked in this process, during the test."""
    with ignoring(DEFAULT_SIGNALS), blocking(MASKED):
        yield


def probe(start):
    child = start([sys.executable, "-c", PROBE, *NAMES, *(s.name for s in MASKED)], stdout=subprocess.PIPE, text=True)
    output = child.communicate(timeout=60)[0]
    assert child.returncode == 0, output
    return json.loads(output)


def test_the_child_of_a_process_that_ignores_the_signals_gets_their_defaults_and_no_mask(launched_in_the_background):
    assert probe(popen_with_default_signals) == {"ignored": [], "blocked": []}
    # without the helper the child inherits both: what makes a test's Ctrl-C ignored (the test above would fail)
    assert probe(subprocess.Popen) == {"ignored": sorted(NAMES), "blocked": sorted(s.name for s in MASKED)}


def test_the_defaults_are_given_from_a_thread_other_than_the_main_one(launched_in_the_background):
    """The preexec_fn's signal.signal runs in the forked child, where the calling thread is the main one."""
    seen = {}
    thread = threading.Thread(target=lambda: seen.update(probe(popen_with_default_signals)))
    thread.start()
    thread.join(timeout=60)
    assert seen == {"ignored": [], "blocked": []}


def signalled(start, number, patience):
    """A waiting child started with start, sent this signal once it runs: its returncode, None if it still runs
    `patience` seconds later."""
    child = start([sys.executable, "-c", WAITER], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert child.stdout.readline() == "ready\n"
        child.send_signal(number)
        try:
            return child.wait(timeout=patience)
        except subprocess.TimeoutExpired:
            return None
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()


# SIGQUIT's default action dumps core: its disposition is checked by the probe above, not by delivering it
@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
@pytest.mark.parametrize("held_off_by", [ignoring, blocking])
def test_a_signal_the_suite_ignores_or_blocks_ends_a_child_started_with_the_defaults(number, held_off_by):
    with held_off_by([number]):
        assert signalled(popen_with_default_signals, number, patience=10) == -number  # SIGINT: KeyboardInterrupt, then -2
        # the plain child ignores it, or holds it pending (a delivered one acts within milliseconds)
        assert signalled(subprocess.Popen, number, patience=0.3) is None


def test_a_started_race_gets_the_defaults(launched_in_the_background, monkeypatch, tmp_path):
    """start_race, which test_ccs.py's Ctrl-C and the private network's interrupted race use, starts esrally through
    the helper: esrally stood in for by the probe (no Rally runs here). "esrally" nowhere in its command line: Rally
    counts such a process as a Rally, and one starting meanwhile would refuse to race beside it."""
    fake = tmp_path / "stand-in-for-rally"
    assert "esrally" not in str(fake)
    fake.write_text(f"#!{sys.executable}\nimport sys\nsys.argv[1:] = {NAMES + [s.name for s in MASKED]!r}\n{PROBE}")
    fake.chmod(0o755)
    monkeypatch.setattr(conftest, "ESRALLY", str(fake))
    monkeypatch.setattr(conftest, "RALLY_HOMES", set())
    monkeypatch.setattr(conftest, "TEST_METRICS_STORE", False)
    race = conftest.start_race(tmp_path / "home", "ccs-roundtrips")
    output = race.communicate(timeout=60)[0]
    assert race.returncode == 0, output
    assert json.loads(output) == {"ignored": [], "blocked": []}


def test_the_helper_refuses_a_preexec_fn_of_its_own():
    with pytest.raises(TypeError, match="sets preexec_fn itself"):
        popen_with_default_signals(["true"], preexec_fn=lambda: None)


def test_beside_the_races_a_test_that_would_start_rally_fails_and_names_its_mark(monkeypatch, tmp_path):
    """make test runs the unit tests beside its races (--beside-races): a Rally process started there could make one of
    its races refuse to start, so the test fails before Rally starts, naming the mark that runs it after the races;
    a stand-in for esrally (the test above) is no Rally and runs."""
    monkeypatch.setattr(conftest, "BESIDE_RACES", True)
    monkeypatch.setattr(conftest, "RALLY_HOMES", set())
    with pytest.raises(pytest.fail.Exception, match="mark it rally_process"):
        conftest.run_rally(tmp_path / "home", "info")
    assert not (tmp_path / "home").exists() and conftest.RALLY_HOMES == set()  # nothing started
    monkeypatch.setattr(conftest, "ESRALLY", "true")
    assert conftest.run_rally(tmp_path / "home", "info").returncode == 0
