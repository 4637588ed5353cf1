"""A cluster's processes: start (checked, configured, launched, settled), stop, status and wipe. Only the pids the
state file (running-<port>.json) records, and only while their command line names one of our node homes, are ever
signalled."""

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from localnode import shared
from localnode.checks import check_also_bind, check_memory, check_ports_free, check_taskset, parse_heap
from localnode.command import check_unprivileged_access, chown_tree, drop_privileges_prefix, node_command
from localnode.distribution import build_dist
from localnode.jdk import find_java
from localnode.layout import allowed_cores, check_size, describe_node, node_layout, shape, write_node_config
from localnode.shared import (
    CLUSTER_NAME,
    DEFAULT_VERSION,
    STATE_NOTE,
    VERSIONS,
    LauncherError,
    check_version,
    dist_dir,
    log,
    run_checked,
    running_file,
)


def pid_is_our_node(pid):
    """True only for a live process whose command line names one of our node homes: pids are never trusted blindly."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False
    homes = [dist_dir(version) for version in VERSIONS] + [shared.STATE / "dist"]  # the last: 8.17.2's before versions had homes
    return any(f"-Des.path.home={home}\0" in cmdline for home in homes)


def read_running(http_port):
    if not running_file(http_port).is_file():
        return None
    running = json.loads(running_file(http_port).read_text())
    live = [n for n in running["nodes"] if pid_is_our_node(n["pid"])]
    return running if live else None


def http_json(port, path, timeout=5.0):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as response:
        return json.loads(response.read())


# ---------------------------------------------------------------- start


def start(args):
    """start's steps: the request checked, a cluster already running on the port taken as it is (or refused), the
    machine checked, the node home built, each node configured, launched and the cluster settled."""
    nodes, coordinating, pinned = args.nodes, args.coordinating, args.pin_cores
    check_size(nodes, coordinating)
    version = check_version(args.version)
    heap_mb = parse_heap(args.heap)
    also_bind = check_also_bind(args.also_bind)
    running = read_running(args.http_port)
    if running:
        return already_running(running, args.http_port, (version, nodes, coordinating, pinned))
    java, javac, major = find_java(version)
    layout = node_layout(nodes, args.http_port, args.transport_port, coordinating, allowed_cores() if pinned else None, version)
    check_taskset(layout)
    check_ports_free(layout)
    check_memory(heap_mb, len(layout))
    began = time.monotonic()
    built = build_dist(version, javac)
    prefix, user = drop_privileges_prefix()
    check_unprivileged_access(prefix, version)
    for node in layout:
        configure_node(node, layout, also_bind, java, version, user)
    procs = [launch_node(node, java, heap_mb, major, prefix, version) for node in layout]
    state = {
        "version": version,
        "size": nodes,
        "coordinating": coordinating,
        "pinned": pinned,
        "heap_mb": heap_mb,
        "java": major,
        "nodes": layout,
    }
    running_file(args.http_port).write_text(json.dumps(state, indent=2))
    health = settle(layout, procs, args.http_port)
    announce(state, health, built, began)
    return 0


def announce(state, health, built, began):
    """The cluster up: its make-up as it reports its version, its JDK and health, and how long the start took."""
    layout = state["nodes"]
    info = http_json(layout[0]["http_port"], "/")
    took = time.monotonic() - began
    log(
        f"{shape(info['version']['number'], state['size'], state['coordinating'], state['pinned'])} is up on Java {state['java']}, "
        f"status {health['status']}, "
        f"http://127.0.0.1:{layout[0]['http_port']} ({'cold, node home built' if built else 'warm'} start, {took:.1f} s)"
        f"{STATE_NOTE}"
    )
    if state["coordinating"] or state["pinned"]:
        for node in layout:
            log(f"  {node['name']}: http://127.0.0.1:{node['http_port']}, {describe_node(node)}")


def already_running(running, http_port, wanted):
    """A cluster of the wanted (version, nodes, coordinating, pinned) already up on the port: nothing to do; another
    make-up: refused."""
    # a state file from before coordinating nodes and pinning: neither
    found = (running.get("version", DEFAULT_VERSION), running["size"], running.get("coordinating", 0), bool(running.get("pinned")))
    if found != wanted:
        raise LauncherError(
            f"a local cluster of {shape(*found)} is already running on port {http_port}; run make es-stop before "
            f"starting one of {shape(*wanted)}."
        )
    health = http_json(running["nodes"][0]["http_port"], "/_cluster/health")
    log(f"already running: {shape(*found)}, status {health['status']}, " f"http://127.0.0.1:{running['nodes'][0]['http_port']}")
    return 0


def configure_node(node, layout, also_bind, java, version, user):
    """One node's folder: its config, its server arguments (serverargs.bin, written by the home's WriteServerArgs), and,
    as root, the unprivileged user's."""
    write_node_config(node, layout, also_bind)
    node_dir = Path(node["dir"])
    dist = dist_dir(version)
    run_checked(
        [
            str(java),
            "-cp",
            f"{dist / 'bootstrap'}:{dist / 'lib'}/*",
            "WriteServerArgs",
            str(dist),
            str(node_dir / "config"),
            str(node_dir / "node.pid"),
            str(node_dir / "serverargs.bin"),
        ],
        "writing the server arguments",
        "Check the node's config/elasticsearch.yml.",
    )
    if user:
        chown_tree(node_dir, user)


