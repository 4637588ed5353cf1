"""Rally's processes as the suite sees them: which are ours (rally_pids), Thespian's log of a Rally home, the suite's
one actor system (SuiteActorSystem), and the kernel's OOM kills."""

import os
import subprocess
import time
from pathlib import Path


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

    def __init__(self, home, esrallyd):
        self.home, self.esrallyd, self.started = home, esrallyd, False
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
        args = [self.esrallyd, command] + (["--node-ip=127.0.0.1", "--coordinator-ip=127.0.0.1"] if command == "start" else [])
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


def oom_kills():
    """The kernel's count of processes its OOM killer ended in this machine's cgroup (None where it is not readable)."""
    try:
        return int(dict(line.split() for line in open("/sys/fs/cgroup/memory.events"))["oom_kill"])
    except (OSError, KeyError, ValueError):
        return None
