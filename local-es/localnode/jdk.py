"""The JDK each Elasticsearch version runs on: found in ES_JAVA_HOME, JAVA_HOME, PATH or /usr/lib/jvm, its major
version checked against the versions table (shared.VERSIONS)."""

import functools
import os
import re
import shutil
import subprocess
from pathlib import Path

from localnode.shared import VERSIONS, LauncherError

JVM_ROOT = Path("/usr/lib/jvm")  # where Debian's and Adoptium's packages install JDKs


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
        return _explicit_java(explicit, version, span)
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


def _explicit_java(explicit, version, span):
    """ES_JAVA_HOME's java, or the reason it cannot run this version."""
    java = Path(explicit) / "bin" / "java"
    if not java.is_file():
        raise LauncherError(f"ES_JAVA_HOME={explicit} has no bin/java. Point it at a {span}, or unset it to let the launcher find one.")
    major = java_major(java)
    if major not in VERSIONS[version].java:
        raise LauncherError(
            f"Java {major} at {java} (from ES_JAVA_HOME) is not supported: Elasticsearch {version} here needs {span}. "
            f"Set ES_JAVA_HOME to such a JDK, or unset it."
        )
    return java, java.parent / "javac", major
