"""One node's command: its core pinning (taskset), the drop to the unprivileged user when run as root (setpriv),
then the JVM with the options the distribution's server-cli would give it."""

import os
import pwd
import shlex
import subprocess
from pathlib import Path

from localnode.distribution import ENTITLEMENT_AGENT_JAR, ENTITLEMENT_BRIDGE_JAR
from localnode.shared import DEFAULT_VERSION, UNPRIVILEGED_USER, LauncherError, dist_dir


def pin_prefix(node):
    """`taskset -c <core>` for a pinned node (taskset execs the JVM: the pid Popen returns stays the JVM's)."""
    return ["taskset", "-c", str(node["cpu"])] if node.get("cpu") is not None else []


def node_command(java, node, heap_mb, major, privileges=(), version=DEFAULT_VERSION):
    """The whole command of one node: its core pinning, the drop to the unprivileged user, then the JVM."""
    return pin_prefix(node) + list(privileges) + java_command(java, node, heap_mb, major, version)


# ---------------------------------------------------------------- as root: the unprivileged node user


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


# ---------------------------------------------------------------- the JVM


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
    cmd += security_options(dist, major)
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


def security_options(dist, major):
    """The entitlement agent and bridge where the home has them (8.19 on), else 8.17's Security Manager."""
    if not (dist / ENTITLEMENT_AGENT_JAR).is_file():
        return ["-Djava.security.manager=allow"]  # 8.17's Security Manager
    # the server attaches the agent to itself; the bridge joins java.base, where the instrumented JDK calls it
    options = [
        "-Djdk.attach.allowAttachSelf=true",
        f"-Des.entitlement.agentJar={dist / ENTITLEMENT_AGENT_JAR}",
        f"--patch-module=java.base={dist / ENTITLEMENT_BRIDGE_JAR}",
        "--add-exports=java.base/org.elasticsearch.entitlement.bridge="
        "org.elasticsearch.entitlement,java.logging,java.net.http,java.naming,jdk.net",
    ]
    if major >= 21:
        # as the distribution's server-cli (SystemJvmOptions) starts an entitlement version on these JDKs
        options += [
            "-XX:+EnableDynamicAgentLoading",
            "--enable-native-access=ALL-UNNAMED",
            f"-Dorg.apache.lucene.vectorization.upperJavaFeatureVersion={major}",
        ]
    if major >= 24:
        options.append("--illegal-native-access=deny")
    return options
