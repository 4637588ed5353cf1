"""Toxiproxy, the one home of how this project talks to it: its pinned release, its HTTP API (proxies from a listen
address to an upstream, and the toxics that give a link a round-trip time or a fault) and the fault vocabulary.

Stdlib only: the launcher (local-es/toxiproxy_launcher.py) uses it before the virtualenv exists, the track's network runners
during a race. Every address is the caller's; the project's defaults are loopback.
"""

import json
import urllib.error
import urllib.request

from runners.contracts.track_files import declared_defaults

VERSION = "v2.12.0"  # github.com/Shopify/toxiproxy/v2, installed with `go install` from the Go module proxy
_DECLARED = declared_defaults()  # the track parameters that name Toxiproxy and its proxies default to what we create
DEFAULT_API = _DECLARED["toxiproxy_url"]
START_FIX = "start it with `make proxy-start` (installs Toxiproxy on first use), or give the track parameter " "toxiproxy_url"

# the track's proxies, by role: the target cluster's HTTP port (RTT sweep, faults), the remote cluster's transport port
# (cross-cluster search) and the remote cluster's HTTP port (the direct cells to the far cluster)
PROXIES = {"http": _DECLARED["network_proxy"], "remote": _DECLARED["ccs_proxy"], "remote-http": _DECLARED["ccs_far_proxy"]}

# our toxics' names: only these are ever added or removed, so a user's own toxics on the same proxy are left alone
LATENCY_UP, LATENCY_DOWN, FAULT = "cluster-metrics-rtt-up", "cluster-metrics-rtt-down", "cluster-metrics-fault"
OUR_TOXICS = (LATENCY_UP, LATENCY_DOWN, FAULT)

# fault name -> (toxic type, stream, attributes, what a client sees)
FAULTS = {
    "reset": ("reset_peer", "upstream", {"timeout": 0}, "every connection is reset (TCP RST) as soon as a request is sent"),
    "black-hole": (
        "timeout",
        "upstream",
        {"timeout": 0},
        "requests vanish: no byte passes and the connection stays open until the client gives up",
    ),
    "slow-link": (
        "bandwidth",
        "downstream",
        {"rate": 1},
        "responses trickle at 1 KB/s: a coverage's response (about 5 KB) outlasts a request timeout of a few " "seconds",
    ),
    "cut-mid-response": (
        "limit_data",
        "downstream",
        {"bytes": 1024},
        "each connection is closed after its first 1,024 response bytes, in the middle of a response",
    ),
}
NO_FAULT = "none"


class ToxiproxyError(Exception):
    """Toxiproxy could not be reached or refused a change; the message names the fix."""


class Toxiproxy:
    """A client of one Toxiproxy server's HTTP API."""

    def __init__(self, url=DEFAULT_API, timeout=10.0):
        self.url, self.timeout = url.rstrip("/"), timeout

    def _call(self, method, path, body=None, missing_ok=False):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method, headers={"content-type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                payload = response.read()
        except urllib.error.HTTPError as e:
            if missing_ok and e.code == 404:
                return None
            detail = e.read().decode("utf-8", "replace")[:300]
            raise ToxiproxyError(f"Toxiproxy at {self.url} refused {method} {path}: HTTP {e.code} {detail}") from None
        except (urllib.error.URLError, OSError) as e:
            raise ToxiproxyError(f"Toxiproxy is not reachable at {self.url} ({getattr(e, 'reason', e)}): " f"{START_FIX}") from None
        return json.loads(payload) if payload else None

    def version(self):
        return self._call("GET", "/version")

    def proxy(self, name):
        """The proxy's definition with its toxics, or None if there is no proxy of that name."""
        return self._call("GET", f"/proxies/{name}", missing_ok=True)

    def ensure_proxy(self, name, listen, upstream):
        """Creates the proxy, or points an existing one of that name at listen -> upstream; enabled either way, and
        without our toxics: a race that ended early (an abort mid-sweep) must not leave its latency or fault on."""
        spec = {"name": name, "listen": listen, "upstream": upstream, "enabled": True}
        if self.proxy(name) is None:
            return self._call("POST", "/proxies", spec)
        self.clear(name)
        return self._call("POST", f"/proxies/{name}", spec)

    def require_proxy(self, name):
        """The proxy's definition; raises, naming the fix, if there is none."""
        found = self.proxy(name)
        if found is None:
            raise ToxiproxyError(
                f"Toxiproxy at {self.url} has no proxy named {name!r}: create it with "
                "`make proxy-start` (or local-es/toxiproxy_launcher.py proxy), or give the track parameter "
                "naming yours"
            )
        return found

    def clear(self, proxy):
        """Removes every toxic of ours from the proxy (a user's own are left alone): the link as it was."""
        for toxic in OUR_TOXICS:
            self.remove_toxic(proxy, toxic)

    def remove_toxic(self, proxy, toxic):
        self._call("DELETE", f"/proxies/{proxy}/toxics/{toxic}", missing_ok=True)

    def add_toxic(self, proxy, name, toxic_type, stream, attributes):
        return self._call(
            "POST",
            f"/proxies/{proxy}/toxics",
            {"name": name, "type": toxic_type, "stream": stream, "toxicity": 1.0, "attributes": attributes},
        )

    def set_rtt(self, proxy, rtt_ms):
        """Every round trip through the proxy takes rtt_ms longer: half on the way up, the rest on the way down.
        Latency is per round trip of data on an open connection (a TCP handshake is answered by the proxy itself).
        Every toxic of ours goes first: a fault left on by a race that ended early must not be measured as RTT."""
        self.require_proxy(proxy)
        self.clear(proxy)
        up = rtt_ms // 2
        if up:
            self.add_toxic(proxy, LATENCY_UP, "latency", "upstream", {"latency": up, "jitter": 0})
        if rtt_ms - up:
            self.add_toxic(proxy, LATENCY_DOWN, "latency", "downstream", {"latency": rtt_ms - up, "jitter": 0})

    def set_fault(self, proxy, fault):
        """One fault of FAULTS on the proxy, replacing every toxic of ours (a latency left on too); NO_FAULT heals it."""
        self.require_proxy(proxy)
        self.clear(proxy)
        if fault != NO_FAULT:
            toxic_type, stream, attributes, _ = FAULTS[fault]
            self.add_toxic(proxy, FAULT, toxic_type, stream, attributes)

    def toxics(self, proxy):
        return {t["name"]: t for t in (self._call("GET", f"/proxies/{proxy}/toxics") or [])}
