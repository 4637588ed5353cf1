"""Like with like, the nightly question after a switch and back: the newest races against their configuration's own
earlier run (docs/history-method.md, rule 7), beside the changes report/history/changes.py finds."""

import math

from scipy import stats

from report.history.changes import (
    Change,
    configuration_text,
    error_rates,
    fact_cuts,
    level,
    noise_floor,
    ratio_verdict,
    searches,
    spread,
    units_of,
)
from report.history.starts import returned_runs

RETURN = "return"  # the newest races against their configuration's own earlier run, the history having left it (newest_against_own)


def newest_against_own(cell, points, figure, found):
    """Like with like, the nightly question after a switch and back: the newest races against their configuration's
    own earlier run (each side after the last change found inside it), a Change of kind RETURN, or None where the
    history never left the newest races' configuration. Judged with the spread the changes leave, at a fact's share of
    5% (error_rates: it is planned before any search, so its share comes out of the facts' half)."""
    runs = returned_runs(points)
    if runs is None:
        return None
    cuts = [c.index for c in found]
    (lo, hi), (new_lo, new_hi) = ((max([a, *(c for c in cuts if a < c < b)]), b) for a, b in runs)
    earlier, newest = points[lo:hi], points[new_lo:new_hi]
    unit_spread = spread(points, cuts)
    rates = error_rates(searches(points), len(fact_cuts(points)) + 1)
    critical = float(stats.t.ppf(1 - rates[0] / 2, unit_spread.df)) if unit_spread.df else math.inf
    comparison = ratio_verdict(units_of(earlier, unit_spread), units_of(newest, unit_spread), unit_spread, critical, noise_floor(figure))
    others = "; ".join(dict.fromkeys(configuration_text(p, newest[0]) for p in points[hi : runs[1][0]]))
    said = [f"the newest races ({configuration_text(newest[0])}) against the same configuration's earlier run, before {others}"]
    return Change(
        cell, new_lo, newest[0].race_id, newest[0].when, level(earlier, unit_spread), level(newest, unit_spread), comparison,
        RETURN, said, unit_spread.basis,
    )  # fmt: skip
