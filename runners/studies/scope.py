"""Changes the track makes for one measurement, made and taken back inside the operation that measures: a remote
cluster's registration (cross-cluster search) and a fault on a Toxiproxy proxy.

Each is made before the operation's timed requests and taken back in `finally`, so that Ctrl-C (Rally cancels the
running operation), --on-error=abort (it stops after the failed operation returned) or an exception leaves the user's
cluster settings and proxies as they were. Only a killed load driver (kill -9) can leave one behind: the registration's
notes on the cluster (runners/shared/restore.py) and the launchers' clearing of our toxics (make proxy-start) cover that.
"""

import asyncio
import contextlib
import contextvars

from esrally.client.context import RequestContextHolder
from esrally.driver.runner import Delegator

from runners.shared.toxiproxy import FAULT, FAULTS, NO_FAULT, Toxiproxy
from runners.studies import network

REMOTE_KEY = "remote-registration"  # operation parameter: {alias, proxy-address, proxy, toxiproxy-url}
FAULT_KEY = "fault"  # operation parameter: a name of runners.shared.toxiproxy.FAULTS, on the proxy named by "proxy"


def carried(params):
    """The scoped changes of an operation's parameters, for a parameter source to hand on to each call's parameters."""
    keys = [REMOTE_KEY] if params.get(REMOTE_KEY) else []
    if params.get(FAULT_KEY, NO_FAULT) != NO_FAULT:
        keys += [FAULT_KEY, "proxy", "toxiproxy-url"]
    return {key: params[key] for key in keys}


async def untimed(function, *args):
    """Awaits function(*args) in a request context of its own, so that its requests do not move the operation's
    service time: Rally times an operation from its first request's start to its last request's end, whatever the
    requests were (esrally/client/context.py)."""
    context = contextvars.copy_context()
    context.run(RequestContextHolder.request_context.set, {})
    return await asyncio.get_running_loop().create_task(function(*args), context=context)


@contextlib.asynccontextmanager
async def applied(es, params):
    """Every scoped change the operation's parameters ask for (REMOTE_KEY, FAULT_KEY), for the length of the block."""
    async with _remote_registered(es, params.get(REMOTE_KEY)):
        with _fault_on(params):
            yield


@contextlib.asynccontextmanager
async def _remote_registered(es, registration):
    if not registration:
        yield
        return
    await untimed(network.register_remote, es, registration)
    try:
        yield
    finally:
        await untimed(network.remove_remote, es, registration["alias"])


@contextlib.contextmanager
def _fault_on(params):
    fault = params.get(FAULT_KEY, NO_FAULT)
    if fault == NO_FAULT:
        yield
        return
    # blocking calls to a loopback Toxiproxy (milliseconds): the removal must not wait for an event loop that Rally
    # may be stopping
    toxiproxy = Toxiproxy(params["toxiproxy-url"])
    toxiproxy.set_fault(params["proxy"], fault)
    try:
        yield
    finally:
        toxiproxy.remove_toxic(params["proxy"], FAULT)


class Scoped(Delegator):
    """A runner with the scoped changes its operation's parameters ask for made around each call (every runner of
    this track is registered so: runners/__init__.py). The runner itself knows nothing of them. A Rally delegator, so
    that Rally still sees what the runner is (a multi-cluster runner gets every cluster's client; the changes are
    made on the default cluster)."""

    async def __call__(self, es, params):
        async with applied(es["default"] if isinstance(es, dict) else es, params):
            return await self.delegate(es, params)

    def __repr__(self):
        return repr(self.delegate)


def validate(params, param_source=None):
    """Load time, before anything changes: the scoped changes an operation asks for are well formed and reachable, and
    reach its runner (an operation without a parameter source gets its parameters as they are; one with a parameter
    source only if that source hands them on: `carries_scope`)."""
    asked = [key for key in (REMOTE_KEY, FAULT_KEY) if key in carried(params)]
    if asked and param_source is not None and not getattr(param_source, "carries_scope", False):
        raise ValueError(f"{' and '.join(asked)} would not reach this operation's runner: its parameter source does not carry them")
    fault = params.get(FAULT_KEY, NO_FAULT)
    if fault != NO_FAULT:
        if fault not in FAULTS:
            raise ValueError(f"fault must be one of {', '.join((*FAULTS, NO_FAULT))}, got {fault!r}")
        network.check_proxy(params)
    registration = params.get(REMOTE_KEY)
    if registration is not None:
        if not isinstance(registration, dict):
            raise ValueError(f"{REMOTE_KEY} must be an object with alias, proxy-address, proxy, toxiproxy-url, got {registration!r}")
        network.validate_remote(registration, None, None)
