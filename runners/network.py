"""The network between the track and the cluster (or between two clusters), set through Toxiproxy: a round-trip time,
a fault, and a remote cluster registered for cross-cluster search through a proxy."""

import asyncio
import time

from runners import parameters
from runners.toxiproxy import DEFAULT_API, FAULTS, NO_FAULT, Toxiproxy, ToxiproxyError

PATH_CHECKS = ("http", "ccs", "none")
PROBE_RTT_MS = 20  # the path check's round-trip time: far above loopback's, small enough to cost nothing


class NetworkPathError(Exception):
    """The cluster is not behind the proxy the track sets: every timing of the race would be at zero distance."""


class NetworkLatency:
    """Sets the round-trip time of a Toxiproxy proxy (half upstream, half downstream) for the tasks that follow, after
    proving that the race's traffic goes through it: with PROBE_RTT_MS (or the RTT, if larger) set, one probe must
    take at least that long (path-check "http": GET / of the target cluster; "ccs": a size-0 search of the remote
    index through cross-cluster search; "none": no probe). Untimed; returns 1 op with rtt-ms and the probe's
    milliseconds. A proxy or probe failure ends the race with a message that names the fix."""

    async def __call__(self, es, params):
        proxy, rtt, check = params["proxy"], params["rtt-ms"], params.get("path-check", "http")
        toxiproxy = Toxiproxy(params["toxiproxy-url"])
        es.on_request_start()  # Rally times an operation by its client requests; this one starts with Toxiproxy's
        probe_rtt, probe_ms = max(rtt, PROBE_RTT_MS), None
        if check != "none":
            await asyncio.to_thread(toxiproxy.set_rtt, proxy, probe_rtt)
            probe_ms = await _probe(es, check, params.get("remote-index"))
        if probe_rtt != rtt or check == "none":
            await asyncio.to_thread(toxiproxy.set_rtt, proxy, rtt)
        es.on_request_end()
        if probe_ms is not None and probe_ms < probe_rtt:
            raise NetworkPathError(
                f"a probe took {probe_ms:.1f} ms with {probe_rtt} ms of round-trip time on Toxiproxy proxy {proxy!r}: "
                f"the {'remote cluster' if check == 'ccs' else 'target host'} is not reached through it. Point "
                f"{'the remote (track parameter ccs_proxy_address)' if check == 'ccs' else '--target-hosts'} at the "
                "proxy's listen address, or give the track parameter that names the right proxy")
        return {"weight": 1, "unit": "ops", "success": True, "rtt-ms": rtt, "probe-ms": probe_ms}

    def __repr__(self):
        return "network-latency"


async def _probe(es, check, remote_index):
    if check == "none":
        return None
    start = time.perf_counter()
    if check == "ccs":
        await es.perform_request("POST", f"/{remote_index}/_search", params={"size": "0"}, body={})
    else:
        await es.perform_request("GET", "/")
    return (time.perf_counter() - start) * 1000


class NetworkFault:
    """Puts one fault of runners.toxiproxy.FAULTS on a Toxiproxy proxy, or heals it ("none"). Untimed; returns 1 op.
    The coverages that follow record what a client sees as failed samples."""

    async def __call__(self, es, params):
        es.on_request_start()  # no Elasticsearch request: Rally's service time is the Toxiproxy call's
        await asyncio.to_thread(Toxiproxy(params["toxiproxy-url"]).set_fault, params["proxy"], params["fault"])
        es.on_request_end()
        return {"weight": 1, "unit": "ops", "success": True, "fault": params["fault"]}

    def __repr__(self):
        return "network-fault"


class RegisterRemoteCluster:
    """Registers a remote cluster for cross-cluster search in proxy mode, so that every connection to it goes through
    one address (proxy-address, or, if empty, the listen address of the Toxiproxy proxy named proxy), and waits until it is connected (at most 60 s). Sniff mode would connect
    to the remote's published addresses and bypass the proxy. Returns 1 op with the remote's connection count."""

    async def __call__(self, es, params):
        alias, address = params["alias"], params.get("proxy-address")
        if not address:  # the proxy's own listen address, from Toxiproxy
            proxy = await asyncio.to_thread(Toxiproxy(params["toxiproxy-url"]).require_proxy, params["proxy"])
            address = proxy["listen"]
        await es.cluster.put_settings(persistent={f"cluster.remote.{alias}.mode": "proxy",
                                                  f"cluster.remote.{alias}.proxy_address": address})
        deadline = time.monotonic() + 60
        info = {}
        while time.monotonic() < deadline:
            info = (await es.perform_request("GET", "/_remote/info")).body.get(alias, {})
            if info.get("connected"):
                return {"weight": 1, "unit": "ops", "success": True, "alias": alias,
                        "connections": info.get("num_proxy_sockets_connected")}
            await asyncio.sleep(0.5)
        raise NetworkPathError(f"remote cluster {alias!r} at {address} did not connect within 60 s ({info}): start "
                               "the remote cluster and its transport proxy (make ccs-setup), or give the track "
                               "parameter ccs_proxy_address")

    def __repr__(self):
        return "register-remote-cluster"


class RemoveRemoteCluster:
    """Removes the remote cluster registration this track made. Returns 1 op."""

    async def __call__(self, es, params):
        alias = params["alias"]
        await es.cluster.put_settings(persistent={f"cluster.remote.{alias}.mode": None,
                                                  f"cluster.remote.{alias}.proxy_address": None})
        return {"weight": 1, "unit": "ops", "success": True, "alias": alias}

    def __repr__(self):
        return "remove-remote-cluster"


def validate_latency(params, clients, context):
    parameters.check_operation_value("rtt-ms", [params.get("rtt-ms")], "rtt_ms")
    if params.get("path-check", "http") not in PATH_CHECKS:
        raise ValueError(f"path-check must be one of {', '.join(PATH_CHECKS)}, got {params.get('path-check')!r}")
    _check_proxy(params)


def validate_fault(params, clients, context):
    if params.get("fault") not in (*FAULTS, NO_FAULT):
        raise ValueError(f"fault must be one of {', '.join((*FAULTS, NO_FAULT))}, got {params.get('fault')!r}")
    _check_proxy(params)


def _check_proxy(params):
    """Load time, before anything changes on the cluster: Toxiproxy answers and has the proxy."""
    parameters.check_operation_value("proxy", params.get("proxy"), "network_proxy")
    try:
        Toxiproxy(params.get("toxiproxy-url") or DEFAULT_API, timeout=5.0).require_proxy(params["proxy"])
    except ToxiproxyError as e:
        raise ValueError(str(e)) from None


def validate_remote(params, clients, context):
    parameters.check_operation_value("alias", params.get("alias"), "ccs_alias")
    if "proxy-address" in params:
        parameters.check_operation_value("proxy-address", params["proxy-address"], "ccs_proxy_address")
    if params.get("proxy-address") == "":
        _check_proxy(params)
