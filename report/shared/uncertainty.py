"""How sure a cell's figure is, and whether two cells differ beyond their noise.

A cell's figure is the median of its service times. Its interval is the distribution-free order-statistic interval
of the median (scipy.stats.quantile_test): the two order statistics between which the true median lies with at least
the stated confidence, for any distribution of service times. Not a bootstrap: with the 5 to 20 samples a cell has
here, a bootstrap interval covers less than it says and moves with its random draws, where the order-statistic
interval keeps its coverage and is the same on every run of the report. Its price: it needs a few samples
(MIN_SAMPLES for the comparison's 97.5%), and with fewer it says so instead of giving a number.

Two cells (B against A, from two independent races) are compared through the ratio of their medians. Each median's
interval is taken at 97.5%; both hold at once with probability 0.975^2 > 0.95, and then the true ratio lies in
[low B / high A, high B / low A]. That interval is the ratio's 95% interval, and the verdict reads it:
- "slower" (B takes longer) when the whole interval lies above 1 and the ratio exceeds 1 + margin,
- "faster" when the whole interval lies below 1 and the ratio is below 1 / (1 + margin),
- "no difference beyond noise" otherwise,
- no verdict when either cell failed or has too few samples.
With the same distribution on both sides, the verdict names a difference at most 5% of the time (the interval's
coverage). The construction is conservative: on synthetic cells with a 10% spread (tests/report/uncertainty_test.py) it
named a difference between identical distributions in at most 0.1% of 2,000 pairs, and its price is power: 20
samples a side find a 30% difference (a 20% one 79% of the time), 100 samples a 10% one. The margin covers what the samples of one race cannot show: the spread from race to race (JVM
warm-up, page cache, shard placement), a median 2.2% per cell between two runs on one node (issue 20's measurement).

Repeated races (compare_race_sets): with two or more races a side, the race is the unit, and the verdict follows the
same rule on Welch's t-interval of the log-medians; that interval holds its 95% when the races' log-medians are
roughly normal, which tests/report/uncertainty_test.py checks on synthetic sets with race-to-race noise.
"""

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
# each side's confidence, so that both hold at once with at least CONFIDENCE (independent races)
SIDE_CONFIDENCE = math.sqrt(CONFIDENCE)


def min_samples(confidence):
    """The fewest samples whose order-statistic interval of the median reaches `confidence`: 2 x 0.5^n <= 1 - confidence."""
    return math.ceil(math.log2(2 / (1 - confidence)))


MIN_SAMPLES = min_samples(SIDE_CONFIDENCE)  # a verdict's, on each side
MARGIN = 0.05  # the smallest relative difference a verdict names (run-to-run spread, see above)
# the smallest difference of medians (ms) a verdict names: a cell of a few milliseconds moves by more than its
# within-race interval from one race to the next (JIT, GC, what else the host runs); A/A pairs of one build on one
# index (5 x 100,000 rows, docs/checks.md, "Verdicts") set it
NOISE_FLOOR_MS = 5.0

VERDICT_RULE = (
    f"Verdict: faster or slower only when the whole 95% interval of the ratio lies beyond 1, the ratio beyond "
    f"{MARGIN:.0%} and the medians more than {NOISE_FLOOR_MS:g} ms apart (the noise floor of cheap cells, learned from "
    f"A/A pairs of races); otherwise no difference beyond noise. A failed cell, or fewer than {MIN_SAMPLES} samples "
    f"a side, has no verdict (report/shared/uncertainty.py)."
)

FASTER, SLOWER, SAME = "faster", "slower", "no difference beyond noise"


@dataclass(frozen=True)
class MedianInterval:
    """The median of n samples and its interval at `confidence` (None and None with too few samples)."""

    n: int
    median: float
    low: float | None
    high: float | None
    confidence: float

    def text(self, digits=1):
        if self.low is None:
            return f"n={self.n} (interval from {min_samples(self.confidence)} samples)"
        return f"[{self.low:.{digits}f}, {self.high:.{digits}f}] n={self.n}"


@functools.lru_cache(maxsize=None)
def _ranks(n, confidence):
    """The 0-based ranks of the order statistics that bound the median of n samples at `confidence` (None with too
    few samples). They depend on n alone: quantile_test's interval over 0..n-1 is those ranks."""
    interval = stats.quantile_test(np.arange(n, dtype=float), q=(n - 1) / 2, p=0.5).confidence_interval(confidence_level=confidence)
    if math.isnan(interval.low) or math.isnan(interval.high):
        return None
    return int(interval.low), int(interval.high)


