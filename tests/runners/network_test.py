"""The network runners with a stub client and a recording stand-in for Toxiproxy (seconds; the real Toxiproxy
in tests/test_network.py): the path check, the order of changes, the load-time checks."""

import asyncio

import pytest

from runners import network
from runners.toxiproxy import FAULTS, ToxiproxyError
from stub_client import StubClient


class RecordingToxiproxy:
    calls = []
    proxies = {"cluster-metrics-http": {"listen": "127.0.0.1:9290"}}

    def __init__(self, url, timeout=10.0):
        self.url = url

    def set_rtt(self, proxy, rtt):
        self.calls.append(("rtt", proxy, rtt))

    def set_fault(self, proxy, fault):
        self.calls.append(("fault", proxy, fault))

    def require_proxy(self, name):
        if name not in self.proxies:
            raise ToxiproxyError(f"no proxy named {name!r}")
        return self.proxies[name]


@pytest.fixture(autouse=True)
def toxiproxy(monkeypatch):
    RecordingToxiproxy.calls = []
    monkeypatch.setattr(network, "Toxiproxy", RecordingToxiproxy)
    return RecordingToxiproxy


def latency(rtt, check="http"):
    return {
        "proxy": "cluster-metrics-http",
        "rtt-ms": rtt,
        "toxiproxy-url": "http://127.0.0.1:8474",
        "path-check": check,
        "remote-index": "metrics-remote:cluster-metrics",
    }


class ProxiedClient(StubClient):
    """Answers after work_ms, plus the RTT the recording Toxiproxy last set when proxied (a cluster behind it)."""

    def __init__(self, work_ms, proxied, toxiproxy):
        super().__init__([(200, {"tagline": "You Know, for Search"})] * 5)
        self.work_ms, self.proxied, self.toxiproxy = work_ms, proxied, toxiproxy

    async def perform_request(self, *args, **kwargs):
        rtts = [c[2] for c in self.toxiproxy.calls if c[0] == "rtt"]
        await asyncio.sleep((self.work_ms + (rtts[-1] if self.proxied and rtts else 0)) / 1000)
        return await super().perform_request(*args, **kwargs)


def test_latency_is_set_after_the_path_is_proven(toxiproxy):
    client = ProxiedClient(5, True, toxiproxy)
    result = asyncio.run(network.SetRtt()(client, latency(0)))
    assert result["rtt-ms"] == 0 and result["probe-added-ms"] >= network.PROBE_RTT_MS / 2
    # two probes without latency, three with PROBE_RTT_MS (one untimed), then the link gets the RTT asked for
    assert toxiproxy.calls == [
        ("rtt", "cluster-metrics-http", 0),
        ("rtt", "cluster-metrics-http", network.PROBE_RTT_MS),
        ("rtt", "cluster-metrics-http", 0),
    ]
    assert [r["path"] for r in client.sent] == ["/"] * 5 and client.marks == ["start", "end"]


def test_a_cluster_not_behind_the_proxy_ends_the_race(toxiproxy):
    with pytest.raises(network.NetworkPathError, match="target host is not reached through it"):
        asyncio.run(network.SetRtt()(ProxiedClient(0, False, toxiproxy), latency(50)))


def test_a_slow_probe_is_not_taken_for_latency(toxiproxy):
    """A search slower than the probe's RTT by itself, not behind the proxy, is still refused."""
    with pytest.raises(network.NetworkPathError, match="remote cluster is not reached"):
        asyncio.run(network.SetRtt()(ProxiedClient(network.PROBE_RTT_MS + 20, False, toxiproxy), latency(0, "ccs")))


def test_the_ccs_path_check_searches_the_remote_index(toxiproxy):
    client = ProxiedClient(0, True, toxiproxy)
    asyncio.run(network.SetRtt()(client, latency(50, "ccs")))
    assert client.sent[0]["path"] == "/metrics-remote:cluster-metrics/_search"


@pytest.mark.parametrize("fault", [*FAULTS, "none"])
def test_a_fault_goes_on_the_named_proxy(toxiproxy, fault):
    client = StubClient([])
    result = asyncio.run(
        network.SetFault()(client, {"proxy": "cluster-metrics-http", "fault": fault, "toxiproxy-url": "http://127.0.0.1:8474"})
    )
    assert result["success"] and toxiproxy.calls == [("fault", "cluster-metrics-http", fault)]
    assert client.marks == ["start", "end"] and not client.sent  # timed, yet nothing sent to Elasticsearch


@pytest.mark.parametrize(
    "params,message",
    [
        ({"fault": "flood", "proxy": "cluster-metrics-http"}, "fault must be one of reset, black-hole"),
        ({"fault": "reset", "proxy": "elsewhere"}, "no proxy named 'elsewhere'"),
    ],
)
def test_bad_fault_operations_are_refused_at_load(params, message):
    with pytest.raises(ValueError, match=message):
        network.validate_fault({"toxiproxy-url": "http://127.0.0.1:8474", **params}, 1, None)


@pytest.mark.parametrize("rtt,message", [(-1, "rtt-ms must be a non-empty list of round-trip times"), ("50", "rtt-ms must be")])
def test_bad_round_trip_times_are_refused_at_load(rtt, message):
    with pytest.raises(ValueError, match=message):
        network.validate_latency(latency(rtt), 1, None)


def test_the_remote_is_registered_at_the_proxy_listen_address_when_none_is_given():
    class Cluster(StubClient):
        def __init__(self):
            super().__init__([(200, {"metrics-remote": {"connected": True, "num_proxy_sockets_connected": 18}})])
            self.settings = []

        @property
        def cluster(self):
            return self

        async def put_settings(self, persistent):
            self.settings.append(persistent)

    client = Cluster()
    result = asyncio.run(
        network.RegisterRemote()(
            client,
            {"alias": "metrics-remote", "proxy-address": "", "proxy": "cluster-metrics-http", "toxiproxy-url": "http://127.0.0.1:8474"},
        )
    )
    assert result["connections"] == 18
    assert client.settings[0] == {"cluster.remote.metrics-remote.mode": None, "cluster.remote.metrics-remote.proxy_address": None}  # afresh
    assert client.settings[1:] == [
        {"cluster.remote.metrics-remote.mode": "proxy", "cluster.remote.metrics-remote.proxy_address": "127.0.0.1:9290"}
    ]
