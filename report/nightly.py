#!/usr/bin/env python3
"""A team's night, one command (docs/nightly.md): production-comparison raced on the team's cluster into the team's
history with the night's tags, its first tasks the track's own checks (check-privileges, verify-corpus: the corpus is
ingested, and the race run again, only where verify-corpus finds it missing or another one), then the trend over
that history with its alert, the report in one stable place.

    python3 report/nightly.py [--history-tag env:nightly] [--local-store] [--alert-within 5] [--no-ingest]
        [--wait-for-rally 600] [--out reports/nightly] [VAR=value ...]

VAR=value: make variables handed to every `make race` of the night, as to a race typed by hand: TARGET_HOSTS (the
team's cluster: nothing is started here; default a local node on PORT, started when it is not running and then kept),
ES_VERSION, HEAP, PORT (that local node), EPOCHS, ROWS, ... (the corpus), TRACK_PARAMS, RACE_ARGS (--test-mode).
CLIENT_OPTIONS (TLS, credentials) is read from the environment, as by make race. The history is the store that
rally.ini names (its [reporting] section), or the Rally home's race folders where it keeps results in memory;
--local-store: the project's local store (make metrics-store) instead.

Writes <out>/<UTC time>/ (the trend's report.md and charts, night.log, night.json) and the same as <out>/latest/;
appends to <out>/nightly.log. Exit status, said in the last line: 0 no slower change among the newest races, 3 a
slower change (an ALERT line each), 1 the night failed (the step and why), 2 bad arguments.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAKE_VARIABLE = re.compile(r"[A-Z][A-Z0-9_]*=")

if __name__ == "__main__" and not __package__:
    # python3 report/nightly.py (cron): the project's venv first (make venv: a no-op once made), then this module in it
    made = subprocess.run(
        ["make", "--no-print-directory", "-s", "-C", str(ROOT), "venv-python", *[a for a in sys.argv[1:] if MAKE_VARIABLE.match(a)]],
        stdout=subprocess.PIPE,
        text=True,
    )
    if made.returncode != 0:
        print(f"nightly: 1 FAILED: the project's venv could not be made (make venv exited {made.returncode})")
        sys.exit(1)
    venv_python = made.stdout.strip().splitlines()[-1]
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    os.execve(venv_python, [venv_python, "-m", "report.nightly", *sys.argv[1:]], dict(os.environ, PYTHONPATH=path))

import argparse  # noqa: E402
import contextlib  # noqa: E402
import datetime  # noqa: E402
import fcntl  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import time  # noqa: E402

from report import ALERT_EXIT, HOST_NAMED, ReportError  # noqa: E402
from report.shared import store  # noqa: E402
from runners.contracts import corpus  # noqa: E402

CHALLENGE = "production-comparison"
RACE_ID = re.compile(r"Race id is \[([0-9a-f-]+)\]")
ES_VERSION = re.compile(r"^Elasticsearch (\S+) at ", re.M)  # make race's cluster check (report/shared/cluster.py)
FAILED, ALERTED = 1, ALERT_EXIT
NIGHT_TAGS = ("es", "night")  # beside the history tag: the cluster's version and the night's date
STEPS = 4  # the checks, the cluster, the race, the trend; an ingest adds two (the ingest, the race again)


class NightFailed(Exception):
    """A step of the night failed: its message says which step and the fix."""


def arguments(argv):
    parser = argparse.ArgumentParser(
        prog="python3 report/nightly.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--history-tag", default="env:nightly", help="key:value: the user tag that makes the team's history (default env:nightly)"
    )
    parser.add_argument("--local-store", action="store_true", help=f"race into the local store (make metrics-store: {store.CONFIG_NAME})")
    parser.add_argument("--alert-within", type=int, default=5, help="races: a slower change this recent alerts (default 5)")
    parser.add_argument("--no-ingest", action="store_true", help="a cluster without the corpus fails the night instead of ingesting")
    parser.add_argument("--wait-for-rally", type=float, default=600, help="seconds to wait for another Rally on this machine (default 600)")
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "nightly")
    parser.add_argument("variables", nargs="*", metavar="VAR=value", help="make variables for every race of the night")
    args = parser.parse_args(argv)
    args.out = args.out.resolve()  # the trend runs from the repository: a relative --out is the caller's
    key, _, value = args.history_tag.partition(":")
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", key) or not value or "," in value:
        parser.error(f"--history-tag {args.history_tag!r}: give one key:value, e.g. env:nightly")
    if key in NIGHT_TAGS:
        parser.error(f"--history-tag {args.history_tag!r}: {', '.join(NIGHT_TAGS)} are the night's own tags; give another key")
    if args.alert_within < 1:
        parser.error("--alert-within takes 1 or more races")
    if args.wait_for_rally < 0:
        parser.error("--wait-for-rally takes 0 or more seconds")
    wrong = [v for v in args.variables if not MAKE_VARIABLE.match(v)]
    if wrong:
        parser.error(f"{wrong[0]!r}: give make variables as NAME=value (TARGET_HOSTS=es1.example:9200, RACE_ARGS=--test-mode)")
    return args


class Night:
    """One night's folder, its log (and the shared one) and what it found."""

    def __init__(self, args, started=None):
        self.args, self.started = args, started or datetime.datetime.now(datetime.timezone.utc)
        self.stamp = self.started.strftime("%Y-%m-%dT%H%M%SZ")
        self.folder = args.out / self.stamp
        self.folder.mkdir(parents=True, exist_ok=False)
        self.logs = [open(self.folder / "night.log", "a"), open(args.out / "nightly.log", "a")]
        self.facts = {"night": self.stamp, "history-tag": args.history_tag, "ingested": False}
        self.clock, self.steps, self.done = time.monotonic(), STEPS, 0
        self.child, self.stopped_by = None, None  # the step's process; the signal that stopped the night

    def write(self, text):
        sys.stdout.write(text)
        sys.stdout.flush()
        for log in self.logs:
            log.write(text)
            log.flush()

    def say(self, line):
        self.write(line + "\n")

    def step(self, what):
        self.done += 1
        self.say(f"nightly: step {self.done} of {self.steps}: {what} ({time.monotonic() - self.clock:.0f} s in)")

    def check_stop(self, what=None):
        if self.stopped_by:
            during = f" during {what}, which was interrupted as Ctrl-C interrupts it" if what else ""
            raise NightFailed(f"stopped by {self.stopped_by}{during}; run the night again")

    def close(self):
        for log in self.logs:
            log.close()


