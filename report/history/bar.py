"""The bar a searched change must pass (report/history/changes.py): the largest |t| a search finds among as many units
that differ by noise alone, simulated once per size from a fixed seed (the same report on every run). A search puts
its change where the two sides differ most, so a plain t quantile at that place would name changes in noise."""

import functools
import math

import numpy as np

# the null distribution of a search's largest t (max_t_critical): simulated histories of this many, from a fixed seed,
# so a report is the same on every run; its 95th percentile moves by about 1% between seeds
SIMULATIONS = 20000
TAIL_SIMULATIONS, MAX_SIMULATIONS = 1000, 200_000
GRID_FROM, GRID_STEP = 40, 1.15  # series longer than GRID_FROM units share the critical value of a grid's next size
# a searched change is judged with this many units (races of a node start, or node starts) on each side at least: one
# race alone on a side is as likely an outlier (docs/history.md: single races of 1.8x among a start's) as a change's
# start, and the search over places with one on a side needs a far higher bar (at 5 units: t 5.4 against 4.2)
LEAST_SIDE = 2
SIMULATION_SEED = 20261128
# other groups' degrees of freedom beyond this add nothing a verdict can see (chi-square / df within 1% of its mean)
MAX_EXTRA_DF = 200


def largest_t(y, extra_squares=0.0, extra_df=0, least_left=LEAST_SIDE):
    """Per row of y (units in order), the largest |t| over every place one change could be put with LEAST_SIDE units
    or more on each side (`least_left` on the left: 1 in a node start's own search, its short side): the two sides'
    difference of means over its standard error, the spread pooled within both sides plus `extra_squares` (a sum of
    squares with `extra_df` degrees of freedom from other groups). y: a 2-d array; the result one value a row (0
    where no place has enough units a side)."""
    y = np.asarray(y, dtype=float)
    units = y.shape[1]
    if units < least_left + LEAST_SIDE:
        return np.zeros(len(y))
    left = np.arange(least_left, units - LEAST_SIDE + 1, dtype=float)
    right = units - left
    sums, squares = np.cumsum(y, axis=1), np.cumsum(y * y, axis=1)
    at = left.astype(int) - 1  # the last unit of the left side
    left_sum, left_squares, total, total_squares = sums[:, at], squares[:, at], sums[:, -1:], squares[:, -1:]
    right_sum = total - left_sum
    within = left_squares - left_sum**2 / left + (total_squares - left_squares) - right_sum**2 / right
    extra = np.reshape(extra_squares, (-1, 1)) if np.ndim(extra_squares) else extra_squares
    sd = np.sqrt(np.maximum(within + extra, 0.0) / (units - 2 + extra_df))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.abs(right_sum / right - left_sum / left) / (sd * np.sqrt(1 / left + 1 / right))
    return np.nan_to_num(t, nan=0.0, posinf=np.inf).max(axis=1)


def max_t_critical(units, extra_df, confidence, least_left=LEAST_SIDE):
    """The critical value of a searched change: the `confidence` quantile of the largest |t| (largest_t) over every
    place a search could put one change among `units` units that differ by noise alone (independent, normal: each t
    is then free of their level and spread, so one simulation serves every series), the spread pooled within both
    sides plus `extra_df` degrees of freedom from other segments and node starts. A search puts its change where |t|
    is largest, so a plain t quantile at that place would name changes in noise (inf: too few units to judge).
    least_left: the fewest units left of a place (largest_t's)."""
    if units < least_left + LEAST_SIDE or units - 2 + extra_df < 1:
        return math.inf
    if units > GRID_FROM:  # a long series: the next size of a coarse grid (the value grows slowly with it: conservative)
        units = max(units, round(GRID_FROM * GRID_STEP ** math.ceil(math.log(units / GRID_FROM, GRID_STEP))))
    return _simulated_critical(units, extra_df, round(confidence, 9), least_left)


@functools.lru_cache(maxsize=None)
def _simulated_critical(units, extra_df, confidence, least_left):
    # at least TAIL_SIMULATIONS beyond the quantile: a search among many (1 - confidence small) reads far in the tail
    count = min(MAX_SIMULATIONS, max(SIMULATIONS, math.ceil(TAIL_SIMULATIONS / (1 - confidence))))
    rng = np.random.default_rng(SIMULATION_SEED)
    extra = rng.chisquare(extra_df, count) if extra_df else np.zeros(count)
    largest = [
        largest_t(rng.standard_normal((min(500, count - first), units)), extra[first : first + 500], extra_df, least_left)
        for first in range(0, count, 500)
    ]
    return float(np.quantile(np.concatenate(largest), confidence))
