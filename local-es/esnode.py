#!/usr/bin/env python3
"""Local Elasticsearch launcher: builds a node home from Maven Central jars and runs 1..N nodes on loopback.

Commands: start [--version V] [--nodes N] [--coordinating C] [--pin-cores] [--also-bind ADDR] [--heap 1g]
[--http-port 9200], stop, status, wipe, versions, build [--version V] (the node home alone, as start builds it on
first use: what needs Maven Central done before a run that has no network, make it's private namespace).
Stdlib only, so it runs before the project's virtualenv exists.

Versions (VERSIONS below; `esnode.py versions` prints the table): 8.17.2, the study's and the default; 8.19.21 and
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
import functools
import hashlib
import ipaddress
import json
import os
import pwd
import re
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from typing import NamedTuple


class Version(NamedTuple):
    """A version the launcher builds: the JDK majors it runs on, the one this project races it on (preferred where
    several are installed), and a word on why."""

    java: range
    tested: int
    note: str


# The JDK each version runs on here (the table local-es/ keeps; `esnode.py versions` prints it)
VERSIONS = {
    "8.17.2": Version(range(17, 24), 17, "the study's version; needs the Security Manager, gone in JDK 24"),
    "8.19.21": Version(range(17, 26), 17, "the last 8.x line; entitlements instead of the Security Manager"),
    "9.5.3": Version(range(21, 26), 25, "the current major; Java 21 or newer (Lucene 10)"),
}
DEFAULT_VERSION = "8.17.2"
JVM_ROOT = Path("/usr/lib/jvm")  # where Debian's and Adoptium's packages install JDKs
HERE = Path(__file__).resolve().parent
CLUSTER_NAME = "cluster-metrics-local"
UNPRIVILEGED_USER = "nobody"  # Elasticsearch refuses to run as root
SHARED_STATE_ROOT = Path("/var/tmp/cluster-metrics-local-es")  # world-traversable, kept across reboots


def reachable_by_others(path):
    """Whether every folder from / down to path lets other users in (o+x): the unprivileged node user's view."""
    return all(p.stat().st_mode & stat.S_IXOTH for p in [path, *path.parents] if p.exists())


def default_state():
    """local-es/.state, or, as root in a checkout the node user cannot reach, a folder of its own under
    SHARED_STATE_ROOT keyed by the checkout's path (the same for every command, so stop finds what start started)."""
    here_state = HERE / ".state"
    if os.geteuid() != 0 or reachable_by_others(HERE):
        return here_state
    return SHARED_STATE_ROOT / hashlib.sha256(str(HERE).encode()).hexdigest()[:16]


STATE = Path(os.environ.get("ES_LOCAL_STATE") or default_state()).resolve()
STATE_NOTE = "" if STATE == (HERE / ".state").resolve() else f" (node state in {STATE}: '{UNPRIVILEGED_USER}' cannot reach this checkout)"


def version_root(version):
    return STATE / f"elasticsearch-{version}"


def dist_dir(version):
    return version_root(version) / "dist"


class LauncherError(Exception):
    """A failure with a message that names the input and the fix."""


def log(msg):
    print(f"[local-es] {msg}", flush=True)


# ---------------------------------------------------------------- checks


@functools.lru_cache(maxsize=None)
def java_major(java):
    """The major version `java -version` reports, or None when it cannot be read (asked once per binary)."""
    try:
        out = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=60).stderr
    except OSError:
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2)) if major == 1 else major  # "1.8.0_x" style


