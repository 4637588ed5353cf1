"""Seed 000's tables in its own terms (report/studies/coverage_answer.py), on fixture races: a real --test-mode `full` race's race.json
with coverage records written here (each measured coverage's wall and took, drawn from known distributions), so that
every figure can be checked against what was put in."""

import json
import random
import re
import shutil
from pathlib import Path

import pytest

from report.__main__ import main as report_main
from report.shared import races, uncertainty
from report.studies import coverage, coverage_answer
from runners.contracts import records
from runners.contracts.queries import TRANSPORTS, VARIANTS
from runners.studies.search_pool import SEARCH_POOL

HOME = Path(__file__).parents[1] / "fixtures" / "races"
FULL = "b8b9bc99-5da6-4a41-8d0a-0e3dace860a2"
SAMPLES = 15
# per cell: (wall ms, took ms, took summed over searches ms), the seed's shape: serial took ~ wall - 30 requests' cost
CELL = {
    "A": (135, 19, 19),
    "B": (310, 192, 192),
    "C_td": (1193, 1070, 1070),
    "C_hdr": (730, 597, 597),
    "D_td": (1323, 1199, 1199),
    "D_hdr": (845, 712, 712),
}


def task_name(variant, transport):
    """A study cell's task as the fixture race's race.json names it."""
    return f"coverage-{variant}-{transport}"


def shape(variant, transport):
    wall, took, took_sum = CELL[variant]
    if transport == "msearch":  # the sub-searches' work in parallel on 4 threads
        return wall / 8, wall / 8 - 2, took_sum * 1.05
    if transport == "terms":
        return wall / 2, wall / 2 - 1, wall / 2 - 1
    return wall, took, took_sum


def make_race(
    tmp_path, race_id, cells=None, spread=0.02, seed=1, change=None, warmups=5, measured=SAMPLES
):  # parameters: a test race's fields, each a keyword with its default
    """A copy of the fixture race with coverage records for each cell (variant, transport): warm-ups, then measured
    coverages with values spread around the cell's shape; change(line) may alter each measured line."""
    source = HOME / ".rally" / "benchmarks" / "races" / FULL
    dst = tmp_path / ".rally" / "benchmarks" / "races" / race_id
    shutil.copytree(source, dst)
    data = json.loads((dst / "race.json").read_text())
    data["race-id"] = race_id
    (dst / "race.json").write_text(json.dumps(data))
    rng = random.Random(seed)
    lines = []
    for v, t in cells or [(v, t) for v in VARIANTS for t in TRANSPORTS]:
        wall, took, took_sum = shape(v, t)
        for i in range(warmups + measured):
            factor = 1 + rng.uniform(-spread, spread)
            line = {
                "task": task_name(v, t),
                "measured": i >= warmups,
                "wall-ms": wall * factor * (3 if i < warmups else 1),  # cold warm-ups: never counted
                "took": round(took * factor),
                "took-sum": round(took_sum * factor),
                "checks": 10,
                "failed-checks": 0,
            }
            if change and line["measured"]:
                change(line)
            lines.append(json.dumps(line))
    (dst / records.RECORD_DIR).mkdir(exist_ok=True)
    (dst / records.RECORD_DIR / records.VALIDATION).write_text("\n".join(lines) + "\n")
    return races.Files(rally_home=tmp_path).race(race_id[:8])


def fail(race, task):
    for op in race.data["results"]["op_metrics"]:
        if op["task"] == task:
            op["error_rate"] = 0.4


def median_of(text):
    return float(text.split(" ")[0].replace(",", ""))


def test_samples_come_from_the_records_without_a_metrics_store(tmp_path):
    race = make_race(tmp_path, "11111111-0000-0000-0000-000000000000")
    samples = race.samples.of(task_name("D_td", "serial"))
    assert len(samples) == SAMPLES and max(samples) < 1323 * 1.03  # the warm-ups (3x) are left out


