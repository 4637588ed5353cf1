"""Node starts, the unit a history's verdicts count (docs/history.md): a point's node start (or the race itself when it
recorded none), its configuration, each start's level, and each start's first race, which the judge leaves out unless
its node settled before the timed cells."""

import contextvars
import math

import numpy as np


def start_of(point):
    """The point's unit: its node start, or the race itself when it recorded none."""
    return point.facts.node_start or f"race {point.race_id}"


def configuration(point):
    f = point.facts
    return (f.version, f.build, f.jvm, f.heap, f.processors, f.settings)


def start_levels(points):
    """{start: mean log median of its points} in order of first appearance."""
    levels = {}
    for p in points:
        levels.setdefault(start_of(p), []).append(math.log(p.median))
    return {start: sum(v) / len(v) for start, v in levels.items()}  # (numpy's mean per start: a third of the trend's time)


def first_races(points):
    """The race ids the judge leaves out: each node start's first race (a node just started: first_race_effect), unless
    its settle record says the node settled before the timed cells (Facts.settled): then it counts like any other."""
    firsts = {}
    for p in points:
        firsts.setdefault(start_of(p), p)
    return {p.race_id for p in firsts.values() if p.facts.settled is not True}


def first_race_rule(points):
    """(node starts whose first race counts, its node settled; node starts whose first race is left out) of the starts
    with two races or more: which rule each start's first race had."""
    firsts, starts = first_races(points), {}
    for p in points:
        starts.setdefault(start_of(p), []).append(p.race_id)
    several = [races[0] for races in starts.values() if len(races) > 1]
    return sum(1 for r in several if r not in firsts), sum(1 for r in several if r in firsts)


def returned_runs(points):
    """((first, end) of the newest races' configuration's run before, (first, end) of its newest run) where the history
    left that configuration for another and came back to it (a version switched and back); None where it never left."""
    newest = configuration(points[-1])
    first = len(points)
    while first > 0 and configuration(points[first - 1]) == newest:
        first -= 1
    end = first
    while end > 0 and configuration(points[end - 1]) != newest:
        end -= 1
    if end == 0:
        return None
    start = end
    while start > 0 and configuration(points[start - 1]) == newest:
        start -= 1
    return (start, end), (first, len(points))


# the series find() is judging and its series_codes: built once a find, not at each of its hundreds of spreads
JUDGING = contextvars.ContextVar("judging", default=(None, None))


def series_codes(points):
    """(log medians, each point's node start as a number, its configuration as a number): numpy arrays, one a point."""
    judging, codes = JUDGING.get()
    if points is judging:
        return codes
    starts, configurations = {}, {}
    logs = np.log(np.fromiter((p.median for p in points), dtype=float, count=len(points)))
    start_codes = np.fromiter((starts.setdefault(start_of(p), len(starts)) for p in points), dtype=np.int64, count=len(points))
    configuration_codes = np.fromiter(
        (configurations.setdefault(configuration(p), len(configurations)) for p in points), dtype=np.int64, count=len(points)
    )
    return logs, start_codes, configuration_codes


def pooled_units(group, unit, logs):
    """(sd, df) of changes.pooled() over the groups (a number a point) of each unit's level (the mean log of its points in the group): the
    spread in one pass of numpy, the same as start_levels per group (a third of a 5,000-race trend's time, in Python)."""
    if not len(logs):
        return None, 0
    width = int(unit.max()) + 1
    keys, inverse = np.unique(group.astype(np.int64) * width + unit, return_inverse=True)
    levels = np.bincount(inverse, weights=logs) / np.bincount(inverse)
    _, group_of_unit, counts = np.unique(keys // width, return_inverse=True, return_counts=True)
    means = np.bincount(group_of_unit, weights=levels) / counts
    kept = counts[group_of_unit] > 1
    squares, df = float(np.sum(((levels - means[group_of_unit]) ** 2)[kept])), int(np.sum(counts[counts > 1] - 1))
    return (math.sqrt(squares / df) if df else None), df


def units_in(points, lo, hi, by_start):
    """units_of(points[lo:hi]) from the series' codes (series_codes): its node starts' levels, or its races' logs."""
    logs, starts, _ = series_codes(points)
    if not by_start:
        return list(logs[lo:hi])
    _, inverse = np.unique(starts[lo:hi], return_inverse=True)
    return list(np.bincount(inverse, weights=logs[lo:hi]) / np.bincount(inverse))


def short_sides(points, least_side):
    """The places with one race before them, whose races after carry the evidence: in each node start, the race after
    its first that counts (first_races), where `least_side` races or more that count follow it in the start (a step after
    a node start's second race). One more place of that start's own search (its bar simulated with it: largest_t's
    least_left), judged with the spread of the rest of the history (within_start_spread)."""
    firsts, by_start = first_races(points), {}
    for i, p in enumerate(points):
        if p.facts.node_start and p.race_id not in firsts:
            by_start.setdefault(p.facts.node_start, []).append(i)
    return frozenset(counted[1] for counted in by_start.values() if len(counted) >= 1 + least_side)
