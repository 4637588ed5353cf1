#!/usr/bin/env python3
"""Runs a command (make it's pytest) in a private network namespace where only loopback is up, when this machine
allows it (root, unshare, ip); else runs it as it is, and says so.

Why: inside, every server the suite starts (Elasticsearch, Toxiproxy, the secured stand-in and Rally's actor system)
is reachable from this namespace only. Rally's actor system is the one that needs it: thespian binds its admin port
as ('', 1900), every interface, and Rally gives it no other address. With the namespace the suite keeps one actor
system (esrallyd) for all its races instead of one per race (tests/conftest.py, SuiteActorSystem), which saves the
seconds each race spends starting and stopping its own; outside it, each race starts its own, as a user's does.

Usage: loopback_only.py COMMAND [ARG...]. Stdlib only. What needs the network (Maven Central for a node home, the Go
module proxy for Toxiproxy, PyPI) must be done before: make it builds them first.
"""

import os
import shutil
import subprocess
import sys

# set inside the namespace: the suite may keep an actor system of its own there (tests/conftest.py)
FLAG = "CLUSTER_METRICS_LOOPBACK_ONLY"
# thespian finds its own address by routing towards 8.8.8.8; a namespace with loopback alone has no route: name it
THESPIAN_ADDRESS = {"THESPIAN_BASE_IPADDR": "127.0.0.1"}
UP = "ip link set lo up"


def available():
    """'' when a private network namespace with loopback up can be made here, else why not."""
    if not shutil.which("unshare") or not shutil.which("ip"):
        return "unshare or ip (util-linux, iproute2) is not installed"
    probe = subprocess.run(["unshare", "--net", "--", "sh", "-c", UP], capture_output=True, text=True)
    return "" if probe.returncode == 0 else f"unshare --net failed (it needs root): {probe.stderr.strip()}"


def main(argv):
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    why_not = available()
    if why_not:
        print(f"[loopback-only] no private network namespace ({why_not}): each race starts an actor system of its own", flush=True)
        os.execvp(argv[0], argv)
    print("[loopback-only] in a private network namespace (loopback only): the suite keeps one Rally actor system", flush=True)
    env = dict(os.environ, **THESPIAN_ADDRESS, **{FLAG: "1"})
    # exec all the way down: the command keeps this process's pid, signals and exit status
    os.execvpe("unshare", ["unshare", "--net", "--", "sh", "-c", f'{UP} && exec "$@"', "sh", *argv], env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