def launch_node(node, java, heap_mb, major, prefix, version):
    """One node's process, its server arguments on stdin, its output in stdout.log; node["pid"] set to it."""
    node_dir = Path(node["dir"])
    env = dict(os.environ, LIBFFI_TMPDIR=str(node_dir / "tmp"), ES_TMPDIR=str(node_dir / "tmp"))
    with open(node_dir / "serverargs.bin", "rb") as stdin, open(node_dir / "stdout.log", "wb") as out:
        proc = subprocess.Popen(
            node_command(java, node, heap_mb, major, prefix, version),
            stdin=stdin,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=node_dir,
            env=env,
            start_new_session=True,
        )
    node["pid"] = proc.pid  # taskset and setpriv exec java, so this is the JVM's pid
    return proc


def settle(layout, procs, http_port):
    """The cluster's health once every node has joined; a cluster that does not settle is stopped (through the
    handles, not /proc: a JVM mid-exec has an empty cmdline) and its state file removed."""
    try:
        return wait_for_health(layout, procs, float(os.environ.get("ES_START_TIMEOUT", "120")))
    except LauncherError:
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        running_file(http_port).unlink(missing_ok=True)
        raise


def wait_for_health(layout, procs, timeout):
    port = layout[0]["http_port"]
    deadline = time.monotonic() + timeout
    query = f"/_cluster/health?wait_for_status=yellow&wait_for_nodes={len(layout)}&timeout=2s"
    while time.monotonic() < deadline:
        for node, proc in zip(layout, procs):
            if proc.poll() is not None:
                raise LauncherError(f"{node['name']} exited during start-up (exit code {proc.returncode}).\n{last_log_lines(node)}")
        try:
            health = http_json(port, query)
            if health["status"] in ("green", "yellow") and health["number_of_nodes"] == len(layout):
                return health
        except (urllib.error.URLError, OSError, ValueError, KeyError):
            pass
        time.sleep(0.5)
    raise LauncherError(
        f"the cluster was not healthy within {timeout:.0f} s (ES_START_TIMEOUT to wait longer).\n"
        + "\n".join(last_log_lines(n) for n in layout)
    )


def last_log_lines(node, count=25):
    logs = Path(node["dir"]) / "logs"
    chunks = []
    for candidate in (logs / f"{CLUSTER_NAME}.log", Path(node["dir"]) / "stdout.log"):
        if candidate.is_file():
            lines = candidate.read_text(errors="replace").splitlines()[-count:]
            chunks.append(f"--- last lines of {candidate}:\n" + "\n".join(lines))
    return "\n".join(chunks) or f"(no log files under {node['dir']})"


# ---------------------------------------------------------------- stop, status, wipe


def stop_nodes(nodes, http_port, timeout=30.0):
    ours = [n for n in nodes if pid_is_our_node(n["pid"])]
    for node in ours:
        os.kill(node["pid"], signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(pid_is_our_node(n["pid"]) for n in ours):
        time.sleep(0.2)
    for node in ours:
        if pid_is_our_node(node["pid"]):
            log(f"{node['name']} (pid {node['pid']}) did not stop within {timeout:.0f} s: killing it")
            os.kill(node["pid"], signal.SIGKILL)
    for node in ours:
        while pid_is_our_node(node["pid"]):
            time.sleep(0.1)
        log(f"stopped {node['name']} (pid {node['pid']})")
    running_file(http_port).unlink(missing_ok=True)
    return len(ours)


def stop(args):
    if not running_file(args.http_port).is_file():
        log(f"no local node is running on port {args.http_port}")
        return 0
    stopped = stop_nodes(json.loads(running_file(args.http_port).read_text())["nodes"], args.http_port)
    if not stopped:
        log("no local node is running (stale state removed)")
    return 0


def status(args):
    running = read_running(args.http_port)
    if not running:
        log(f"no local node is running on port {args.http_port}")
        return 3
    log(f"Elasticsearch {running.get('version', DEFAULT_VERSION)}")
    for node in running["nodes"]:
        alive = pid_is_our_node(node["pid"])
        log(
            f"{node['name']}: pid {node['pid']} {'running' if alive else 'GONE'}, http://127.0.0.1:{node['http_port']}, "
            f"{describe_node(node)}"
        )
    try:
        health = http_json(running["nodes"][0]["http_port"], "/_cluster/health")
        log(f"cluster {health['cluster_name']}: status {health['status']}, {health['number_of_nodes']} node(s)")
    except (urllib.error.URLError, OSError) as e:
        log(f"cluster not answering on HTTP: {e}")
        return 1
    return 0


def wipe(args):
    if read_running(args.http_port):
        raise LauncherError(f"a local node is running on port {args.http_port}; run make es-stop before make es-wipe.")
    removed = [d for d in shared.STATE.glob(f"elasticsearch-*/cluster-*-{args.http_port}") if d.is_dir()]
    for folder in removed:
        shutil.rmtree(folder)
    log(f"removed the data of {len(removed)} local cluster layout(s); the node home (jars) is kept")
    return 0