def find_java(version):
    """The java binary for this Elasticsearch version, with its major version checked: ES_JAVA_HOME when set (an
    explicit choice: used or refused), else the first of JAVA_HOME, PATH and the JDKs under /usr/lib/jvm (the tested
    major first) whose major the version supports."""
    wanted = VERSIONS[version]
    span = f"JDK {wanted.java.start} to {wanted.java.stop - 1} (tested: {wanted.tested})"
    explicit = os.environ.get("ES_JAVA_HOME")
    if explicit:
        java = Path(explicit) / "bin" / "java"
        if not java.is_file():
            raise LauncherError(f"ES_JAVA_HOME={explicit} has no bin/java. Point it at a {span}, or unset it to let the launcher find one.")
        major = java_major(java)
        if major not in wanted.java:
            raise LauncherError(
                f"Java {major} at {java} (from ES_JAVA_HOME) is not supported: Elasticsearch {version} here needs {span}. "
                f"Set ES_JAVA_HOME to such a JDK, or unset it."
            )
        return java, java.parent / "javac", major
    candidates = {}  # java binary -> where it was found (the first place: PATH's java is often one under /usr/lib/jvm)
    if os.environ.get("JAVA_HOME"):
        candidates.setdefault(Path(os.environ["JAVA_HOME"]) / "bin" / "java", "JAVA_HOME")
    if shutil.which("java"):
        candidates.setdefault(Path(shutil.which("java")).resolve(), "PATH")
    for java in sorted(JVM_ROOT.glob("*/bin/java")) if JVM_ROOT.is_dir() else []:
        candidates.setdefault(java, str(JVM_ROOT))
    majors = {java: java_major(java) if java.is_file() else None for java in candidates}
    for fits in (lambda major: major == wanted.tested, lambda major: major in wanted.java):
        for java, major in majors.items():
            if fits(major):
                return java, java.parent / "javac", major
    seen = "; ".join(
        f"Java {major} ({java}, from {candidates[java]})" if major else f"{java} (from {candidates[java]}, unreadable)"
        for java, major in majors.items()
    )
    raise LauncherError(
        f"no JDK for Elasticsearch {version}: it needs {span}; found {seen or 'none'}. Install one (JDK 17: apt-get install "
        f"openjdk-17-jdk-headless; JDK 21+: Adoptium's temurin-25-jdk) and set ES_JAVA_HOME to it if it is not under {JVM_ROOT}."
    )


def parse_heap(heap):
    match = re.fullmatch(r"(\d+)([mMgG])", heap)
    if not match or int(match.group(1)) <= 0:
        raise LauncherError(f"heap size {heap!r} is not valid: use e.g. HEAP=1g or HEAP=512m.")
    return int(match.group(1)) * (1024 if match.group(2).lower() == "g" else 1)


def check_memory(heap_mb, nodes):
    available_kb = None
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemAvailable:"):
                available_kb = int(line.split()[1])
    if available_kb is None:
        return
    needed_mb = nodes * (heap_mb + 512)  # heap plus off-heap (direct buffers, metaspace, threads)
    available_mb = available_kb // 1024
    if needed_mb > available_mb:
        raise LauncherError(
            f"not enough memory: {nodes} node(s) with HEAP={heap_mb}m need about {needed_mb} MB, "
            f"{available_mb} MB is available. Use a smaller HEAP (e.g. HEAP=512m) or fewer NODES."
        )


def port_is_free(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # like Elasticsearch itself: TIME_WAIT leftovers of a stopped node must not count, a listener must
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


# ---------------------------------------------------------------- building the node home


def run_checked(cmd, what, fix, **kwargs):
    result = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-15:])
        raise LauncherError(f"{what} failed (exit {result.returncode}):\n{tail}\n{fix}")
    return result