def test_took_table_gives_each_cell_its_took_interval_mean_and_the_seeds(tmp_path):
    race = make_race(tmp_path, "22222222-0000-0000-0000-000000000000")
    header, body = coverage_answer.took_table(race)
    rows = {(r[0], r[1]): r for r in body}
    serial = rows[("D_td", "serial")]
    assert abs(median_of(serial[2]) - 1199) < 1199 * 0.03 and "n=15" in serial[2] and "[" in serial[2]
    assert abs(serial[3] - 1199) < 1199 * 0.03 and serial[6] == 1199
    msearch = rows[("D_td", "msearch")]
    assert median_of(msearch[4]) > 5 * median_of(msearch[2])  # the sub-searches' work exceeds the response's took
    assert msearch[6] == coverage_answer.SEED_MSEARCH_TOOK_SUM["D_td"]


def test_attribution_subtracts_took_and_gives_shares_of_the_production_query(tmp_path):
    race = make_race(tmp_path, "33333333-0000-0000-0000-000000000000")
    header, body = coverage_answer.took_attribution_table(race)
    rows = {r[0]: r for r in body}
    percentiles = rows["3x t-digest percentiles (C_td - A)"]
    value = median_of(percentiles[1])
    assert abs(value - (1070 - 19)) < 40 and percentiles[-2] == 1051
    share = float(percentiles[2].split("%")[0]) / 100
    assert abs(share - 1051 / 1199) < 0.05 and "of D_td" in percentiles[2]
    low, high = (float(x.replace(",", "")) for x in percentiles[1].split("[")[1].rstrip("]").split(", "))
    assert low <= value <= high


def test_a_failed_cell_is_never_a_share_a_saving_or_a_speed_up(tmp_path):
    race = make_race(tmp_path, "44444444-0000-0000-0000-000000000000")
    fail(race, task_name("A", "serial"))
    fail(race, task_name("D_hdr", "msearch"))
    attribution = {r[0]: r for r in coverage_answer.took_attribution_table(race)[1]}
    assert all(attribution[c][1] == coverage_answer.FAILED for c in attribution)  # A is every component's base
    savings = {r[0]: r for r in coverage_answer.transport_saving_table(race)[1]}
    assert "failed" in savings["A"][3] and "%" in savings["D_td"][3]
    final = {r[0]: r for r in coverage_answer.recommendation_table(race)[1]}
    assert final["D_hdr msearch"][2] == coverage_answer.FAILED and "faster" in final["D_td msearch"][2]
    fail(race, task_name("D_td", "serial"))
    assert "D_td serial FAILED" in coverage_answer.recommendation_table(race)


def test_a_cell_whose_every_request_failed_is_shown_failed(tmp_path):
    """A 429 on every request records no coverage at all: the cell is still in the tables, FAILED."""
    cells = [(v, t) for v in VARIANTS for t in TRANSPORTS if (v, t) != ("D_td", "msearch")]
    race = make_race(tmp_path, "dddddddd-0000-0000-0000-000000000000", cells=cells)
    fail(race, task_name("D_td", "msearch"))
    rows = {(r[0], r[1]): r for r in coverage_answer.took_table(race)[1]}
    assert rows[("D_td", "msearch")][2] == coverage_answer.FAILED
    final = {r[0]: r for r in coverage_answer.recommendation_table(race)[1]}
    assert final["D_td msearch"][2] == coverage_answer.FAILED


def test_a_missing_took_is_said_not_counted_as_zero(tmp_path):
    def no_took(line):
        if line["task"] == task_name("B", "serial"):
            line["took"] = None

    race = make_race(tmp_path, "55555555-0000-0000-0000-000000000000", change=no_took)
    rows = {(r[0], r[1]): r for r in coverage_answer.took_table(race)[1]}
    assert rows[("B", "serial")][2] == coverage_answer.NO_TOOK and rows[("B", "serial")][3] == coverage_answer.NO_TOOK
    attribution = {r[0]: r for r in coverage_answer.took_attribution_table(race)[1]}
    assert attribution["3x sum (B - A)"][1] == coverage_answer.NO_TOOK
    gaps = {(r[0], r[1]): r for r in coverage_answer.client_table(race)[1]}
    assert gaps[("B", "serial")][2] == coverage_answer.NO_TOOK


