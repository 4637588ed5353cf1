"""A drift in a cell's series: a run of changes in one direction whose segments slope too, or that a line fits better
than any one of its steps (a slow drift is cut by the search into a staircase of steps). report/history/changes.py
finds the changes and asks which runs of them are a drift."""

import numpy as np

from report.history.starts import configuration, first_races, start_of
from report.shared import uncertainty


def is_drift(points, cuts, direction):
    """Over a run of changes in one direction: a drift when the races rise (or fall) within the segments too, not only
    between them: a common slope fitted beside each segment's level is significant (|t| > 2) in the changes'
    direction. Steps leave flat segments; a slow drift cut into a staircase by the search leaves sloped ones. With
    several races a node start, each start has its level too, and its first race is left out (first_race_effect)."""
    if len({configuration(p) for p in points}) > 1:
        # a recorded configuration change inside the run (a version switched): a step of its own, named as one, not
        # part of a slope that joins it to a change of another configuration's races
        return False
    several = len({start_of(p) for p in points}) < len(points)  # node starts of several races
    if several and len({start_of(p) for p in points}) > 1:
        # node starts of several races: a run that spans starts joins a change in one start to another's, through the
        # starts between (whose levels may have gone back): those are steps, each named
        return False
    firsts = first_races(points) if several else set()
    kept = [i for i, p in enumerate(points) if p.race_id not in firsts]
    y = np.log([points[i].median for i in kept])
    x = np.array(kept, dtype=float)
    bounds = [0, *cuts, len(points)]
    segment = [next(k for k, hi in enumerate(bounds[1:]) if i < hi) for i in kept]
    # a level per segment, and per node start within it where starts hold several races: a new start's level is no slope
    group = [(segment[k], start_of(points[i]) if several else None) for k, i in enumerate(kept)]
    design = np.column_stack([np.array([g == key for g in group], dtype=float) for key in dict.fromkeys(group)] + [x])
    if len(y) <= design.shape[1] + 2 or np.linalg.matrix_rank(design) < design.shape[1]:
        return False
    slope, rss, error = uncertainty.slope_fit(design, y)
    if error > 0 and slope / error * direction > 2:
        return True
    # or the staircase is a line: a search cuts a slow drift into many steps whose segments are too short to slope. A
    # line through the run (a level per node start) that fits its races better than any one of its steps does, its
    # slope beyond noise in the direction, makes the run a drift (a real step fits better than a line)
    # (within one node start, or where each race is a start of its own: across starts of several races a line would
    # join a step in one start to another's, through the starts between)
    starts = list(dict.fromkeys(group_start(points, kept, several)))
    levels = [np.array([(start_of(points[i]) if several else None) == key for i in kept], dtype=float) for key in starts]
    line = np.column_stack(levels + [x])
    if len(starts) > 1 or len(cuts) < 2 or len(y) <= line.shape[1] + 2 or np.linalg.matrix_rank(line) < line.shape[1]:
        return False
    line_slope, line_rss, line_error = uncertainty.slope_fit(line, y)
    steps = [np.column_stack(levels + [(x >= cut).astype(float)]) for cut in cuts]
    step_rss = [uncertainty.slope_fit(step, y)[1] for step in steps if np.linalg.matrix_rank(step) == step.shape[1]]
    return bool(step_rss) and line_error > 0 and line_slope / line_error * direction > 2 and line_rss < min(step_rss)


def group_start(points, kept, several):
    """Each kept point's node start where starts hold several races, else one group."""
    return [start_of(points[i]) if several else None for i in kept]


def drift_runs(points, cuts, judged):
    """[(first, last)] indexes into cuts of runs of consecutive changes in one direction that are a drift (a slow drift
    is cut by the search into a staircase of steps, or one)."""
    runs, i = [], 0
    bounds = [0, *cuts, len(points)]
    while i < len(cuts):
        j = i
        while j + 1 < len(cuts) and judged[j + 1].verdict == judged[i].verdict:
            j += 1
        direction = 1 if judged[i].verdict == uncertainty.SLOWER else -1
        if is_drift(points[bounds[i] : bounds[j + 2]], [c - bounds[i] for c in cuts[i : j + 1]], direction):
            runs.append((i, j))
        i = j + 1
    return runs
