"""The network between the track and the cluster (or between two clusters), set through Toxiproxy: a round-trip time,
and a remote cluster registered for cross-cluster search through a proxy (made and taken back around one operation's
call by runners/studies/scope.py, as a fault is)."""

import asyncio
import time

from runners.contracts import parameters, rules
from runners.contracts.context import DEFAULT_CLUSTER
from runners.contracts.queries import CCS_DIRECT_ROUTES, TRANSPORTS, VARIANTS
from runners.contracts.registry import Need, Operation
from runners.shared import interleave, restore
from runners.shared.toxiproxy import DEFAULT_API, FAULTS, Toxiproxy, ToxiproxyError

PATH_CHECKS = ("http", "ccs", "none")
PROBE_RTT_MS = 50  # the path check's round-trip time: far above loopback's noise, small enough to cost nothing
PROBES = 3  # timed probes on each side of the path check, the fastest counts


class NetworkPathError(Exception):
    """The cluster is not behind the proxy the track sets: every timing of the race would be at zero distance."""


class SetRtt:
    """Sets the round-trip time of a Toxiproxy proxy (half upstream, half downstream) for the tasks that follow, after
    proving that the race's traffic goes through it: the same probe, timed with no added latency and with
    PROBE_RTT_MS set (the fastest of PROBES each time, after one untimed probe), must take at least half of PROBE_RTT_MS
    longer the second time (path-check "http": GET / of the cluster the parameter "cluster" names, by default the
    target cluster; "ccs": a size-0 search of the remote index through cross-cluster search; "none": no probe). The difference, not the probe's own time, decides: a
    search can take longer than PROBE_RTT_MS by itself. Untimed; returns 1 op with rtt-ms and the latency the probe
    saw added. A proxy or probe failure ends the race with a message that names the fix."""

    multi_cluster = True  # the probe asks the cluster behind the proxy (Rally's --target-hosts alias)

    async def __call__(self, es, params):
        if isinstance(es, dict):
            es = es[params.get("cluster", DEFAULT_CLUSTER) if params.get("path-check", "http") == "http" else DEFAULT_CLUSTER]
        # the lead of an interleaved group (rtt-sweep): the round-trip time set before the first cell takes its turn
        return await interleave.as_lead(params, lambda: self._set(es, params))

    async def _set(self, es, params):
        proxy, rtt, check = params["proxy"], params["rtt-ms"], params.get("path-check", "http")
        toxiproxy = Toxiproxy(params["toxiproxy-url"])
        es.on_request_start()  # Rally times an operation by its client requests; this one starts with Toxiproxy's
        added_ms = None
        if check != "none":
            await asyncio.to_thread(toxiproxy.set_rtt, proxy, 0)
            base_ms = await _fastest_probe(es, check, params.get("remote-index"))
            await asyncio.to_thread(toxiproxy.set_rtt, proxy, PROBE_RTT_MS)
            added_ms = await _fastest_probe(es, check, params.get("remote-index")) - base_ms
        await asyncio.to_thread(toxiproxy.set_rtt, proxy, rtt)
        es.on_request_end()
        if added_ms is not None and added_ms < PROBE_RTT_MS / 2:
            raise NetworkPathError(
                f"{PROBE_RTT_MS} ms of round-trip time on Toxiproxy proxy {proxy!r} added {added_ms:.1f} ms to a probe: "
                f"the {'remote cluster' if check == 'ccs' else 'target host'} is not reached through it. Point "
                f"{'the remote (track parameter ccs_proxy_address)' if check == 'ccs' else _target(params)} at the "
                "proxy's listen address, or give the track parameter that names the right proxy"
            )
        return {"weight": 1, "unit": "ops", "success": True, "rtt-ms": rtt, "probe-added-ms": added_ms}

    def __repr__(self):
        return "set-rtt"


def _target(params):
    """Where the probed cluster's address is given: Rally's --target-hosts, under the task's cluster alias."""
    cluster = params.get("cluster", DEFAULT_CLUSTER)
    return "--target-hosts" if cluster == DEFAULT_CLUSTER else f"the cluster {cluster!r} of --target-hosts"