def build_dist(version, javac):
    """Builds the version's dist/ once; a marker file written last makes a half-built home count as absent. What a
    version needs beyond 8.17.2's recipe is read from its jars: the entitlement shims where the server has no Security
    Manager bootstrap left, the netty module's own descriptors where its jar carries them, and the shape of the plugin
    REST hook its ActionPlugin declares."""
    dist = dist_dir(version)
    marker = dist / ".built"
    if marker.is_file() and marker.read_text().strip() == version:
        return False
    mvn = shutil.which("mvn")
    if not mvn:
        raise LauncherError(
            "Maven (mvn) is not installed; it fetches Elasticsearch's jars from Maven Central. " "Install it: apt-get install maven."
        )
    if not javac.is_file():
        raise LauncherError(
            f"no javac beside {javac.parent}/java: install a full JDK, not only a JRE (JDK 17: apt-get install openjdk-17-jdk-headless)."
        )
    log(f"building a node home for Elasticsearch {version} from Maven Central (first use only)")
    version_root(version).mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="dist-", dir=version_root(version)))
    staging.chmod(0o755)  # mkdtemp makes it private; the unprivileged node user must read it
    try:
        fix = "Check that Maven Central is reachable (or the mirror in ~/.m2/settings.xml) " "and retry with: make es-start"
        for profile, target in (("server", staging / "lib"), ("netty4", staging / "netty")):
            run_checked(
                [
                    mvn,
                    "-q",
                    "-B",
                    "-f",
                    str(HERE / "pom.xml"),
                    f"-P{profile}",
                    "dependency:copy-dependencies",
                    "-DincludeScope=runtime",
                    f"-DoutputDirectory={target}",
                    f"-Des.version={version}",
                ],
                f"Maven resolution of the {profile} jars of Elasticsearch {version}",
                fix,
            )
        lib = staging / "lib"
        netty_module = staging / "modules" / "transport-netty4"
        netty_module.mkdir(parents=True)
        for jar in (staging / "netty").glob("*.jar"):
            # the server's own libraries are already in lib/; a second copy breaks the module checks
            if not jar.name.startswith(("elasticsearch-core-", "elasticsearch-entitlement-")):
                shutil.move(str(jar), netty_module / jar.name)
        shutil.rmtree(staging / "netty")
        if not copy_plugin_files(netty_module / f"transport-netty4-{version}.jar", "transport-netty4", netty_module):
            write_descriptor(
                netty_module,
                version,
                name="transport-netty4",
                classname="org.elasticsearch.transport.netty4.Netty4Plugin",
                description="Netty 4 based HTTP and transport layer",
                modulename="org.elasticsearch.transport.netty4",
            )
            (netty_module / "plugin-security.policy").write_text(
                "grant {\n"
                '  permission java.net.SocketPermission "*", "accept,connect";\n'
                '  permission java.util.PropertyPermission "sun.nio.ch.bugLevel", "write";\n'
                '  permission java.lang.RuntimePermission "setContextClassLoader";\n'
                "};\n"
            )
        classpath = f"{lib}/*"
        compile_jar(javac, ["ansi-console"], classpath, lib / "tools" / "ansi-console" / "ansi-console-stub.jar")
        root_module = staging / "modules" / "root-info"
        server_jar = lib / f"elasticsearch-{version}.jar"
        rest_hook = (
            "root-info-rest-services"
            if jar_has(server_jar, "org/elasticsearch/plugins/ActionPlugin$RestHandlersServices.class")
            else "root-info-rest-settings"
        )
        compile_jar(javac, ["root-info", rest_hook], classpath, root_module / "root-info.jar")
        write_descriptor(
            root_module,
            version,
            name="root-info",
            classname="org.clustermetrics.rootinfo.RootInfoRestPlugin",
            description="Serves GET / in place of the unpublished rest-root module",
        )
        compile_classes(javac, ["bootstrap"], classpath, staging / "bootstrap")
        if not jar_has(server_jar, "org/elasticsearch/bootstrap/Security.class"):
            # no Security Manager bootstrap left (8.19 on): the server always bootstraps its entitlements
            build_entitlement_shims(javac, version, staging)
        for folder in ("plugins", "bin", "config"):  # security setup needs an existing bin/
            (staging / folder).mkdir()
        (staging / ".built").write_text(version + "\n")
        if dist.exists():
            shutil.rmtree(dist)
        staging.rename(dist)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return True


def jar_has(jar, entry):
    with zipfile.ZipFile(jar) as archive:
        return entry in archive.namelist()


def copy_plugin_files(jar, name, folder):
    """A module jar that carries its own descriptor and entitlement policy (META-INF/es-plugins/<name>/, from 8.19
    on): those files into the module's folder. False when the jar has none (8.17.2: the launcher writes them)."""
    prefix = f"META-INF/es-plugins/{name}/"
    with zipfile.ZipFile(jar) as archive:
        files = [entry for entry in archive.namelist() if entry.startswith(prefix) and not entry.endswith("/")]
        for entry in files:
            (folder / entry[len(prefix) :]).write_bytes(archive.read(entry))
    return bool(files)


