"""The local node launcher against a real Elasticsearch 8.17.2; its refusals (a port in use, a wrong Java, too large
a heap) need no node and run with the unit tests."""

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from localnode import checks, cli, command, distribution, jdk, shared
from localnode.layout import describe_node, node_layout, write_node_config
from tests.conftest import LAUNCHER, REPO, http, launcher


def test_index_and_search_round_trip(es_node):
    assert http("PUT", "/roundtrip", {"mappings": {"properties": {"node": {"type": "keyword"}}}})[0] == 200
    assert http("POST", "/roundtrip/_doc?refresh=true", {"node": "N001"})[0] == 201
    status, body = http("POST", "/roundtrip/_search", {"query": {"term": {"node": "N001"}}})
    assert status == 200 and body["hits"]["total"]["value"] == 1
    http("DELETE", "/roundtrip")


def test_root_endpoint_reports_version(es_node):
    status, body = http("GET", "/")
    assert status == 200
    assert body["version"]["number"] == "8.17.2"
    assert body["version"]["lucene_version"] == "9.12.0"
    assert body["cluster_uuid"] and body["tagline"] == "You Know, for Search"


def test_the_node_runs_with_what_the_distributions_server_cli_adds_to_its_jvm(es_node):
    """The launcher starts the server without its CLI: the CLI's G1 choices for a 1 GB heap reach the JVM."""
    status, body = http("GET", "/_nodes/_local/jvm")
    (node,) = body["nodes"].values()
    arguments = node["jvm"]["input_arguments"]
    assert status == 200 and "G1 Young Generation" in node["jvm"]["gc_collectors"]
    for choice in (
        "-XX:MaxDirectMemorySize=512m",
        "-XX:G1HeapRegionSize=4m",
        "-XX:InitiatingHeapOccupancyPercent=30",
        "-XX:G1ReservePercent=15",
    ):
        assert choice in arguments


def test_jvm_ergonomics_follow_the_heap_as_the_server_cli_does(node_state):
    assert command.jvm_ergonomics(512) == [
        "-XX:MaxDirectMemorySize=256m",
        "-XX:G1HeapRegionSize=4m",
        "-XX:InitiatingHeapOccupancyPercent=30",
        "-XX:G1ReservePercent=15",
    ]
    assert command.jvm_ergonomics(8192) == [
        "-XX:MaxDirectMemorySize=4096m",
        "-XX:InitiatingHeapOccupancyPercent=30",
        "-XX:G1ReservePercent=25",
    ]


def test_start_is_idempotent(es_node):
    result = launcher("start")
    assert result.returncode == 0
    assert "already running" in result.stdout


def _our_java_processes(port):
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if f"cluster-1-{port}/" in line and "java" in line]


@pytest.mark.integration
def test_stop_leaves_no_process(es_node):
    port = 9261  # a node of its own: the session node stays up
    started = launcher("start", "--heap", "512m", port=port)
    assert started.returncode == 0, started.stderr
    assert _our_java_processes(port)
    stopped = launcher("stop", port=port)
    assert stopped.returncode == 0 and "stopped node-1" in stopped.stdout
    assert _our_java_processes(port) == []
    assert launcher("status", port=port).returncode == 3


@pytest.mark.integration
@pytest.mark.skipif(os.geteuid() != 0, reason="the private-checkout case is root's: the node runs as nobody")
def test_launcher_in_a_private_folder_as_root(tmp_path):
    """A checkout in a 0700 folder (mktemp -d, /root): the node user cannot read it, so the launcher keeps the node's
    state where it can, by itself, and start, status and stop agree on where that is."""
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    shutil.copytree(REPO / "local-es", private / "local-es", ignore=shutil.ignore_patterns(".state", "__pycache__"))
    script, port = str(private / "local-es" / "esnode.py"), 9264
    env = {k: v for k, v in os.environ.items() if k != "ES_LOCAL_STATE"}

    def run(*args):
        return subprocess.run(
            [sys.executable, script, *args, "--http-port", str(port)], capture_output=True, text=True, env=env, timeout=600
        )

    started = run("start", "--heap", "512m")
    state = re.search(r"node state in (\S+):", started.stdout)
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        assert state and not state.group(1).startswith(str(private))
        assert http("GET", "/_cluster/health", port=port)[1]["status"] == "green"
        assert run("status").returncode == 0
    finally:
        stopped = run("stop")
        if state:
            shutil.rmtree(state.group(1), ignore_errors=True)
    assert stopped.returncode == 0 and "stopped node-1" in stopped.stdout
    assert _our_java_processes(port) == []


