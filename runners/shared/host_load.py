"""How busy the load driver's host was while a race ran: a sampler beside Rally's workers reads /proc every PERIOD_S
seconds and appends one line per interval to the race's record (records.HOST_LOAD); the report takes each timed
cell's window out of these intervals (report/shared/host_load.py).

A process of its own, not a thread in a worker: a thread's reading would hold the worker's GIL inside timed requests.
One per host and race: the first of the race's worker processes to call one of our runners takes a lock in the record
folder (STATE_DIR) and hands it to the sampler it starts (another worker finds the lock taken and starts none); the sampler ends
when the worker that started it has gone, the race's end (or a kill -9 of it: nothing is left behind).

Each line covers one interval (start, end: wall-clock seconds) and holds counters over it, so that lines add up:
  cpus            the host's CPUs
  total           CPU ticks of every CPU over the interval (clock ticks: CLOCK_TICKS a second), steal included
  busy            ticks the CPUs ran anything (user, nice, system, irq, softirq)
  steal, iowait   ticks the hypervisor ran something else while this host had work; ticks idle waiting on a disk
  rally, elasticsearch
                  ticks of the processes whose command line is Rally's (esrally, esrallyd, their actors, this sampler)
                  or an Elasticsearch node's (any on the host: a local node, a local metrics store)
  foreign         busy less those two: what the host's other processes (and its kernel threads) took
  running         runnable tasks at the interval's end (/proc/stat procs_running, this sampler's own included)
  load1           the kernel's one-minute load average at its end
  mem_available_kb  MemAvailable at its end
  major_faults    major page faults over it (/proc/vmstat pgmajfault)
  freq_mhz        the CPUs' mean current frequency at its end, where the kernel exposes it (else null)
  throttled       thermal throttling events over it, where the kernel exposes them (else null)
  host            the host's name (several load-driver hosts' lines meet in one record through the metrics store)
  sampler_cpu_s   the CPU seconds the sampler itself has taken since it started

Every NODES_PERIOD_S, where the race has a target cluster, a line also holds what the cluster's nodes say of
themselves (_nodes/stats, asked with the client options the user gave Rally; `monitor`, which check-privileges
already asks for), over [nodes_start, end]:
  nodes           {node id: {name, host, cpu_ms: the node process's CPU milliseconds over it, ms: the node's own
                  milliseconds over it, os_cpu_percent: its host's CPU use at the end, as Elasticsearch reads it}}
  nodes_error     instead, why the nodes could not be asked (once, and again when the reason changes)
A remote cluster's hosts are covered so far as Elasticsearch tells it: its process and its host's CPU, not who else.
"""

import fcntl
import glob
import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass

from runners.contracts.host_load import CLOCK_TICKS, COUNTERS

WATCH_S = 0.1  # how often the sampler looks for its worker between readings
PERIOD_S = 1.0  # a timed cell of a full-scale race lasts 5 s and more; a shorter window reads its interval's average
# the sampler's own bookkeeping, in a folder of the record folder (the report reads each top-level file as a record)
STATE_DIR = "host-load-state"
LOCK = "lock"  # held by the race's one sampler on this host
OWN = {"rally": ("esrally",), "elasticsearch": ("org.elasticsearch.",)}  # command-line marks of the benchmark's own
RECHECK_EVERY = 10  # readings: how often another process's pid is checked for reuse
NODES_PERIOD_S = 5.0  # a _nodes/stats request costs the node 3-4 ms of CPU: under 0.1% of a core at this period
NODES_TIMEOUT_S = 2.0
NODES_FILTER = "nodes.*.name,nodes.*.host,nodes.*.timestamp,nodes.*.os.cpu.percent,nodes.*.process.cpu.total_in_millis"
CLUSTER_KEY = "host-load-cluster"  # operation parameter: the target cluster as the sampler asks it (cluster_param)
# Rally's client options the sampler is not handed: the secrets (the worker's live client adds its authorization
# header, in memory, through a pipe) and the per-client API keys (the sampler creates none)
SECRET_OPTIONS = ("basic_auth_user", "basic_auth_password", "api_key", "create_api_key_per_client")