def test_effective_parallelism_is_the_searches_took_over_the_wall(tmp_path):
    race = make_race(tmp_path, "66666666-0000-0000-0000-000000000000")
    race.record_texts[SEARCH_POOL] = json.dumps({"nodes": [{"allocated-processors": 2, "search-pool-size": 4}], "data-nodes": 1})
    rows = {(r[0], r[1]): r for r in coverage_answer.parallelism_table(race)[1]}
    ratio = median_of(rows[("D_td", "msearch")][4])
    assert abs(ratio - 1.05 * 1199 / (1323 / 8)) < 0.5 and rows[("D_td", "msearch")][5:7] == [4, 2]
    assert "8.5x" in rows[("D_td", "msearch")][7]
    assert "2 allocated processors" in coverage_answer.parallelism_note(race)


def test_wall_minus_took_is_per_coverage(tmp_path):
    race = make_race(tmp_path, "77777777-0000-0000-0000-000000000000", spread=0.0)
    rows = {(r[0], r[1]): r for r in coverage_answer.client_table(race)[1]}
    assert median_of(rows[("D_td", "serial")][2]) == pytest.approx(1323 - 1199, abs=1)
    assert rows[("D_td", "serial")][3] == f"{(1323 - 1199) / 1323:.1%}"


def test_a_race_without_measured_records_has_no_study_tables(tmp_path):
    race = make_race(tmp_path, "88888888-0000-0000-0000-000000000000", warmups=0, measured=0)
    assert not race.samples.individual and race.samples.times is None
    assert coverage_answer.took_table(race) is None and coverage_answer.recommendation_table(race) is None


def test_too_few_samples_give_a_figure_without_interval(tmp_path):
    race = make_race(tmp_path, "99999999-0000-0000-0000-000000000000", warmups=0, measured=1)
    rows = {(r[0], r[1]): r for r in coverage_answer.took_table(race)[1]}
    assert rows[("D_td", "serial")][2].endswith("(n=1)") and "[" not in rows[("D_td", "serial")][2]  # a figure, a short word
    saving = {r[0]: r for r in coverage_answer.transport_saving_table(race)[1]}["D_td"][3]
    assert saving.endswith("(n=1)") and "faster" not in saving
    assert "has no interval" in coverage_answer.TOOK_NOTE  # the reason, once, under the table


def test_drift_against_a_baseline_race(tmp_path):
    """make report BASELINE=<id>: the same cells 20% slower are named slower; the same distribution is not."""
    then = make_race(tmp_path, "aaaaaaaa-0000-0000-0000-000000000000", seed=2)

    def slower(line):
        if line["task"] == task_name("D_td", "serial"):
            line["wall-ms"] *= 1.2

    now = make_race(tmp_path, "bbbbbbbb-0000-0000-0000-000000000000", seed=3, change=slower)
    rows = {r[0]: r for r in coverage_answer.drift_table(now, then)[1]}
    assert rows[task_name("D_td", "serial")][4].endswith(uncertainty.SLOWER)
    assert rows[task_name("D_td", "msearch")][4].endswith(uncertainty.SAME)
    assert report_main(["--race", "bbbbbbbb", "--baseline", "aaaaaaaa", "--rally-home", str(tmp_path), "--out", str(tmp_path / "out")]) == 0
    text = (tmp_path / "out" / now.race_id / "report.md").read_text()
    assert "## Drift against race aaaaaaaa" in text and "2.1%" in text


def test_the_report_holds_every_study_table_from_the_records(tmp_path):
    make_race(tmp_path, "cccccccc-0000-0000-0000-000000000000")
    assert report_main(["--race", "cccccccc", "--rally-home", str(tmp_path), "--out", str(tmp_path / "out")]) == 0
    text = next((tmp_path / "out").glob("*/report.md")).read_text()
    for title in (
        "Server took against client wall",
        "Subtractive cost attribution on took",
        "Serial against _msearch",
        "Effective parallelism",
        "wall - took",
        "What to run",
    ):
        assert f"## {title}" in text or title in text
    assert "no verdict without each sample" not in text