def test_foreign_listener_on_port_is_named():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        result = launcher("start", port=port)
    assert result.returncode == 2
    assert f"port {port} on 127.0.0.1 is in use by a process this launcher did not start" in result.stderr


def test_bad_java_path_is_named(tmp_path):
    env = dict(os.environ, ES_JAVA_HOME=str(tmp_path / "no-jdk"))
    result = launcher("start", env=env, port=9262)
    assert result.returncode == 2
    assert f"ES_JAVA_HOME={tmp_path / 'no-jdk'} has no bin/java" in result.stderr


def test_unsupported_java_version_is_named(tmp_path):
    fake = tmp_path / "jdk" / "bin"
    fake.mkdir(parents=True)
    (fake / "java").write_text("#!/bin/sh\necho 'openjdk version \"11.0.2\" 2019-01-15' >&2\n")
    (fake / "java").chmod(0o755)
    result = launcher("start", env=dict(os.environ, ES_JAVA_HOME=str(tmp_path / "jdk")), port=9262)
    assert result.returncode == 2
    assert "Java 11" in result.stderr and "not supported" in result.stderr and "JDK 17" in result.stderr


def test_too_large_heap_is_refused():
    result = launcher("start", "--heap", "100000g", port=9263)
    assert result.returncode == 2
    assert "not enough memory" in result.stderr and "HEAP" in result.stderr


def base_python():
    """The interpreter the project's virtualenv was made from: what `make` calls before the virtualenv exists."""
    for name in ("python3", "python"):
        candidate = Path(sys.base_prefix) / "bin" / name
        if candidate.is_file():
            return str(candidate)
    pytest.fail(f"no python under {sys.base_prefix}")