def _read(path):
    with open(path, "rb") as f:
        return f.read().decode(errors="replace")


def cpu_line(stat_text):
    """{name: ticks} of /proc/stat's all-CPU line, and procs_running."""
    fields, running = {}, None
    for line in stat_text.splitlines():
        if line.startswith("cpu "):
            values = [int(v) for v in line.split()[1:]]
            names = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
            fields = dict(zip(names, values + [0] * (len(names) - len(values))))
        elif line.startswith("procs_running "):
            running = int(line.split()[1])
    return fields, running


def process_ticks(stat_text):
    """(utime + stime + cutime + cstime, start time) of a /proc/<pid>/stat line (the command name may hold spaces and
    parentheses). The children's times: a Rally worker that ends is reaped by Rally's actor system, and its ticks move
    there (else a race's last interval would show its workers' CPU as another process's)."""
    rest = stat_text[stat_text.rindex(")") + 2 :].split()
    return sum(int(v) for v in rest[11:15]), int(rest[19])


def kind_of(cmdline):
    """Which of the benchmark's own a process is ("rally", "elasticsearch"), or None: another process."""
    for kind, marks in OWN.items():
        if any(mark in cmdline for mark in marks):
            return kind
    return None


class Reader:
    """Readings of the host from a /proc and a /sys (roots given for tests); which process is whose is looked up once
    per process (its command line does not change)."""

    def __init__(self, proc="/proc", sys_cpu="/sys/devices/system/cpu", own_pids=(), recheck_every=RECHECK_EVERY):
        self.proc, self.sys_cpu = proc, sys_cpu
        self.own_pids = {str(p) for p in own_pids}
        self.kinds = {}  # pid -> (kind or None, its start time)
        self.recheck_every, self.readings = recheck_every, 0

    def _own_ticks(self):
        """Ticks of the benchmark's own processes: each process's command line read once, and after that the stat of
        the benchmark's own alone (a few) each reading, its start time checked against a reused pid (the others'
        every recheck_every readings)."""
        ticks = {kind: 0 for kind in OWN}
        pids = {p for p in os.listdir(self.proc) if p.isdigit()}
        self.kinds = {pid: known for pid, known in self.kinds.items() if pid in pids}
        self.readings += 1
        recheck = self.readings % self.recheck_every == 0  # now and then every pid: one reused by a node or a Rally
        for pid in pids:
            known = self.kinds.get(pid)
            if known is not None and known[0] is None and not recheck:
                continue  # another process's
            try:
                used, started = process_ticks(_read(f"{self.proc}/{pid}/stat"))
                if known is None or known[1] != started:
                    cmdline = _read(f"{self.proc}/{pid}/cmdline").replace("\0", " ")
                    known = self.kinds[pid] = ("rally" if pid in self.own_pids else kind_of(cmdline), started)
            except (OSError, ValueError, IndexError):
                continue  # gone between the listing and the read
            if known[0]:
                ticks[known[0]] += used
        return ticks

    def _meminfo(self, name):
        for line in _read(f"{self.proc}/meminfo").splitlines():
            if line.startswith(name + ":"):
                return int(line.split()[1])
        return None

    def _vmstat(self, name):
        for line in _read(f"{self.proc}/vmstat").splitlines():
            key, _, value = line.partition(" ")
            if key == name:
                return int(value)
        return None

    def _frequency_mhz(self):
        values = []
        for path in glob.glob(f"{self.sys_cpu}/cpu[0-9]*/cpufreq/scaling_cur_freq"):
            try:
                values.append(int(_read(path)) / 1000)
            except (OSError, ValueError):
                continue
        return round(sum(values) / len(values)) if values else None

    def _throttle_count(self):
        paths = glob.glob(f"{self.sys_cpu}/cpu[0-9]*/thermal_throttle/core_throttle_count")
        try:
            return sum(int(_read(p)) for p in paths) if paths else None
        except (OSError, ValueError):
            return None

    def reading(self):
        """A cumulative reading of the host now."""
        cpu, running = cpu_line(_read(f"{self.proc}/stat"))
        with open(f"{self.proc}/loadavg") as f:
            load1 = float(f.read().split()[0])
        return {
            "t": time.time(),
            "cpu": cpu,
            "own": self._own_ticks(),
            "running": running,
            "load1": load1,
            "mem_available_kb": self._meminfo("MemAvailable"),
            "major_faults": self._vmstat("pgmajfault"),
            "freq_mhz": self._frequency_mhz(),
            "throttled": self._throttle_count(),
        }