ENTITLEMENT_BRIDGE_JAR = "lib/entitlement-bridge/entitlement-bridge.jar"
ENTITLEMENT_AGENT_JAR = "lib/entitlement-agent/entitlement-agent.jar"
# what the version's instrumenter writes into the JDK's methods and the bridge must answer: its registry's methods
# and their descriptor, the handle's accessor, the caller lookup and the denial
INSTRUMENTER_NAMES = (
    "check$",
    "(Ljava/lang/String;Ljava/lang/Class;[Ljava/lang/Object;)V",
    "defaultValue$",
    "instance",
    "getCallerClass",
    "org/elasticsearch/entitlement/bridge/Util",
    "org/elasticsearch/entitlement/bridge/NotEntitledException",
)


def build_entitlement_shims(javac, version, home):
    """The entitlement agent and bridge the version's server needs, from the launcher's sources, and their shape
    checked against the version's published entitlement jar: EntitlementShapeCheck compiles only if the initialization
    entry points are there and return the bridge's registry, and the instrumenter must name what the bridge defines."""
    lib = home / "lib"
    entitlement_jar = lib / f"elasticsearch-entitlement-{version}.jar"
    missing = [name for name in INSTRUMENTER_NAMES if name.encode() not in instrumenter_constants(entitlement_jar)]
    if missing:
        raise LauncherError(
            f"Elasticsearch {version}'s entitlement instrumenter no longer calls what the launcher's bridge defines "
            f"(missing: {', '.join(missing)}): local-es/java/entitlement-bridge must follow its libs/entitlement/bridge."
        )
    bridge = home / ENTITLEMENT_BRIDGE_JAR
    compile_jar(javac, ["entitlement-bridge"], "", bridge)
    compile_classes(javac, ["entitlement-check"], f"{bridge}:{entitlement_jar}:{lib}/*", home / ".entitlement-check")
    shutil.rmtree(home / ".entitlement-check")
    manifest = home / ".agent-manifest"
    manifest.write_text(
        "Agent-Class: org.clustermetrics.entitlement.EntitlementAgent\nCan-Redefine-Classes: true\nCan-Retransform-Classes: true\n"
    )
    compile_jar(javac, ["entitlement-agent"], "", home / ENTITLEMENT_AGENT_JAR, manifest)
    manifest.unlink()
    zstd = Path("/usr/lib/x86_64-linux-gnu/libzstd.so.1")
    if zstd.is_file():  # without it the server turns native access off altogether (Debian: libzstd1)
        platform = lib / "platform" / "linux-x64"
        platform.mkdir(parents=True)
        shutil.copy(zstd, platform / "libzstd.so")


def instrumenter_constants(entitlement_jar):
    """The class files of the version's instrumenter (nested under IMPL-JARS/ in the entitlement jar), as bytes."""
    with zipfile.ZipFile(entitlement_jar) as archive:
        names = [n for n in archive.namelist() if "/instrumentation/impl/InstrumenterImpl" in n and n.endswith(".class")]
        if not names:
            raise LauncherError(f"{entitlement_jar.name} holds no InstrumenterImpl: the launcher does not know this entitlement layout.")
        return b"".join(archive.read(n) for n in names)


def compile_classes(javac, source_dirs, classpath, out_dir):
    sources = [str(p) for d in source_dirs for p in (HERE / "java" / d).rglob("*.java")]
    out_dir.mkdir(parents=True, exist_ok=True)
    run_checked(
        [str(javac), "-nowarn", "-d", str(out_dir), *(["-cp", classpath] if classpath else []), *sources],
        f"compiling local-es/java/{'+'.join(source_dirs)}",
        "The launcher's Java sources do not fit this Elasticsearch version's jars (javac's message above).",
    )


def compile_jar(javac, source_dirs, classpath, jar_path, manifest=None):
    classes = jar_path.parent / f".{source_dirs[0]}-classes"
    compile_classes(javac, source_dirs, classpath, classes)
    jar_tool = javac.parent / "jar"
    run_checked(
        [str(jar_tool), "cfm" if manifest else "cf", str(jar_path), *([str(manifest)] if manifest else []), "-C", str(classes), "."],
        f"packaging {jar_path.name}",
        "The JDK's jar tool is needed beside javac.",
    )
    shutil.rmtree(classes)


def write_descriptor(folder, version, name, classname, description, modulename=None):
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        f"name={name}",
        f"description={description}",
        f"version={version}",
        f"classname={classname}",
        "java.version=17",
        f"elasticsearch.version={version}",
        "extended.plugins=",
        "has.native.controller=false",
        "licensed=false",
    ]
    if modulename:
        lines.append(f"modulename={modulename}")
    (folder / "plugin-descriptor.properties").write_text("\n".join(lines) + "\n")


