"""A neighbour on the load driver's host is named (issue 86): a real test-mode race with a busy loop on one core beside
it, against the session's plain race of the same challenge. The loaded race's record names every timed cell busy, the
report's first lines and `python -m report host` (make race's last line) warn, and the plain race is read with far less
of the host taken by others."""

import subprocess
import sys

import pytest

from report.shared import host_load, races
from tests.conftest import PYTHON, REPO, assert_clean, ensure_test_index, run_race

pytestmark = pytest.mark.integration

CELLS = ["coverage-D_td-serial", "coverage-D_td-msearch", "coverage-D_hdr-msearch", "coverage-D_hdr-terms"]  # production-comparison's


def busy_loop():
    """A neighbour: a process that spins on one core until it is stopped (this test's own, stopped by it)."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def host_line(home, race_id):
    result = subprocess.run(
        [PYTHON, "-m", "report", "host", "--race", race_id, "--rally-home", str(home)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip()


def test_a_busy_loop_beside_a_race_is_named_and_a_plain_race_is_not(shared_races, tmp_path):
    ensure_test_index(shared_races)
    plain = shared_races.race("production-comparison")
    assert_clean(plain, CELLS)
    neighbour = busy_loop()
    try:
        loaded = run_race(shared_races.home, "production-comparison")
    finally:
        neighbour.kill()
        neighbour.wait()
    assert_clean(loaded, CELLS)
    plain_race, loaded_race = races.load(plain.folder()), races.load(loaded.folder())
    loaded_cells = host_load.per_cell(loaded_race)
    assert set(loaded_cells) == set(CELLS), loaded_cells
    # the spinning process's core shows as other processes' whatever else the host runs; each cell met it
    assert all(load.foreign >= 60 and load.busy for load in loaded_cells.values()), loaded_cells
    quiet = host_load.over_cells(plain_race)
    assert quiet is not None and host_load.over_cells(loaded_race).foreign - quiet.foreign >= 50, (quiet, loaded_cells)
    line = host_line(shared_races.home, loaded.race["race-id"])
    assert line.startswith("WARNING host busy during the timed cells") and all(cell in line for cell in CELLS), line
    from report.__main__ import single_report

    path, summary = single_report(loaded_race, tmp_path)
    text = path.read_text()
    assert summary[0] == line and f"**{line}**" in text.split("## ", 1)[0]  # among the first lines, before any table
    assert "## The load driver's host during the timed cells" in text
    # the cluster's node as _nodes/stats tells it, per cell: the node took CPU in each cell, its host was busy
    nodes = host_load.nodes_table(loaded_race)
    assert nodes and {row[0] for row in nodes[1]} == set(CELLS) and host_load.nodes_error(loaded_race) is None, nodes
    assert all(float(row[4]) > 0 and row[1] for row in nodes[1]), nodes
    assert "### The cluster's nodes during the timed cells (_nodes/stats)" in text
    if not quiet.busy:  # a plain race on a host nobody else loads: not named
        assert host_line(shared_races.home, plain.race["race-id"]).startswith("host quiet during race")
