"""The host-load sampler (runners/shared/host_load.py): its readings from a /proc given to it, its intervals, one
sampler per host and race that ends with its worker, and its lines handed on in sample meta exactly once."""

import asyncio
import io
import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

from runners.contracts import records
from runners.contracts.context import CONTEXT_KEY
from runners.shared import host_load, hosts
from tests.loopback_es import LoopbackElasticsearch

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def fake_proc(
    root, cpu, processes, running=2, load1=0.5, mem_kb=1000, faults=7
):  # parameters: a fake /proc's contents, each a keyword with its default
    """A /proc with the files the reader reads: cpu (user, nice, system, idle, iowait, irq, softirq, steal ticks) and
    processes {pid: (command line, utime + stime, start time)}."""
    root.mkdir(exist_ok=True)
    (root / "stat").write_text(f"cpu  {' '.join(map(str, cpu))} 0 0\ncpu0 1 2 3\nprocs_running {running}\n")
    (root / "loadavg").write_text(f"{load1} 0.4 0.3 1/100 999\n")
    (root / "meminfo").write_text(f"MemTotal: 2000 kB\nMemAvailable: {mem_kb} kB\n")
    (root / "vmstat").write_text(f"pgfault 100\npgmajfault {faults}\n")
    for pid in [p.name for p in root.iterdir() if p.name.isdigit()]:
        if int(pid) not in processes:
            for f in (root / pid).iterdir():
                f.unlink()
            (root / pid).rmdir()
    for pid, (cmdline, ticks, started) in processes.items():
        (root / str(pid)).mkdir(exist_ok=True)
        # comm with a space and a parenthesis, as a real one may have; utime and stime are fields 14 and 15
        fields = ["S", "1", "1", "1", "0", "-1", "0", "0", "0", "0", "0", str(ticks - 1), "1"] + ["0"] * 6 + [str(started)]
        (root / str(pid) / "stat").write_text(f"{pid} (a (b) c) " + " ".join(fields) + "\n")
        (root / str(pid) / "cmdline").write_text(cmdline.replace(" ", "\0") + "\0")


RALLY = "/venv/bin/python /venv/bin/esrally race --track-path=x"
NODE = "/jdk/bin/java -Xms1g -m org.elasticsearch.server/org.elasticsearch.bootstrap.Elasticsearch"
OTHER = "sh -c while :; do :; done"


def test_an_interval_is_the_host_less_rally_and_elasticsearch(tmp_path):
    proc, sys_cpu = tmp_path / "proc", tmp_path / "sys"
    fake_proc(proc, [100, 0, 50, 1000, 5, 0, 0, 2], {10: (RALLY, 40, 1), 11: (NODE, 60, 2), 12: (OTHER, 30, 3)})
    reader = host_load.Reader(str(proc), str(sys_cpu), own_pids=(99,))
    before = reader.reading()
    # one second later on 2 CPUs (200 ticks): Rally took 30, the node 50, the busy loop 90; the hypervisor 10
    fake_proc(proc, [270, 0, 50, 1010, 15, 0, 0, 12], {10: (RALLY, 70, 1), 11: (NODE, 110, 2), 12: (OTHER, 120, 3)}, faults=9)
    line = host_load.interval(before, reader.reading(), cpus=2, host="ld-1")
    assert (line["busy"], line["rally"], line["elasticsearch"], line["foreign"]) == (170, 30, 50, 90)
    assert (line["steal"], line["iowait"], line["total"]) == (10, 10, 200)
    assert (line["running"], line["load1"], line["mem_available_kb"], line["major_faults"]) == (2, 0.5, 1000, 2)
    assert line["freq_mhz"] is None and line["throttled"] is None  # not exposed here
    assert line["host"] == "ld-1" and line["end"] >= line["start"]


def test_a_reused_pid_is_looked_up_again_and_a_vanished_one_drops_out(tmp_path):
    proc = tmp_path / "proc"
    fake_proc(proc, [0] * 8, {10: (OTHER, 5, 1), 11: (RALLY, 7, 1)})
    reader = host_load.Reader(str(proc), str(tmp_path / "sys"), recheck_every=2)
    assert reader.reading()["own"] == {"rally": 7, "elasticsearch": 0}
    fake_proc(proc, [0] * 8, {10: (OTHER, 6, 1), 11: (RALLY, 8, 1)})
    assert reader.reading()["own"] == {"rally": 8, "elasticsearch": 0}  # another process's stat is not read every time
    fake_proc(proc, [0] * 8, {10: (NODE, 9, 50)})  # pid 10 is a node now; 11 has gone
    assert reader.reading()["own"] == {"rally": 0, "elasticsearch": 0}  # not a recheck's reading: not seen yet
    assert reader.reading()["own"] == {"rally": 0, "elasticsearch": 9}  # the next recheck finds it