def interval(before, after, cpus, host):
    """One record line: the counters between two readings (COUNTERS add up over lines), the levels at the later one."""
    cpu = {k: after["cpu"].get(k, 0) - before["cpu"].get(k, 0) for k in after["cpu"]}
    busy = sum(cpu.get(k, 0) for k in ("user", "nice", "system", "irq", "softirq"))
    own = {k: max(0, after["own"][k] - before["own"][k]) for k in OWN}
    faults = None if after["major_faults"] is None or before["major_faults"] is None else after["major_faults"] - before["major_faults"]
    throttled = None if after["throttled"] is None or before["throttled"] is None else after["throttled"] - before["throttled"]
    return {
        "start": round(before["t"], 3),
        "end": round(after["t"], 3),
        "host": host,
        "cpus": cpus,
        "total": sum(cpu.values()),
        "busy": busy,
        "steal": cpu.get("steal", 0),
        "iowait": cpu.get("iowait", 0),
        **own,
        "foreign": max(0, busy - sum(own.values())),
        "running": after["running"],
        "load1": after["load1"],
        "mem_available_kb": after["mem_available_kb"],
        "major_faults": faults,
        "freq_mhz": after["freq_mhz"],
        "throttled": throttled,
    }


class NodeReader:
    """The target cluster's nodes as _nodes/stats tells them: each node's process CPU (cumulative) and its host's CPU
    use. `stats` returns the _nodes/stats response (a client's request, or a test's fake)."""

    def __init__(self, stats):
        self.stats = stats

    @classmethod
    def connect(cls, given):
        """A reader that asks the cluster `given` names (cluster_param, and the worker's authorization header) with
        Rally's own client factory; None where no cluster is given."""
        cluster = given.get("cluster")
        if not cluster:
            return None
        from esrally.client import factory  # here: a sampler without a cluster does not pay for the import

        options = {**cluster["options"], "timeout": NODES_TIMEOUT_S, "max_retries": 0}
        client = factory.EsClientFactory(cluster["hosts"], options).create()
        if given.get("authorization"):
            client = client.options(headers={"authorization": given["authorization"]})
        return cls(lambda: client.nodes.stats(metric="os,process", filter_path=NODES_FILTER))

    def reading(self):
        """{node id: {name, host, t (the node's ms), cpu (ms), os_cpu_percent}}, or why there is none (a text)."""
        try:
            response = self.stats()
            nodes = getattr(response, "body", response)["nodes"]
            return {
                node_id: {
                    "name": str(node.get("name")),
                    "host": str(node.get("host")),
                    "t": int(node["timestamp"]),
                    "cpu": int(node["process"]["cpu"]["total_in_millis"]),
                    "os_cpu_percent": node.get("os", {}).get("cpu", {}).get("percent"),
                }
                for node_id, node in nodes.items()
            }
        except Exception as e:  # noqa: BLE001 - any failure is the record's to say (nodes_error), not the sampler's end
            return f"{type(e).__name__}: {str(e)[:200]}"


