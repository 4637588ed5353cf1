"""Changes scoped to one call of an operation (runners/studies/scope.py), with stand-ins for the cluster and Toxiproxy
(seconds; the real ones in tests/test_network.py and tests/test_ccs.py): made before the call, taken back after it
however it ends, and invisible to Rally's timing."""

import asyncio

import pytest
from esrally.client.context import RequestContextHolder

from runners.shared.toxiproxy import FAULT, ToxiproxyError
from runners.studies import network, scope
from tests.runners.network_test import REMOTE, SettingsCluster

FAULTED = {"fault": "reset", "proxy": "cluster-metrics-http", "toxiproxy-url": "http://127.0.0.1:8474"}


class FaultToxiproxy:
    """Keeps the toxics on each proxy as Toxiproxy does."""

    toxics = {}

    def __init__(self, url, timeout=10.0):
        pass

    def set_fault(self, proxy, fault):
        self.toxics[proxy] = {FAULT: fault}

    def remove_toxic(self, proxy, toxic):
        self.toxics.get(proxy, {}).pop(toxic, None)

    def require_proxy(self, name):
        if name != "cluster-metrics-http":
            raise ToxiproxyError(f"no proxy named {name!r}")
        return {"listen": "127.0.0.1:9290"}


@pytest.fixture(autouse=True)
def toxiproxy(monkeypatch):
    FaultToxiproxy.toxics = {}
    monkeypatch.setattr(scope, "Toxiproxy", FaultToxiproxy)
    monkeypatch.setattr(network, "Toxiproxy", FaultToxiproxy)
    return FaultToxiproxy


class Seen:
    """A runner that notes what was in place while it ran, then returns, raises or hangs."""

    def __init__(self, cluster=None, ending="return"):
        self.cluster, self.ending, self.during = cluster, ending, None

    async def __call__(self, es, params):
        self.during = {"toxics": {p: dict(t) for p, t in FaultToxiproxy.toxics.items()}, "settings": dict(getattr(es, "persistent", {}))}
        if self.ending == "raise":
            raise RuntimeError("the runner failed")
        if self.ending == "hang":
            await asyncio.sleep(3600)
        return {"weight": 1, "unit": "ops", "success": True}


@pytest.mark.parametrize("ending", ["return", "raise", "cancel"])
def test_a_fault_is_on_for_the_call_only_however_it_ends(ending):
    runner = Seen(ending="hang" if ending == "cancel" else ending)

    async def call():
        task = asyncio.ensure_future(scope.Scoped(runner)(object(), dict(FAULTED)))
        if ending == "cancel":  # Ctrl-C: Rally cancels the running operation
            await asyncio.sleep(0.05)
            task.cancel()
        return await task

    if ending == "return":
        assert asyncio.run(call())["success"]
    else:
        with pytest.raises((RuntimeError, asyncio.CancelledError)):
            asyncio.run(call())
    assert runner.during["toxics"] == {"cluster-metrics-http": {FAULT: "reset"}}
    assert FaultToxiproxy.toxics == {"cluster-metrics-http": {}}


@pytest.mark.parametrize("ending", ["return", "raise", "cancel"])
def test_a_remote_is_registered_for_the_call_only_however_it_ends(ending):
    cluster, runner = SettingsCluster(), Seen(ending="hang" if ending == "cancel" else ending)
    params = {scope.REMOTE_KEY: dict(REMOTE, proxy="cluster-metrics-http")}

    async def call():
        task = asyncio.ensure_future(scope.Scoped(runner)(cluster, params))
        if ending == "cancel":
            while runner.during is None:
                await asyncio.sleep(0.01)
            task.cancel()
        return await task

    if ending == "return":
        asyncio.run(call())
    else:
        with pytest.raises((RuntimeError, asyncio.CancelledError)):
            asyncio.run(call())
    mode, address = network.remote_settings(REMOTE["alias"])
    assert runner.during["settings"] == {mode: "proxy", address: "127.0.0.1:9290"}
    assert cluster.persistent == {} and cluster.notes == {}  # as before the call, notes deleted


