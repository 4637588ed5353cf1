"""The load driver's host over each timed cell (report/shared/host_load.py): a window's share of the record's intervals,
busy named from the stated thresholds, and the trend's "what changed with it" and alert."""

import json
import math

import numpy as np
import pytest

from report.history import changes
from report.history import host as history_host
from report.shared import host_load
from report.shared.races import Race
from report.studies.coverage_answer import COVERAGE_TIME as FIGURE
from runners.contracts import records
from runners.shared.host_load import CLOCK_TICKS
from tests.report.history_test import history

T0 = 1_796_000_000.0


def line(
    start, foreign_core=0.02, steal=0.0, cpus=2, host="vm", seconds=1.0, **levels
):  # parameters: a sampler line's fields, each a keyword with its default
    """A sampler's line over [start, start + seconds]: other processes on `foreign_core` of a core, steal as a share of
    the CPU time."""
    total = round(cpus * CLOCK_TICKS * seconds)
    return {
        "start": start,
        "end": start + seconds,
        "host": host,
        "cpus": cpus,
        "total": total,
        "busy": round(total * 0.6),
        "steal": round(total * steal),
        "iowait": 0,
        "rally": round(CLOCK_TICKS * seconds * 0.3),
        "elasticsearch": round(CLOCK_TICKS * seconds * 0.9),
        "foreign": round(CLOCK_TICKS * seconds * foreign_core),
        "running": levels.get("running", 2),
        "load1": levels.get("load1", 1.0),
        "mem_available_kb": levels.get("mem_available_kb", 20_000_000),
        "major_faults": 0,
        "freq_mhz": None,
        "throttled": None,
    }


def race_with(host_lines, windows, race_id="r1"):
    """A race whose measured coverages ran in these windows {task: [(start, end)]}, with this host record."""
    validation = [{"task": task, "window": list(w), "measured": True} for task, ws in windows.items() for w in ws]
    validation.append({"task": "coverage-D_td-serial", "window": [T0 - 50, T0 - 40], "measured": False})  # a warm-up
    texts = {records.VALIDATION: "\n".join(json.dumps(v) for v in validation)}
    if host_lines is not None:
        texts[records.HOST_LOAD] = "\n".join(json.dumps(v) for v in host_lines)
    return Race(race_id, None, {"race-id": race_id, "challenge": "production-comparison"}, record_texts=texts)


def steady(seconds, **kwargs):
    return [line(T0 + i, **kwargs) for i in range(-60, seconds)]


def test_a_window_takes_its_share_of_each_interval_it_overlaps():
    lines = [line(T0, foreign_core=0.0), line(T0 + 1, foreign_core=1.0)]
    (load,) = host_load.load_over(lines, T0 + 0.5, T0 + 1.5).values()
    assert load.seconds == pytest.approx(1.0) and load.foreign == pytest.approx(50.0)
    (load,) = host_load.load_over(lines, T0 + 1.2, T0 + 1.4).values()  # inside one interval: that interval's rate
    assert load.foreign == pytest.approx(100.0) and load.seconds == pytest.approx(0.2)
    assert host_load.load_over(lines, T0 + 5, T0 + 6) == {}  # not covered: no figure


def test_each_host_is_read_apart():
    lines = [line(T0, host="ld-1", foreign_core=0.9), line(T0, host="ld-2", foreign_core=0.01)]
    loads = host_load.load_over(lines, T0, T0 + 1)
    assert {h: round(load.foreign) for h, load in loads.items()} == {"ld-1": 90, "ld-2": 1}


WINDOWS = {"coverage-D_td-serial": [(T0 + 1, T0 + 9)], "coverage-D_hdr-terms": [(T0 + 10, T0 + 14)]}


@pytest.mark.parametrize(
    "foreign_core,steal,named",
    [
        (0.02, 0.0, []),  # a quiet host, as plain races measured it
        (0.19, 0.045, []),  # just under both thresholds
        (0.21, 0.0, ["other processes took 21% of a core"]),
        (0.02, 0.055, ["steal 5.5%"]),
        (0.85, 0.0, ["other processes took 85% of a core"]),  # a busy loop on one core
    ],
)
def test_busy_is_named_from_the_stated_thresholds(foreign_core, steal, named):
    race = race_with(steady(30, foreign_core=foreign_core, steal=steal), WINDOWS)
    overall = host_load.over_cells(race)
    assert overall.busy == named and overall.seconds == pytest.approx(12.0)
    assert (host_load.warning(race) is not None) == bool(named)


def test_a_neighbour_during_one_cell_names_that_cell_only():
    lines = [line(T0 + i, foreign_core=0.95 if 10 <= i < 14 else 0.02) for i in range(-5, 30)]
    race = race_with(lines, WINDOWS)
    cells = host_load.per_cell(race)
    assert [task for task, load in cells.items() if load.busy] == ["coverage-D_hdr-terms"]
    assert math.isclose(cells["coverage-D_hdr-terms"].foreign, 95.0)
    # over the race's cells: 4 s of 12 at 95%: 33% of a core, beyond the threshold, and the warning names the cell
    warning = host_load.warning(race)
    assert warning.startswith("WARNING host busy") and "cells met it: coverage-D_hdr-terms." in warning
    header, rows = host_load.table(race)
    assert [row[0] for row in rows] == ["coverage-D_td-serial", "coverage-D_hdr-terms", "all timed cells"]
    assert rows[1][-1] == "other processes took 95% of a core" and rows[0][-1] == "no"


