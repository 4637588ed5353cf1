"""The layers of runners/, report/, corpora-gen/ and local-es/localnode/ as pyproject.toml's import-linter contracts state them (make lint runs
lint-imports): kept by the repository, and each one broken, naming the import, when a wrong-way import is added to a
copy of the packages."""

import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import REPO

LINT_IMPORTS = [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"]


def lint_imports(root):
    # a wide terminal for its console: a contract's name on one line with its verdict
    env = {"PYTHONPATH": os.pathsep.join([str(root), str(root / "local-es")]), "COLUMNS": "200"}
    return subprocess.run([*LINT_IMPORTS, "--no-cache"], cwd=root, capture_output=True, text=True, env=env)


def test_the_repository_keeps_its_layers():
    done = lint_imports(REPO)
    assert done.returncode == 0 and "0 broken" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.mark.parametrize(
    "module, wrong_way, contract",
    [
        ("runners/contracts/cells.py", "runners.studies.coverage", "runners/: its top > studies > shared > contracts"),
        ("runners/shared/wire.py", "runners.operations", "runners/: its top > studies > shared > contracts"),
        ("report/history/series.py", "report.studies.coverage", "report/: its top > history | studies > shared"),
        ("report/studies/memory.py", "report.history.changes", "report/: its top > history | studies > shared"),
        ("report/shared/readers.py", "report.catalog", "report/: its top > history | studies > shared"),
        (
            "report/history/races.py",
            "report.history.series",
            "report/history/: trend | versions > analysis | arms > series | returns > changes > drift > host | bar | starts > races",
        ),
        (
            "report/history/host.py",
            "report.history.changes",
            "report/history/: trend | versions > analysis | arms > series | returns > changes > drift > host | bar | starts > races",
        ),
        (
            "report/history/starts.py",
            "report.history.drift",
            "report/history/: trend | versions > analysis | arms > series | returns > changes > drift > host | bar | starts > races",
        ),
        (
            "report/history/drift.py",
            "report.history.changes",
            "report/history/: trend | versions > analysis | arms > series | returns > changes > drift > host | bar | starts > races",
        ),
        (
            "report/history/arms.py",
            "report.history.analysis",
            "report/history/: trend | versions > analysis | arms > series | returns > changes > drift > host | bar | starts > races",
        ),
        ("runners/contracts/cells.py", "report.shared.uncertainty", "runners/ never imports report/"),
        ("runners/processor.py", "report.catalog", "runners/ never imports report/"),
        (
            "report/shared/races.py",
            "runners.studies.coverage",
            "report/shared and report/history read runners/ only through runners.contracts",
        ),
        (
            "report/history/changes.py",
            "runners.shared.results",
            "report/shared and report/history read runners/ only through runners.contracts",
        ),
        (
            "report/studies/memory.py",
            "runners.studies.coverage",
            "a report study imports of runners/ only runners.contracts and its own runner",
        ),
        (
            "report/studies/profile.py",
            "runners.shared.hosts",
            "a report study imports of runners/ only runners.contracts and its own runner",
        ),
        ("corpora-gen/cmgen.py", "runners.processor", "corpora-gen/ imports of runners/ only runners.contracts"),
        (
            "local-es/localnode/shared.py",
            "localnode.lifecycle",
            "local-es/localnode/: its commands > lifecycle > command | layout > distribution | jdk | checks > shared",
        ),
        (
            "local-es/localnode/distribution.py",
            "localnode.command",
            "local-es/localnode/: its commands > lifecycle > command | layout > distribution | jdk | checks > shared",
        ),
        ("local-es/localnode/cli.py", "report.catalog", "local-es/localnode/ never imports report/"),
    ],
)
def test_a_wrong_way_import_breaks_its_contract_naming_it(tmp_path, module, wrong_way, contract):
    for package in ("runners", "report", "corpora-gen", "local-es/localnode"):
        shutil.copytree(REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "tests").mkdir()
    for name in ("__init__.py", "import_contracts.py"):  # our contract types
        shutil.copy(REPO / "tests" / name, tmp_path / "tests")
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    path = tmp_path / module
    path.write_text(path.read_text() + f"\nimport {wrong_way}  # noqa: E402,F401\n")
    done = lint_imports(tmp_path)
    importer = module if module.startswith("corpora-gen/") else module.removeprefix("local-es/").removesuffix(".py").replace("/", ".")
    assert done.returncode != 0 and f"{contract} BROKEN" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"{importer} -> {wrong_way}" in done.stdout, done.stdout[-3000:]