def test_what_to_run_offers_only_configurations_that_answer_the_production_question(tmp_path):
    """A msearch is the fastest cell (the filter alone) but computes nothing production needs: never recommended; a D
    cell faster than the seed's picks is added."""
    race = make_race(tmp_path, "eeeeeeee-0000-0000-0000-000000000000")
    labels = [r[0] for r in coverage_answer.recommendation_table(race)[1]]
    assert labels[:3] == ["D_td serial (production)", "D_td msearch", "D_hdr msearch"] and not any(
        l.startswith(("A ", "B ", "C_")) for l in labels
    )

    # D_hdr over terms made the fastest production-answering cell
    def faster_terms(line):
        if line["task"] == task_name("D_hdr", "terms"):
            line["wall-ms"] = 20.0

    race = make_race(tmp_path / "2", "ffffffff-0000-0000-0000-000000000000", change=faster_terms)
    assert [r[0] for r in coverage_answer.recommendation_table(race)[1]][-1] == "D_hdr terms (fastest here)"


def test_a_cells_median_and_interval_come_from_the_same_samples(tmp_path):
    """The coverage table's median beside its interval is the recorded samples' (Rally's race.json median, from its
    own service times, can lie a hair outside their interval)."""
    race = make_race(tmp_path, "abababab-0000-0000-0000-000000000000")
    header, body = coverage.coverage_table(race)
    row = next(r for r in body if r[0] == "D_td")
    samples = race.samples.of(task_name("D_td", "serial"))
    interval = uncertainty.median_interval(samples)
    assert row[header.index("serial median (ms)")] == interval.median and row[header.index("serial 95% interval (ms)")] == interval.text()


def test_the_console_line_names_the_fastest_configuration_that_computes_productions_answer(tmp_path, capsys):
    """A over msearch (the filter alone) is the fastest cell of the race and computes nothing production needs: the
    line a user reads after make report names a D configuration with its speed-up interval, never A."""
    race = make_race(tmp_path, "c0c0c0c0-0000-0000-0000-000000000000")
    fastest_cell = min(race.samples.times, key=lambda task: uncertainty.median_interval(race.samples.of(task)).median)
    assert fastest_cell == task_name("A", "msearch")  # the trap is set
    assert report_main(["--race", "c0c0c0c0", "--rally-home", str(tmp_path), "--out", str(tmp_path / "out")]) == 0
    line = next(l for l in capsys.readouterr().out.splitlines() if l.startswith("production D_td serial"))
    assert "fastest that computes its answer: D_hdr msearch" in line and " A " not in line, line
    assert re.search(r"\d+\.\dx \[\d+\.\d, \d+\.\d\] faster", line), line


def test_the_report_opens_with_the_answer(tmp_path):
    """The first screen (40 lines) of a race that measured the study's cells holds the coverage answer: production and
    the configurations that compute its answer, with their speed-ups."""
    make_race(tmp_path, "d0d0d0d0-0000-0000-0000-000000000000")
    report_main(["--race", "d0d0d0d0", "--rally-home", str(tmp_path), "--out", str(tmp_path / "out")])
    head = next((tmp_path / "out").glob("*/report.md")).read_text().splitlines()[:40]
    assert "## The answer" in head and "### Coverage: what to run instead of production" in head, head
    assert any(line.startswith("| D_hdr msearch |") and "faster" in line for line in head), head


def test_a_cell_whose_first_samples_are_slow_is_named_in_the_first_lines(tmp_path):
    """A cold start: D_td serial's first third of measured coverages 2x slower. The report's first lines name that
    cell as drifting (faster by its last third) and the drift section gives its ratio and interval; the other cells,
    whose samples only spread, are not named."""
    seen = {"n": 0}

    def cold_start(line):
        if line["task"] == task_name("D_td", "serial"):
            seen["n"] += 1
            if seen["n"] <= SAMPLES // 3:
                line["wall-ms"] *= 2

    make_race(tmp_path, "c01dc01d-0000-0000-0000-000000000000", change=cold_start)
    report_main(["--race", "c01dc01d", "--rally-home", str(tmp_path), "--out", str(tmp_path / "out")])
    text = next((tmp_path / "out").glob("*/report.md")).read_text()
    head = "\n".join(text.splitlines()[:12])
    assert "1 of 18 cells drift within the race" in head and re.search(rf"{task_name('D_td', 'serial')} \(0\.5\dx faster\)", head), head
    row = next(line for line in text.splitlines() if line.startswith(f"| {task_name('D_td', 'serial')} | {SAMPLES} |"))
    assert row.endswith("faster |"), row
