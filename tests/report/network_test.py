"""The report's network sections on race data built by hand (the real races: tests/test_network.py): the fitted
slope, the model, failed points never measured."""

import json
from pathlib import Path

from report.shared import races
from report.studies import network
from runners.contracts import records


def op(task, median, error_rate=0.0):
    return {"task": task, "error_rate": error_rate, "service_time": {"50_0": median, "mean": median}}


def race(ops, params, challenge="rtt-sweep"):
    """A race of that challenge with these results: the report finds its cells in the track rendered with params."""
    return races.Race(
        "r" * 36, Path("."), {"race-id": "r" * 36, "challenge": challenge, "track-params": params, "results": {"op_metrics": ops}}
    )


def test_slope_model_and_ratio_from_the_points_that_answered_right():
    ops = [
        op("coverage-D_td-serial-rtt-0ms", 100),
        op("coverage-D_td-serial-rtt-50ms", 1600),
        op("coverage-D_td-serial-rtt-100ms", 3100),
        op("coverage-D_td-msearch-rtt-0ms", 20),
        op("coverage-D_td-msearch-rtt-50ms", 70),
        op("coverage-D_td-msearch-rtt-100ms", 5, error_rate=0.2),
    ]  # fast and wrong: never a point
    r = race(ops, {"rtt_ms": [0, 50, 100], "rtt_variants": ["D_td"], "rtt_transports": ["serial", "msearch"]})
    header, body = network.rtt_table(r)
    assert header == ["variant", "transport", "0 ms", "50 ms", "100 ms", "fitted ms per ms RTT", "model"]
    serial, msearch, samples = body
    assert serial[:5] == ["D_td", "serial", 100, 1600, 3100] and abs(serial[5] - 30) < 1e-9 and serial[6] == 30
    assert msearch[4] == "FAILED (20% errors)" and abs(msearch[5] - 1) < 1e-9  # slope from 0 and 50 ms only
    assert samples[2:5] == [20, 8, 5]
    assert network.serial_msearch_ratio(r, 50) == {"D_td": 1600 / 70}
    note = network.rtt_note(r)
    assert "D_td serial: 30.0 ms per ms of RTT (model 30)" in note and "serial / msearch at 50 ms RTT: D_td 22.9x" in note


def test_the_race_s_own_cells_record_is_what_the_report_joins_race_json_to():
    """A race that recorded its cells is read by them, whatever its tasks were named: here one the track would not
    render."""
    r = race([op("renamed-rtt-point", 1600)], {"rtt_ms": [50], "rtt_variants": ["D_td"], "rtt_transports": ["serial"]})
    r.record_texts[records.CELLS] = json.dumps({"renamed-rtt-point": {"variant": "D_td", "transport": "serial", "rtt-ms": 50}})
    assert network.rtt_table(r)[1][0][:3] == ["D_td", "serial", 1600]
    r = race([op("coverage-D_td-serial-rtt-50ms", 1600)], {"rtt_ms": [50], "rtt_variants": ["D_td"], "rtt_transports": ["serial"]})
    r.record_texts[records.CELLS] = "{}"  # recorded, and this task not among them
    assert network.rtt_table(r) is None


def test_ccs_rows_per_setting_and_the_ratio_at_the_largest_rtt():
    ops = [
        op(f"ccs-D_td-terms-minimize-{str(m).lower()}-rtt-{r}ms", base + slope * r)
        for m, base, slope in ((True, 50, 1), (False, 80, 12))
        for r in (0, 100)
    ]
    r = race(ops, {"ccs_rtt_ms": [0, 100], "ccs_variants": ["D_td"], "ccs_transports": ["terms"]}, "ccs-roundtrips")
    header, body = network.ccs_table(r)
    assert [row[:3] for row in body[:2]] == [["D_td", "terms", "true"], ["D_td", "terms", "false"]]
    assert abs(body[1][5] - 12) < 1e-9
    assert f"without minimized round trips takes {1280 / 150:.1f}x as long as with" in network.ccs_note(r)


def test_a_race_without_network_tasks_has_no_network_tables():
    r = race([op("coverage-D_td-serial", 100)], {})
    assert network.rtt_table(r) is None and network.ccs_table(r) is None


