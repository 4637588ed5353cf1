"""Repeated races of one challenge (make repeat): each cell's run-to-run spread and pooled interval, and sets of
races compared race by race (report/shared/uncertainty.py, compare_race_sets).

A set is given as comma-separated race ids: make report RACES=a,b,c; make compare RACES="a1,a2,a3 b1,b2,b3".
"""

from pathlib import Path

import numpy as np

from report.shared import readers, sections, uncertainty

REPEAT_NOTE = (
    "Race medians: each race's median service time of the cell, in race order. Spread: (max - min) / median of the "
    "race medians, the run-to-run spread a single race cannot show. Pooled: the median of every race's samples with "
    "its 95% order-statistic interval; it treats the races' samples as one sample, so it is narrower than the truth "
    'whenever the spread is wider than it: compare sets race by race (make compare RACES="a1,a2,a3 b1,b2,b3").\n'
)
SETS_NOTE = (
    "Set against the first set, per cell: the ratio of the races' geometric-mean medians and its 95% interval "
    "(Welch's t-interval over the races' log-medians: the race is the unit); a set needs "
    f"{uncertainty.MIN_RACES} races. " + uncertainty.VERDICT_RULE + "\n"
)


def race_medians(race_set, key):
    """Each race's median service time (ms) of the cell; None for a race where it failed or did not run."""
    return [readers.valid_median(readers.coverage_cells(race), key) for race in race_set]


def _cells(*race_sets):
    return readers.in_study_order({k for race_set in race_sets for race in race_set for k in readers.coverage_cells(race)})


def _text(value):
    return "FAILED" if value is None else f"{value:.1f}"


def repeat_table(race_set):
    """Per cell: the race medians, their run-to-run spread, and the pooled median with its interval (races from a
    metrics store: every sample; otherwise '-')."""
    body = []
    for key in _cells(race_set):
        medians = race_medians(race_set, key)
        spread = uncertainty.run_to_run_spread(medians) if None not in medians else None
        samples = [readers.cell_samples(race, key) for race in race_set]
        pooled = "-"
        if None not in medians and all(samples):
            pooled_interval = uncertainty.median_interval(np.concatenate(samples))
            pooled = f"{pooled_interval.median:.1f} {pooled_interval.text()}"
        body.append(
            [readers.study_label(race_set, key), " / ".join(_text(m) for m in medians), "-" if spread is None else f"{spread:.1%}", pooled]
        )
    return ["cell", "race medians (ms)", "spread", "pooled median (ms) [95% interval]"], body


def _geometric_mean(medians):
    return None if None in medians or not medians else float(np.exp(np.mean(np.log(medians))))


def sets_table(sets):
    """Per cell: each set's geometric-mean median and spread, and each later set against the first."""
    header = ["cell"] + [f"set {i + 1} ({len(s)} races) median (ms), spread" for i, s in enumerate(sets)]
    header += [f"set {i + 2} / set 1" for i in range(len(sets) - 1)]
    body = []
    for key in _cells(*sets):
        medians = [race_medians(s, key) for s in sets]
        row = [readers.study_label([race for s in sets for race in s], key)]
        for m in medians:
            mean, spread = _geometric_mean(m), uncertainty.run_to_run_spread(m) if None not in m else None
            row.append("FAILED" if mean is None else f"{mean:.1f}" + ("" if spread is None else f", {spread:.1%}"))
        row += [uncertainty.compare_race_sets(medians[0], m).text() for m in medians[1:]]
        body.append(row)
    return header, body


def _name(race_set):
    return "-".join(r.race_id[:8] for r in race_set)


def repeat_report(race_set, out_root):
    """reports/repeat-<ids>/report.md: the races of one set and each cell's spread and pooled interval."""
    out = Path(out_root) / f"repeat-{_name(race_set)}"
    out.mkdir(parents=True, exist_ok=True)
    lines = [f"# cluster-metrics: {len(race_set)} races of one set", ""] + [f"- {r.label} ({r.source})" for r in race_set]
    text = "\n".join(lines) + "\n\n" + sections.markdown(*repeat_table(race_set)) + "\n\n" + REPEAT_NOTE
    (out / "report.md").write_text(text)
    return out / "report.md", text


def sets_report(sets, out_root):
    """reports/compare-sets-<ids>/compare.md: sets of repeated races side by side, each against the first."""
    out = Path(out_root) / ("compare-sets-" + "--".join(_name(s) for s in sets))
    out.mkdir(parents=True, exist_ok=True)
    lines = [f"# cluster-metrics: {len(sets)} sets of races", ""]
    lines += [f"- set {i + 1}: " + ", ".join(r.label for r in s) for i, s in enumerate(sets)]
    text = "\n".join(lines) + "\n\n" + sections.markdown(*sets_table(sets)) + "\n\n" + SETS_NOTE
    (out / "compare.md").write_text(text)
    return out / "compare.md", text