@contextlib.contextmanager
def night_lock(out):
    """One night at a time: an exclusive lock on <out>/.lock, held while the night runs and released by the kernel
    however it ends (so no stale lock is left); another night holding it is named with its pid and start."""
    path = out / ".lock"
    try:
        out.mkdir(parents=True, exist_ok=True)
        f = open(path, "a+")
    except OSError as e:
        raise NightFailed(f"--out {out} cannot be written ({e.strerror or e}): give a folder this user can write") from None
    with f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "a process that has not written its pid yet"
            raise NightFailed(
                f"another night is running ({holder}; lock {path}): this one did not start. Let it finish; if cron starts "
                f"nights closer together than a night lasts (each night's time is in {out / 'nightly.log'}), space them further apart"
            ) from None
        f.seek(0)
        f.truncate()
        f.write(f"pid {os.getpid()}, started {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M:%S} UTC\n")
        f.flush()
        yield


def history_store(night):
    """The store the night's races go to and the trend reads, checked before anything else: it answers, or the night
    stops naming it and the fix. None: rally.ini keeps results in memory, the history is the race folders."""
    config = store.CONFIG_NAME if night.args.local_store else None
    found = store.Store.from_config(None, config)
    if found is None:
        night.say(
            f"nightly: history: the race folders of {corpus.races_root()} ({store.config_path(None, config)} keeps results in "
            "memory; name a store in its [reporting] section to share the history: docs/team-setup.md)"
        )
        return None
    races = found.race_count()
    night.say(f"nightly: history: the metrics store {found.address} named in {found.config} ({races} races)")
    return found


def wait_for_rally(night, seconds):
    """Rally races one at a time on a machine (its own check refuses a second one): wait for another to end."""
    from esrally.utils import process

    deadline = time.monotonic() + seconds
    others = process.find_all_other_rally_processes()
    if others:
        night.say(f"nightly: another Rally is running (PIDs {[p.pid for p in others]}): waiting up to {seconds:.0f} s for it")
    while others and time.monotonic() < deadline and not night.stopped_by:
        time.sleep(min(5, max(0.1, deadline - time.monotonic())))
        others = process.find_all_other_rally_processes()
    night.check_stop()
    if others:
        described = "; ".join(f"{p.pid}: {' '.join(p.cmdline())[:120]}" for p in others[:2] if p.cmdline())
        raise NightFailed(
            f"Rally is busy on this machine after {seconds:.0f} s (PIDs {[p.pid for p in others]}; {described}): Rally races "
            "one at a time, so nothing was "
            "raced or changed. Run the night when that Rally has ended, or give --wait-for-rally more seconds"
        )


