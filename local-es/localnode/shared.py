"""What every room of the launcher shares: the versions it builds, where its state lives, its error and its log."""

import hashlib
import os
import stat
import subprocess
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
HERE = Path(__file__).resolve().parent.parent  # local-es/: pom.xml, java/, .state/
CLUSTER_NAME = "cluster-metrics-local"
UNPRIVILEGED_USER = "nobody"  # Elasticsearch refuses to run as root
SHARED_STATE_ROOT = Path("/var/tmp/cluster-metrics-local-es")  # world-traversable, kept across reboots


class LauncherError(Exception):
    """A failure with a message that names the input and the fix."""


def log(msg):
    print(f"[local-es] {msg}", flush=True)


def check_version(version):
    if version not in VERSIONS:
        raise LauncherError(f"ES_VERSION={version} is not one the launcher builds: use one of {', '.join(VERSIONS)} (esnode.py versions).")
    return version


def run_checked(cmd, what, fix, **kwargs):
    result = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-15:])
        raise LauncherError(f"{what} failed (exit {result.returncode}):\n{tail}\n{fix}")
    return result


# ---------------------------------------------------------------- the state folder


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


# read at call time by the functions below (tests point it at a folder of their own)
STATE = Path(os.environ.get("ES_LOCAL_STATE") or default_state()).resolve()
STATE_NOTE = "" if STATE == (HERE / ".state").resolve() else f" (node state in {STATE}: '{UNPRIVILEGED_USER}' cannot reach this checkout)"


def version_root(version):
    return STATE / f"elasticsearch-{version}"


def dist_dir(version):
    return version_root(version) / "dist"


def running_file(http_port):
    return STATE / f"running-{http_port}.json"
