"""The recipe holds: a study added exactly as docs/adding-a-study.md writes it, in a copy of the
repository, passes what the unit tier runs on a new study, and its report section builds on a race of it read from
files and from a metrics store's form of the same race. The blocks are read from the page itself, so when the page or
the code drifts, this test fails and names the step."""

import json
import re
import shutil
import subprocess
import sys

import pytest

from tests.conftest import REPO

RECIPE = REPO / "docs" / "adding-a-study.md"
BLOCK = re.compile(r"^```\w+ file=(\S+)([^\n]*)\n(.*?)^```$", re.S | re.M)
COPIED = (
    "runners",
    "tracks",
    "challenges",
    "report",
    "tests",
    "corpora-gen",
    "local-es",
    "docs",
    ".ci",
    "Makefile",
    "pytest.ini",
    "pyproject.toml",
)
COPIED += ("README.md", "CHANGELOG.md", "requirements.txt", "requirements-no-deps.txt", ".gitignore")
# what the unit tier runs that reads the set of studies (each module found by a run of the whole unit tier in a copy
# holding the recipe's study): its own tests, the track's checks over every challenge, the operation and parameter
# tables, the privileges, the hosts and scope wrappers, the report's collection of sections, charts and trend figures,
# every section on full-scale races in every shape, the layers (its report module imports its own runner) and links
UNIT_TESTS = (
    "tests/runners/doc_count_test.py",
    "tests/test_track_files.py",
    "tests/test_challenges.py",
    "tests/test_track_repository.py",
    "tests/runners/operations_test.py",
    "tests/runners/privileges_test.py",
    "tests/runners/processor_test.py",
    "tests/runners/processor_parameters_test.py",
    "tests/runners/processor_challenges_test.py",
    "tests/runners/hosts_test.py",
    "tests/runners/scope_test.py",
    "tests/report/main_test.py",
    "tests/report/full_scale_test.py",
    "tests/test_layers.py::test_the_repository_keeps_its_layers",
    "tests/test_links.py",
)

# a race of the study: its runner against a stub client writes its records into a race folder beside a race.json;
# the report reads it from there, then from a store's form of it (the records its samples carry, replayed)
REPORT_SCRIPT = r"""
import asyncio, json, shutil, sys
from pathlib import Path
from report.shared import races
from report import __main__ as report_main
from report import catalog
from runners.contracts import records
from runners.contracts.context import CONTEXT_KEY, RaceContext
from runners.studies import doc_count
from tests.report.races_test import StoreForm
from tests.runners.stub_client import StubClient

out = Path(sys.argv[1])
fixture = next(Path("tests/fixtures/full-race/.rally/benchmarks/races").iterdir())
race_dir = out / "race"
shutil.copytree(fixture, race_dir)
shutil.rmtree(race_dir / records.RECORD_DIR, ignore_errors=True)
data = json.loads((race_dir / "race.json").read_text())
data["challenge"] = "doc-count"
(race_dir / "race.json").write_text(json.dumps(data))
context = RaceContext("cluster-metrics", ("N001",), (1,), "full", "", "", {"1": 90}, str(race_dir / records.RECORD_DIR), {})
metas = []
for answer in (90, 90, 90):
    result = asyncio.run(doc_count.DocCount()(StubClient([(200, {"count": answer})]), {CONTEXT_KEY: context.as_param()}))
    metas.append(result[records.META_KEY])


section = next(s for s in catalog.SECTIONS if s.build.__module__ == "report.studies.doc_count")
chart = next(c for c in catalog.CHARTS if c.draw.__module__ == "report.studies.doc_count")
for form, race in (("files", races.load(race_dir)), ("store", races.Stored(StoreForm(data, metas)).race())):
    table = section.build(race)
    print(form, json.dumps(table))
    report_main.single_report(race, out / form)
    text = next(Path(out / form).rglob("report.md")).read_text()
    assert "## " + section.title in text, f"the report from {form} has no section {section.title!r}"
    assert f"]({chart.file})" in text and next(Path(out / form).rglob(chart.file)).stat().st_size > 0, f"no chart {chart.file} from {form}"

# make trend over two races of it: its figure, in its unit
home = out / "home"
for n in (1, 2):
    copy = home / ".rally" / "benchmarks" / "races" / f"{n:08d}-0000-0000-0000-000000000000"
    shutil.copytree(race_dir, copy)
    data = {**json.loads((copy / "race.json").read_text()), "race-id": copy.name, "race-timestamp": f"2026010{n}T000000Z"}
    (copy / "race.json").write_text(json.dumps(data))
assert report_main.main(["trend", "--rally-home", str(home), "--out", str(out / "trend")]) == 0
trend = next((out / "trend").rglob("report.md")).read_text()
print("trend", json.dumps(["### count wall (µs)" in trend, trend.count(" µs")]))
"""


