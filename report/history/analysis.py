"""The trend's analysis, before any text: per series and cell, its figure, its points in the order asked, the changes
beyond the noise (report/history/changes.py), the spread their verdicts read, the outlier races, each segment's level,
each configuration's level and the first race's effect. report/history/trend.py renders it and adds nothing."""

import dataclasses
from dataclasses import dataclass
from typing import NamedTuple

from report.history import changes as change_points
from report.history import host as history_host


@dataclass(frozen=True)
class CellAnalysis:
    cell: str
    figure: object  # report/shared/figures.py Figure: its unit and direction
    points: list  # series.Point, in the order asked
    changes: list  # changes.Change, oldest first
    spread: object  # changes.Spread its verdicts read
    outliers: list  # race ids alone between a step and its way back
    segments: list  # (first index, end index, changes.Level) of each segment the changes leave
    within_start: object  # changes.Spread between races of one node start, within the segments
    by_configuration: list  # (text, changes.Level, Comparison or None) per configuration over its node starts
    first_race: tuple | None  # changes.first_race_effect: (ratio, low, high, node starts), or None
    contention: object = None  # host.Contention: the level against the host's load, or None where none was fitted
    adjusted: bool = False  # the changes, segments and configurations read levels adjusted for the host (host.adjusts)
    first_rule: tuple = (0, 0)  # changes.first_race_rule: (starts whose first race counts, starts whose first is left out)

    @property
    def judged(self):
        """A spread to judge a change by: two node starts of one configuration, or two races of one node start."""
        return change_points.spread(self.points).sd is not None


class SeriesAnalysis(NamedTuple):
    series: object  # series.Series
    cells: dict  # cell -> CellAnalysis, in the series' order


def _version_key(version):
    return tuple(int(part) if part.isdigit() else -1 for part in (version or "0").split("."))


def order_points(points, order):
    """Points in race order (their timestamps), or by Elasticsearch version, or by a user tag's value, then time."""
    if order == "race":
        return points
    if order == "version":
        return sorted(points, key=lambda p: (_version_key(p.facts.version), p.when))
    key = order.split(":", 1)[1]
    return sorted(points, key=lambda p: (str((p.tags or {}).get(key, "")), p.when))


def analyse_cell(cell, figure, points):
    """One cell's CellAnalysis of its points (already in the order asked): judged on its levels as measured, or, where
    the host's load explains most of the spread between races (host.adjusts), on its levels adjusted for it."""
    fit = history_host.contention(points)
    adjusting = history_host.adjusts(fit, points)
    judged = history_host.adjusted(points, fit) if adjusting else points
    found, spread, outliers = change_points.find(cell, judged, figure)
    segments = [(first, end, change_points.level(judged[first:end], spread)) for first, end in change_points.segments(judged, found)]
    within_start = change_points.within_start_spread(judged, [c.index for c in found])
    if adjusting:
        found = with_the_hosts_steps([dataclasses.replace(c, adjusted=True) for c in found], change_points.find(cell, points, figure)[0])
    return CellAnalysis(
        cell,
        figure,
        points,
        found,
        spread,
        outliers,
        segments,
        within_start,
        change_points.by_configuration(judged, spread, change_points.noise_floor(figure)),
        change_points.first_race_effect(judged),
        fit,
        adjusting,
        change_points.first_race_rule(points),
    )


HOST_ONLY = "no step on the levels adjusted for the host"


def with_the_hosts_steps(adjusted, measured):
    """The changes on adjusted levels, and each change on the levels as measured that the adjusted levels do not show
    (none of theirs within a race of it, the same way): a step the host's load made, named the host's (no alert)."""
    kept = list(adjusted)
    for c in measured:
        same = any(abs(a.index - c.index) <= 1 and a.comparison.verdict == c.comparison.verdict for a in adjusted)
        if not same:
            kept.append(dataclasses.replace(c, host_named=True, what_changed=[*c.what_changed, HOST_ONLY]))
    return sorted(kept, key=lambda c: c.index)


def analyse(series_list, order="race"):
    """[SeriesAnalysis] of the series, each cell's points in the order asked (race, version, tag:KEY)."""
    return [
        SeriesAnalysis(
            series,
            {cell: analyse_cell(cell, series.figures[cell], order_points(points, order)) for cell, points in series.cells.items()},
        )
        for series in series_list
    ]
