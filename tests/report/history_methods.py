"""How the change finding was chosen (docs/history.md, "The method"): Apache Otava's E-divisive candidates against
ruptures' Pelt (l2 cost, penalty k log(n) sigma^2, sigma from the median absolute difference), each followed by the
same verdict with the node start as the unit, on tests/report/history_test.py's synthetic histories. Not a test and
not in the suite: ruptures is no dependency of the project.

    pip install ruptures==1.1.10 && python tests/report/history_methods.py
"""

import math
import sys

import numpy as np

sys.path.insert(0, ".")
import ruptures as rpt

from report.history import changes
from report.shared import uncertainty
from tests.report import history_test as h

otava_candidates = changes.candidates


def ruptures_candidates(points, pen_factor):
    y = np.log([p.median for p in points])
    if len(y) < 3:
        return []
    sigma = np.median(np.abs(np.diff(y))) / 0.6745 / math.sqrt(2)
    bkps = rpt.Pelt(model="l2", min_size=1, jump=1).fit(y.reshape(-1, 1)).predict(pen=pen_factor * math.log(len(y)) * sigma**2)
    return [b for b in bkps if b < len(y)]


def rates(cands):
    changes.candidates = cands
    rng = np.random.default_rng(5)
    null = np.mean([bool(h.named(h.history(rng, 30, 1))) for _ in range(200)] + [bool(h.named(h.history(rng, 3, 10))) for _ in range(200)])
    run = np.mean([h.found_at(h.history(rng, 2, 15, level=lambda s, n: math.log(1.2) if n >= 25 else 0.0), 25) for _ in range(200)])
    night = np.mean([h.found_at(h.history(rng, 30, 1, level=lambda s, n: math.log(1.2) if n >= 25 else 0.0), 25) for _ in range(200)])
    drift = np.mean(
        [any(c.kind == changes.DRIFT for c in h.named(h.history(rng, 1, 30, level=lambda s, n: 0.015 * n))) for _ in range(100)]
    )
    return null, run, night, drift


print(f"otava p={changes.CANDIDATE_PVALUE}: null %.3f running-node step %.3f nightly step %.3f drift %.2f" % rates(otava_candidates))
for f in (2, 4, 8):
    print(
        f"ruptures Pelt l2 pen={f} log(n) sigma^2: null %.3f running-node step %.3f nightly step %.3f drift %.2f"
        % rates(lambda p, f=f: ruptures_candidates(p, f))
    )