def test_a_worker_that_ended_leaves_its_ticks_with_the_rally_that_reaped_it(tmp_path):
    """A race's end: its worker (pid 11) has gone and Rally's actor system (pid 10) reaped it, its times now in the
    parent's cutime and cstime: Rally's ticks go on, not other processes'."""
    proc = tmp_path / "proc"
    fake_proc(proc, [100, 0, 0, 100, 0, 0, 0, 0], {10: (RALLY, 20, 1), 11: (RALLY, 50, 2)})
    reader = host_load.Reader(str(proc), str(tmp_path / "sys"))
    before = reader.reading()
    fake_proc(proc, [160, 0, 0, 140, 0, 0, 0, 0], {10: (RALLY, 20, 1)})
    stat = (proc / "10" / "stat").read_text().split()
    stat[17], stat[18] = "50", "10"  # cutime, cstime: the worker's 50 ticks and the 10 it took before it ended
    (proc / "10" / "stat").write_text(" ".join(stat) + "\n")
    line = host_load.interval(before, reader.reading(), cpus=2, host="h")
    assert (line["busy"], line["rally"], line["foreign"]) == (60, 10, 50)


def test_the_sampler_itself_counts_as_rallys(tmp_path):
    proc = tmp_path / "proc"
    fake_proc(proc, [0] * 8, {10: ("python host_load.py", 4, 1)})
    assert host_load.Reader(str(proc), str(tmp_path / "sys"), own_pids=(10,)).reading()["own"]["rally"] == 4


def test_frequency_and_throttling_where_the_kernel_has_them(tmp_path):
    sys_cpu = tmp_path / "sys"
    for cpu, khz, throttled in ((0, 2000000, 3), (1, 3000000, 4)):
        (sys_cpu / f"cpu{cpu}" / "cpufreq").mkdir(parents=True)
        (sys_cpu / f"cpu{cpu}" / "cpufreq" / "scaling_cur_freq").write_text(f"{khz}\n")
        (sys_cpu / f"cpu{cpu}" / "thermal_throttle").mkdir()
        (sys_cpu / f"cpu{cpu}" / "thermal_throttle" / "core_throttle_count").write_text(f"{throttled}\n")
    fake_proc(tmp_path / "proc", [0] * 8, {})
    reading = host_load.Reader(str(tmp_path / "proc"), str(sys_cpu)).reading()
    assert reading["freq_mhz"] == 2500 and reading["throttled"] == 7


