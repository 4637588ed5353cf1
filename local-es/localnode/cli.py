"""Local Elasticsearch launcher: builds a node home from Maven Central jars and runs 1..N nodes on loopback.

Commands: start [--version V] [--nodes N] [--coordinating C] [--pin-cores] [--also-bind ADDR] [--heap 1g]
[--http-port 9200], stop, status, wipe, versions, build [--version V] (the node home alone, as start builds it on
first use: what needs Maven Central done before a run that has no network, make it's private namespace).
Stdlib only, so it runs before the project's virtualenv exists.

Versions (VERSIONS in localnode/shared.py; `esnode.py versions` prints the table): 8.17.2, the study's and the default; 8.19.21 and
9.5.3, the newest of the lines users run that Maven Central serves with their HTTP module. Each runs on the JDK the
table names for it, found in ES_JAVA_HOME, JAVA_HOME, PATH or /usr/lib/jvm. From 8.19 on the server bootstraps its
entitlement system, whose agent and java.base bridge are not published: the launcher builds both from its own sources
(java/entitlement-agent, java/entitlement-bridge), checks their shape against the version's published entitlement jar
when it builds the home, and the server's start-up self-test checks them again. ES's native library (libvec) is not
published either: 8.19 and 9.x then run with native access off (no system call filter; Debian's libzstd serves their
zstd), which docs/versions.md names beside the version figures.

Ports: without coordinating nodes, node i (1..N) listens on HTTP port + i - 1 (transport: transport port + i - 1).
With --coordinating C (seed 003's "client node": node.roles [], it holds no shard and routes every request it gets
to the data nodes), the coordinating nodes coord-1..coord-C take the first ports (the HTTP port itself: where Rally's
--target-hosts points, so every request of a race goes through one) and the data nodes node-1..node-N the ports after
them (HTTP port + C + i - 1). stop, status and wipe take the same --http-port either way.
--pin-cores: each data node's JVM runs under `taskset -c <core>` (node-i on the i-th allowed core, modulo the cores
this process may use) with node.processors 1, so that Elasticsearch sizes its thread pools for that one core; a
coordinating node stays unpinned (it shares every core with Rally, as the seed's client node shared its host with
JMeter). The state file records each node's roles, core and processors.
--also-bind ADDR: HTTP also on that address of this network namespace (beside 127.0.0.1, where everything else of the
launcher stays): for load-driver hosts in network namespaces of their own (tests/test_load_drivers.py, docs/team-setup.md,
"Trying it on one machine"); never a machine's own network.

Layout (under local-es/.state/, git-ignored; override with ES_LOCAL_STATE; as root in a checkout the unprivileged
node user cannot reach, such as a 0700 folder, under /var/tmp/cluster-metrics-local-es/<checkout hash>/ instead):
  elasticsearch-<version>/  one version's home and data (an index written by a newer version cannot be read by an older)
    dist/                  the node home shared by every node: lib/, modules/, plugins/, bin/
    cluster-<N>-<port>/node-<i>/  one node: config/, data/, logs/, tmp/, serverargs.bin, node.pid
    cluster-<N>-coord<C>-<port>/{coord-<j>,node-<i>}/  the same with C coordinating-only nodes (its own data)
  running-<port>.json    what runs on that HTTP port: its version, data node count ("size"), coordinating nodes,
                         pinning, and each node's ports, roles, core and pid (only these pids are ever signalled)
Clusters on different HTTP ports (PORT=...) are independent: the test suite runs its own beside yours.
"""

import argparse
import os
import sys

from localnode.distribution import build_dist
from localnode.jdk import find_java
from localnode.lifecycle import start, status, stop, wipe
from localnode.shared import DEFAULT_VERSION, VERSIONS, LauncherError, check_version, log


def versions(args):
    """The table: each version, the JDKs it runs on here, and the one found for it now."""
    for version, wanted in VERSIONS.items():
        try:
            java, _, major = find_java(version)
            found = f"Java {major} at {java}"
        except LauncherError:
            found = "no JDK found"
        default = " (default)" if version == DEFAULT_VERSION else ""
        print(f"{version}{default}: JDK {wanted.java.start}-{wanted.java.stop - 1}, tested {wanted.tested}; {wanted.note}; {found}")
    return 0


def build(args):
    """The version's node home, built as start builds it on first use (Maven Central, javac), nothing started."""
    version = check_version(args.version)
    _java, javac, _major = find_java(version)
    log(f"node home for Elasticsearch {version}: " + ("built" if build_dist(version, javac) else "already built"))
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p_start = sub.add_parser("start", help="start (building the node home on first use)")
    p_start.add_argument("--version", default=DEFAULT_VERSION, help=f"one of {', '.join(VERSIONS)} (default {DEFAULT_VERSION})")
    p_start.add_argument("--nodes", type=int, default=int(os.environ.get("NODES", "1")))
    p_start.add_argument("--heap", default=os.environ.get("HEAP", "1g"))
    p_start.add_argument("--transport-port", type=int, default=None)
    p_start.add_argument(
        "--coordinating",
        type=int,
        default=0,
        help="coordinating-only nodes in front of the data nodes (node.roles []): they take the HTTP port",
    )
    p_start.add_argument(
        "--also-bind",
        default=None,
        help="HTTP also on this address of the current network namespace (a private one: load-driver hosts in namespaces)",
    )
    p_start.add_argument(
        "--pin-cores", action="store_true", help="each data node's JVM under taskset -c <core>, with node.processors 1 (needs taskset)"
    )
    others = [
        sub.add_parser("stop", help="stop gracefully, forcibly after 30 s"),
        sub.add_parser("status", help="show the nodes and cluster health"),
        sub.add_parser("wipe", help="delete the data (node must be stopped)"),
    ]
    sub.add_parser("versions", help="the versions the launcher builds and the JDK each runs on")
    p_build = sub.add_parser("build", help="build the version's node home (Maven Central), start nothing")
    p_build.add_argument("--version", default=DEFAULT_VERSION, help=f"one of {', '.join(VERSIONS)} (default {DEFAULT_VERSION})")
    for p in [p_start, *others]:
        p.add_argument("--http-port", type=int, default=int(os.environ.get("PORT", "9200")))
    args = parser.parse_args(argv)
    if args.command == "start" and args.transport_port is None:
        args.transport_port = args.http_port + 100
    try:
        return {"start": start, "stop": stop, "status": status, "wipe": wipe, "versions": versions, "build": build}[args.command](args)
    except LauncherError as e:
        print(f"[local-es] ERROR: {e}", file=sys.stderr, flush=True)
        return 2