def test_seed_001_point_puts_each_cell_beside_the_seeds_range_and_the_model():
    """Five cells at 190 ms from 5 measured samples each (and a warm-up the table must leave out); the CCS cell
    without minimized round trips failed: FAILED, no figure."""
    cells = {
        "ccs-D_td-terms-direct-near-rtt-190ms": (50, 52),
        "ccs-D_td-terms-direct-far-rtt-190ms": (50, 245),
        "ccs-D_td-terms-direct-far-new-connection-rtt-190ms": (51, 246),
        "ccs-D_td-terms-minimize-true-rtt-190ms": (240, 250),
    }
    failed = "ccs-D_td-terms-minimize-false-rtt-190ms"
    ops = [op(task, wall) for task, (_, wall) in cells.items()] + [op(failed, 9000, error_rate=0.4)]
    validation = [{"task": task, "measured": False, "took": 999, "wall-ms": 9999} for task in cells]
    validation += [
        {"task": task, "measured": True, "took": took + i, "wall-ms": wall + i} for task, (took, wall) in cells.items() for i in range(5)
    ]
    params = {"ccs_rtt_ms": [190], "ccs_variants": ["D_td"], "ccs_transports": ["terms"], "ccs_shards": 200}
    r = race(ops, params, "ccs-roundtrips")
    r.record_texts[records.VALIDATION] = "".join(json.dumps(line) + "\n" for line in validation)
    header, body = network.ccs_point_table(r)
    rows = {row[3]: row for row in body}
    assert list(rows) == ["direct-near", "direct-far", "direct-far-new-connection", "minimize-true", "minimize-false"]
    near = rows["direct-near"]
    assert near[:4] == ["190 ms", "D_td", "terms", "direct-near"] and near[4].startswith("52.0 ") and "n=5" in near[4]
    assert near[5] == "50-54" and near[7] == "52-56" and near[8] == 0 and near[9:] == ["40-70", "130-170"]
    assert rows["direct-far"][8] == 1 and rows["direct-far"][9:] == ["-", "-"]  # the seed has no kept-alive far cell
    assert rows["direct-far-new-connection"][8] == 2 and rows["direct-far-new-connection"][10] == "520-550"
    assert rows["minimize-true"][8] == 1 and rows["minimize-true"][9] == "240-270"
    assert rows["minimize-false"][4] == "FAILED (40% errors)" and rows["minimize-false"][5:8] == ["", "", ""]
    assert rows["minimize-false"][8] == 41 and rows["minimize-false"][9:] == ["8,800-8,900", "8,900-9,000"]
    assert "cannot appear" in network.ccs_point_note(r)


def test_each_fault_row_says_whether_it_did_what_the_fault_should():
    """Under a fault every sample must fail (its median is how long the failure took to surface); the healed coverage
    must succeed; a fault that let samples through, or a healed coverage that failed, is marked, never a success."""
    ops = [
        op("fault-reset-coverage-D_td-msearch", 3.5, error_rate=1.0),
        op("fault-reset-coverage-D_td-terms", 2.0, error_rate=0.5),  # half the samples got through
        op("healed-reset-coverage-D_td-msearch", 300),
        op("fault-black-hole-coverage-D_td-msearch", 2001, error_rate=1.0),
        op("healed-black-hole-coverage-D_td-msearch", 350, error_rate=1.0),
        op("verify-doc-count", 5),
    ]
    header, body = network.faults_table(race(ops, {"faults": ["reset", "black-hole"]}, "network-faults"))
    rows = {(r[0], r[1]): dict(zip(header, r)) for r in body}
    assert rows[("reset", "D_td msearch under the fault")]["median (ms)"] == 3.5
    assert rows[("reset", "D_td msearch under the fault")]["as the fault should give"] == "yes: every sample failed"
    assert rows[("reset", "D_td terms under the fault")]["as the fault should give"].startswith("NO: 50% of samples succeeded")
    assert rows[("reset", "D_td msearch healed")]["as the fault should give"] == "yes: it succeeded"
    healed = rows[("black-hole", "D_td msearch healed")]
    assert healed["as the fault should give"] == "FAILED (100% errors)" and healed["median (ms)"] is None  # no figure
    assert rows[("(all)", "document count after the faults")]["as the fault should give"] == "yes: the corpus's"
    assert (
        network.faults_table(race([op("healed-reset-coverage-D_td-msearch", 1)], {"faults": ["cut-mid-response"]}, "network-faults"))
        is None
    )
