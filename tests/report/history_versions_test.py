"""Versions judged with the node start as the unit (report/history/arms.py, rendered by versions.py), on synthetic plans with the spreads the
real plan measured (docs/versions.md, "By node start": 4 arms x 3 node starts x 4 races of production-comparison at full
scale): the design of `make versions` (8.17.2, 8.19.21, 9.5.3 and the A/A arm; 3 rounds; 4 races a start), a round's
level shared by its starts (the machine's state at the time), a start's own level beside it, the races of a start
around it and drifting down, the first race of a start slower. Each rate is measured over hundreds of plans; the
bounds are the issue's."""

import json
import math

import numpy as np
import pytest

from localnode import node_starts
from report import ReportError
from report.history import arms as arm_analysis
from report.history.series import Point
from report.shared import uncertainty
from report.studies.coverage_answer import COVERAGE_TIME
from report.studies.ingest_changes import INGEST_WALL
from tests.report.history_test import facts

ROUND = 0.06  # log sd of a round's level, shared by its starts (the plans: about 0.02 in versions, 0.09 in history)
BETWEEN_STARTS = 0.06  # log sd of a start's level once arm and round are taken out (versions: 0.039-0.093 over 4 cells)
BETWEEN_RACES = 0.04  # log sd of a race around its start's line (versions: 5.0-8.3% between races, drift included)
DRIFT = -0.035  # a start's races speed up, log per race (versions: 0.943-0.980 a race)
FIRST_RACE = 0.15  # the first race of a start, log excess (versions: 1.07-1.28x)
ROUNDS_FOR_20_PERCENT = 6  # node starts a version that find a 20% effect in 90% of plans (3 find it in about 60%)
ARMS = (("8.17.2", "8.17.2"), ("8.19.21", "8.19.21"), ("9.5.3", "9.5.3"), ("8.17.2-aa", "8.17.2"))
PLANS = 400


def plan(
    rng, effect=None, rounds=3, races=4, drift=DRIFT, arms=ARMS, level_ms=200.0
):  # parameters: a synthetic plan's shape, each a keyword with its default
    """Points of one synthetic plan, in race order: rounds x arms x races, each arm's log level moved by effect[label]."""
    effect = effect or {}
    points, when = [], 0
    for r in range(1, rounds + 1):
        round_level = rng.normal(0, ROUND)
        for label, version in arms:
            start = str(1_800_000_000_000 + 1000 * when)
            start_level = math.log(level_ms) + round_level + rng.normal(0, BETWEEN_STARTS) + math.log1p(effect.get(label, 0.0))
            for k in range(races):
                log_median = start_level + rng.normal(0, BETWEEN_RACES) + (FIRST_RACE if k == 0 else 0.0) + drift * k
                tags = {node_starts.ARM_TAG: label, "node-start": str(r)}
                points.append(
                    Point(f"race-{when:04d}", f"2026{when:010d}", math.exp(log_median), None, None, 15, facts(version, start), tags)
                )
                when += 1
    return points


def verdicts_of(points, cell="coverage-D_td-serial"):
    return {a.arm: a.comparison for a in arm_analysis.judge_arms(cell, COVERAGE_TIME, points).arms[1:]}


def rate(outcome, count=PLANS, seed=7, **kwargs):
    rng = np.random.default_rng(seed)
    return float(np.mean([outcome(verdicts_of(plan(rng, **kwargs))) for _ in range(count)]))


def test_the_tag_of_an_arm_is_the_one_the_plan_writes():
    assert arm_analysis.ARM_TAG == node_starts.ARM_TAG
    assert "node-start" in node_starts.TAGS and arm_analysis.ROUND_TAG == "node-start"
    assert dict(item.split(":") for item in node_starts.tags("p", "8.17.2-aa", "8.17.2", 2).split(",")) == {
        "node-starts": "p",
        "es": "8.17.2",
        arm_analysis.ARM_TAG: "8.17.2-aa",
        arm_analysis.ROUND_TAG: "2",
    }


def test_the_plan_alternates_its_arms_and_names_a_bad_entry():
    arms = node_starts.arms("8.17.2,9.5.3,8.17.2-aa=8.17.2")
    assert node_starts.plan_order(arms, 2) == [
        ("8.17.2", "8.17.2", 1),
        ("9.5.3", "9.5.3", 1),
        ("8.17.2-aa", "8.17.2", 1),
        ("8.17.2", "8.17.2", 2),
        ("9.5.3", "9.5.3", 2),
        ("8.17.2-aa", "8.17.2", 2),
    ]
    with pytest.raises(ValueError, match="twice"):
        node_starts.arms("8.17.2,8.17.2")
    with pytest.raises(ValueError, match="LABEL=VERSION"):
        node_starts.arms("8.17")


