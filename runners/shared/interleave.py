"""The interleaved schedule (track parameter schedule=interleaved): the study's cells take turns, one coverage at a
time, every cell once per pass in an order shuffled with a fixed seed, as the seed study ran them.

Rally runs a challenge's tasks one after the other and refuses two tasks of one name, so that a pass cannot be a
sequence of tasks without renaming them, and `esrally compare` lines races up by task name. The cells therefore run
as one parallel element, each its own task under its usual name with one client, and take turns: the track processor
computes the whole order once (order()) and hands it to every cell; each coverage waits for its turn before its first
request and passes the turn on after its answer is checked, so nothing of the waiting is inside the timed window.

The turn is a counter in a file of the race's record folder, shared by the worker processes of one load-driver host:
the schedule needs the cells on one host (the track processor refuses several)."""

import asyncio
import os
import random
import time

from runners.contracts import parameters
from runners.contracts.context import RaceContext

GROUP_KEY = "interleave"  # operation parameter: the cell belongs to this interleaved group (the challenge file)
# operation parameter: this member of the group takes its first turn, once, before any cell: the set-up the cells are
# measured under (rtt-sweep's set-rtt), in the cells' schedule step instead of a step of its own
LEAD_KEY = "interleave-lead"
ORDER_KEY = "interleave-order"  # set by the track processor: the group's task names in turn order
TURN_KEY = "turn"  # set by the parameter source: this coverage's place in the order

# how often a waiting coverage looks at the counter: the next in line often, the others rarely (the polls share the
# load driver's cores with the coverage that is being timed)
NEXT_POLL_SECONDS, LATER_POLL_SECONDS = 0.002, 0.05
STALLED = ".stalled"  # beside the counter: why the turns stopped


def order(names, passes, seed):
    """The turn order: passes passes, each every name once, shuffled by one seeded random stream."""
    rng = random.Random(seed)
    turns = []
    for _ in range(passes):
        shuffled = list(names)
        rng.shuffle(shuffled)
        turns += shuffled
    return turns


def positions(turn_order, name):
    """The places of one cell's coverages in the order, first to last."""
    return [i for i, n in enumerate(turn_order) if n == name]


def check_pace(tasks, user_params):
    """At load: interleaved cells run one coverage at a time, at their own pace, so the challenge takes no
    coverage_clients or target_throughput."""
    paced = {name: parameters.value(user_params, name) for name in ("coverage_clients", "target_throughput")}
    if any(GROUP_KEY in t.operation.params for t in tasks) and paced != {"coverage_clients": 1, "target_throughput": None}:
        raise ValueError(
            f"schedule interleaved runs one coverage at a time, at its own pace: it takes no coverage_clients or "
            f"target_throughput ({paced}); drop them, or race with schedule:blocked"
        )


def assign(tasks, seed, load_driver_hosts):
    """Hands each interleaved group of the challenge its order. tasks: the challenge's leaf tasks (after test mode
    has set their iterations). Raises ValueError naming the problem."""
    groups = {}
    for task in tasks:
        group = task.operation.params.get(GROUP_KEY)
        if group is not None:
            groups.setdefault(group, []).append(task)
    if groups and len(set(load_driver_hosts or ())) > 1:
        hosts = list(dict.fromkeys(load_driver_hosts))
        raise ValueError(
            f"the interleaved schedule (the default) keeps its cells' turn order on one load-driver host's disk, and this "
            f"race has {len(hosts)} (--load-driver-hosts={','.join(hosts)}); add --track-params=schedule:blocked, whose "
            "cells run a task after the other and split their clients across the hosts, or race with one host"
        )
    for group, members in groups.items():
        leads = [t.name for t in members if t.operation.params.get(LEAD_KEY)]
        cells = [t for t in members if not t.operation.params.get(LEAD_KEY)]
        runs = {t.name: (t.warmup_iterations or 0) + (t.iterations if t.iterations is not None else 1) for t in members}
        if len(leads) > 1 or any(runs[name] != 1 for name in leads):
            raise ValueError(f"interleaved group {group}: at most one lead, which runs once (runs: { {n: runs[n] for n in leads} })")
        passes = {t.name: runs[t.name] for t in cells}
        if len(set(passes.values())) != 1 or any(t.clients != 1 for t in members) or any(t.time_period for t in members):
            raise ValueError(
                f"interleaved group {group}: every cell needs one client and the same iteration count " f"(warm-up + measured: {passes})"
            )
        turn_order = leads + order(sorted(passes), next(iter(passes.values())), seed)
        for task in members:
            task.operation.params[ORDER_KEY] = turn_order


def turn_file(record_dir, group):
    return os.path.join(record_dir, f"turns-{group}.txt")


def _current(path):
    try:
        with open(path) as f:
            return int(f.read() or 0)
    except FileNotFoundError:
        return 0


async def wait_for_turn(path, turn, stall_seconds):
    """Waits until the counter reaches turn. Returns None, or why not: the counter stopped moving for stall_seconds
    (the coverage that held the turn is gone)."""
    last, since = None, time.monotonic()
    while True:
        current = _current(path)
        if current >= turn:
            return None
        if os.path.exists(path + STALLED):  # another cell saw it first: every later turn fails at once
            with open(path + STALLED) as f:
                return f.read()
        if current != last:
            last, since = current, time.monotonic()
        elif time.monotonic() - since > stall_seconds:
            why = (
                f"interleaved schedule: turn {current + 1} of {path} did not pass on within {stall_seconds:.0f} s "
                f"(request-timeout x (nodes + 1)): the coverage holding it never finished"
            )
            with open(path + STALLED, "w") as f:
                f.write(why)
            return why
        await asyncio.sleep(NEXT_POLL_SECONDS if turn - current <= 1 else LATER_POLL_SECONDS)


def pass_turn(path, turn):
    """The turn after this one: written whole (a reader never sees a partial number)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    temporary = f"{path}.{os.getpid()}"
    with open(temporary, "w") as f:
        f.write(str(turn + 1))
    os.replace(temporary, path)


async def as_lead(params, act):
    """Runs act() (a coroutine function) as its group's lead when the schedule made it one, else just runs it. The
    lead holds the first turn: the cells wait until it passed it on, and if act() fails they fail at once with why
    (the STALLED file) instead of waiting for a turn that never comes."""
    if not params.get(ORDER_KEY):
        return await act()
    path = turn_file(RaceContext.of(params).record_dir, params[GROUP_KEY])
    try:
        result = await act()
    except BaseException as e:
        with open(path + STALLED, "w") as f:
            f.write(f"interleaved schedule: {params.get('name')}, which sets up the group's cells, failed: {e}")
        raise
    pass_turn(path, params[ORDER_KEY].index(params.get("name")))
    return result
