"""Node starts, the unit a history's verdicts count (docs/history.md): a point's node start (or the race itself when it
recorded none), its configuration, each start's level, and each start's first race, which the judge leaves out unless
its node settled before the timed cells."""

import math


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
