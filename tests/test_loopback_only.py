"""make it's private network namespace (tests/loopback_only.py): inside, loopback is the only interface and the suite
is told it may keep one actor system; where the machine cannot make one, the command runs as it is, and says why."""

import subprocess
import sys

from tests import loopback_only
from tests.conftest import REPO

SCRIPT = str(REPO / "tests" / "loopback_only.py")
SHOW = f'echo "flag=${{{loopback_only.FLAG}:-}} thespian=${{THESPIAN_BASE_IPADDR:-}}"; ip -o link show 2>/dev/null | cut -d: -f2'


def test_the_command_runs_where_only_loopback_is_up_or_as_it_is_saying_why():
    done = subprocess.run([sys.executable, SCRIPT, "sh", "-c", SHOW], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    why_not = loopback_only.available()
    lines = done.stdout.splitlines()
    if why_not:
        assert lines[0] == f"[loopback-only] no private network namespace ({why_not}): each race starts an actor system of its own"
        assert lines[1] == "flag= thespian="
    else:
        assert lines[0].startswith("[loopback-only] in a private network namespace")
        assert lines[1] == "flag=1 thespian=127.0.0.1"
        assert [name.strip() for name in lines[2:]] == ["lo"]  # no interface of the machine's own network


def test_its_exit_status_is_the_commands():
    assert subprocess.run([sys.executable, SCRIPT, "sh", "-c", "exit 7"], capture_output=True, timeout=60).returncode == 7


def test_without_a_command_it_says_how_to_use_it():
    done = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Usage: loopback_only.py COMMAND" in done.stderr