WORKER = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {repo!r})
    from runners.shared import host_load
    host_load.ensure_sampler({record!r}, "host-load.jsonl")
    host_load.ensure_sampler({record!r}, "host-load.jsonl")  # once per process
    time.sleep({seconds})
    """
)


def start_worker(record, seconds):
    return subprocess.Popen([sys.executable, "-c", WORKER.format(repo=REPO, record=str(record), seconds=seconds)])


def sampler_pids(record):
    """The live samplers writing into this record folder (by their command line)."""
    found = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().decode(errors="replace")
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if "runners.shared.host_load" in cmdline and str(record) in cmdline and state != "Z":
            found.append(int(pid))
    return found


def test_one_sampler_per_host_and_race_that_ends_with_its_worker(tmp_path):
    """Two workers of one race on a host: one sampler, a line a second; gone within a period once its worker is."""
    record = tmp_path / "race" / records.RECORD_DIR
    workers = [start_worker(record, 3.5), start_worker(record, 3.5)]
    time.sleep(1.5)
    assert len(sampler_pids(record)) == 1
    for worker in workers:
        assert worker.wait(timeout=30) == 0
    deadline = time.monotonic() + 10
    while sampler_pids(record) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not sampler_pids(record), "the sampler outlived its worker"
    lines = [json.loads(line) for line in (record / records.HOST_LOAD).read_text().splitlines()]
    assert 2 <= len(lines) <= 5, lines
    assert all(b["start"] == a["end"] for a, b in zip(lines, lines[1:]))  # intervals follow each other, none twice
    assert all(line["total"] > 0 and line["cpus"] == os.cpu_count() for line in lines)


def test_each_line_is_handed_on_once_and_a_half_written_one_waits(tmp_path, monkeypatch):
    record = tmp_path / "rec"
    os.makedirs(record / host_load.STATE_DIR)
    path = record / records.HOST_LOAD
    path.write_text('{"a": 1}\n{"a": 2}\n{"a"')
    monkeypatch.setattr(host_load, "_attached", {})
    assert host_load.claim_lines(str(record), records.HOST_LOAD, now=100.0) == ['{"a": 1}', '{"a": 2}']
    assert host_load.claim_lines(str(record), records.HOST_LOAD, now=101.0) == []  # within ATTACH_S of the last
    with path.open("a") as f:
        f.write(': 3}\n{"a": 4}\n')
    monkeypatch.setattr(host_load, "_attached", {})  # another worker process: the lines left, no line twice
    assert host_load.claim_lines(str(record), records.HOST_LOAD, now=200.0) == ['{"a": 3}', '{"a": 4}']
    assert host_load.claim_lines(str(record), records.HOST_LOAD, now=300.0) == []


def test_a_runner_sees_to_the_sampler_and_its_sample_carries_the_lines_to_replay(tmp_path, monkeypatch):
    record = str(tmp_path / "rec")
    started = []
    monkeypatch.setattr(host_load, "ensure_sampler", lambda folder, name, *given: started.append((folder, name, *given)))
    monkeypatch.setattr(host_load, "claim_lines", lambda folder, name: ['{"start": 1, "end": 2}'])

    async def delegate(es, params):
        return {"weight": 1, **records.append_line(record, records.VALIDATION, '{"task": "t"}')}

    params = {CONTEXT_KEY: {"record_dir": record, **{k: None for k in ("index", "nodes", "epochs", "section")}}}
    params[CONTEXT_KEY].update(ground_truth="", ground_truth_sha256="", epoch_docs={}, fingerprint={})
    meta = asyncio.run(hosts.NamesItsHost(delegate)(None, params))
    assert started == [(record, records.HOST_LOAD, None, None)]
    replayed = tmp_path / "replayed"
    records.replay(str(replayed), [meta[records.META_KEY]])
    assert (replayed / records.HOST_LOAD).read_text() == '{"start": 1, "end": 2}\n'
    assert (replayed / records.VALIDATION).read_text() == '{"task": "t"}\n'
    # an operation without the race context (none of ours lacks it) starts nothing
    started.clear()
    assert hosts.HOST_KEY in asyncio.run(hosts.NamesItsHost(delegate)(None, {}))
    assert started == []


@pytest.mark.parametrize("cmdline,kind", [(RALLY, "rally"), ("/v/bin/esrallyd start", "rally"), (NODE, "elasticsearch"), (OTHER, None)])
def test_whose_process(cmdline, kind):
    assert host_load.kind_of(cmdline) == kind


def nodes_stats(cpu_ms, node_ms, os_percent=40, nodes=("n1",)):
    """A _nodes/stats answer as the sampler asks for it (NODES_FILTER), each node's counters at these values."""
    return {
        "nodes": {
            f"id-{name}": {
                "name": name,
                "host": "10.0.0.1",
                "timestamp": node_ms,
                "os": {"cpu": {"percent": os_percent}},
                "process": {"cpu": {"total_in_millis": cpu_ms}},
            }
            for name in nodes
        }
    }


def test_the_nodes_cpu_is_said_between_good_readings_and_an_error_once(monkeypatch):
    """A fake _nodes/stats: the first reading is a baseline; each later one says each node's CPU since the last good
    reading (an error between them leaves the baseline, so the gap is covered); an error is said once until it changes;
    a node that joined has no interval yet."""
    answers = iter(
        [
            nodes_stats(1000, 10_000),
            nodes_stats(1600, 15_000, os_percent=70),
            RuntimeError("403 security_exception: action [cluster:monitor/nodes/stats] is unauthorized"),
            RuntimeError("403 security_exception: action [cluster:monitor/nodes/stats] is unauthorized"),
            ConnectionError("connection refused"),
            nodes_stats(4000, 35_000, nodes=("n1", "n2")),
        ]
    )

    def stats():
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    clock = iter([100.0, 105.0, 110.0, 115.0, 120.0, 125.0])
    monkeypatch.setattr(host_load.time, "time", lambda: next(clock))
    sampling = host_load.NodeSampling(host_load.NodeReader(stats), period=5.0)
    assert sampling.line(102.0) == {}  # within the period: not asked
    first = sampling.line(105.0)
    assert first == {
        "nodes_start": 100.0,
        "nodes": {"id-n1": {"name": "n1", "host": "10.0.0.1", "cpu_ms": 600, "ms": 5000, "os_cpu_percent": 70}},
    }
    assert sampling.line(110.0) == {
        "nodes_error": "RuntimeError: 403 security_exception: action [cluster:monitor/nodes/stats] is unauthorized"
    }
    assert sampling.line(115.0) == {}  # the same error: said once
    assert sampling.line(120.0) == {"nodes_error": "ConnectionError: connection refused"}
    last = sampling.line(125.0)
    assert last["nodes_start"] == 105.0 and list(last["nodes"]) == ["id-n1"]  # n2 joined: its baseline only
    assert last["nodes"]["id-n1"]["cpu_ms"] == 2400 and last["nodes"]["id-n1"]["ms"] == 20_000


