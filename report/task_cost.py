"""Where a race's wall time goes: Rally's steps, their own work, and the wait between them (a benchmark, not a test).

Rally 2.13 starts each step (a task, or a parallel element) on its workers, and a worker looks every 5 s (0.5 s in
--test-mode) whether its step has finished; every step ends at a join point of all workers. So each step costs
about 5-6 s of wall time outside test mode, whatever it does. This reads Rally's own log of a race:

- steps: "Benchmark consists of [N] steps";
- tasks: the task names the workers ran ("Worker[i] executing tasks: [...]");
- own time: per step, the longest of its workers' "finished executing tasks [...] in X seconds", added up;
- schedule wall: "Benchmark is about to start." to "All steps completed.";
- race wall: "Race id is [...]" to "Benchmark has finished successfully." (Rally's preparation included).

    python -m report.task_cost [--log ~/.rally/logs/rally.log] [--race ID ...]

prints a markdown row per race (every race in the log without --race), newest last.
"""

import argparse
import ast
import os
import re
import sys
from dataclasses import dataclass, field
from datetime import datetime

_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d+) ")
_RACE = re.compile(r"Race id is \[([0-9a-f-]+)\]")
_STEPS = re.compile(r"Benchmark consists of \[(\d+)\] steps")
_EXECUTING = re.compile(r"Worker\[\d+\] executing tasks: (\[.*\])$")
_FINISHED = re.compile(r"Worker\[\d+\] finished executing tasks \[.*\] in ([0-9.]+) seconds")
_JOIN = re.compile(r"All workers completed their tasks until join point \[(\d+)/(\d+)\]")
_CHALLENGE = re.compile(r"challenge \[([^\]]+)\]")


@dataclass
class RaceCost:
    race_id: str
    challenge: str = "?"
    steps: int = 0
    tasks: set = field(default_factory=set)
    step_own: dict = field(default_factory=dict)  # join point -> the longest worker's own seconds
    started: datetime | None = None  # the race
    schedule_started: datetime | None = None
    schedule_ended: datetime | None = None
    ended: datetime | None = None

    @property
    def own_s(self):
        return sum(self.step_own.values())

    @property
    def schedule_s(self):
        return (self.schedule_ended - self.schedule_started).total_seconds() if self.schedule_started and self.schedule_ended else None

    @property
    def race_s(self):
        return (self.ended - self.started).total_seconds() if self.started and self.ended else None


def _stamp(line):
    match = _STAMP.match(line)
    return datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S").replace(microsecond=int(match.group(2)) * 1000) if match else None


def parse(lines):
    """Every race of a Rally log, in the order they ran: {race id: RaceCost}."""
    races, race, pending = {}, None, []
    for line in lines:
        line = line.rstrip("\n")
        found = _RACE.search(line)
        if found:
            race = races.setdefault(found.group(1), RaceCost(found.group(1), started=_stamp(line)))
            pending = []
            continue
        if race is None:
            continue
        if "Benchmark is about to start." in line:
            race.schedule_started = _stamp(line)
        elif "All steps completed." in line:
            race.schedule_ended = _stamp(line)
        elif "Benchmark has finished successfully." in line:
            race.ended = _stamp(line)
        elif _STEPS.search(line):
            race.steps = int(_STEPS.search(line).group(1))
        elif _EXECUTING.search(line):
            race.tasks.update(ast.literal_eval(_EXECUTING.search(line).group(1)))
        elif _FINISHED.search(line):
            pending.append(float(_FINISHED.search(line).group(1)))
        elif _JOIN.search(line):
            race.step_own[int(_JOIN.search(line).group(1))] = max(pending, default=0.0)
            pending = []
        elif race.challenge == "?" and "esrally.racecontrol" in line and _CHALLENGE.search(line):
            race.challenge = _CHALLENGE.search(line).group(1)
    return races


def challenge_of(race_id, rally_home):
    """The challenge from the race's race.json, where Rally's log does not name it."""
    import json

    path = os.path.join(rally_home, "benchmarks", "races", race_id, "race.json")
    try:
        with open(path) as f:
            return json.load(f).get("challenge", "?")
    except (OSError, ValueError):
        return "?"


HEADER = "| race | challenge | steps | tasks | own time (s) | schedule wall (s) | wall / own | race wall (s) |\n|---|---|---|---|---|---|---|---|"


def row(cost):
    ratio = f"{cost.schedule_s / cost.own_s:.2f}" if cost.schedule_s and cost.own_s else "-"
    fmt = lambda v: f"{v:,.1f}" if v is not None else "-"  # noqa: E731
    return (
        f"| {cost.race_id[:8]} | {cost.challenge} | {cost.steps} | {len(cost.tasks)} | {fmt(cost.own_s)} | {fmt(cost.schedule_s)} | "
        f"{ratio} | {fmt(cost.race_s)} |"
    )


def main(argv=None):
    rally_home = os.path.join(os.environ.get("RALLY_HOME", os.path.expanduser("~")), ".rally")
    parser = argparse.ArgumentParser(prog="python -m report.task_cost", description=__doc__.split("\n")[0])
    parser.add_argument("--log", default=os.path.join(rally_home, "logs", "rally.log"), help="Rally's log (default: %(default)s)")
    parser.add_argument("--race", action="append", default=[], help="a race id (a unique prefix); repeat for several; default: all")
    args = parser.parse_args(argv)
    with open(args.log, errors="replace") as f:
        races = parse(f)
    chosen = [r for r in races.values() if not args.race or any(r.race_id.startswith(p) for p in args.race)]
    if not chosen:
        print(f"no race {', '.join(args.race) or ''} in {args.log}", file=sys.stderr)
        return 1
    print(HEADER)
    for cost in chosen:
        if cost.challenge == "?":
            cost.challenge = challenge_of(cost.race_id, rally_home)
        print(row(cost))
    return 0


if __name__ == "__main__":
    sys.exit(main())