async def _fastest_probe(es, check, remote_index, probes=PROBES):
    """The fastest of `probes` timed probes, after one untimed: the first search after a remote's registration is
    cold (a base taken from it hid half of PROBE_RTT_MS on a slower machine), and Toxiproxy swaps a live
    connection's toxics asynchronously, so the first request after a change may miss part of the delay."""
    await _probe(es, check, remote_index)
    return min([await _probe(es, check, remote_index) for _ in range(probes)])


async def _probe(es, check, remote_index):
    if check == "none":
        return None
    start = time.perf_counter()
    if check == "ccs":
        await es.perform_request("POST", f"/{remote_index}/_search", params={"size": "0"}, body={})
    else:
        await es.perform_request("GET", "/")
    return (time.perf_counter() - start) * 1000


def clear_toxics(params):
    """Every toxic of this track off each proxy a clear-toxics task names (its operation parameters)."""
    toxiproxy = Toxiproxy(params["toxiproxy-url"])
    for proxy in params["proxies"]:
        toxiproxy.require_proxy(proxy)
        toxiproxy.clear(proxy)


class ClearToxics:
    """Removes every toxic of this track from each named Toxiproxy proxy: the first and last task of every network
    challenge. A fault never outlives its operation (runners/studies/scope.py); a round-trip time set by set-rtt lasts until
    the next one, so a race that ended early leaves at most a latency, which the next network race clears here (and
    the track processor once more before the benchmark starts, ahead of Rally's own telemetry requests). Untimed;
    returns 1 op."""

    async def __call__(self, es, params):
        es.on_request_start()  # no Elasticsearch request: Rally's service time is Toxiproxy's
        await asyncio.to_thread(clear_toxics, params)
        es.on_request_end()
        return {"weight": 1, "unit": "ops", "success": True, "proxies": list(params["proxies"])}

    def __repr__(self):
        return "clear-toxics"


def remote_settings(alias):
    """The persistent settings a proxy-mode registration of the remote cluster `alias` sets."""
    return [f"cluster.remote.{alias}.mode", f"cluster.remote.{alias}.proxy_address"]


async def register_remote(es, registration):
    """Registers a remote cluster for cross-cluster search in proxy mode, so that every connection to it goes through
    one address (registration "proxy-address", or, if empty, the listen address of the Toxiproxy proxy "proxy"), and
    waits until every proxy socket is connected (at most 60 s), so that no connection is still being opened while a
    search is timed. Sniff mode would connect to the remote's published addresses and bypass the proxy.
    Before it changes anything: a registration a killed race of this track left is removed (its notes,
    runners/shared/restore.py), a remote of the user's under the same alias is refused (nothing of it is touched), and the
    settings are noted on the cluster, so that remove_remote, or the next race, takes them away again. Called only
    inside the operation that uses the remote (runners/studies/scope.py). Returns the remote's connection count."""
    alias, address = registration["alias"], registration.get("proxy-address")
    if not address:  # the proxy's own listen address, from Toxiproxy
        proxy = await asyncio.to_thread(Toxiproxy(registration["toxiproxy-url"]).require_proxy, registration["proxy"])
        address = proxy["listen"]
    await restore.leftovers(es)
    prefix = f"cluster.remote.{alias}."
    theirs = {k: v for k, v in (await restore.persistent_settings(es)).items() if k.startswith(prefix)}
    if theirs:
        raise RemoteInUseError(
            f"a remote cluster {alias!r} is registered on this cluster ({theirs}) and no race of this track noted "
            f"it: a remote of your own keeps its registration; give the track parameter ccs_alias another name (or, "
            f'if an older version of this track left it, remove it: PUT _cluster/settings {{"persistent": {{"{prefix}*": null}}}})'
        )
    mode, proxy_address = remote_settings(alias)
    for setting in (mode, proxy_address):
        await restore.note(es, setting, None)
    await restore.put_settings(es, {mode: "proxy", proxy_address: address})
    try:
        return await _connected(es, alias, address)
    except BaseException:  # Ctrl-C (cancelled) or a failure while it connects: the registration goes with it
        await remove_remote(es, alias)
        raise


