"""Load-driver hosts on one machine: each in network, UTS and mount namespaces of its own (root, Linux, iproute2).

Rally's daemon (esrallyd) binds its actor system's port 1900 on every interface and has no port option, so two
daemons need two network namespaces; a host is only real when it has an address and a name of its own. Run this
inside a private network namespace (`unshare --net`), never in the machine's own: it makes a bridge there holding
CLUSTER_ADDRESS (the cluster, the metrics store and the coordinator live in that namespace) and, per host i, a
namespace held open by a sleeping process, with hostname ld-<i>, address host_address(i) on a veth link to the
bridge, no route beyond the bridge, and, for each --private directory, an empty folder of its own mounted over it
(what that host writes there stays on "its disk").

    up --hosts N --state DIR [--private PATH ...]    make them; DIR/hosts.json records them
    run --state DIR I -- COMMAND ...                 run a command on host I (its namespaces; the same files otherwise)
    down --state DIR                                 stop the sleepers (the namespaces and links go with them)

Stdlib only. tests/test_load_drivers.py drives two hosts through the Hosts class; docs/team-setup.md ("Load-driver hosts") has the
recipe by hand.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

BRIDGE = "cm-hosts"
SUBNET = "10.77.0"  # private; exists only inside the namespaces this makes
CLUSTER_ADDRESS = f"{SUBNET}.1"
PREFIX = 24
STATE_FILE = "hosts.json"
SBIN = os.pathsep.join(["/usr/sbin", "/sbin"])  # ip (iproute2) lives in sbin


class HostsError(Exception):
    """What is missing (root, a private network namespace, iproute2), named with its fix."""


def host_address(i):
    return f"{SUBNET}.{10 + i}"


def host_name(i):
    return f"ld-{i}"


def _env():
    return dict(os.environ, PATH=os.pathsep.join([os.environ.get("PATH", ""), SBIN]))


def _run(argv, what):
    result = subprocess.run(argv, capture_output=True, text=True, env=_env())
    if result.returncode != 0:
        raise HostsError(f"{what} failed: {' '.join(argv)}: {(result.stderr or result.stdout).strip()}")
    return result.stdout


def _net_namespace(pid="self"):
    return os.readlink(f"/proc/{pid}/ns/net")


def check_private_network():
    """Refuses any network namespace but a private one: one that has nothing but loopback (and what this made), as
    `unshare --net` gives. The machine's own has its interfaces (eth0, ...): the bridge and links would join it."""
    if os.geteuid() != 0:
        raise HostsError("load-driver hosts in namespaces need root (unshare, ip link); run as root")
    names = [line.split(":")[1].strip().split("@")[0] for line in _run(["ip", "-o", "link", "show"], "listing links").splitlines()]
    foreign = [name for name in names if name != "lo" and name != BRIDGE and not name.startswith("cm-ld")]
    if foreign:
        raise HostsError(
            f"this network namespace has {', '.join(foreign)}: it is not a private one (the machine's own, perhaps); "
            "start a private one first: unshare --net -- bash"
        )


def _is_sleeper(pid):
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:2] == [b"sleep", b"infinity"]
    except OSError:
        return False


