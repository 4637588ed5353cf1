"""The load driver's host in a history (report/shared/host_load.py): where a race met a busy host, what a change says
of it, and whether a step is the host's rather than Elasticsearch's (docs/host-load.md)."""

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from report.shared import host_load, uncertainty

LEAST_RACES = 5  # races with a host record (each node start's first left out) a fit needs
LEAST_RANGE = host_load.FOREIGN_BUSY  # the other processes' share must vary by this much (% of a core) to fit a slope
# the share of the between-race variance the host's share must explain before the verdicts read levels adjusted for it:
# below it an adjustment would move every level by an estimated slope and leave most of the spread (on the real
# histories of docs/findings/2026-12-02-host-load.md the other cells' fits explain 66-99%, D_td serial's 48% over one
# node start and 86% over three)
ADJUST_SHARE = 0.5


def busy(point):
    """Whether the point's race met a busy host over its timed cells (a race without the record did not say so)."""
    return bool(point.facts.host and point.facts.host.busy)


def either_busy(a, b):
    return bool((a and a.busy) or (b and b.busy))


def what_changed(a, b):
    """How the host differs between the race before a change and the first after it (HostLoad or None), plainly: busy
    after a quiet race, quiet again after a busy one; said only when either is busy or the later is not recorded."""
    if b is None:
        return [host_load.NOT_RECORDED]
    was = lambda name, fmt: "not recorded" if a is None else fmt.format(getattr(a, name))  # noqa: E731
    if b.busy:
        parts = []
        if b.foreign >= host_load.FOREIGN_BUSY:
            parts.append(f"other processes took {b.foreign:.0f}% of a core during the cells (was {was('foreign', '{:.0f}%')})")
        if b.steal >= host_load.STEAL_BUSY:
            parts.append(f"steal {b.steal:.1f}% during the cells (was {was('steal', '{:.1f}%')})")
        return ["host busy: " + ", ".join(parts)]
    if a is not None and a.busy:
        return [
            f"host quiet again: other processes {b.foreign:.0f}% of a core, steal {b.steal:.1f}% (was {a.foreign:.0f}%, {a.steal:.1f}%)"
        ]
    return []


def named(last_before, after):
    """Whether every race after a step met a busy host and the race before it did not: the step is the host's, not
    Elasticsearch's (the trend names it and does not alert on it)."""
    return bool(after) and all(busy(p) for p in after) and not busy(last_before)


def resting_on_busy(after):
    """What a step's verdict rests on, where some of the races after it met a busy host (said, never dropped)."""
    count = sum(1 for p in after if busy(p))
    return [f"{count} of the {len(after)} race(s) after it met a busy host"] if count else []


@dataclass(frozen=True)
class Contention:
    """A cell's level against the other processes' share of the host over its races, each node start its own level."""

    races: int
    starts: int
    slope: float  # the cell's figure per point of a core taken by other processes: a ratio (1.007: 0.7% slower)
    low: float
    high: float
    spread_without: float  # the spread between races of a start (a share), levels per start alone
    spread_with: float  # with the host's share taken out

    @property
    def explains(self):
        """The slope's interval excludes none (1): the host's share explains part of the spread between races."""
        return self.low > 1 or self.high < 1

    @property
    def explained(self):
        """The share of the between-race variance the host's share explains (0 to 1)."""
        return max(0.0, 1 - (self.spread_with / self.spread_without) ** 2) if self.spread_without > 0 else 0.0


def adjusts(fit, points):
    """Whether a cell's verdicts read its levels adjusted for the host (adjusted): the slope beyond the noise, at
    least ADJUST_SHARE of the between-race variance explained, and every race with a host record to adjust by."""
    return (
        fit is not None
        and fit.explains
        and fit.explained >= ADJUST_SHARE
        and all(p.facts.host is not None and math.isfinite(p.facts.host.foreign) for p in points)
    )


def adjusted(points, fit):
    """The points with their figures as on a quiet host: each divided by the fit's slope to the power of the share of
    a core other processes took over the race's cells (a level per node start is the fit's, not taken out)."""
    out = []
    for p in points:
        factor = fit.slope**p.facts.host.foreign
        scaled = {k: getattr(p, k) / factor for k in ("median", "low", "high") if getattr(p, k) is not None}
        out.append(dataclasses.replace(p, **scaled))
    return out


def contention(points):
    """The fit of a cell's log medians on the other processes' share (% of a core), a level per node start, over the
    races with a host record less each start's first race (the judge's units); None where too few races or too little
    variation in the host's share to fit one."""
    kept, seen = [], set()
    for p in points:
        start = p.facts.node_start or p.race_id
        if start not in seen and p.facts.node_start and p.facts.settled is not True:
            seen.add(start)
            continue  # a node start's first race: left out, as the trend's judge leaves it out (unless it settled)
        seen.add(start)
        if p.facts.host is not None and math.isfinite(p.facts.host.foreign):
            kept.append((start, p.facts.host.foreign, math.log(p.median)))
    starts = sorted({k[0] for k in kept})
    x = np.array([k[1] for k in kept])
    if len(kept) < LEAST_RACES or len(kept) - len(starts) - 1 < 2 or np.ptp(x) < LEAST_RANGE:
        return None
    y = np.array([k[2] for k in kept])
    levels = np.array([[k[0] == s for s in starts] for k in kept], dtype=float)
    residual = y - levels @ np.linalg.lstsq(levels, y, rcond=None)[0]
    slope, rss, se = uncertainty.slope_fit(np.column_stack([levels, x]), y)
    df = len(y) - len(starts) - 1
    t = stats.t.ppf(0.975, df)
    return Contention(
        races=len(kept),
        starts=len(starts),
        slope=math.exp(slope),
        low=math.exp(slope - t * se),
        high=math.exp(slope + t * se),
        spread_without=math.sqrt(float(residual @ residual) / (len(y) - len(starts))),
        spread_with=math.sqrt(rss / df),
    )


def contention_text(fit, adjusting):
    """The fit, and which levels the cell's verdicts read (`adjusting`: adjusts())."""
    per_point = (fit.slope - 1) * 100
    said = (
        f"{per_point:+.2f}% per point of a core taken by other processes [{(fit.low - 1) * 100:+.2f}, {(fit.high - 1) * 100:+.2f}] "
        f"({fit.races} races, {fit.starts} node start(s)); the spread between races {fit.spread_without:.1%} without it, "
        f"{fit.spread_with:.1%} with it taken out ({fit.explained:.0%} of the variance)"
    )
    if adjusting:
        return said + ": the verdicts read the levels adjusted for the host"
    if not fit.explains:
        return said + ": not beyond the noise; the verdicts read the levels as measured"
    return said + f": under {ADJUST_SHARE:.0%} of the variance (or a race without a host record); the verdicts read the levels as measured"