# ---------------------------------------------------------------- nodes

LOG4J2 = """status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = ${sys:es.logs.base_path}${sys:file.separator}${sys:es.logs.cluster_name}.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d{ISO8601}][%-5p][%-25c{1.}] [%node_name]%marker %m%n
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
"""


def running_file(http_port):
    return STATE / f"running-{http_port}.json"


MAX_COORDINATING = 3
COORDINATING_ROLES = []  # node.roles of a coordinating-only node: no master, no data, no ingest
PINNED_PROCESSORS = 1  # node.processors of a pinned data node: its thread pools sized for its one core


def cluster_dir(nodes, http_port, coordinating=0, version=DEFAULT_VERSION):
    """A cluster's folder: its own per version, data node count and coordinating nodes (a coordinating-only node
    refuses a data folder that holds shards, so the two layouts never share one)."""
    name = f"cluster-{nodes}-coord{coordinating}-{http_port}" if coordinating else f"cluster-{nodes}-{http_port}"
    return version_root(version) / name


def allowed_cores():
    """The cores this process may run on (its affinity: a container's or taskset's limit, not the host's count)."""
    return sorted(os.sched_getaffinity(0))


def node_layout(nodes, http_port, transport_port, coordinating=0, pin_cores=False, cores=None, version=DEFAULT_VERSION):
    """Every node of the cluster: coordinating-only nodes first (they take the HTTP port itself, where the race's
    requests go), then the data nodes; with pin_cores each data node's core (node-i: the i-th of `cores`, modulo
    their count) and processors. roles None: Elasticsearch's default roles (master-eligible data node)."""
    folder = cluster_dir(nodes, http_port, coordinating, version)
    cores = cores if cores is not None else (allowed_cores() if pin_cores else [])
    layout = []
    for j in range(coordinating):
        name = f"coord-{j + 1}"
        layout.append({"name": name, "dir": str(folder / name), "roles": list(COORDINATING_ROLES), "cpu": None, "processors": None})
    for i in range(nodes):
        name = f"node-{i + 1}"
        cpu = cores[i % len(cores)] if pin_cores else None
        layout.append(
            {"name": name, "dir": str(folder / name), "roles": None, "cpu": cpu, "processors": PINNED_PROCESSORS if pin_cores else None}
        )
    for k, node in enumerate(layout):
        node.update(http_port=http_port + k, transport_port=transport_port + k)
    return layout


def is_coordinating(node):
    return node.get("roles") == COORDINATING_ROLES


def describe_node(node):
    """How status and start name a node: its role and, when pinned, its core and processors."""
    role = "coordinating only" if is_coordinating(node) else "data"
    pinned = f", core {node['cpu']}, node.processors {node['processors']}" if node.get("cpu") is not None else ""
    return f"{role}{pinned}"


def write_node_config(node, layout, also_bind=None):
    node_dir = Path(node["dir"])
    for sub in ("config", "data", "logs", "tmp"):
        (node_dir / sub).mkdir(parents=True, exist_ok=True)
    settings = [
        f"cluster.name: {CLUSTER_NAME}",
        f"node.name: {node['name']}",
        "network.host: 127.0.0.1",
        f"http.port: {node['http_port']}",
        f"transport.port: {node['transport_port']}",
        f"path.data: {node_dir / 'data'}",
        f"path.logs: {node_dir / 'logs'}",
        # a shared benchmark host's disk fill level must not turn the cluster red mid-race
        "cluster.routing.allocation.disk.threshold_enabled: false",
    ]
    if also_bind:
        # HTTP only; the node still publishes and talks transport on loopback
        settings += [f'http.bind_host: ["127.0.0.1", "{also_bind}"]', "http.publish_host: 127.0.0.1"]
    if node.get("roles") is not None:
        settings.append(f"node.roles: [{', '.join(node['roles'])}]")
    if node.get("processors"):
        settings.append(f"node.processors: {node['processors']}")
    if len(layout) == 1:
        settings.append("discovery.type: single-node")
    else:
        # the master-eligible nodes (the data nodes) bootstrap the cluster; a coordinating node only joins it
        masters = [n for n in layout if not is_coordinating(n)]
        seeds = ", ".join(f'"127.0.0.1:{n["transport_port"]}"' for n in masters)
        names = ", ".join(f'"{n["name"]}"' for n in masters)
        settings += [f"discovery.seed_hosts: [{seeds}]", f"cluster.initial_master_nodes: [{names}]"]
    (node_dir / "config" / "elasticsearch.yml").write_text("\n".join(settings) + "\n")
    (node_dir / "config" / "log4j2.properties").write_text(LOG4J2)


