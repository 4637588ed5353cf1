"""The report's load and live sections on race data built by hand: the redline never comes from a failed step."""

import json
from pathlib import Path

from report.shared import races
from report.studies import load
from runners.contracts import records


def step(percent, tail, error_rate=0.0, samples=30):
    latency = {"50_0": tail / 2, "100_0": tail} if samples < 100 else {"50_0": tail / 2, "99_0": tail, "100_0": 9e9}
    return {
        "task": f"coverage-D_td-msearch-load-{percent}pct",
        "error_rate": error_rate,
        "latency": latency,
        "service_time": {"50_0": tail / 3},
        "throughput": {"median": percent / 10},
        "duration": 320_000 / percent,
    }


def race(ops, params, steps, challenge="coverage-load"):
    data = {"race-id": "r" * 36, "challenge": challenge, "track-params": params, "results": {"op_metrics": ops}}
    lines = [{"task": f"coverage-D_td-msearch-load-{p}pct", "target_per_s": p / 10, "calibrated_per_s": 10.0} for p in steps]
    return races.Race("r" * 36, Path("."), data, record_texts={records.LOAD_STEPS: "".join(json.dumps(line) + "\n" for line in lines)})


PARAMS = {"load_variants": ["D_td"], "load_transports": ["msearch"], "load_steps": [25, 50, 100, 200], "redline_latency_ms": 500}


def calibrated(ops):
    return [{"task": "coverage-D_td-msearch-load-calibration", "error_rate": 0.0}, *ops]


def test_the_redline_is_the_last_step_under_the_limit_with_no_failure():
    r = race(calibrated([step(25, 100), step(50, 200), step(100, 300, error_rate=0.1), step(200, 100)]), PARAMS, [25, 50, 100, 200])
    header, body = load.redline_table(r)
    assert body == [["D_td", "msearch", 10.0, 5.0]]  # 100% failed an answer: 200% after it does not count
    rows = load.load_table(r)[1]
    assert rows[2][-1] == "FAILED (10% errors)" and rows[0][6] == "100 (max)"
    assert rows[0][4] == 32 / (320 / 25)  # achieved: 30 iterations over 4 clients = 32 coverages in the duration


def test_the_tail_is_the_p99_from_100_samples_and_every_step_passing_is_a_lower_bound():
    r = race(calibrated([step(p, 100, samples=100) for p in (25, 50, 100, 200)]), PARAMS, [25, 50, 100, 200])
    assert load.redline_table(r)[1][0][3] == ">= 20.00 (every step passed)"
    assert load.load_table(r)[1][0][6] == "100 (p99)"


def test_a_failed_calibration_has_no_redline():
    ops = [{"task": "coverage-D_td-msearch-load-calibration", "error_rate": 1.0}, step(25, 100)]
    assert load.redline_table(race(ops, PARAMS, [25]))[1] == [["D_td", "msearch", "FAILED", "FAILED"]]


def test_live_pairs_each_side_with_its_counterpart():
    ops = [
        {"task": "live-bulk-epoch-4-alone", "error_rate": 0.0, "throughput": {"median": 20000}},
        {"task": "live-bulk-epoch-5-with-queries", "error_rate": 0.0, "throughput": {"median": 15000}},
        {"task": "live-coverage-alone", "error_rate": 0.0, "latency": {"50_0": 100, "100_0": 150}, "service_time": {"50_0": 90}},
        {"task": "live-coverage-with-ingest", "error_rate": 0.0, "latency": {"50_0": 200, "100_0": 400}, "service_time": {"50_0": 180}},
    ]
    header, body = load.live_table(race(ops, {}, [], challenge="live"))
    assert body[0] == ["ingest (docs/s, median)", 20000, 15000, 0.75]
    assert body[1] == ["coverage latency p50 (ms)", 100, 200, 2.0]


def test_the_hosts_table_gives_each_host_its_share_of_a_step_and_what_it_reached():
    """Two hosts, one step client each: the target halves, the achieved rates are each host's measured coverages over
    the step's duration, and the all-hosts row sums them; a race on one host has no such table."""
    from report.studies import hosts

    task = "coverage-D_td-msearch-load-50pct"
    r = race([step(50, 100)], PARAMS, [50])  # duration 6,400 ms, target 5/s
    steps = [{**line, "clients": 2} if line["task"] == task else line for line in r.record(records.LOAD_STEPS)]
    r = races.Race(r.race_id, r.path, r.data, record_texts={records.LOAD_STEPS: "".join(json.dumps(line) + "\n" for line in steps)})
    r.hosts = {
        task: {"ld-1": {"clients": [0], "samples": 16, "measured": 16}, "ld-2": {"clients": [1], "samples": 16, "measured": 8}},
        "check-privileges": {"ld-1": {"clients": [0], "samples": 1, "measured": 1}},
    }
    header, body = hosts.hosts_table(r)
    rows = {(row[0], row[1]): dict(zip(header, row)) for row in body}
    assert rows[(task, "ld-1")]["target /s"] == 2.5 and rows[(task, "ld-1")]["achieved /s"] == 2.5
    assert rows[(task, "ld-2")]["achieved /s"] == 1.25 and rows[(task, "ld-2")]["clients"] == "1 (1)"
    assert rows[(task, "all hosts")]["target /s"] == 5.0 and rows[(task, "all hosts")]["achieved /s"] == 3.75
    assert rows[("check-privileges", "ld-1")]["target /s"] is None and ("check-privileges", "all hosts") not in rows
    r.hosts = {task: {"ld-1": r.hosts[task]["ld-1"], hosts.UNNAMED: {"clients": [0], "samples": 1, "measured": 1}}}
    assert hosts.hosts_table(r) is None  # one host, whose failed request named none
