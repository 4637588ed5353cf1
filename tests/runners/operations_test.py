"""The operation table, collected from the modules that declare one: a new operation type is one entry beside its
runner, and two modules declaring one type are refused."""

import importlib
from pathlib import Path

import pytest

from runners import operations, studies
from runners.contracts.registry import Need, Operation


class Runner:
    async def __call__(self, es, params):
        return {}


def test_every_declared_table_is_collected_whole_and_only_those():
    modules = [name for name, _ in studies.tables("OPERATIONS")]
    assert "coverage" in modules and "widths" not in modules  # widths declares parameter rules only
    for name in modules:
        table = importlib.import_module(f"runners.studies.{name}").OPERATIONS
        assert all(operations.OPERATIONS[t] is op and operations.DECLARED_BY[t] == name for t, op in table.items())
    assert sum(len(importlib.import_module(f"runners.studies.{name}").OPERATIONS) for name in modules) == len(operations.OPERATIONS)
    assert all(isinstance(op.need, Need) and op.need.why for op in operations.OPERATIONS.values())


def test_the_study_package_is_the_list_of_study_modules():
    """Every module file of runners/studies/ is a study module, in name order; the plug-in's other packages are not."""
    folder = Path(studies.__file__).parent
    assert list(studies.MODULES) == sorted(p.stem for p in folder.glob("*.py") if not p.stem.startswith("_"))
    assert {"coverage", "ingest", "privileges"} <= set(studies.MODULES) and "corpus" not in studies.MODULES


def test_one_type_declared_twice_is_refused_naming_both_modules():
    op = Operation(Runner, Need("does nothing"))
    merged, by = operations.merge([("a", {"x": op}), ("b", {"y": op})])
    assert merged == {"x": op, "y": op} and by == {"x": "a", "y": "b"}
    with pytest.raises(RuntimeError, match="'x' is declared by runners/studies/a.py and runners/studies/b.py"):
        operations.merge([("a", {"x": op}), ("b", {"x": op})])
