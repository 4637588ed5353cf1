"""Coverage under load: a schedule at a fraction of the rate one client achieved earlier in the same race.

Rally fixes a task's target-throughput when the track loads, before anything is measured. The load challenge wants
its steps as fractions of the rate a single client reaches for that cell on this cluster, so each cell starts with a
calibration task (one client, back to back) whose coverages record their own duration; each step task then runs at
fraction x (1 / median calibration coverage) coverages per second, spread over its clients. Because every step has a schedule, Rally's latency includes the time a coverage waited behind the previous
ones (service time does not). Arrivals are a Poisson process (exponential gaps, as in Rally's own "poisson" schedule):
independent dashboard users, and no lock-step of the clients (a deterministic schedule starts every client at the
same instant, so at any rate all of them would always collide).
"""

import itertools
import json
import os
import random
import statistics

from runners import records
from runners.context import RaceContext

SCHEDULER = "cluster-metrics-relative-rate"
_INSTANCES = itertools.count()  # each client's scheduler draws its own arrival sequence
_UNSENT_STEPS = {}  # step task -> its record's sample meta, until the step's first sample in this process carries it


def calibration_record(task_name):
    return os.path.join(records.RATE_DIR, f"{task_name}.txt")


def record_duration(params, seconds):
    """Called by the coverage runner for a calibration task: one line per measured coverage; returns its sample meta."""
    return records.append_line(RaceContext.of(params).record_dir, calibration_record(params["name"]), f"{seconds:.6f}")


def step_meta(task_name):
    """The sample meta of a step's record, for the step's first sample in this process (the scheduler, which made it,
    returns no meta of its own); else nothing."""
    return _UNSENT_STEPS.pop(task_name, {})


def calibrated_rate(record_dir, task_name):
    """Coverages per second of one client, back to back: 1 / the median coverage of the calibration task."""
    path = os.path.join(record_dir, calibration_record(task_name))
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        seconds = [float(line) for line in f if line.strip()]
    return 1.0 / statistics.median(seconds) if seconds else None


class RelativeRateScheduler:
    """Rally scheduler (non-simple: it reads the task itself): Poisson arrivals at rate-fraction x the rate the task
    named by rate-of measured, divided over the task's clients (their sum is a Poisson process at the full rate). Registered as SCHEDULER; a step task says
    "schedule": "cluster-metrics-relative-rate" and carries rate-of and rate-fraction in its operation."""

    def __init__(self, task):
        params = task.operation.params
        context = RaceContext.of(params)
        base = calibrated_rate(context.record_dir, params["rate-of"])
        if base is None:
            raise LoadError(
                f"task {task.name}: no calibration of {params['rate-of']} in this race (the calibration "
                "task must run, and succeed, before the steps)"
            )
        self.rate = base * params["rate-fraction"]
        self.mean_wait = task.clients / self.rate
        self.random = random.Random(f"{task.name}/{os.getpid()}/{next(_INSTANCES)}")
        step = {
            "task": task.name,
            "calibrated_per_s": base,
            "fraction": params["rate-fraction"],
            "target_per_s": self.rate,
            "clients": task.clients,
        }
        _UNSENT_STEPS[task.name] = records.append_line(context.record_dir, records.LOAD_STEPS, json.dumps(step, sort_keys=True))

    def before_request(self, now):
        pass

    def after_request(self, now, weight, unit, request_meta_data):
        pass

    def next(self, current):
        return current + self.random.expovariate(1 / self.mean_wait)

    def __str__(self):
        return f"relative rate: {self.rate:.3f} coverages/s"


class LoadError(Exception):
    pass


def read_steps(record_dir):
    """{step task: its record} (each client's scheduler writes the same record; the last one wins)."""
    path = os.path.join(record_dir, records.LOAD_STEPS)
    if not os.path.isfile(path):
        return {}
    with open(path) as f:
        return {r["task"]: r for r in map(json.loads, filter(str.strip, f))}


def validate_step(params):
    """Load time: a step names its calibration task and a positive fraction of its rate."""
    fraction = params.get("rate-fraction")
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or fraction <= 0:
        raise ValueError(f"rate-fraction must be a positive number, got {fraction!r} (track parameter load_steps)")
    if not isinstance(params.get("rate-of"), str) or not params["rate-of"]:
        raise ValueError("rate-of must name the calibration task of the cell")