def interval_ranks(n, confidence=CONFIDENCE):
    """The 0-based ranks of n sorted samples that the median and its interval at `confidence` read."""
    return sorted({(n - 1) // 2, n // 2, *(_ranks(n, confidence) or ())})


def median_interval_of(n, at, confidence=CONFIDENCE):
    """The MedianInterval of n samples from their values at interval_ranks(n) ({rank: value}): what a store's
    aggregation gives without the samples themselves."""
    median = (float(at[(n - 1) // 2]) + float(at[n // 2])) / 2
    ranks = _ranks(n, confidence)
    if ranks is None:
        return MedianInterval(n, median, None, None, confidence)
    return MedianInterval(n, median, float(at[ranks[0]]), float(at[ranks[1]]), confidence)


def median_interval(samples, confidence=CONFIDENCE):
    """The order-statistic interval of the samples' median; raises ValueError on no samples or a non-finite one."""
    values = np.sort(np.asarray(samples, dtype=float))
    if values.size == 0 or not np.all(np.isfinite(values)):
        raise ValueError(f"an interval needs finite samples, got {list(samples)[:5]}")
    return median_interval_of(values.size, {rank: values[rank] for rank in interval_ranks(values.size, confidence)}, confidence)


def ratio_interval(a, b):
    """(ratio of B's median to A's, low, high): the ratio's 95% interval from each median's order-statistic interval at
    SIDE_CONFIDENCE (both hold at once with CONFIDENCE, as in compare); low and high None with fewer than MIN_SAMPLES a
    side or a bound of 0 or less. For samples where larger is better (throughput) as much as for service times."""
    ia, ib = median_interval(a, SIDE_CONFIDENCE), median_interval(b, SIDE_CONFIDENCE)
    ratio = ib.median / ia.median if ia.median > 0 else None
    if ia.low is None or ib.low is None or ia.low <= 0 or ratio is None:
        return ratio, None, None
    return ratio, ib.low / ia.high, ib.high / ia.low


@dataclass(frozen=True)
class Comparison:
    """B against A: the ratio of medians (B / A), its 95% interval, and the verdict (None: no verdict, see why)."""

    ratio: float | None
    low: float | None
    high: float | None
    verdict: str | None
    why: str = ""

    def text(self):
        if self.verdict is None:
            return f"no verdict: {self.why}"
        return f"{self.ratio:.3f} [{self.low:.3f}, {self.high:.3f}] {self.verdict}"


def verdict(ratio, low, high, margin, gap_ms, floor_ms):
    """The rule: a difference only when the whole 95% interval of the ratio lies beyond 1, the ratio beyond margin,
    and the medians more than floor_ms apart."""
    if abs(gap_ms) <= floor_ms:
        return Comparison(ratio, low, high, SAME)
    if low > 1 and ratio > 1 + margin:
        return Comparison(ratio, low, high, SLOWER)
    if high < 1 and ratio < 1 / (1 + margin):
        return Comparison(ratio, low, high, FASTER)
    return Comparison(ratio, low, high, SAME)


def compare(a, b, margin=MARGIN, floor_ms=NOISE_FLOOR_MS):
    """Cell B's samples against cell A's (service times; None for a failed cell)."""
    if a is None or b is None:
        return Comparison(None, None, None, None, "a failed cell has no verdict")
    if len(a) < MIN_SAMPLES or len(b) < MIN_SAMPLES:
        return Comparison(None, None, None, None, f"{min(len(a), len(b))} samples, a verdict needs {MIN_SAMPLES} on each side")
    ia, ib = median_interval(a, SIDE_CONFIDENCE), median_interval(b, SIDE_CONFIDENCE)
    if ia.low <= 0:
        return Comparison(None, None, None, None, "a service time of 0 or less")
    ratio, low, high = ib.median / ia.median, ib.low / ia.high, ib.high / ia.low
    return verdict(ratio, low, high, margin, ib.median - ia.median, floor_ms)


# Drift within a race (drifts): a cell's measured samples in the order they ran, its last third against its first, by
# two rules, each right under its own assumption, and a drift is named only when both name it:
# - independent samples, any distribution (unchanged from before): from MIN_SAMPLES a third compare()'s order-statistic
#   interval; from DRIFT_MIN_THIRD to MIN_SAMPLES - 1 the thirds' ranges, apart by chance with probability
#   2 / C(2k, k) (2.9% at 4 a third);
# - samples that wander: Student's t on the thirds' log samples (their geometric means; the spread pooled over the three
#   thirds, n - 3 degrees of freedom), its error widened DRIFT_DEPENDENCE times, the intervals Bonferroni's over the
#   race's cells. Consecutive samples on one node are not independent: its speed wanders over seconds with nothing else
#   running (race 82456e83: no merge, no old-generation GC, no other process, no steal while its cells ran), and a
#   blocked cell's thirds are 4 consecutive samples a second or two apart; the first rule alone named 2 to 6 of 24 cells
#   on a warm node where it promised under 1.2.
# With both, a race without drift names a cell no more often than the rule whose assumption holds allows.
DRIFT_MIN_THIRD = 4
# the root mean square of the t statistic over the 72 cells of three width-30 races on a warm node (57185f12, 3191dc1a,
# df460d12; tests/fixtures/drift-calibration.json) is 1.86, against sqrt(9 / 7) = 1.13 for independent samples of 12:
# 1.64, rounded up
DRIFT_DEPENDENCE = 1.7


def geometric_mean(samples):
    """The geometric mean of service times (None when one is 0 or less): a drift's thirds are compared through it."""
    values = np.asarray(samples, dtype=float)
    return float(np.exp(np.log(values).mean())) if values.size and values.min() > 0 else None


def drift_t(samples):
    """(t statistic of the last third's log samples against the first's, its degrees of freedom, its standard error,
    the first and last thirds' geometric means (ms), k samples a third), or a Comparison without a verdict saying
    why."""
    k = len(samples) // 3
    if k < DRIFT_MIN_THIRD:
        return Comparison(None, None, None, None, f"{k} sample(s) a third, a drift verdict needs {DRIFT_MIN_THIRD}")
    values = np.asarray(samples, dtype=float)
    if not np.all(np.isfinite(values)) or values.min() <= 0:
        return Comparison(None, None, None, None, "a service time of 0 or less")
    logs = np.log(values)
    thirds = (logs[:k], logs[k : values.size - k], logs[values.size - k :])
    dof = values.size - 3
    spread = math.sqrt(sum(float(((t - t.mean()) ** 2).sum()) for t in thirds) / dof)
    first, last = geometric_mean(values[:k]), geometric_mean(values[values.size - k :])
    se = spread * math.sqrt(2 / k)
    return (math.log(last / first) / se if se > 0 else 0.0), dof, se, first, last, k


def _independent_interval(samples, k):
    """The first rule's interval of last / first for independent samples (values already checked positive):
    ratio_interval's from MIN_SAMPLES a third, else the thirds' ranges (lowest last / highest first, highest last /
    lowest first)."""
    first, last = list(samples[:k]), list(samples[len(samples) - k :])
    if k >= MIN_SAMPLES:
        return ratio_interval(first, last)[1:]
    return min(last) / max(first), max(last) / min(first)


def drifts(cells, margin=MARGIN, floor_ms=NOISE_FLOOR_MS):
    """{cell: its drift Comparison} for {cell: measured samples in the order they ran}: the ratio of the last third's
    geometric mean to the first's ("faster": the cell sped up during the race, as one measured on a cold JVM does), its
    interval, and a verdict read from it as compare() reads B against A. The interval spans both rules' (see above),
    so it lies beyond 1 only when both do; the second rule's intervals hold together at CONFIDENCE over every cell
    judged, so that a race without drift names any cell at most 5% of the time, however many cells it has. Fewer than
    DRIFT_MIN_THIRD samples a third: no verdict."""
    tests = {cell: drift_t(samples) for cell, samples in cells.items()}
    judged = sum(not isinstance(found, Comparison) for found in tests.values())
    found = {}
    for cell, test in tests.items():
        if isinstance(test, Comparison):
            found[cell] = test
            continue
        _, dof, se, first, last, k = test
        independent = _independent_interval(cells[cell], k)
        half = float(stats.t.ppf(1 - (1 - CONFIDENCE) / (2 * judged), dof)) * DRIFT_DEPENDENCE * se
        ratio = last / first
        low, high = min(ratio * math.exp(-half), independent[0]), max(ratio * math.exp(half), independent[1])
        found[cell] = verdict(ratio, low, high, margin, last - first, floor_ms)
    return found


def drift(samples, margin=MARGIN, floor_ms=NOISE_FLOOR_MS):
    """One cell's drift, judged alone (a family of one): drifts() for a single cell."""
    return drifts({"cell": list(samples)}, margin, floor_ms)["cell"]


DRIFT_RULE = (
    "Drift: each cell's measured samples in the order they ran, the geometric mean of the last third over the first's "
    "(below 1: it sped up during the race, as a cell measured on a cold JVM does). Its interval spans two rules': one "
    f"for independent samples (the thirds' ranges from {DRIFT_MIN_THIRD} samples a third, their medians' 95% interval "
    f"from {MIN_SAMPLES}), and Student's on the log samples widened {DRIFT_DEPENDENCE:g}x, as far as the thirds of cells "
    "on a warm node spread beyond independent samples' (consecutive samples are not independent: a node's speed wanders "
    'over seconds; docs/schedule.md, "Drift within a race"), its intervals holding together at 95% over the race\'s cells. A drift '
    f"is named only when both rules name it. Fewer than {DRIFT_MIN_THIRD} samples a third: no verdict. "
    + VERDICT_RULE.split(" A failed cell")[0]
)


MIN_RACES = 2  # a side of a comparison of race sets


def compare_race_sets(a, b, margin=MARGIN, floor_ms=NOISE_FLOOR_MS):
    """Set B of repeated races against set A, one cell: the unit is the race, so the spread from race to race (which
    the samples of one race cannot show) is in the interval. Each race gives its median; the ratio's 95% interval is
    Welch's t-interval of the difference of the mean log-medians, exponentiated (a ratio of geometric means). The
    verdict reads it as compare() does. `a` and `b` are each race's median, None for a race whose cell failed."""
    if any(m is None for m in (*a, *b)):
        return Comparison(None, None, None, None, "a failed cell has no verdict")
    if len(a) < MIN_RACES or len(b) < MIN_RACES:
        return Comparison(None, None, None, None, f"{min(len(a), len(b))} race(s), a verdict on sets needs {MIN_RACES} a side")
    if min(*a, *b) <= 0:
        return Comparison(None, None, None, None, "a median of 0 or less")
    log_a, log_b = np.log(a), np.log(b)
    diff = float(np.mean(log_b) - np.mean(log_a))
    if np.ptp(log_a) == 0 and np.ptp(log_b) == 0:
        low = high = diff  # no spread at all on either side: the interval is the point
    else:
        interval = stats.ttest_ind(log_b, log_a, equal_var=False).confidence_interval(CONFIDENCE)
        low, high = float(interval.low), float(interval.high)
    ratio, low, high = math.exp(diff), math.exp(low), math.exp(high)
    return verdict(ratio, low, high, margin, math.exp(float(np.mean(log_b))) - math.exp(float(np.mean(log_a))), floor_ms)


def compare_paired(a, b, margin=MARGIN, floor=0.0):
    """B's times against A's where each sample of B has its partner in A (epoch N of one ingest beside epoch N of the
    other: the same documents into an index of the same size). The ratio is the geometric mean of the pairs' ratios;
    its 95% interval is Student's t-interval of the mean log-ratio (pairs - 1 degrees of freedom), and the verdict
    reads it as compare() does, with `floor` in the samples' unit for the smallest difference of means it names."""
    if a is None or b is None or any(v is None for v in (*a, *b)):
        return Comparison(None, None, None, None, "a failed side has no verdict")
    if len(a) != len(b) or len(a) < MIN_RACES:
        return Comparison(None, None, None, None, f"{min(len(a), len(b))} pair(s), a paired verdict needs {MIN_RACES} or more")
    if min(*a, *b) <= 0:
        return Comparison(None, None, None, None, "a time of 0 or less")
    logs = np.log(np.asarray(b, float)) - np.log(np.asarray(a, float))
    diff = float(np.mean(logs))
    if np.ptp(logs) < 1e-12:  # the same ratio on every pair (up to rounding): the interval is the point
        low = high = diff
    else:
        interval = stats.ttest_1samp(logs, 0.0).confidence_interval(CONFIDENCE)
        low, high = float(interval.low), float(interval.high)
    return verdict(math.exp(diff), math.exp(low), math.exp(high), margin, float(np.mean(b) - np.mean(a)), floor)


def run_to_run_spread(medians):
    """(max - min) / the median of the races' medians: how far repeated races of one cell land apart."""
    values = [m for m in medians if m is not None]
    return (max(values) - min(values)) / float(np.median(values)) if len(values) > 1 else None


def slope_fit(design, y):
    """(slope, residual sum of squares, the slope's standard error) of a least-squares fit whose last column is x: the
    trend's drift test and its host fit (report/history/drift.py, host.py)."""
    coef = np.linalg.lstsq(design, y, rcond=None)[0]
    residual = y - design @ coef
    rss = float(residual @ residual)
    sigma2 = rss / (len(y) - design.shape[1])
    return float(coef[-1]), rss, math.sqrt(sigma2 * float(np.linalg.inv(design.T @ design)[-1, -1]))
