"""The trend's analysis, before any text: per series and cell, its figure, its points in the order asked, the changes
beyond the noise (report/history/changes.py), the spread their verdicts read, the outlier races, each segment's level,
each configuration's level and the first race's effect. report/history/trend.py renders it and adds nothing."""

from dataclasses import dataclass
from typing import NamedTuple

from report.history import changes as change_points


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
    """One cell's CellAnalysis of its points (already in the order asked)."""
    found, spread, outliers = change_points.find(cell, points, figure)
    segments = [(first, end, change_points.level(points[first:end], spread)) for first, end in change_points.segments(points, found)]
    return CellAnalysis(
        cell,
        figure,
        points,
        found,
        spread,
        outliers,
        segments,
        change_points.within_start_spread(points, [c.index for c in found]),
        change_points.by_configuration(points, spread, change_points.noise_floor(figure)),
        change_points.first_race_effect(points),
    )


def analyse(series_list, order="race"):
    """[SeriesAnalysis] of the series, each cell's points in the order asked (race, version, tag:KEY)."""
    return [
        SeriesAnalysis(
            series,
            {cell: analyse_cell(cell, series.figures[cell], order_points(points, order)) for cell, points in series.cells.items()},
        )
        for series in series_list
    ]