def recipe_blocks():
    """[(path, attributes, text)] of the recipe's file blocks, in the page's order."""
    section = RECIPE.read_text()
    return [(path, attributes.strip(), text) for path, attributes, text in BLOCK.findall(section)]


def write_block(root, path, attributes, text):
    """One step of the recipe, as the page says it: a new file, a parameter line after the others, a README row."""
    target = root / path
    if target.is_file() and text in target.read_text():
        return  # the repository holds the example already (it was written from this page): nothing to add
    if "edit=after-the-parameters" in attributes:
        lines = target.read_text().splitlines(keepends=True)
        last = max(i for i, line in enumerate(lines) if line.startswith("{% set p_"))
        target.write_text("".join(lines[: last + 1]) + text + "".join(lines[last + 1 :]))
    elif "edit=row" in attributes:
        table = re.search(r'table="([^"]+)"', attributes).group(1)
        lines = target.read_text().splitlines(keepends=True)
        heading = next(i for i, line in enumerate(lines) if line.startswith("#") and line.lstrip("#").strip().startswith(table))
        first = next(i for i in range(heading, len(lines)) if lines[i].startswith("|"))  # the table under the heading
        last = next((i for i in range(first, len(lines)) if not lines[i].startswith("|")), len(lines)) - 1
        target.write_text("".join(lines[: last + 1]) + text + "".join(lines[last + 1 :]))
    else:
        assert not target.exists(), f"the recipe's {path} exists already in the repository: the example study must be new"
        target.write_text(text)


def copy_of_repository(root):
    for name in COPIED:
        source = REPO / name
        if source.is_symlink():
            (root / name).symlink_to(source.readlink())
        elif source.is_dir():
            shutil.copytree(source, root / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
        else:
            shutil.copy2(source, root / name)


def run(root, *command):
    return subprocess.run([sys.executable, *command], cwd=root, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_a_study_written_by_the_recipe_passes_the_unit_checks_and_reports_from_files_and_a_store(tmp_path):
    blocks = recipe_blocks()
    files = [path for path, _, _ in blocks]
    recipe_files = {"runners/studies/doc_count.py", "report/studies/doc_count.py", "tests/runners/doc_count_test.py"}
    assert len(set(files)) == 6 and recipe_files <= set(
        files
    ), f"docs/adding-a-study.md gives {files}: the recipe test follows its blocks (a ```lang file=PATH block each)"
    root = tmp_path / "repository"
    root.mkdir()
    copy_of_repository(root)
    for path, attributes, text in blocks:
        write_block(root, path, attributes, text)
    for git in (("init", "-q"), ("add", "-A")):  # the link check reads the tracked Markdown files, the study's included
        subprocess.run(["git", *git], cwd=root, check=True, capture_output=True)

    steps = [
        ("the track renders with the study's challenge", ("-c", "from tests.conftest import rendered_track; "
         "assert 'doc-count' in {c['name'] for c in rendered_track()['challenges']}")),
        ("its operation is collected", ("-c", "from runners.operations import OPERATIONS; assert repr(OPERATIONS['doc-count'].runner()) == 'doc-count'")),
        ("its privileges are listed (make privileges)", ("-m", "runners.listings", "privileges")),
        ("its parameters are listed (make params)", ("-m", "runners.listings", "params")),
        ("the unit tier's checks of a study pass", ("-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                                                     "-m", "not integration and not slow", *UNIT_TESTS)),
        ("its report section builds from files and from a store's form", ("-c", REPORT_SCRIPT, str(tmp_path / "out"))),
    ]  # fmt: skip
    outputs = {}
    for what, command in steps:
        done = run(root, *command)
        assert done.returncode == 0, f"recipe step '{what}' failed in the copy:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        outputs[what] = done.stdout
    assert "doc-count" in outputs["its privileges are listed (make privileges)"]
    assert "doc_count_iterations" in outputs["its parameters are listed (make params)"]
    # the same table from files and from the store's form: 3 counts of 90 documents, none that differs
    tables = dict(line.split(" ", 1) for line in outputs["its report section builds from files and from a store's form"].splitlines())
    assert tables["files"] == tables["store"] == '[["counts", "corpus documents", "counts that differ"], [[3, 90, 0]]]', tables
    # its figure in make trend over two races, the levels in its own unit
    shown, levels = json.loads(tables["trend"])
    assert shown and levels >= 3, tables["trend"]  # the level of its one segment and each race's point