def test_a_plan_says_its_step_of_all_and_the_time_left_at_its_own_pace():
    assert (
        node_starts.progress(3, 12, "9.5.3", 1, 0, 0.0) == "node-starts: step 3 of 12: 9.5.3 node start 1; time left known after this step"
    )
    # two starts finished in this run took 24 minutes: 12 minutes each for steps 5 to 12 (a resumed plan counts its own)
    assert node_starts.progress(5, 12, "8.17.2", 2, 2, 24 * 60.0).endswith("step 5 of 12: 8.17.2 node start 2; about 1 h 36 min left")
    assert node_starts.progress(12, 12, "8.17.2-aa", 3, 11, 11 * 600.0).endswith("about 10 min left")


@pytest.mark.slow
def test_no_version_effect_gives_no_difference_in_at_least_95_percent_of_cells():
    same = rate(lambda found: np.mean([c.verdict == uncertainty.SAME for c in found.values()]))
    print(f"no effect: {same:.1%} of cells no difference")
    assert same >= 0.95


@pytest.mark.slow
def test_the_a_a_arm_gives_no_difference_in_at_least_95_percent_of_plans():
    same = rate(lambda found: found["8.17.2-aa"].verdict == uncertainty.SAME)
    print(f"A/A arm: {same:.1%} of plans no difference")
    assert same >= 0.95


@pytest.mark.slow
def test_a_20_percent_version_effect_is_found():
    """With the spread between node starts measured, 3 starts a version find a 20% effect in about 60% of plans, 6 in
    at least 90% (docs/versions.md says how many a team needs)."""
    three = rate(lambda found: found["9.5.3"].verdict == uncertainty.SLOWER, effect={"9.5.3": 0.20})
    found = rate(lambda found: found["9.5.3"].verdict == uncertainty.SLOWER, effect={"9.5.3": 0.20}, rounds=ROUNDS_FOR_20_PERCENT)
    others = rate(lambda found: found["8.19.21"].verdict == uncertainty.SAME, effect={"9.5.3": 0.20}, rounds=ROUNDS_FOR_20_PERCENT)
    print(
        f"20% effect found in {three:.1%} of plans of 3 starts, {found:.1%} of {ROUNDS_FOR_20_PERCENT}; others no difference {others:.1%}"
    )
    assert found >= 0.90 and others >= 0.95 and 0.3 < three < found


def test_without_rounds_the_starts_spread_is_the_unit_and_wider():
    """A plan whose races carry no round (a team's own starts) is judged with the starts' spread around their arm."""
    rng = np.random.default_rng(3)
    points = plan(rng)
    unrounded = [
        Point(p.race_id, p.when, p.median, p.low, p.high, p.n, p.facts, {arm_analysis.ARM_TAG: p.tags[arm_analysis.ARM_TAG]})
        for p in points
    ]
    paired, unpaired = arm_analysis.judge_arms("c", COVERAGE_TIME, points), arm_analysis.judge_arms("c", COVERAGE_TIME, unrounded)
    assert paired.unit_spread.basis == arm_analysis.BASIS_PAIRED and unpaired.unit_spread is unpaired.spread
    assert paired.arms[2].comparison.ratio == pytest.approx(unpaired.arms[2].comparison.ratio)
    assert (
        unpaired.arms[2].comparison.high - unpaired.arms[2].comparison.low > paired.arms[2].comparison.high - paired.arms[2].comparison.low
    )


def test_a_start_level_leaves_out_its_first_race_and_a_drift_within_starts_is_named():
    rng = np.random.default_rng(5)
    steady = arm_analysis.judge_arms("c", COVERAGE_TIME, plan(rng, drift=0.0))
    assert all(s.level.races == 3 and len(s.medians) == 4 for s in steady.starts)
    assert steady.first_race is not None and steady.first_race[0] > 1.05
    assert steady.drift.verdict == uncertainty.SAME and not steady.drift.races
    drifting = arm_analysis.judge_arms("c", COVERAGE_TIME, plan(rng, drift=-0.06))
    assert drifting.drift.verdict == uncertainty.FASTER and drifting.drift.per_race < 0.97
    assert len(drifting.drift.races) >= 2 * len(drifting.starts) * 3 // 4  # two races a start, in most starts