def pin_prefix(node):
    """`taskset -c <core>` for a pinned node (taskset execs the JVM: the pid Popen returns stays the JVM's)."""
    return ["taskset", "-c", str(node["cpu"])] if node.get("cpu") is not None else []


def check_taskset(layout):
    if any(n.get("cpu") is not None for n in layout) and not shutil.which("taskset"):
        raise LauncherError("--pin-cores runs each data node under taskset, which is not installed: apt-get install util-linux.")


def node_command(java, node, heap_mb, major, privileges=(), version=DEFAULT_VERSION):
    """The whole command of one node: its core pinning, the drop to the unprivileged user, then the JVM."""
    return pin_prefix(node) + list(privileges) + java_command(java, node, heap_mb, major, version)


def drop_privileges_prefix():
    if os.geteuid() != 0:
        return [], None
    user = pwd.getpwnam(UNPRIVILEGED_USER)
    return ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups", "--"], user


def chown_tree(path, user):
    for root, dirs, files in os.walk(path):
        os.chown(root, user.pw_uid, user.pw_gid)
        for name in files:
            os.chown(os.path.join(root, name), user.pw_uid, user.pw_gid)


def check_unprivileged_access(prefix, version):
    if not prefix:
        return
    dist = dist_dir(version)
    probe = subprocess.run(prefix + ["test", "-r", str(dist / "lib" / f"elasticsearch-{version}.jar")])
    if probe.returncode != 0:
        raise LauncherError(
            f"Elasticsearch refuses to run as root, so it runs as '{UNPRIVILEGED_USER}', which cannot read {dist}. "
            f"Move the checkout to a world-readable path, or set ES_LOCAL_STATE to a folder '{UNPRIVILEGED_USER}' can read."
        )


def jvm_ergonomics(heap_mb):
    """What the distribution's server-cli adds to the JVM options for this heap (JvmErgonomics.choose; since 7.10, #63413),
    since this launcher starts the server without it: direct memory at half the heap and, on a G1 heap under 8 GB,
    4 MB regions, concurrent marking from 30% occupancy and a 15% reserve. Without them G1 lets a small heap fill
    further before it collects, and the real-memory parent breaker (95% of the heap) rejects requests a
    distribution's node serves."""
    small = heap_mb < 8 * 1024
    return [
        f"-XX:MaxDirectMemorySize={heap_mb // 2}m",
        *(["-XX:G1HeapRegionSize=4m"] if small else []),
        "-XX:InitiatingHeapOccupancyPercent=30",
        f"-XX:G1ReservePercent={15 if small else 25}",
    ]


