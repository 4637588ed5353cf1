"""The operation table, collected from the modules that declare one: a new operation type is one entry beside its
runner, and two modules declaring one type are refused."""

import importlib

import pytest

from runners import operations
from runners.registry import Need, Operation


class Runner:
    async def __call__(self, es, params):
        return {}


def test_every_declared_table_is_collected_whole_and_only_those():
    modules = sorted(operations.declaring_modules())
    assert "coverage" in modules and "processor" not in modules and "operations" not in modules
    for name in modules:
        table = importlib.import_module(f"runners.{name}").OPERATIONS
        assert all(operations.OPERATIONS[t] is op and operations.DECLARED_BY[t] == name for t, op in table.items())
    assert sum(len(importlib.import_module(f"runners.{name}").OPERATIONS) for name in modules) == len(operations.OPERATIONS)
    assert all(isinstance(op.need, Need) and op.need.why for op in operations.OPERATIONS.values())


def test_a_new_module_with_a_table_is_found_by_its_declaration(tmp_path):
    (tmp_path / "new_study.py").write_text('OPERATIONS = {\n    "new-study": None,\n}\n')
    (tmp_path / "helper.py").write_text("OPERATIONS_LIKE = {}\n# OPERATIONS = { in a comment is no declaration\n")
    assert list(operations.declaring_modules(tmp_path)) == ["new_study"]


def test_one_type_declared_twice_is_refused_naming_both_modules():
    op = Operation(Runner, Need("does nothing"))
    merged, by = operations.merge([("a", {"x": op}), ("b", {"y": op})])
    assert merged == {"x": op, "y": op} and by == {"x": "a", "y": "b"}
    with pytest.raises(RuntimeError, match="'x' is declared by runners/a.py and runners/b.py"):
        operations.merge([("a", {"x": op}), ("b", {"x": op})])
