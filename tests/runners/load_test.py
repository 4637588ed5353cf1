"""The load schedule: a calibration task records its coverages, each step runs at a fraction of that rate."""

import asyncio
import json
from types import SimpleNamespace

import pytest
from coverage_test import answers, source

from runners import load, records
from runners.context import CONTEXT_KEY
from runners.coverage import Coverage, validate_coverage
from stub_client import StubClient


def step_task(context, fraction, clients=4, rate_of="coverage-D_td-msearch-load-calibration"):
    params = {CONTEXT_KEY: context.as_param(), "rate-of": rate_of, "rate-fraction": fraction}
    return SimpleNamespace(name="coverage-D_td-msearch-load-50pct", clients=clients, operation=SimpleNamespace(params=params))


def test_a_calibration_coverage_records_its_duration_and_a_step_runs_at_its_fraction(context, tmp_path):
    context = context.__class__(**{**context.__dict__, "record_dir": str(tmp_path)})
    params = source(context, "msearch", name="coverage-D_td-msearch-load-calibration", **{"record-rate": True, "warmups": 0})
    for _ in range(3):
        p = params.params()
        result = asyncio.run(Coverage()(StubClient(answers(context, "msearch", p["epoch"])), p))
        assert result["success"]
    rate = load.calibrated_rate(str(tmp_path), "coverage-D_td-msearch-load-calibration")
    assert rate > 0
    scheduler = load.RelativeRateScheduler(step_task(context, 0.5, clients=4))
    assert scheduler.rate == pytest.approx(rate * 0.5)
    # 4 clients share the rate: each waits 4 / rate on average between its own coverages, at random (Poisson)
    # (exponential gaps: the mean of n has a relative standard error 1/sqrt(n), 0.7% at 20,000; 5% is 7 of them)
    gaps = []
    t = 0.0
    for _ in range(20000):
        nxt = scheduler.next(t)
        gaps.append(nxt - t)
        t = nxt
    assert sum(gaps) / len(gaps) == pytest.approx(4 / (rate * 0.5), rel=0.05) and min(gaps) > 0
    first = [load.RelativeRateScheduler(step_task(context, 0.5)).next(0.0) for _ in range(3)]
    assert len(set(first)) == 3  # each client draws its own arrivals: no lock-step
    recorded = load.read_steps(str(tmp_path))["coverage-D_td-msearch-load-50pct"]
    assert recorded["target_per_s"] == pytest.approx(rate * 0.5) and recorded["clients"] == 4


def test_a_calibration_records_only_its_measured_coverages(context, tmp_path):
    """The task's 2 warmup coverages are not calibration samples: 5 coverages record 3 durations."""
    context = context.__class__(**{**context.__dict__, "record_dir": str(tmp_path)})
    params = source(context, "msearch", name="cal", **{"record-rate": True, "warmups": 2})
    for _ in range(5):
        p = params.params()
        assert asyncio.run(Coverage()(StubClient(answers(context, "msearch", p["epoch"])), p))["success"]
    lines = (tmp_path / load.calibration_record("cal")).read_text().splitlines()
    assert len(lines) == 3


def test_a_wrong_answer_is_not_a_calibration_sample(context, tmp_path):
    context = context.__class__(**{**context.__dict__, "record_dir": str(tmp_path)})
    wrong = answers(context, "msearch")
    wrong[0][1]["responses"][0]["hits"]["total"]["value"] += 1
    params = source(context, "msearch", name="cal", **{"record-rate": True}).params()
    assert asyncio.run(Coverage()(StubClient(wrong), params))["success"] is False
    assert load.calibrated_rate(str(tmp_path), "cal") is None


def test_a_step_without_its_calibration_is_refused(context, tmp_path):
    context = context.__class__(**{**context.__dict__, "record_dir": str(tmp_path)})
    with pytest.raises(load.LoadError, match="no calibration of coverage-D_td-msearch-load-calibration"):
        load.RelativeRateScheduler(step_task(context, 0.5))


@pytest.mark.parametrize("fraction", [0, -1, "half", True])
def test_bad_fractions_are_named_at_load(context, fraction):
    with pytest.raises(ValueError, match="rate-fraction must be a positive number"):
        validate_coverage({"variant": "D_td", "transport": "msearch", "rate-of": "x", "rate-fraction": fraction}, 1, context)


def test_calibration_and_step_records_travel_as_sample_meta(context, tmp_path):
    """With a metrics store the report rebuilds the record folder from the samples' meta: the calibration's durations
    come with its coverages, the step's record (made by the scheduler, which returns nothing) with the step's first
    coverage in each process, and the rebuilt folder gives the same rate and step."""
    context = context.__class__(**{**context.__dict__, "record_dir": str(tmp_path / "host")})
    calibration = source(context, "msearch", name="coverage-D_td-msearch-load-calibration", **{"record-rate": True, "warmups": 0})
    samples = []
    for _ in range(3):
        p = calibration.params()
        samples.append(asyncio.run(Coverage()(StubClient(answers(context, "msearch", p["epoch"])), p)))
    load.RelativeRateScheduler(step_task(context, 0.5))
    step = source(context, "msearch", name="coverage-D_td-msearch-load-50pct")
    for _ in range(2):
        p = step.params()
        samples.append(asyncio.run(Coverage()(StubClient(answers(context, "msearch", p["epoch"])), p)))
    carried = [op["append"] for s in samples for op in json.loads(s.get(records.META_KEY, "[]"))]
    assert carried.count(records.LOAD_STEPS) == 1  # once, not with every coverage
    assert carried.count(records.VALIDATION) == 5 and carried.count(load.calibration_record(calibration.params()["name"])) == 3

    rebuilt = str(tmp_path / "rebuilt")
    records.replay(rebuilt, [s[records.META_KEY] for s in samples if records.META_KEY in s])
    name = "coverage-D_td-msearch-load-calibration"
    assert load.calibrated_rate(rebuilt, name) == load.calibrated_rate(context.record_dir, name) > 0
    assert load.read_steps(rebuilt) == load.read_steps(context.record_dir) != {}