def test_the_sampler_reads_a_line_with_nodes_and_leaves_them_off_its_last(tmp_path, monkeypatch):
    """sample() over a fake /proc and a fake _nodes/stats: a line a period, the nodes' part on the lines where a nodes
    period has passed and on the last line (written once the worker has gone: it closes the last cells' span)."""
    fake_proc(tmp_path / "proc", [100, 0, 50, 800, 0, 0, 0, 0], {})
    readings = iter([nodes_stats(1000 + 500 * i, 10_000 + 1000 * i) for i in range(100)])
    worker, gone_at = os.getppid(), time.time() + 0.3
    monkeypatch.setattr(host_load.os, "getppid", lambda: worker if time.time() < gone_at else -1)  # the worker goes
    path = tmp_path / records.HOST_LOAD
    host_load.sample(
        str(path),
        worker,
        host_load.Reader(str(tmp_path / "proc")),
        host_load.NodeReader(lambda: next(readings)),
        host_load.Pace(period=0.05, nodes_period=10, cpus=2, host="h"),
    )
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(lines) >= 2 and all("nodes" not in line for line in lines[:-1])  # within the nodes' period
    assert lines[-1]["nodes"]["id-n1"] == {"name": "n1", "host": "10.0.0.1", "cpu_ms": 500, "ms": 1000, "os_cpu_percent": 40}
    assert lines[-1]["nodes_start"] < lines[0]["end"]  # from the sampler's start


@pytest.mark.parametrize("status", [200, 403])
def test_the_sampler_asks_the_cluster_with_rallys_client_and_the_workers_header(status):
    """What a worker pipes to its sampler (cluster_param of the user's options, its live client's authorization)
    reaches a loopback node through Rally's client factory; a refused request is a reason in the record, not an end."""
    from esrally.client import factory

    answer = nodes_stats(1000, 10_000) if status == 200 else {"error": {"type": "security_exception"}, "status": status}
    with LoopbackElasticsearch(nodes_stats=(status, answer)) as node:
        hosts, options = [{"host": "127.0.0.1", "port": node.port}], {"basic_auth_user": "u", "basic_auth_password": "s3cret"}
        es = factory.EsClientFactory(hosts, options).create_async()
        given = {
            "cluster": host_load.cluster_param(hosts, {**options, "timeout": 60}),
            "authorization": host_load.authorization({"default": es}),
        }
        assert "s3cret" not in json.dumps(given["cluster"]) and given["authorization"] == "Basic dTpzM2NyZXQ="
        reading = host_load.NodeReader.connect(json.loads(json.dumps(given))).reading()
        if status == 200:
            assert reading == {"id-n1": {"name": "n1", "host": "10.0.0.1", "t": 10_000, "cpu": 1000, "os_cpu_percent": 40}}
        else:
            assert isinstance(reading, str) and "403" in reading and "security_exception" in reading
        asked = node.requests[-1]
        assert asked["path"].startswith("/_nodes/stats/os%2Cprocess?") or asked["path"].startswith("/_nodes/stats/os,process?")
        assert "filter_path=" in asked["path"] and asked["headers"]["authorization"] == "Basic dTpzM2NyZXQ="
    assert host_load.NodeReader.connect({"cluster": None}) is None


def test_options_the_sampler_cannot_use_are_a_reason_in_the_record_not_its_end(monkeypatch):
    """The sampler's entry: what the worker piped in, read from stdin; a client Rally's factory cannot build (a CA file
    that is not there) leaves a reader that says why on each request, and the sampler runs on."""
    given = {"cluster": {"hosts": [{"host": "127.0.0.1", "port": 9}], "options": {"use_ssl": True, "ca_certs": "/no/such/ca.pem"}}}
    monkeypatch.setattr(host_load.sys, "stdin", io.StringIO(json.dumps(given)))
    ran = []
    monkeypatch.setattr(host_load, "sample", lambda path, watched, reader, nodes: ran.append((path, watched, nodes)))
    host_load.main("rec/host-load.jsonl", 42)
    ((path, watched, nodes),) = ran
    assert (path, watched) == ("rec/host-load.jsonl", 42)
    said = nodes.reading()
    assert said.startswith("RuntimeError: no client for the nodes:") and ("ca.pem" in said or "No such file" in said), said
