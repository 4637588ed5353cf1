"""Several load-driver hosts: races through Rally's own load-driver daemons (esrallyd, --load-driver-hosts=a,b) into
an Elasticsearch metrics store (tests/private_network/test_load_drivers_inside.py).

esrallyd's actor system, like the coordinator's, binds every interface on port 1900 (thespian binds an external
address as ('', port)), and Rally gives it no other port: two daemons cannot share one network namespace, and a
daemon in the machine's own would listen beyond loopback. So everything runs in a private network namespace
(`unshare --net`, root) that the test makes: the cluster's, with the node, the store and the coordinator's daemon,
and inside it two load-driver hosts in namespaces of their own (local-es/load_driver_hosts.py), joined by a bridge
whose addresses exist only there. Where that cannot be made (not root, no iproute2), the test is skipped and says why.
"""

import os
import re
import subprocess

import pytest

from localnode import load_driver_hosts as topology
from tests import loopback_only
from tests.conftest import PYTHON, REPO

pytestmark = pytest.mark.integration

INSIDE = REPO / "tests" / "private_network" / "test_load_drivers_inside.py"
PRIVATE_NETWORK = "CLUSTER_METRICS_PRIVATE_NETWORK"  # set inside the namespace: tests/conftest.py collects INSIDE then
INSIDE_TESTS = 7


def test_races_through_two_load_driver_hosts_in_a_private_network(rally_home, small_corpus):
    path = os.pathsep.join([os.environ.get("PATH", ""), topology.SBIN])
    probe = subprocess.run(
        ["unshare", "--net", "--", "sh", "-c", "ip link set lo up && ip link add probe type bridge && which nsenter"],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": path},
    )
    if probe.returncode != 0:
        pytest.skip(
            "no private network namespaces here (unshare --net and nsenter need root, and iproute2 with bridges): "
            f"{probe.stderr.strip()}"
        )
    env = dict(
        os.environ,
        PATH=path,
        RALLY_HOME=str(rally_home),
        # thespian finds an actor system's address by routing towards 8.8.8.8, and the namespace has no route: name it
        THESPIAN_BASE_IPADDR=topology.CLUSTER_ADDRESS,
        **{PRIVATE_NETWORK: "1"},
    )
    env.pop(loopback_only.FLAG, None)  # the load-driver hosts' daemons are the actor systems there, not the suite's
    inside = subprocess.run(
        ["unshare", "--net", "--", PYTHON, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "-p", "no:warnings", str(INSIDE)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=2400,
    )
    output = inside.stdout + inside.stderr
    print(output[-20000:])
    assert inside.returncode == 0, output[-12000:]
    summary = output.strip().splitlines()[-1]
    assert re.search(rf"\b{INSIDE_TESTS} passed\b", summary) and not re.search(r"skipped|failed|error", summary), summary