def test_a_race_without_the_record_says_so():
    race = race_with(None, WINDOWS)
    assert host_load.over_cells(race) is None and host_load.table(race) is None and host_load.warning(race) is None
    assert host_load.summary_line(race).startswith(host_load.NOT_RECORDED)


def with_nodes(lines, every=1, remote_from=None):
    """The lines with the nodes' part on every `every`-th one, as a fake _nodes/stats would make it: node-1 at 90% of a
    core (its host at 60%), and from `remote_from` on node-1's process at 40% of a core while its host is at 95%."""
    out = []
    for i, one in enumerate(lines):
        if i % every or i == 0:
            out.append(one)
            continue
        busy_host = remote_from is not None and lines[i - every]["end"] >= remote_from
        cpu_share = 0.4 if busy_host else 0.9
        node = {
            "name": "node-1",
            "host": "10.0.0.7",
            "cpu_ms": round(every * 1000 * cpu_share),
            "ms": every * 1000,
            "os_cpu_percent": 95 if busy_host else 60,
        }
        out.append({**one, "nodes_start": lines[i - every]["end"], "nodes": {"id-1": node}})
    return out


def test_each_cells_nodes_cpu_from_the_nodes_lines_that_overlap_it():
    """A fake _nodes/stats's record: each cell gets its node's process CPU over the lines that overlap its window (in
    proportion), and its host's; the report says it per cell, and says why where the nodes could not be asked."""
    lines = with_nodes([line(T0 + i) for i in range(-5, 30)], remote_from=T0 + 10)
    race = race_with(lines, WINDOWS)
    spread = with_nodes([line(T0 + i) for i in range(-5, 30)], every=4)  # a node line over 4 host lines
    assert math.isclose(host_load.nodes_over(host_load.node_spans(spread), T0 + 1, T0 + 9)["node-1"].cpu, 90.0)
    first, second = (host_load.nodes_over(host_load.node_spans(lines), *w[0]) for w in WINDOWS.values())
    assert math.isclose(first["node-1"].cpu, 90.0) and first["node-1"].host_cpu == 60
    assert math.isclose(second["node-1"].cpu, 40.0) and second["node-1"].host_cpu == 95
    header, rows = host_load.nodes_table(race)
    assert [row[:2] + row[4:] for row in rows] == [
        ["coverage-D_td-serial", "node-1", "90", "60"],
        ["coverage-D_hdr-terms", "node-1", "40", "95"],
    ]
    assert host_load.nodes_error(race) is None
    refused = race_with([{**line(T0), "nodes_error": "ApiError: 403 security_exception"}] + [line(T0 + i) for i in range(1, 30)], WINDOWS)
    assert host_load.nodes_table(refused) is None and host_load.nodes_error(refused) == "ApiError: 403 security_exception"
    from report.__main__ import _nodes_section

    assert "| coverage-D_hdr-terms | node-1 | 10.0.0.7 |" in "\n".join(_nodes_section(race))
    assert _nodes_section(refused)[1] == "_the sampler could not ask the nodes: ApiError: 403 security_exception._"
    assert host_load.nodes_table(race_with([line(T0 + i) for i in range(-5, 30)], WINDOWS)) is None  # an older record


def with_host(points, busy_from, foreign_core=0.85, quiet=0.02):
    """The points with a host record over their cells: a neighbour from point `busy_from` on."""
    out = []
    for i, p in enumerate(points):
        race = race_with(steady(20, foreign_core=foreign_core if i >= busy_from else quiet), WINDOWS, p.race_id)
        facts = p.facts.__class__(**{**p.facts.__dict__, "host": host_load.over_cells(race)})
        out.append(p.__class__(**{**p.__dict__, "facts": facts}))
    return out


def test_the_trend_names_the_host_for_a_loaded_stretch_not_nothing_recorded_changed():
    """One node start, 8 races; a neighbour's busy loop from race 4 on, 1.8x slower: the step is named, said to be the
    host's (busy, and how busy it was before), and it is not an alert of Elasticsearch's."""
    points = with_host(history(np.random.default_rng(5), 1, 8, level=lambda s, n: math.log(1.8) if n >= 4 else 0.0), busy_from=4)
    (change,) = changes.find("cell", points, FIGURE)[0]
    assert change.index == 4 and change.host_named
    said = "; ".join(change.what_changed)
    assert "host busy: other processes took 85% of a core during the cells (was 2%)" in said, said
    assert "nothing recorded changed" not in said and "4 of the 4 race(s) after it met a busy host" in said


def test_a_step_on_a_quiet_host_stays_elasticsearchs_and_says_what_it_rests_on():
    """The same step, the neighbour only on the last race: the step is not the host's (quiet races after it show it)."""
    points = with_host(history(np.random.default_rng(5), 1, 8, level=lambda s, n: math.log(1.8) if n >= 4 else 0.0), busy_from=7)
    (change,) = changes.find("cell", points, FIGURE)[0]
    assert change.index == 4 and not change.host_named
    said = "; ".join(change.what_changed)
    assert "nothing recorded changed" in said and "1 of the 4 race(s) after it met a busy host" in said


def test_no_slope_is_fitted_where_the_host_never_changed():
    """Quiet throughout: the other processes' share varies by less than the threshold, and no slope is claimed."""
    points = with_host(history(np.random.default_rng(3), 1, 8), busy_from=99)
    assert history_host.contention(points) is None
    loaded = with_host(history(np.random.default_rng(3), 1, 8, level=lambda s, n: math.log(1.5) if n >= 4 else 0.0), busy_from=4)
    fit = history_host.contention(loaded)
    assert fit.explains and fit.low > 1 and fit.spread_with < fit.spread_without and fit.races == 7