async def _connected(es, alias, address):
    """The remote's proxy socket count once every socket is connected (or once it is connected, at the deadline)."""
    deadline = time.monotonic() + 60
    info = {}
    while time.monotonic() < deadline:
        info = restore.body_of(await es.perform_request("GET", "/_remote/info")).get(alias, {})
        sockets, wanted = info.get("num_proxy_sockets_connected", 0), info.get("max_proxy_socket_connections", 0)
        if info.get("connected") and sockets >= wanted:
            return sockets
        await asyncio.sleep(REMOTE_POLL_SECONDS)
    if info.get("connected"):
        return info.get("num_proxy_sockets_connected")
    raise NetworkPathError(
        f"remote cluster {alias!r} at {address} did not connect within 60 s ({info}): start "
        "the remote cluster and its transport proxy (make ccs-roundtrips), or give the track "
        "parameter ccs_proxy_address"
    )


REMOTE_POLL_SECONDS = 0.02


async def remove_remote(es, alias):
    """Removes the remote cluster registration register_remote made, reads it back and deletes its notes
    (runners/shared/restore.py: a failure names the request that removes it by hand)."""
    await restore.put_back(es, {setting: None for setting in remote_settings(alias)})


class RemoteInUseError(Exception):
    """The remote cluster alias the track would register is a registration of the user's."""


def validate_latency(params, clients, context):
    parameters.check_operation_value("rtt-ms", [params.get("rtt-ms")], "rtt_ms")
    if params.get("path-check", "http") not in PATH_CHECKS:
        raise ValueError(f"path-check must be one of {', '.join(PATH_CHECKS)}, got {params.get('path-check')!r}")
    check_proxy(params)


def validate_clear(params, clients, context):
    if not isinstance(params.get("proxies"), list) or not params["proxies"]:
        raise ValueError(f"proxies must be a non-empty list of Toxiproxy proxy names, got {params.get('proxies')!r}")
    for proxy in params["proxies"]:
        check_proxy(dict(params, proxy=proxy))


def check_proxy(params):
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
        check_proxy(params)


# the network (Toxiproxy): RTT sweep, cross-cluster search, faults
PARAMETER_RULES = {
    "toxiproxy_url": rules.http_url,
    "network_proxy": rules.string,
    "rtt_ms": rules.list_of(rules.integer(0, 60000), "round-trip times in ms (0 to 60000)"),
    "rtt_variants": rules.names(tuple(VARIANTS)),
    "rtt_transports": rules.names(TRANSPORTS),
    "rtt_iterations": rules.integer(1),
    "ccs_alias": rules.string,
    "ccs_proxy": rules.string,
    "ccs_proxy_address": rules.host_port_or_empty,
    "ccs_transports": rules.names(TRANSPORTS),
    "ccs_minimize_roundtrips": rules.list_of(rules.boolean, "true/false"),
    # seed 001's point: its round-trip times, its remote asked directly beside CCS, its schedule (1 warm-up)
    "ccs_shards": rules.integer(1, 1024),
    "ccs_rtt_ms": rules.list_of(rules.integer(0, 60000), "round-trip times in ms (0 to 60000)"),
    "ccs_variants": rules.names(tuple(VARIANTS)),
    "ccs_direct": rules.names_or_none(CCS_DIRECT_ROUTES),
    "ccs_far_alias": rules.string,
    "ccs_far_proxy": rules.string,
    "ccs_warmup_iterations": rules.integer(0),
    "ccs_iterations": rules.integer(1),
    "faults": rules.names(tuple(FAULTS)),
    "fault_request_timeout": rules.positive_number,
}


OPERATIONS = {
    "set-rtt": Operation(SetRtt, Need("probes the target cluster (GET /)", ("monitor",)), validate=validate_latency),
    "clear-toxics": Operation(ClearToxics, Need("talks to Toxiproxy only"), validate=validate_clear),
}