def test_a_baseline_that_did_not_race_is_named():
    with pytest.raises(ReportError, match=r"--baseline 7\.0\.0: no race of that arm.*8\.17\.2, 8\.19\.21, 9\.5\.3, 8\.17\.2-aa"):
        arm_analysis.judge_arms("c", COVERAGE_TIME, plan(np.random.default_rng(1)), baseline="7.0.0")


def test_the_ingest_has_no_millisecond_floor_and_the_seed_figures_are_the_seeds():
    assert COVERAGE_TIME.seed("coverage-D_td-serial") == 1323 and COVERAGE_TIME.seed("coverage-D_hdr-msearch") == 101
    assert COVERAGE_TIME.seed("coverage-D_hdr-terms") is None and INGEST_WALL.seed(INGEST_WALL.cell("all")) is None
    assert INGEST_WALL.seed(INGEST_WALL.cell()) == pytest.approx(5 * 76.867)
    # 60 s of ingest 50% slower on one arm, three starts each: seconds are not milliseconds under the floor
    rng = np.random.default_rng(2)
    found = arm_analysis.judge_arms(INGEST_WALL.cell(), INGEST_WALL, plan(rng, effect={"9.5.3": 0.5}, races=1, drift=0.0, level_ms=60.0))
    assert {a.arm: a.comparison for a in found.arms[1:]}["9.5.3"].verdict == uncertainty.SLOWER


FAKE_MAKE = """#!/usr/bin/env python3
import json, os, sys, uuid
calls = os.environ["FAKE_MAKE_CALLS"]
with open(calls, "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\\n")
if "race" in sys.argv and os.environ.get("FAKE_MAKE_FAIL") and sum(1 for _ in open(calls)) >= int(os.environ["FAKE_MAKE_FAIL"]):
    sys.exit(2)
if "race" in sys.argv:
    print(f"[INFO] Race id is [{uuid.uuid4()}]")
"""


def test_the_plan_runs_its_node_starts_alternated_tagged_and_resumes_where_it_stopped(tmp_path, monkeypatch):
    """local-es/node_starts.py with a make that records what it is asked (the races themselves: docs/versions.md): each
    start stops the node, ingests, then races, every race tagged; a plan cut short goes on at its first unfinished
    start, which is raced again from its node start."""
    make = tmp_path / "make"
    make.write_text(FAKE_MAKE)
    make.chmod(0o755)
    calls = tmp_path / "calls.jsonl"
    monkeypatch.setenv("FAKE_MAKE_CALLS", str(calls))
    argv = [
        "--plan",
        "t",
        "--versions",
        "8.17.2,8.17.2-aa=8.17.2",
        "--starts",
        "2",
        "--runs",
        "2",
        "--make",
        str(make),
        "--out",
        str(tmp_path),
    ]
    monkeypatch.setenv("FAKE_MAKE_FAIL", "8")  # the 8th call (the second start's second race) fails
    with pytest.raises(SystemExit, match="race 2 of 8.17.2-aa start 1 failed; run the same command again"):
        node_starts.main(argv)
    state = json.loads((tmp_path / "node-starts-t" / "state.json").read_text())
    assert [(d["version"], d["es"], d["start"], len(d["races"])) for d in state["done"]] == [("8.17.2", "8.17.2", 1, 2)]
    monkeypatch.delenv("FAKE_MAKE_FAIL")
    assert node_starts.main(argv) == 0
    state = json.loads((tmp_path / "node-starts-t" / "state.json").read_text())
    assert [(d["version"], d["start"]) for d in state["done"]] == [("8.17.2", 1), ("8.17.2-aa", 1), ("8.17.2", 2), ("8.17.2-aa", 2)]
    made = [json.loads(line) for line in calls.read_text().splitlines()]
    stops = [i for i, call in enumerate(made) if "es-stop" in call]
    assert len(stops) == 5  # four starts, the cut one twice
    second = made[stops[1] :]
    assert "CHALLENGE=ingest-baseline" in second[1] and "ES_VERSION=8.17.2" in second[1]
    assert "RACE_ARGS=--user-tag=node-starts:t,es:8.17.2,arm:8.17.2-aa,node-start:1" in second[1]
    with pytest.raises(SystemExit):
        node_starts.main(["--plan", "t", "--versions", "8.17.2", "--make", str(make), "--out", str(tmp_path)])  # another design
