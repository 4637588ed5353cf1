"""The node home (dist/) of a version, built once from Maven Central's jars and the launcher's Java sources (java/):
lib/, the transport-netty4 and root-info modules, the bootstrap classes and, where the server has no Security Manager
left (8.19 on), the entitlement agent and bridge, their shape checked against the version's entitlement jar."""

import shutil
import tempfile
import zipfile
from pathlib import Path

from localnode.shared import HERE, LauncherError, dist_dir, log, run_checked, version_root

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
NETTY_POLICY = (
    "grant {\n"
    '  permission java.net.SocketPermission "*", "accept,connect";\n'
    '  permission java.util.PropertyPermission "sun.nio.ch.bugLevel", "write";\n'
    '  permission java.lang.RuntimePermission "setContextClassLoader";\n'
    "};\n"
)


def build_dist(version, javac):
    """Builds the version's dist/ once; a marker file written last makes a half-built home count as absent. What a
    version needs beyond 8.17.2's recipe is read from its jars: the entitlement shims where the server has no Security
    Manager bootstrap left, the netty module's own descriptors where its jar carries them, and the shape of the plugin
    REST hook its ActionPlugin declares."""
    dist = dist_dir(version)
    marker = dist / ".built"
    if marker.is_file() and marker.read_text().strip() == version:
        return False
    mvn = build_tools(javac)
    log(f"building a node home for Elasticsearch {version} from Maven Central (first use only)")
    version_root(version).mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="dist-", dir=version_root(version)))
    staging.chmod(0o755)  # mkdtemp makes it private; the unprivileged node user must read it
    try:
        fetch_jars(mvn, version, staging)
        netty_module(version, staging)
        lib = staging / "lib"
        classpath = f"{lib}/*"
        compile_jar(javac, ["ansi-console"], classpath, lib / "tools" / "ansi-console" / "ansi-console-stub.jar")
        root_info_module(javac, version, staging)
        compile_classes(javac, ["bootstrap"], classpath, staging / "bootstrap")
        if not jar_has(lib / f"elasticsearch-{version}.jar", "org/elasticsearch/bootstrap/Security.class"):
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


def build_tools(javac):
    """Maven, which fetches the jars, and the javac that compiles the launcher's sources: mvn's path, or the fix."""
    mvn = shutil.which("mvn")
    if not mvn:
        raise LauncherError(
            "Maven (mvn) is not installed; it fetches Elasticsearch's jars from Maven Central. " "Install it: apt-get install maven."
        )
    if not javac.is_file():
        raise LauncherError(
            f"no javac beside {javac.parent}/java: install a full JDK, not only a JRE (JDK 17: apt-get install openjdk-17-jdk-headless)."
        )
    return mvn


def fetch_jars(mvn, version, staging):
    """The server's jars into lib/, the netty module's into netty/ (pom.xml's profiles)."""
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


def netty_module(version, staging):
    """modules/transport-netty4 from netty/: its jars less the server's own, its descriptor and policy (its jar's own
    from 8.19 on, else written here)."""
    module = staging / "modules" / "transport-netty4"
    module.mkdir(parents=True)
    for jar in (staging / "netty").glob("*.jar"):
        # the server's own libraries are already in lib/; a second copy breaks the module checks
        if not jar.name.startswith(("elasticsearch-core-", "elasticsearch-entitlement-")):
            shutil.move(str(jar), module / jar.name)
    shutil.rmtree(staging / "netty")
    if not copy_plugin_files(module / f"transport-netty4-{version}.jar", "transport-netty4", module):
        write_descriptor(
            module,
            version,
            name="transport-netty4",
            classname="org.elasticsearch.transport.netty4.Netty4Plugin",
            description="Netty 4 based HTTP and transport layer",
            modulename="org.elasticsearch.transport.netty4",
        )
        (module / "plugin-security.policy").write_text(NETTY_POLICY)


def root_info_module(javac, version, staging):
    """modules/root-info: GET / in place of the unpublished rest-root module, compiled for the REST hook the version's
    ActionPlugin declares."""
    lib = staging / "lib"
    root_module = staging / "modules" / "root-info"
    rest_hook = (
        "root-info-rest-services"
        if jar_has(lib / f"elasticsearch-{version}.jar", "org/elasticsearch/plugins/ActionPlugin$RestHandlersServices.class")
        else "root-info-rest-settings"
    )
    compile_jar(javac, ["root-info", rest_hook], f"{lib}/*", root_module / "root-info.jar")
    write_descriptor(
        root_module,
        version,
        name="root-info",
        classname="org.clustermetrics.rootinfo.RootInfoRestPlugin",
        description="Serves GET / in place of the unpublished rest-root module",
    )


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