def node_interval(before, after, since):
    """The nodes' part of a line: each node's CPU between two good readings (`since`: the earlier one's time on the
    sampler's clock), or {} where no node is in both."""
    nodes = {
        node_id: {
            "name": node["name"],
            "host": node["host"],
            "cpu_ms": node["cpu"] - before[node_id]["cpu"],
            "ms": node["t"] - before[node_id]["t"],
            "os_cpu_percent": node["os_cpu_percent"],
        }
        for node_id, node in after.items()
        if node_id in before and node["t"] > before[node_id]["t"]
    }
    return {"nodes_start": round(since, 3), "nodes": nodes} if nodes else {}


class NodeSampling:
    """When to ask the nodes and what a line says of them: a good reading is the next one's baseline (an error in
    between leaves it, so the next good reading covers the gap); an error is said once, and again when it changes."""

    def __init__(self, reader, period=NODES_PERIOD_S):
        self.reader, self.period = reader, period
        self.asked = time.time()
        self.good, self.good_t, self.error = None, None, None
        self._take(reader.reading(), self.asked)

    def _take(self, reading, now):
        said = {}
        if isinstance(reading, str):
            if reading != self.error:
                said["nodes_error"] = reading
            self.error = reading
            return said
        if self.good is not None:
            said = node_interval(self.good, reading, self.good_t)
        self.good, self.good_t, self.error = reading, now, None
        return said

    def line(self, now, last=False):
        """The nodes' fields for a line written at `now` (sampler's clock): {} until a period has passed, except on
        the last line, which closes the span over the race's last cells."""
        if now - self.asked < self.period - WATCH_S and not last:
            return {}
        self.asked = time.time()
        return self._take(self.reader.reading(), self.asked)


@dataclass(frozen=True)
class Pace:
    """How often the sampler reads (PERIOD_S, NODES_PERIOD_S), and the host it names (None: this one's CPUs and name);
    a test gives its own."""

    period: float = PERIOD_S
    nodes_period: float = NODES_PERIOD_S
    cpus: int | None = None
    host: str | None = None


def sample(path, watched, reader, nodes=None, pace=Pace()):
    """Appends a line per period to path while the process `watched` is this one's parent, and a last, shorter one as
    soon as it has gone (within WATCH_S: before the race's coordinator, which ends after its workers, has gone too and
    taken its ticks with it). With `nodes` (a NodeReader), every nodes period a line also says the cluster's nodes'
    CPU, and so does the last line (its request after the /proc reading: a slow cluster delays the line's write by
    NODES_TIMEOUT_S at most, not its figures)."""
    cpus, host = pace.cpus or os.cpu_count(), pace.host or socket.gethostname()
    before = reader.reading()
    nodes = NodeSampling(nodes, pace.nodes_period) if nodes else None
    while True:
        due = before["t"] + pace.period
        while os.getppid() == watched and time.time() < due:
            time.sleep(min(WATCH_S, max(0.0, due - time.time())))
        after = reader.reading()
        line = interval(before, after, cpus, host)
        gone = os.getppid() != watched
        if nodes:
            line.update(nodes.line(after["t"], last=gone))
        line["sampler_cpu_s"] = round(sum(os.times()[:2]), 3)  # its own cost so far: what the record costs the host
        with open(path, "a") as f:
            f.write(json.dumps(line, sort_keys=True) + "\n")
        if gone:
            return
        before = after


_started = set()  # the record folders whose sampler this process has seen to
ATTACH_S = 2.0  # how often a worker hands the sampler's new lines to Rally as sample meta (for a metrics store)
CLAIMED = "claimed"  # how far the lines have been handed on (a byte offset)
_attached = {}  # record folder -> when this process last handed lines on