def run_child(night, command, what):
    """One step's process, its output shown and logged as it comes; (exit status, its output). It runs in a process
    group of its own, which a stop of the night interrupts as Ctrl-C would (stop_on_signals)."""
    night.check_stop()
    run = subprocess.Popen(
        command,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    night.child, output = run, []
    try:
        for line in run.stdout:
            night.write(line)
            output.append(line)
        status = run.wait()
    finally:
        night.child = None
    night.check_stop(what)
    return status, "".join(output)


def make(night, target, words):
    """One make run of the night (its make variables, then these words); (exit status, its output)."""
    command = ["make", "--no-print-directory", "-C", str(ROOT), target, *words]
    night.say("$ " + " ".join(command))
    return run_child(night, command, f"make {target}")


def make_race(night, challenge, tags):
    """`make race` of the challenge with the night's make variables and these user tags."""
    variables = dict(v.split("=", 1) for v in night.args.variables)
    words = [f"{k}={v}" for k, v in variables.items() if k not in ("CHALLENGE", "RACE_ARGS", "METRICS_STORE")]
    race_args = " ".join(filter(None, [variables.get("RACE_ARGS", ""), f"--user-tag={tags}"]))
    words += [f"CHALLENGE={challenge}", f"RACE_ARGS={race_args}"] + (["METRICS_STORE=yes"] if night.args.local_store else [])
    return make(night, "race", words)


def tail(output, lines=12):
    """What a failed step said last: its error lines where Rally marks them, else its last lines."""
    errors = [line for line in output.splitlines() if "[ERROR]" in line or "Error" in line or "error:" in line.lower()]
    return "\n".join((errors or output.splitlines())[-lines:])


def cluster_version(night):
    """The cluster reached as the race will reach it (the local node started first when it is the target, and kept):
    its Elasticsearch version, the night's `es` tag. Nothing on it is changed."""
    night.step("the cluster: reached as the race reaches it (a local node started if it is the target, then kept)")
    status, output = make(night, "cluster-check", night.args.variables)
    versions = ES_VERSION.findall(output)
    if status != 0 or not versions:
        raise NightFailed(f"the cluster could not be reached (make cluster-check exited {status}):\n{tail(output)}")
    return versions[-1]


def corpus_refusal(output):
    """Why the race's own verify-corpus refused the cluster's index (its message ends with the ingest fix), or None
    where the race failed for another reason."""
    refusal = re.compile(r"(index \S+ .*?): " + re.escape(corpus.INGEST_FIX))
    found = next(filter(None, map(refusal.search, output.splitlines())), None)
    if found:
        return found.group(1)
    return "verify-corpus refused the index" if corpus.INGEST_FIX in " ".join(output.split()) else None


def race(night, version):
    """production-comparison with the night's tags. Its first tasks are the track's own checks (check-privileges,
    verify-corpus: nothing changed, nothing timed before them): where verify-corpus finds the corpus missing or another
    one, the corpus is ingested (ingest-baseline) and the race run again; anything else fails the night."""
    tags = ",".join([night.args.history_tag, f"es:{version}", f"night:{night.started:%Y-%m-%d}"])
    night.step(f"{CHALLENGE}, tagged {tags}; its own checks first (check-privileges, verify-corpus)")
    status, output = make_race(night, CHALLENGE, tags)
    refused = corpus_refusal(output) if status != 0 else None
    if refused:
        if night.args.no_ingest:
            raise NightFailed(
                f"the cluster does not hold the corpus ({refused}); --no-ingest: ingest it with make race "
                "CHALLENGE=ingest-baseline and this night's make variables, or run the night without --no-ingest"
            )
        night.say(f"nightly: the cluster does not hold the corpus ({refused}): it is ingested now, then the race runs again")
        night.steps += 2
        night.step("ingest-baseline: the corpus into the cluster")
        ingested, ingest_output = make_race(night, "ingest-baseline", f"nightly-ingest:{night.stamp}")
        if ingested != 0:
            raise NightFailed(f"the ingest failed (make race exited {ingested}):\n{tail(ingest_output)}")
        night.facts["ingested"] = True
        night.step(f"{CHALLENGE} again, on the ingested corpus")
        status, output = make_race(night, CHALLENGE, tags)
    found = RACE_ID.findall(output)
    if status != 0:
        raise NightFailed(f"the race failed (make race exited {status}{', race ' + found[-1] if found else ''}):\n{tail(output)}")
    night.facts.update({"race-id": found[-1] if found else None, "es": version})


def run_trend(night):
    """The trend over the history tag with its alert; (exit status 0 or 3, its ALERT lines). The report is moved up
    into the night's folder (the trend writes it in a folder named for its selection)."""
    night.step(f"the trend of {CHALLENGE} over the races tagged {night.args.history_tag}")
    command = [sys.executable, "-m", "report", "trend", "--user-tag", night.args.history_tag, "--challenge", CHALLENGE]
    command += ["--fail-on", "slower", "--alert-within", str(night.args.alert_within), "--out", str(night.folder)]
    command += ["--configuration-name", store.CONFIG_NAME] if night.args.local_store else []
    status, output = run_child(night, command, "the trend")
    if status not in (0, ALERTED):
        raise NightFailed(f"the trend failed (exit {status}): {output.strip()[-1500:]}")
    for made in night.folder.glob("trend-*"):
        for item in made.iterdir():
            item.rename(night.folder / item.name)
        made.rmdir()
    night.facts["host-named"] = [line for line in output.splitlines() if line.startswith(HOST_NAMED)]
    return status, [line for line in output.splitlines() if line.startswith("ALERT:")]


def publish(night):
    """The night's folder copied to <out>/latest, the old one replaced only once the new one is whole."""
    latest, fresh, old = (night.args.out / name for name in ("latest", ".latest-new", ".latest-old"))
    shutil.rmtree(fresh, ignore_errors=True)
    shutil.copytree(night.folder, fresh)
    shutil.rmtree(old, ignore_errors=True)
    if latest.exists():
        latest.rename(old)
    fresh.rename(latest)
    shutil.rmtree(old, ignore_errors=True)


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def stop_on_signals(night):
    """A stop of the night (Ctrl-C, kill, a hangup, cron's or timeout's TERM) reaches its running step as one Ctrl-C to
    that step's process group: make and the Rally it runs stop as Rally stops on Ctrl-C, its runners putting back what
    they changed, and the night ends failed, its log and folder written. Children start with these signals at their
    default however the night was started (a handler's disposition is not inherited across exec; an ignored one
    would be)."""

    def stop(number, _frame):
        night.stopped_by = signal.Signals(number).name
        if night.child is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(night.child.pid, signal.SIGINT)

    for number in STOP_SIGNALS:
        signal.signal(number, stop)


def run_night(night):
    night.step("the history's store, Rally free on this machine")
    history_store(night)
    wait_for_rally(night, night.args.wait_for_rally)
    night.check_stop()
    race(night, cluster_version(night))
    return run_trend(night)


def last_line(status, facts, alerts=(), why=None):
    if status == FAILED:
        return f"nightly: {FAILED} FAILED: {why}"
    where = f"race {facts.get('race-id', '?')[:8]}, report {facts.get('report')}"
    if status == ALERTED:
        cells = sorted({line.split()[1] for line in alerts})
        return f"nightly: {ALERTED} SLOWER: {len(alerts)} alert(s) in {', '.join(cells)} ({where})"
    held = facts.get("host-named") or []
    if held:  # slower, but every race of it met a busy load-driver host: the machine's, not Elasticsearch's
        cells = sorted({line.removeprefix(HOST_NAMED).split()[0] for line in held})
        return (
            f"nightly: 0 no slower change of Elasticsearch's; {len(held)} slower step(s) the busy host's, in {', '.join(cells)} ({where})"
        )
    return f"nightly: 0 no slower change among the newest races ({where})"


def main(argv=None):
    args = arguments(argv)
    try:
        with night_lock(args.out):
            night = Night(args)
            stop_on_signals(night)
            try:
                status, alerts = run_night(night)
                why = None
            except (NightFailed, ReportError, OSError) as e:
                status, alerts, why = FAILED, [], str(e).splitlines()[0] if str(e) else type(e).__name__
                night.say(f"nightly: FAILED: {e}")
            night.facts.update({"exit": status, "alerts": alerts, "failed": why, "report": str(args.out / "latest" / "report.md")})
            (night.folder / "night.json").write_text(json.dumps(night.facts, indent=2) + "\n")
            night.say(last_line(status, night.facts, alerts, why))
            night.close()
            publish(night)
            return status
    except NightFailed as e:  # the lock: another night's folder and logs are left alone
        print(f"nightly: {FAILED} FAILED: {e}")
        return FAILED


if __name__ == "__main__":
    sys.exit(main())