@pytest.mark.parametrize(
    "script", [LAUNCHER, *(str(REPO / "local-es" / name) for name in ("toxiproxy_launcher.py", "node_starts.py", "load_driver_hosts.py"))]
)
def test_the_launchers_run_without_the_virtualenv(script):
    """The launchers run before `make venv` (the Makefile calls them with the system's Python): the base interpreter,
    isolated (-I) and without site-packages (-S), so that an import of any installed package fails here."""
    result = subprocess.run([base_python(), "-I", "-S", script, "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "usage:" in result.stdout


# ---------------------------------------------------------------- coordinating node and core pinning: no Java


@pytest.fixture
def node_state(tmp_path, monkeypatch):
    """The launcher's state folder (localnode.shared.STATE, read at call time by every room) under tmp_path: nothing
    is started."""
    monkeypatch.setattr(shared, "STATE", tmp_path)
    return tmp_path


def _settings(node):
    return (Path(node["dir"]) / "config" / "elasticsearch.yml").read_text().splitlines()


def test_a_coordinating_node_takes_the_http_port_and_the_data_nodes_follow(node_state, tmp_path):
    layout = node_layout(3, 9200, 9300, coordinating=1)
    assert [(n["name"], n["http_port"], n["transport_port"], n["roles"]) for n in layout] == [
        ("coord-1", 9200, 9300, []),
        ("node-1", 9201, 9301, None),
        ("node-2", 9202, 9302, None),
        ("node-3", 9203, 9303, None),
    ]
    home = shared.version_root(shared.DEFAULT_VERSION)
    assert {Path(n["dir"]).parent for n in layout} == {home / "cluster-3-coord1-9200"}  # its own data, never a data node's
    # without one, nothing moves: node-1 on the HTTP port, the folder an earlier cluster of that size used
    plain = node_layout(3, 9200, 9300)
    assert [n["http_port"] for n in plain] == [9200, 9201, 9202] and Path(plain[0]["dir"]).parent == home / "cluster-3-9200"


def test_the_coordinating_node_is_configured_with_no_role_and_joins_the_data_nodes(node_state):
    layout = node_layout(1, 9200, 9300, coordinating=1)
    for node in layout:
        write_node_config(node, layout)
    coordinating, data = (_settings(n) for n in layout)
    assert "node.roles: []" in coordinating and not any(s.startswith("node.roles") for s in data)
    # one data node and a coordinating one are a cluster of two: discovery among the master-eligible (data) node only
    for settings in (coordinating, data):
        assert "discovery.type: single-node" not in settings
        assert 'discovery.seed_hosts: ["127.0.0.1:9301"]' in settings and 'cluster.initial_master_nodes: ["node-1"]' in settings
    alone = node_layout(1, 9200, 9300)
    write_node_config(alone[0], alone)
    assert "discovery.type: single-node" in _settings(alone[0])


def test_pinned_data_nodes_run_under_taskset_with_one_processor_each(node_state):
    layout = node_layout(3, 9200, 9300, coordinating=1, cores=[0, 1])
    assert [(n["name"], n["cpu"], n["processors"]) for n in layout] == [
        ("coord-1", None, None),  # unpinned: it shares the cores with Rally
        ("node-1", 0, 1),
        ("node-2", 1, 1),
        ("node-3", 0, 1),  # node i on core i modulo the cores this process may use
    ]
    for node in layout:
        write_node_config(node, layout)
    assert "node.processors: 1" in _settings(layout[1]) and not any(s.startswith("node.processors") for s in _settings(layout[0]))
    privileges = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
    pinned = command.node_command(Path("/jdk/bin/java"), layout[2], 1024, 17, privileges)
    assert pinned[:3] == ["taskset", "-c", "1"] and pinned[3:8] == privileges and pinned[8] == "/jdk/bin/java"
    assert command.node_command(Path("/jdk/bin/java"), layout[0], 1024, 17)[0] == "/jdk/bin/java"
    assert describe_node(layout[1]) == "data, core 0, node.processors 1"
    assert describe_node(layout[0]) == "coordinating only"
    # unpinned: no taskset, no processors setting
    assert all(n["cpu"] is None and n["processors"] is None for n in node_layout(2, 9200, 9300))


def test_pinning_without_taskset_names_the_package(node_state, monkeypatch):
    monkeypatch.setattr(checks.shutil, "which", lambda name: None)
    with pytest.raises(shared.LauncherError, match="taskset, which is not installed: apt-get install util-linux"):
        checks.check_taskset(node_layout(1, 9200, 9300, cores=[0]))
    checks.check_taskset(node_layout(1, 9200, 9300))  # nothing pinned: taskset not needed


def test_a_bad_coordinating_count_is_refused_before_java():
    result = launcher("start", "--coordinating", "7", port=9265)
    assert result.returncode == 2 and "--coordinating 7 is not valid: use 0 to 3" in result.stderr


def test_also_bind_takes_an_address_of_this_network_namespace_and_binds_http_there_too(node_state, tmp_path):
    """--also-bind: refused before Java for what is not an IP or not one of this namespace's; else HTTP on both
    addresses, and the node still publishes on loopback."""
    with pytest.raises(shared.LauncherError, match="--also-bind 'bridge' is not an IP address"):
        checks.check_also_bind("bridge")
    with pytest.raises(shared.LauncherError, match="--also-bind 192.0.2.7: no such address here"):
        checks.check_also_bind("192.0.2.7")  # TEST-NET-1: on no interface here
    assert checks.check_also_bind("127.0.0.1") == "127.0.0.1" and checks.check_also_bind(None) is None
    (node,) = node_layout(1, 9200, 9300)
    write_node_config(node, [node], "127.0.0.1")
    config = (Path(node["dir"]) / "config" / "elasticsearch.yml").read_text()
    assert 'http.bind_host: ["127.0.0.1", "127.0.0.1"]' in config and "network.host: 127.0.0.1" in config
    write_node_config(node, [node])
    assert "bind_host" not in (Path(node["dir"]) / "config" / "elasticsearch.yml").read_text()


def test_load_driver_hosts_are_refused_in_the_machines_own_network_namespace(tmp_path):
    """local-es/load_driver_hosts.py makes a bridge and links: never in the machine's own namespace (nor without
    root); refused before anything is made."""
    tool = [sys.executable, str(REPO / "local-es" / "load_driver_hosts.py")]
    try:
        result = subprocess.run([*tool, "up", "--hosts", "2", "--state", str(tmp_path)], capture_output=True, text=True)
    finally:
        if (tmp_path / "hosts.json").exists():  # a regression made them here: take them down before failing
            subprocess.run([*tool, "down", "--state", str(tmp_path)], capture_output=True)
    assert result.returncode == 2
    assert (
        "it is not a private one (the machine's own, perhaps); start a private one first" in result.stderr or "need root" in result.stderr
    )
    assert not (tmp_path / "hosts.json").exists()
    assert subprocess.run(["ip", "link", "show", "cm-hosts"], capture_output=True).returncode != 0


# ---------------------------------------------------------------- versions: the JDK each runs on, what each needs


def _fake_jdk(root, name, version_line):
    """A JDK folder whose java prints this `java -version` line (and nothing runs)."""
    java = root / name / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text(f"#!/bin/sh\necho '{version_line}' >&2\n")
    java.chmod(0o755)
    return java


def test_each_version_gets_a_jdk_it_runs_on_the_tested_one_first(node_state, tmp_path, monkeypatch):
    jvm = tmp_path / "jvm"
    jdk17 = _fake_jdk(jvm, "java-17", 'openjdk version "17.0.12" 2024-07-16')
    jdk21 = _fake_jdk(jvm, "java-21", 'openjdk version "21.0.4" 2024-07-16')
    jdk25 = _fake_jdk(jvm, "temurin-25", 'openjdk version "25.0.3" 2026-04-21 LTS')
    monkeypatch.setattr(jdk, "JVM_ROOT", jvm)
    for var in ("ES_JAVA_HOME", "JAVA_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(jdk.shutil, "which", lambda name: None)
    assert jdk.find_java("8.17.2")[0] == jdk17
    assert jdk.find_java("8.19.21")[0] == jdk17
    assert jdk.find_java("9.5.3")[0] == jdk25  # the tested one, though 21 fits too and comes first
    jdk25.unlink()
    assert jdk.find_java("9.5.3")[0] == jdk21
    jdk21.unlink()
    with pytest.raises(shared.LauncherError, match=r"no JDK for Elasticsearch 9.5.3: it needs JDK 21 to 25 \(tested: 25\); found Java 17"):
        jdk.find_java("9.5.3")
    # ES_JAVA_HOME is a choice: used or refused, never passed over
    monkeypatch.setenv("ES_JAVA_HOME", str(jdk17.parents[1]))
    with pytest.raises(shared.LauncherError, match="Java 17 at .* \\(from ES_JAVA_HOME\\) is not supported: Elasticsearch 9.5.3"):
        jdk.find_java("9.5.3")


def test_an_unknown_version_is_refused_naming_the_ones_there_are(node_state):
    with pytest.raises(shared.LauncherError, match="ES_VERSION=9.4.0 is not one the launcher builds: use one of 8.17.2, 8.19.21, 9.5.3"):
        shared.check_version("9.4.0")
    result = launcher("start", "--version", "9.4.0", port=9266)
    assert result.returncode == 2 and "ES_VERSION=9.4.0" in result.stderr
    built = subprocess.run([sys.executable, LAUNCHER, "build", "--version", "9.4.0"], capture_output=True, text=True, timeout=60)
    assert built.returncode == 2 and "ES_VERSION=9.4.0 is not one the launcher builds" in built.stderr


def test_build_builds_the_node_home_as_start_does_and_starts_nothing(node_state, monkeypatch, capsys):
    """make it builds each version's node home before its private network namespace (no Maven Central in there)."""
    calls = []
    monkeypatch.setattr(cli, "find_java", lambda version: ("java", "javac", 21))
    monkeypatch.setattr(cli, "build_dist", lambda version, javac: calls.append((version, javac)) or len(calls) == 1)
    monkeypatch.setattr(cli, "start", lambda args: pytest.fail("build started a node"))
    assert cli.main(["build", "--version", "9.5.3"]) == 0 and cli.main(["build", "--version", "9.5.3"]) == 0
    assert calls == [("9.5.3", "javac")] * 2
    assert capsys.readouterr().out.splitlines() == [
        "[local-es] node home for Elasticsearch 9.5.3: built",
        "[local-es] node home for Elasticsearch 9.5.3: already built",
    ]


def test_an_entitlement_version_runs_with_its_shims_and_8_17_with_the_security_manager(node_state):
    (node,) = node_layout(1, 9200, 9300, version="9.5.3")
    assert "/elasticsearch-9.5.3/" in node["dir"]
    for jar in (distribution.ENTITLEMENT_AGENT_JAR, distribution.ENTITLEMENT_BRIDGE_JAR):
        (shared.dist_dir("9.5.3") / jar).parent.mkdir(parents=True, exist_ok=True)
        (shared.dist_dir("9.5.3") / jar).touch()
    newer = command.java_command(Path("/jdk/bin/java"), node, 1024, 25, "9.5.3")
    bridge = shared.dist_dir("9.5.3") / distribution.ENTITLEMENT_BRIDGE_JAR
    assert f"--patch-module=java.base={bridge}" in newer and "-XX:+EnableDynamicAgentLoading" in newer
    assert "-Djava.security.manager=allow" not in newer and "--add-modules=jdk.incubator.vector" in newer
    (old,) = node_layout(1, 9200, 9300)
    study = command.java_command(Path("/jdk/bin/java"), old, 1024, 17)
    assert "-Djava.security.manager=allow" in study and not any(a.startswith("--patch-module") for a in study)


def test_a_bridge_the_versions_instrumenter_does_not_call_stops_the_build(node_state, tmp_path):
    """The shape check reads what the version's instrumenter writes into the JDK: a jar whose instrumenter names
    other methods than the bridge's is refused, naming what is missing."""
    import zipfile

    jar = tmp_path / "elasticsearch-entitlement-9.9.9.jar"
    with zipfile.ZipFile(jar, "w") as archive:
        archive.writestr("IMPL-JARS/x.jar/org/elasticsearch/entitlement/instrumentation/impl/InstrumenterImpl.class", b"check$ instance")
    names = distribution.instrumenter_constants(jar)
    missing = [n for n in distribution.INSTRUMENTER_NAMES if n.encode() not in names]
    assert "defaultValue$" in missing and "check$" not in missing
    with pytest.raises(shared.LauncherError, match=r"no longer calls what the launcher's bridge defines \(missing: .*defaultValue\$"):
        distribution.build_entitlement_shims(Path("/no/javac"), "9.9.9", _home_with(tmp_path, jar))


def _home_with(tmp_path, jar):
    home = tmp_path / "home"
    (home / "lib").mkdir(parents=True)
    jar.rename(home / "lib" / jar.name)
    return home


def test_a_module_jar_with_its_own_descriptor_gives_it_and_one_without_gives_none(node_state, tmp_path):
    import zipfile

    jar = tmp_path / "transport-netty4.jar"
    with zipfile.ZipFile(jar, "w") as archive:
        archive.writestr("META-INF/es-plugins/transport-netty4/plugin-descriptor.properties", "name=transport-netty4\n")
        archive.writestr("META-INF/es-plugins/transport-netty4/entitlement-policy.yaml", "io.netty.common: []\n")
    out = tmp_path / "module"
    out.mkdir()
    assert distribution.copy_plugin_files(jar, "transport-netty4", out)
    assert sorted(p.name for p in out.iterdir()) == ["entitlement-policy.yaml", "plugin-descriptor.properties"]
    assert not distribution.copy_plugin_files(jar, "other-module", out)


def test_the_node_starts_with_the_distributions_pre_touch_gc_log_and_es_java_opts(node_state, monkeypatch):
    """As the distribution's SystemJvmOptions and jvm.options: the heap pre-touched at start and the GC log in the
    node's logs/; ES_JAVA_OPTS after the defaults (what a diagnostic adds: docs/schedule.md, the JIT log)."""
    (node,) = node_layout(1, 9200, 9300)
    monkeypatch.delenv("ES_JAVA_OPTS", raising=False)
    plain = command.java_command(Path("/jdk/bin/java"), node, 1024, 17)
    assert "-XX:+AlwaysPreTouch" in plain
    assert any(a.startswith("-Xlog:gc*") and f"file={node['dir']}/logs/gc.log" in a for a in plain)
    monkeypatch.setenv("ES_JAVA_OPTS", "-Xlog:jit+compilation=debug:file=/tmp/jit.log  -Dx='a b'")
    logged = command.java_command(Path("/jdk/bin/java"), node, 1024, 17)
    assert logged[: len(plain) - 6] == plain[: len(plain) - 6]
    extra = logged[logged.index("-Xlog:jit+compilation=debug:file=/tmp/jit.log") :]
    assert extra[1] == "-Dx=a b" and extra[2].startswith("--module-path=")