def cluster_param(hosts, client_options):
    """The operation parameter (CLUSTER_KEY) that tells the sampler how to reach the target cluster: Rally's hosts and
    client options of it, less SECRET_OPTIONS (operation parameters are the track's, not a secret's place); None
    where Rally has no target hosts to give (esrally info)."""
    if not hosts:
        return None
    return {"hosts": list(hosts), "options": {k: v for k, v in (client_options or {}).items() if k not in SECRET_OPTIONS}}


def authorization(es):
    """The authorization header of a runner's client (Rally's basic auth or API key, as its client sends it), or None;
    `es` a client or, for a runner of several clusters, {cluster: client}."""
    client = es.get("default") if isinstance(es, dict) else es
    headers = getattr(client, "_headers", None) or {}
    return headers.get("authorization")


def ensure_sampler(record_dir, name, cluster=None, auth=None):
    """Starts the race's sampler on this host unless a worker already has (called before each runner's call: after
    the first, a set lookup). With `cluster` (cluster_param) and `auth` (authorization), the sampler asks the cluster's
    nodes too; both reach it through a pipe, never its command line or a file."""
    if record_dir in _started:
        return
    _started.add(record_dir)
    os.makedirs(os.path.join(record_dir, STATE_DIR), exist_ok=True)
    lock = os.open(os.path.join(record_dir, STATE_DIR, LOCK), os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(lock)  # another worker's sampler has it
        return
    try:
        sampler = subprocess.Popen(
            [sys.executable, "-m", __name__, os.path.join(record_dir, name), str(os.getpid())],
            env=_package_env(),  # a module of its package: it reads the record's vocabulary from runners/contracts/
            pass_fds=(lock,),
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a terminal's Ctrl-C is Rally's to handle; the sampler ends with its worker
        )
        try:
            with sampler.stdin:  # a few hundred bytes: within a pipe's buffer, so the write does not wait on the sampler
                sampler.stdin.write(json.dumps({"cluster": cluster, "authorization": auth}).encode())
        except OSError:
            pass  # a sampler that ended at once (its record then says the host was not recorded): never the race's end
    finally:
        os.close(lock)  # the sampler holds it now


def claim_lines(record_dir, name, now=None):
    """The sampler's lines no worker has handed on yet, at most every ATTACH_S per process (several workers share the
    folder: a lock and the claimed offset give each line to one of them): the caller puts them into a sample's meta,
    so that a metrics store holds the record (records.replay). The lines after a race's last sample stay on disk."""
    now = time.monotonic() if now is None else now
    if now - _attached.get(record_dir, -ATTACH_S) < ATTACH_S:
        return []
    _attached[record_dir] = now
    path = os.path.join(record_dir, name)
    if not os.path.isfile(path):
        return []
    with open(os.path.join(record_dir, STATE_DIR, CLAIMED), "a+") as claimed:
        fcntl.flock(claimed, fcntl.LOCK_EX)
        claimed.seek(0)
        offset = int(claimed.read().strip() or 0)
        with open(path, "rb") as f:
            f.seek(offset)
            text = f.read()
        whole = text[: text.rfind(b"\n") + 1]  # a line the sampler is still writing waits for the next claim
        if whole:
            claimed.seek(0)
            claimed.truncate()
            claimed.write(str(offset + len(whole)))
        return whole.decode().splitlines()


def main(path, watched):
    given = json.loads(sys.stdin.read() or "{}")
    try:
        nodes = NodeReader.connect(given)
    except Exception as e:  # noqa: BLE001 - options Rally took but the sampler cannot use: said in the record
        error = RuntimeError(f"no client for the nodes: {type(e).__name__}: {str(e)[:200]}")

        def stats():
            raise error

        nodes = NodeReader(stats)
    sample(path, watched, Reader(own_pids=(os.getpid(),)), nodes=nodes)


def _package_env():
    """The environment with this repository first on PYTHONPATH: Rally's actors import the track's package from the
    track's own sys.path entry (tracks/cluster-metrics/track.py), which a child process does not inherit."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": root + (os.pathsep + path if path else "")}


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