def java_command(java, node, heap_mb, major, version=DEFAULT_VERSION):
    node_dir, dist = Path(node["dir"]), dist_dir(version)
    cmd = [
        str(java),
        f"-Xms{heap_mb}m",
        f"-Xmx{heap_mb}m",
        "-XX:+UseG1GC",
        *jvm_ergonomics(heap_mb),
        "-XX:+AlwaysPreTouch",  # as the distribution's SystemJvmOptions: the heap's pages touched at start, not mid-race
        "-Xss1m",
        "-Des.networkaddress.cache.ttl=60",
        "-Des.networkaddress.cache.negative.ttl=10",
        "-Djava.awt.headless=true",
        "-Dfile.encoding=UTF-8",
        "-Djna.nosys=true",
        "-XX:-OmitStackTraceInFastThrow",
        "-Dio.netty.noUnsafe=true",
        "-Dio.netty.noKeySetOptimization=true",
        "-Dio.netty.recycler.maxCapacityPerThread=0",
        "-Dlog4j.shutdownHookEnabled=false",
        "-Dlog4j2.disable.jmx=true",
        "-Dlog4j2.formatMsgNoLookups=true",
        "-Djava.locale.providers=CLDR",
        "-Des.distribution.type=tar",
        f"-Des.path.home={dist}",
        f"-Des.path.conf={node_dir / 'config'}",
        f"-Djava.io.tmpdir={node_dir / 'tmp'}",
        f"-XX:ErrorFile={node_dir / 'logs' / 'hs_err_pid%p.log'}",
        # the distribution's jvm.options GC log, so a node's collections can be read beside its races
        f"-Xlog:gc*,gc+age=trace,safepoint:file={node_dir / 'logs' / 'gc.log'}:utctime,level,pid,tags:filecount=32,filesize=64m",
    ]
    if (dist / ENTITLEMENT_AGENT_JAR).is_file():
        # the server attaches the agent to itself; the bridge joins java.base, where the instrumented JDK calls it
        cmd += [
            "-Djdk.attach.allowAttachSelf=true",
            f"-Des.entitlement.agentJar={dist / ENTITLEMENT_AGENT_JAR}",
            f"--patch-module=java.base={dist / ENTITLEMENT_BRIDGE_JAR}",
            "--add-exports=java.base/org.elasticsearch.entitlement.bridge="
            "org.elasticsearch.entitlement,java.logging,java.net.http,java.naming,jdk.net",
        ]
        if major >= 21:
            # as the distribution's server-cli (SystemJvmOptions) starts an entitlement version on these JDKs
            cmd += [
                "-XX:+EnableDynamicAgentLoading",
                "--enable-native-access=ALL-UNNAMED",
                f"-Dorg.apache.lucene.vectorization.upperJavaFeatureVersion={major}",
            ]
        if major >= 24:
            cmd.append("--illegal-native-access=deny")
    else:
        cmd.append("-Djava.security.manager=allow")  # 8.17's Security Manager
    if major >= 21:
        cmd.append("--enable-native-access=org.elasticsearch.nativeaccess,org.apache.lucene.core")
        cmd.append("--add-modules=jdk.incubator.vector")  # Lucene's vectorized code, as the distribution's jvm.options
    # ES_JAVA_OPTS as the distribution reads it: options after the defaults (a diagnostic log: docs/schedule.md)
    cmd += shlex.split(os.environ.get("ES_JAVA_OPTS", ""))
    cmd += [
        f"--module-path={dist / 'lib'}",
        "--add-modules=jdk.net",
        "--add-modules=jdk.management.agent",
        "--add-modules=ALL-MODULE-PATH",
        "-m",
        "org.elasticsearch.server/org.elasticsearch.bootstrap.Elasticsearch",
    ]
    return cmd


def pid_is_our_node(pid):
    """True only for a live process whose command line names one of our node homes: pids are never trusted blindly."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False
    homes = [dist_dir(version) for version in VERSIONS] + [STATE / "dist"]  # the last: 8.17.2's before versions had homes
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


def last_log_lines(node, count=25):
    logs = Path(node["dir"]) / "logs"
    chunks = []
    for candidate in (logs / f"{CLUSTER_NAME}.log", Path(node["dir"]) / "stdout.log"):
        if candidate.is_file():
            lines = candidate.read_text(errors="replace").splitlines()[-count:]
            chunks.append(f"--- last lines of {candidate}:\n" + "\n".join(lines))
    return "\n".join(chunks) or f"(no log files under {node['dir']})"


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


def shape(version, nodes, coordinating, pinned):
    """How start and the state file name a cluster's make-up."""
    text = f"Elasticsearch {version}, {nodes} data node(s)"
    if coordinating:
        text += f" behind {coordinating} coordinating-only node(s)"
    return text + (", data nodes pinned to cores" if pinned else "")


def check_also_bind(address):
    """The extra HTTP address, an IP this network namespace has (else the node would fail to bind, minutes later)."""
    if address is None:
        return None
    try:
        ipaddress.ip_address(address)
    except ValueError:
        raise LauncherError(f"--also-bind {address!r} is not an IP address: give one of this network namespace's.") from None
    try:
        with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET) as sock:
            sock.bind((address, 0))
    except OSError as e:
        raise LauncherError(f"--also-bind {address}: no such address here ({e.strerror}); give one of `ip addr`'s.") from None
    return address


