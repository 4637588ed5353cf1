"""Several load drivers: races through Rally's own load-driver daemon (esrallyd, --load-driver-hosts) into an
Elasticsearch metrics store (tests/private_network/test_load_drivers_inside.py).

esrallyd's actor system, like the coordinator's, binds every interface on port 1900 (thespian binds an external
address as ('', port)), and Rally gives it no other port: two daemons cannot share one network namespace, and a
daemon in this one would listen beyond loopback. So the races run in a private network namespace (`unshare --net`,
root) that has nothing but its own loopback: their own node, store and daemon are started inside and stopped there.
"""

import os
import re
import subprocess

import pytest

from conftest import PYTHON, REPO

pytestmark = pytest.mark.integration

INSIDE = REPO / "tests" / "private_network" / "test_load_drivers_inside.py"
PRIVATE_NETWORK = "CLUSTER_METRICS_PRIVATE_NETWORK"  # set inside the namespace: tests/conftest.py collects INSIDE then


def test_races_through_a_load_driver_daemon_in_a_private_network(rally_home, small_corpus):
    path = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])  # ip (iproute2) lives in sbin
    probe = subprocess.run(
        ["unshare", "--net", "--", "ip", "link", "set", "lo", "up"], capture_output=True, text=True, env={**os.environ, "PATH": path}
    )
    if probe.returncode != 0:
        pytest.skip(f"no private network namespace here (unshare --net needs root, and iproute2): {probe.stderr.strip()}")
    # thespian finds an actor system's address by routing towards 8.8.8.8, and the namespace has no route: name it
    env = dict(os.environ, PATH=path, RALLY_HOME=str(rally_home), THESPIAN_BASE_IPADDR="127.0.0.1", **{PRIVATE_NETWORK: "1"})
    inside = subprocess.run(
        ["unshare", "--net", "--", PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:warnings", str(INSIDE)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    output = inside.stdout + inside.stderr
    assert inside.returncode == 0, output[-12000:]
    summary = output.strip().splitlines()[-1]
    assert re.search(r"\b2 passed\b", summary) and not re.search(r"skipped|failed|error", summary), summary
