"""The coverage-width section: the crossover is named only beyond the noise, never on a failed cell, and the table and
chart show what ran and why the rest did not. Synthetic races with known answers; the real sweep: tests/test_challenges.py."""

import json

import numpy as np
import pytest

from report.shared import races
from report.shared.samples import Samples
from report.studies import widths
from runners.contracts import records
from runners.studies import search_pool
from tests.conftest import rendered_challenges, rendered_tasks

WIDTHS = [30, 300, 3000]


def race_of(medians, spread=0.02, failed=(), samples=True, n=10, seed=1):
    """medians: {(width, variant, transport): ms}; each cell's samples spread by `spread` around its median."""
    rng = np.random.default_rng(seed)
    ops, times = [], {}
    cells = {}
    for (w, v, t), ms in medians.items():
        name = f"width-{w}-coverage-{v}-{t}"
        transport, _, concurrency = t.partition("-msc-")
        cells[name] = {"variant": v, "transport": transport, "width": w, "max-concurrent-searches": int(concurrency or 0)}
        ops.append({"task": name, "service_time": {"50_0": ms, "mean": ms}, "error_rate": 1.0 if (w, v, t) in failed else 0.0})
        times[name] = None if (w, v, t) in failed else list(ms * (1 + spread * rng.standard_normal(n)))
    data = {"race-id": "w" * 36, "challenge": "coverage-width", "results": {"op_metrics": ops}, "track-params": {}}
    race = races.Race("w" * 36, None, data)
    race.samples = Samples(times) if samples else Samples()
    race.record_texts[records.CELLS] = json.dumps(cells)
    return race


def sweep(terms, msearch):
    """D_td's cells: terms and msearch medians per width."""
    cells = {}
    for w, t, m in zip(WIDTHS, terms, msearch):
        cells[(w, "D_td", "terms")] = t
        cells[(w, "D_td", "msearch")] = m
    return cells


def test_terms_overtakes_where_it_is_faster_beyond_noise_at_every_wider_width():
    race = race_of(sweep(terms=[300, 150, 400], msearch=[190, 344, 2000]))
    width, statement = widths.crossover(race, widths.width_cells(race), "D_td", "msearch")
    assert width == 300 and statement == "terms overtakes between 30 and 300 nodes (faster from 300 on)"


def test_no_crossover_when_the_difference_is_noise():
    """At 3000 nodes the two are 2% apart with a 10% spread: no verdict of faster, so no crossover."""
    race = race_of(sweep(terms=[300, 400, 1000], msearch=[190, 344, 1020]), spread=0.10)
    width, statement = widths.crossover(race, widths.width_cells(race), "D_td", "msearch")
    assert width is None and statement == "terms does not overtake within the sweep (30 to 3000 nodes)"


def test_a_failed_terms_cell_is_never_the_crossover():
    """terms looks 10x faster at 3000 nodes, but its cell failed: a wrong answer is not a speedup, and the claim names
    the width it could not judge."""
    race = race_of(sweep(terms=[300, 150, 200], msearch=[190, 344, 2000]), failed={(3000, "D_td", "terms")})
    width, statement = widths.crossover(race, widths.width_cells(race), "D_td", "msearch")
    assert width == 300 and statement.endswith("(no verdict at 3000: FAILED)")  # the claim stops at 300
    header, body = widths.width_table(race)
    assert body[-1][header.index("terms (ms)")].startswith("FAILED")


def test_a_dip_in_the_middle_is_not_a_crossover():
    """Faster at 300 but not at 3000: terms has not overtaken for good within the sweep."""
    race = race_of(sweep(terms=[300, 150, 2500], msearch=[190, 344, 2000]))
    assert widths.crossover(race, widths.width_cells(race), "D_td", "msearch")[0] is None


def test_without_samples_there_is_a_ratio_but_no_verdict():
    race = race_of(sweep(terms=[300, 150, 400], msearch=[190, 344, 2000]), samples=False)
    width, statement = widths.crossover(race, widths.width_cells(race), "D_td", "msearch")
    assert width is None and statement.startswith("no verdict")
    header, body = widths.crossover_table(race)
    assert body[0][header.index("terms / msearch at 300")] == "0.436 (medians)"  # a figure and a short word
    note = widths.crossover_note(race)
    assert note.count("no record of its measured coverages") == 1 and "without a verdict" in note


def test_the_table_says_why_serial_is_missing_above_its_cap_and_the_note_estimates_it():
    cells = sweep(terms=[30, 60, 300], msearch=[20, 80, 900])
    cells[(30, "D_td", "serial")] = 120.0
    cells[(300, "D_td", "serial")] = 1200.0
    race = race_of(cells)
    header, body = widths.width_table(race)
    assert header[2] == "serial (ms)" and body[2][2] == "not run (above width_serial_max_nodes 300)"
    assert body[0][2].startswith("120 [") and "n=10" in body[0][2]
    assert "Per request at 300 nodes: D_td 4.00 ms; at 3000 nodes" in widths.search_pool_note(race)


