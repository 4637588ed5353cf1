"""What start checks of this machine before it builds or runs anything: the heap, the memory, the ports, the extra
HTTP address and taskset, each refused with its fix."""

import ipaddress
import re
import shutil
import socket

from localnode.shared import LauncherError


def parse_heap(heap):
    match = re.fullmatch(r"(\d+)([mMgG])", heap)
    if not match or int(match.group(1)) <= 0:
        raise LauncherError(f"heap size {heap!r} is not valid: use e.g. HEAP=1g or HEAP=512m.")
    return int(match.group(1)) * (1024 if match.group(2).lower() == "g" else 1)


def check_memory(heap_mb, nodes):
    available_kb = None
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemAvailable:"):
                available_kb = int(line.split()[1])
    if available_kb is None:
        return
    needed_mb = nodes * (heap_mb + 512)  # heap plus off-heap (direct buffers, metaspace, threads)
    available_mb = available_kb // 1024
    if needed_mb > available_mb:
        raise LauncherError(
            f"not enough memory: {nodes} node(s) with HEAP={heap_mb}m need about {needed_mb} MB, "
            f"{available_mb} MB is available. Use a smaller HEAP (e.g. HEAP=512m) or fewer NODES."
        )


def port_is_free(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # like Elasticsearch itself: TIME_WAIT leftovers of a stopped node must not count, a listener must
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def check_ports_free(layout):
    for node in layout:
        for port in (node["http_port"], node["transport_port"]):
            if not port_is_free(port):
                raise LauncherError(
                    f"port {port} on 127.0.0.1 is in use by a process this launcher did not start. "
                    f"Stop that process, or pick other ports with PORT=<http port> (transport uses PORT+100)."
                )


def check_also_bind(address):
    """The extra HTTP address, an IP this network namespace has (else the node would fail to bind, minutes later)."""
    if address is None:
        return None
    try:
        ipaddress.ip_address(address)
    except ValueError:
        raise LauncherError(f"--also-bind {address!r} is not an IP address: give one of this network namespace's.") from None
    try:
        with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET) as sock:
            sock.bind((address, 0))
    except OSError as e:
        raise LauncherError(f"--also-bind {address}: no such address here ({e.strerror}); give one of `ip addr`'s.") from None
    return address


def check_taskset(layout):
    if any(n.get("cpu") is not None for n in layout) and not shutil.which("taskset"):
        raise LauncherError("--pin-cores runs each data node under taskset, which is not installed: apt-get install util-linux.")
