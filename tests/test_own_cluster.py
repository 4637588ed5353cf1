"""A module's own cluster started while the module before it runs (tests/conftest.py OwnCluster), with a stand-in
launcher: which start is begun when, that the module takes the one begun for it, and that one never taken is stopped."""

from types import ModuleType, SimpleNamespace

import pytest

from tests import conftest


@pytest.fixture
def calls(monkeypatch):
    made = []

    def launcher(*args, port):
        made.append((args[0], port))
        return SimpleNamespace(returncode=0, stdout=f"{args[0]} {port}", stderr="")

    monkeypatch.setattr(conftest, "launcher", launcher)
    monkeypatch.setattr(conftest, "_OWN_CLUSTER_NEXT", {})
    return made


def modules_and_items(*clusters):
    """One module per cluster (None: a module without one), two tests each, in the session's order."""
    modules = [ModuleType(f"test_{i}") for i in range(len(clusters))]
    for module, cluster in zip(modules, clusters):
        if cluster:
            module.OWN_CLUSTER = cluster
    return modules, [SimpleNamespace(module=m) for m in modules for _ in range(2)]


def test_the_next_modules_cluster_starts_when_the_module_before_it_begins_and_is_taken_by_it(calls):
    remote = conftest.OwnCluster(9280, "--heap", "1g")
    modules, items = modules_and_items(None, remote, None)
    conftest.pytest_collection_finish(SimpleNamespace(items=items))
    conftest.pytest_runtest_setup(items[0])
    conftest.pytest_runtest_setup(items[1])
    remote.begun.result()
    assert calls == [("start", 9280)]  # begun before its own module's first test
    assert remote.start().stdout == "start 9280"
    assert calls == [("start", 9280)]  # begun once, during the module before, and not started again
    for item in items[2:]:
        conftest.pytest_runtest_setup(item)
    conftest.pytest_sessionfinish(None)
    assert calls == [("start", 9280)]  # taken: its own module stops it


def test_a_start_no_module_took_is_stopped_at_the_sessions_end(calls):
    layout = conftest.OwnCluster(9270, "--nodes", "3")
    modules, items = modules_and_items(None, layout)
    conftest.pytest_collection_finish(SimpleNamespace(items=items))
    conftest.pytest_runtest_setup(items[0])  # then the session is interrupted before the layouts' module
    conftest.pytest_sessionfinish(None)
    assert calls == [("start", 9270), ("stop", 9270)]


def test_a_first_module_starts_its_own_cluster_when_it_needs_it(calls):
    first = conftest.OwnCluster(9254, "--heap", "1g")
    modules, items = modules_and_items(first, None)
    conftest.pytest_collection_finish(SimpleNamespace(items=items))
    conftest.pytest_runtest_setup(items[0])
    assert calls == []
    assert first.start().returncode == 0 and calls == [("start", 9254)]