def test_the_chart_draws_every_variant(tmp_path):
    cells = sweep(terms=[30, 60, 300], msearch=[20, 80, 900])
    cells.update({(w, "D_hdr", t): 2.0 * ms for (w, v, t), ms in list(cells.items())})
    assert widths.width_lines(race_of(cells), tmp_path / "width.png").stat().st_size > 10_000


@pytest.mark.parametrize("concurrency", [0, 1, 16])
def test_a_width_cell_is_found_by_what_it_measures_not_its_name(concurrency):
    transport = widths.width_transport("msearch", concurrency)
    race = race_of({(3000, "C_hdr", transport): 10.0})
    (cell,) = json.loads(race.record_texts[records.CELLS]).values()
    race = races.Race(race.race_id, None, race.data, race.samples, record_texts={records.CELLS: json.dumps({"any-name": cell})})
    race.data["results"]["op_metrics"][0]["task"] = "any-name"
    assert list(widths.width_cells(race)) == [(3000, "C_hdr", transport)]
    assert widths.width_key({"variant": "D_td", "transport": "msearch", "rtt-ms": 50}) is None  # another study's cell


@pytest.mark.parametrize("processors,data_nodes,expected", [(2, 1, 4), (10, 1, 10), (10, 3, 30), (1, 0, 1), (64, 2, 20)])
def test_default_max_concurrent_searches_follows_elasticsearch(processors, data_nodes, expected):
    """TransportMultiSearchAction.defaultMaxConcurrentSearches: data nodes x min(search pool default, 10), at least 1
    (its own test: 10 processors give 10 per data node, no data node gives 1)."""
    assert search_pool.default_max_concurrent_searches(processors, data_nodes) == expected


def test_a_race_that_ended_early_is_read_from_its_samples():
    """The node died during a cell: Rally keeps no summary of the race, the store keeps its samples. The cells are
    built from them, and the cell whose samples failed is FAILED, never a crossover."""
    race = race_of(sweep(terms=[300, 150, 400], msearch=[190, 344, 2000]), failed={(3000, "D_td", "terms")})
    race.data["results"] = {}
    cells = widths.width_cells(race)
    assert cells[(300, "D_td", "terms")]["service_time"]["50_0"] == pytest.approx(150, rel=0.05)
    assert cells[(3000, "D_td", "terms")]["error_rate"] == 1.0
    assert "no verdict at 3000: FAILED" in widths.crossover(race, cells, "D_td", "msearch")[1]


def test_hdr_over_terms_is_capped_by_width_and_the_table_says_why():
    challenge = rendered_challenges({"widths": [1000, 3000]})["coverage-width"]
    names = {t["operation"]["name"] for t in rendered_tasks(challenge)}
    assert {"width-1000-coverage-D_hdr-terms", "width-3000-coverage-D_td-terms", "width-3000-coverage-D_hdr-msearch"} <= names
    assert "width-3000-coverage-D_hdr-terms" not in names and "width-3000-coverage-C_hdr-terms" not in names
    race = race_of({(3000, "D_hdr", "msearch"): 900.0, (1000, "D_hdr", "terms"): 300.0, (1000, "D_hdr", "msearch"): 400.0})
    header, body = widths.width_table(race)
    assert body[-1][header.index("terms (ms)")] == "not run (HDR over terms above width_hdr_terms_max_nodes 1000: heap)"


def test_a_failed_widest_cell_is_named_and_left_out_of_the_claim():
    race = race_of(sweep(terms=[300, 150, 100], msearch=[190, 344, 2000]), failed={(3000, "D_td", "msearch")})
    width, statement = widths.crossover(race, widths.width_cells(race), "D_td", "msearch")
    assert width == 300
    assert statement == "terms overtakes between 30 and 300 nodes (faster from 300 on) (no verdict at 3000: FAILED)"


def test_the_width_chart_draws_each_point_from_its_own_samples(tmp_path):
    """Rally's median (race.json) a hair above every recorded sample of the cell: the point and its bar come from the
    samples, so the bar never turns negative (a full-scale sweep's report died on it)."""
    race = race_of(sweep(terms=[300, 150, 400], msearch=[190, 344, 2000]), spread=0.0)
    for op in race.data["results"]["op_metrics"]:
        op["service_time"]["50_0"] *= 1.01
    assert widths.width_lines(race, tmp_path / "width.png") and (tmp_path / "width.png").stat().st_size > 0
