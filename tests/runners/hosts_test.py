"""Every sample of this track's runners names the load-driver host that ran it, whatever the runner returns."""

import asyncio

import pytest

from runners.shared import hosts


class Returns:
    def __init__(self, value):
        self.value = value

    async def __call__(self, es, params):
        return self.value


@pytest.mark.parametrize(
    "returned,expected",
    [
        ({"weight": 3, "unit": "docs", "success": True}, {"weight": 3, "unit": "docs", "success": True}),
        ((5, "coverages"), {"weight": 5, "unit": "coverages"}),
        (None, {}),  # Rally's defaults: weight 1, unit ops
    ],
)
def test_a_sample_names_its_host(returned, expected, monkeypatch):
    monkeypatch.setattr(hosts, "this_host", lambda: "ld-2")
    assert asyncio.run(hosts.NamesItsHost(Returns(returned))(None, {})) == {**expected, hosts.HOST_KEY: "ld-2"}


def test_the_registered_runners_name_their_host():
    """Registration wraps every operation's runner so (runners/__init__.py)."""
    from esrally.driver import runner as rally_runner

    from runners import register
    from runners.operations import OPERATIONS

    class Registry:
        def __init__(self):
            self.runners = {}

        def register_runner(self, name, runner, **kwargs):
            self.runners[name] = runner

        def __getattr__(self, name):
            return lambda *args, **kwargs: None

    registry = Registry()
    register(registry)
    assert set(registry.runners) == set(OPERATIONS)
    assert all(isinstance(r, hosts.NamesItsHost) for r in registry.runners.values())
    assert all(type(rally_runner.unwrap(r)) is OPERATIONS[name].runner for name, r in registry.runners.items())