def check_version(version):
    if version not in VERSIONS:
        raise LauncherError(f"ES_VERSION={version} is not one the launcher builds: use one of {', '.join(VERSIONS)} (esnode.py versions).")
    return version


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


def start(args):
    nodes, coordinating, pinned = args.nodes, args.coordinating, args.pin_cores
    if nodes < 1 or nodes > 9:
        raise LauncherError(f"NODES={nodes} is not valid: use 1 to 9.")
    if coordinating < 0 or coordinating > MAX_COORDINATING:
        raise LauncherError(f"--coordinating {coordinating} is not valid: use 0 to {MAX_COORDINATING} (make: COORDINATING=yes or no).")
    version = check_version(args.version)
    heap_mb = parse_heap(args.heap)
    also_bind = check_also_bind(args.also_bind)
    running = read_running(args.http_port)
    if running:
        # a state file from before coordinating nodes and pinning: neither
        found = (running.get("version", DEFAULT_VERSION), running["size"], running.get("coordinating", 0), bool(running.get("pinned")))
        if found != (version, nodes, coordinating, pinned):
            raise LauncherError(
                f"a local cluster of {shape(*found)} is already running on port {args.http_port}; run make es-stop before "
                f"starting one of {shape(version, nodes, coordinating, pinned)}."
            )
        health = http_json(running["nodes"][0]["http_port"], "/_cluster/health")
        log(f"already running: {shape(*found)}, status {health['status']}, " f"http://127.0.0.1:{running['nodes'][0]['http_port']}")
        return 0
    java, javac, major = find_java(version)
    layout = node_layout(nodes, args.http_port, args.transport_port, coordinating, pinned, version=version)
    check_taskset(layout)
    for node in layout:
        for port in (node["http_port"], node["transport_port"]):
            if not port_is_free(port):
                raise LauncherError(
                    f"port {port} on 127.0.0.1 is in use by a process this launcher did not start. "
                    f"Stop that process, or pick other ports with PORT=<http port> (transport uses PORT+100)."
                )
    check_memory(heap_mb, len(layout))
    began = time.monotonic()
    built = build_dist(version, javac)
    dist = dist_dir(version)
    prefix, user = drop_privileges_prefix()
    check_unprivileged_access(prefix, version)
    for node in layout:
        write_node_config(node, layout, also_bind)
        node_dir = Path(node["dir"])
        serverargs = node_dir / "serverargs.bin"
        run_checked(
            [
                str(java),
                "-cp",
                f"{dist / 'bootstrap'}:{dist / 'lib'}/*",
                "WriteServerArgs",
                str(dist),
                str(node_dir / "config"),
                str(node_dir / "node.pid"),
                str(serverargs),
            ],
            "writing the server arguments",
            "Check the node's config/elasticsearch.yml.",
        )
        if user:
            chown_tree(node_dir, user)
    procs = []
    for node in layout:
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
        procs.append(proc)
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
    try:
        health = wait_for_health(layout, procs, float(os.environ.get("ES_START_TIMEOUT", "120")))
    except LauncherError:
        for proc in procs:  # the handles, not /proc: a JVM mid-exec has an empty cmdline
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        running_file(args.http_port).unlink(missing_ok=True)
        raise
    info = http_json(layout[0]["http_port"], "/")
    took = time.monotonic() - began
    log(
        f"{shape(info['version']['number'], nodes, coordinating, pinned)} is up on Java {major}, status {health['status']}, "
        f"http://127.0.0.1:{layout[0]['http_port']} ({'cold, node home built' if built else 'warm'} start, {took:.1f} s)"
        f"{STATE_NOTE}"
    )
    if coordinating or pinned:
        for node in layout:
            log(f"  {node['name']}: http://127.0.0.1:{node['http_port']}, {describe_node(node)}")
    return 0


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
    removed = [d for d in STATE.glob(f"elasticsearch-*/cluster-*-{args.http_port}") if d.is_dir()]
    for folder in removed:
        shutil.rmtree(folder)
    log(f"removed the data of {len(removed)} local cluster layout(s); the node home (jars) is kept")
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


if __name__ == "__main__":
    sys.exit(main())