def test_a_call_without_scoped_parameters_changes_nothing():
    cluster = SettingsCluster()
    asyncio.run(scope.Scoped(Seen())(cluster, {"variant": "D_td"}))
    assert cluster.puts == [] and FaultToxiproxy.toxics == {}


def test_the_registration_requests_are_not_in_the_operations_timing():
    """Rally's service time runs from the first request's start to the last one's end, in the request context of
    the operation: the registration's requests happen in a context of their own."""

    class TimedCluster(SettingsCluster):
        async def perform_request(self, *args, **kwargs):
            RequestContextHolder.on_request_start()
            try:
                return await super().perform_request(*args, **kwargs)
            finally:
                RequestContextHolder.on_request_end()

    async def operation():
        ctx, token = RequestContextHolder.init_request_context()
        try:
            await scope.Scoped(Seen())(TimedCluster(), {scope.REMOTE_KEY: dict(REMOTE, proxy="cluster-metrics-http")})
            return dict(ctx)
        finally:
            RequestContextHolder.restore_context(token)

    assert asyncio.run(operation()) == {}  # nothing timed: the runner itself sent no request


def test_a_parameter_source_carries_only_the_scoped_changes_asked_for():
    assert scope.carried({"variant": "D_td", "fault": "none", "proxy": "p"}) == {}
    assert scope.carried({**FAULTED, "variant": "D_td"}) == FAULTED
    registration = {scope.REMOTE_KEY: dict(REMOTE)}
    assert scope.carried({**registration, "proxy": "p"}) == registration


@pytest.mark.parametrize(
    "params,message",
    [
        ({**FAULTED, "fault": "flood"}, "fault must be one of reset, black-hole"),
        ({**FAULTED, "proxy": "elsewhere"}, "no proxy named 'elsewhere'"),
        ({scope.REMOTE_KEY: "metrics-remote"}, "remote-registration must be an object"),
        ({scope.REMOTE_KEY: dict(REMOTE, alias="")}, "alias"),
    ],
)
def test_bad_scoped_changes_are_refused_at_load(params, message):
    with pytest.raises(ValueError, match=message):
        scope.validate(params)


def test_a_registration_cancelled_while_it_connects_is_taken_back():
    """Ctrl-C while the remote's sockets are still connecting: the settings are made, the block never entered."""

    class Connecting(SettingsCluster):
        async def perform_request(self, method, path, *args, **kwargs):
            if path == "/_remote/info":
                self.polled = True
                return type("Response", (), {"body": {REMOTE["alias"]: {"connected": False}}})()
            return await super().perform_request(method, path, *args, **kwargs)

    cluster, runner = Connecting(), Seen()
    cluster.polled = False

    async def call():
        task = asyncio.ensure_future(scope.Scoped(runner)(cluster, {scope.REMOTE_KEY: dict(REMOTE, proxy="cluster-metrics-http")}))
        while not cluster.polled:
            await asyncio.sleep(0.01)
        task.cancel()
        await task

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(call())
    assert runner.during is None  # the runner never ran
    assert cluster.persistent == {} and cluster.notes == {}


def test_the_schedule_spells_the_scoped_parameters_as_the_runners_read_them():
    from tests.conftest import rendered_challenges, rendered_tasks

    challenges = rendered_challenges()
    faulted = [t["operation"] for t in rendered_tasks(challenges["network-faults"]) if t["operation"]["name"].startswith("fault-")]
    remote = [t["operation"] for t in rendered_tasks(challenges["ccs-roundtrips"]) if "-minimize-" in t["operation"]["name"]]
    assert faulted and all(scope.carried(op) and op[scope.FAULT_KEY] != "none" for op in faulted)
    assert remote and all(scope.REMOTE_KEY in scope.carried(op) for op in remote)


def test_a_scoped_change_on_an_operation_whose_parameter_source_drops_it_is_refused():
    from runners.operations import OPERATIONS

    with pytest.raises(ValueError, match="fault would not reach this operation's runner"):
        scope.validate(dict(FAULTED), OPERATIONS["epoch-bulk"].param_source)
    scope.validate(dict(FAULTED), OPERATIONS["coverage"].param_source)  # a coverage hands it on