def _state(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


class Hosts:
    """N load-driver hosts in namespaces of their own, below a bridge in the current (private) network namespace. Each
    host is its sleeper's pid and network namespace, recorded once the sleeper runs in it: teardown touches a host only
    while that pid is still a sleeper in that namespace (a pid is reused once its process is gone)."""

    def __init__(self, state_dir, members=None):
        self.state_dir = Path(state_dir)
        self.members = list(members or [])  # [{"pid": ..., "namespace": "net:[...]"}], host i at i - 1

    @property
    def pids(self):
        return [m["pid"] for m in self.members]

    @classmethod
    def up(cls, count, state_dir, private=()):
        check_private_network()
        state_dir = Path(state_dir)
        state_dir.mkdir(parents=True, exist_ok=True)
        _run(["ip", "link", "set", "lo", "up"], "loopback up")
        _run(["ip", "link", "add", BRIDGE, "type", "bridge"], "the bridge")
        hosts = cls(state_dir)
        try:
            _run(["ip", "addr", "add", f"{CLUSTER_ADDRESS}/{PREFIX}", "dev", BRIDGE], "the cluster's address")
            _run(["ip", "link", "set", BRIDGE, "up"], "the bridge up")
            for i in range(1, count + 1):
                hosts._add(i, private)
        except BaseException:
            hosts.down()
            raise
        (state_dir / STATE_FILE).write_text(json.dumps({"members": hosts.members, "private": [str(p) for p in private]}))
        return hosts

    @classmethod
    def of(cls, state_dir):
        path = Path(state_dir) / STATE_FILE
        if not path.is_file():
            raise HostsError(f"no load-driver hosts recorded in {state_dir} (up makes them; down forgets them)")
        return cls(state_dir, json.loads(path.read_text())["members"])

    def _add(self, i, private):
        own = _net_namespace()
        sleeper = subprocess.Popen(
            ["unshare", "--net", "--uts", "--mount", "--propagation", "private", "--", "sleep", "infinity"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 10
        # ready once unshare has made every namespace (mounts private included) and run sleep
        while not (_is_sleeper(sleeper.pid) and _net_namespace(sleeper.pid) != own):
            if sleeper.poll() is not None or time.monotonic() > deadline:
                sleeper.kill()
                sleeper.wait()
                raise HostsError(f"unshare for host {i} did not start (exit {sleeper.poll()})")
            time.sleep(0.02)
        self.members.append({"pid": sleeper.pid, "namespace": _net_namespace(sleeper.pid)})
        link = f"cm-ld{i}"
        _run(["ip", "link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", str(sleeper.pid)], f"host {i}'s link")
        _run(["ip", "link", "set", link, "master", BRIDGE], f"host {i}'s link on the bridge")
        _run(["ip", "link", "set", link, "up"], f"host {i}'s link up")
        inside = [
            f"hostname {host_name(i)}",
            "ip link set lo up",
            f"ip addr add {host_address(i)}/{PREFIX} dev eth0",
            "ip link set eth0 up",
        ]
        for n, path in enumerate(private):
            own_copy = self.state_dir / host_name(i) / f"private-{n}"
            own_copy.mkdir(parents=True, exist_ok=True)
            Path(path).mkdir(parents=True, exist_ok=True)
            inside.append(f"mount --bind {own_copy} {path}")
        _run(self.command(i, ["sh", "-ec", "; ".join(inside)]), f"host {i}'s namespaces")

    def command(self, i, argv):
        """argv as run on host i (1-based): in its network, UTS and mount namespaces."""
        # entering a mount namespace resets the working directory: keep this one, so relative paths mean the same
        return ["nsenter", "-t", str(self.pids[i - 1]), "--net", "--uts", "--mount", f"--wd={os.getcwd()}", "--", *argv]

    def private_copy(self, i, n=0):
        """Host i's own folder behind its n-th --private path (what it wrote there)."""
        return self.state_dir / host_name(i) / f"private-{n}"

    def _alive(self, i):
        """Host i's sleeper is still the process recorded, in its own namespace (not this one)."""
        member = self.members[i - 1]
        try:
            namespace = _net_namespace(member["pid"])
        except OSError:
            return False
        return _is_sleeper(member["pid"]) and namespace == member["namespace"] and namespace != _net_namespace()

    def processes(self, i):
        """Every process in host i's network namespace but its sleeper (what was started on that host); none once the
        host is gone."""
        if not self._alive(i):
            return []
        member, found = self.members[i - 1], []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and int(entry.name) != member["pid"]:
                try:
                    if os.readlink(entry / "ns" / "net") == member["namespace"]:
                        found.append(int(entry.name))
                except OSError:
                    pass  # gone meanwhile
        return found

    def down(self):
        """Every process still on a host (a daemon's actor left behind by a race that failed), then the sleepers, the
        bridge, and the record of them."""
        alive = [i for i in range(1, len(self.members) + 1) if self._alive(i)]
        left = [pid for i in alive for pid in self.processes(i)]
        for signal_number in (15, 9):
            for pid in left:
                try:
                    os.kill(pid, signal_number)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + 5
            while left and time.monotonic() < deadline:
                left = [pid for pid in left if _state(pid) != "Z"]
                time.sleep(0.1)
        for i in alive:
            pid = self.members[i - 1]["pid"]
            os.kill(pid, 15)
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass  # another process made it (the command line's up)
        subprocess.run(["ip", "link", "del", BRIDGE], capture_output=True, env=_env())
        (self.state_dir / STATE_FILE).unlink(missing_ok=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p_up = sub.add_parser("up")
    p_up.add_argument("--hosts", type=int, default=2)
    p_up.add_argument("--private", action="append", default=[])
    p_run = sub.add_parser("run")
    p_run.add_argument("host", type=int)
    p_run.add_argument("argv", nargs=argparse.REMAINDER)
    p_down = sub.add_parser("down")
    for p in (p_up, p_run, p_down):
        p.add_argument("--state", required=True)
    args = parser.parse_args(argv)
    try:
        if args.command == "up":
            hosts = Hosts.up(args.hosts, args.state, args.private)
            for i in range(1, args.hosts + 1):
                print(f"{host_name(i)}: {host_address(i)} (the cluster's namespace: {CLUSTER_ADDRESS})")
            return 0
        hosts = Hosts.of(args.state)
        if args.command == "run":
            argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
            return subprocess.run(hosts.command(args.host, argv), env=_env()).returncode
        hosts.down()
        return 0
    except HostsError as e:
        print(f"[load-driver-hosts] ERROR: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
