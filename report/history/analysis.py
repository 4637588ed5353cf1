"""The trend's analysis, before any text: per series and cell, its figure, its points in the order asked, the changes
beyond the noise (report/history/changes.py), the spread their verdicts read, the outlier races, each segment's level
(in each node start it spans), each configuration's level and the first race's effect with its verdict; per series,
the rule its node starts' first races had; over the series, the changes newest first, the largest, the cells that
could not be judged and the alerts. report/history/trend.py renders it and adds nothing."""

import dataclasses
import math
from dataclasses import dataclass
from typing import NamedTuple

from report.history import changes as change_points
from report.history import host as history_host
from report.history import returns
from report.history.starts import first_race_rule, returned_runs, start_of
from report.shared import uncertainty


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
    returned: object = None  # returns.newest_against_own: the newest races against their configuration's earlier run

    @property
    def judged(self):
        """A spread to judge a change by: two node starts of one configuration, or two races of one node start."""
        return change_points.spread(self.points).sd is not None

    @property
    def first_race_verdict(self):
        """The verdict on first_race's ratio (uncertainty.verdict, no floor in ms), or None without one."""
        if not self.first_race:
            return None
        ratio, low, high, _ = self.first_race
        return uncertainty.verdict(ratio, low, high, uncertainty.MARGIN, float("inf"), 0).verdict

    @property
    def node_starts(self):
        """The indices of the points where a node start begins (after the first point)."""
        points = self.points
        return [i for i in range(1, len(points)) if start_of(points[i]) != start_of(points[i - 1])]

    @property
    def starts_of_several(self):
        """Whether a node start holds several races (where every race is a start, the starts mark nothing)."""
        return len(self.node_starts) < len(self.points) - 1

    def start_numbers(self):
        """Each point's node start, numbered 1, 2, ... in the order the points first meet them."""
        numbers = {}
        return [numbers.setdefault(start_of(p), len(numbers) + 1) for p in self.points]

    def levels_by_start(self):
        """(first index, end index, median) of each segment's level in each node start it spans (a start is the unit,
        and its level is its own), where node starts hold several races; else of each segment."""
        starts, several, found = self.node_starts, self.starts_of_several, []
        for first, end, _ in self.segments:
            pieces = [first] + ([i for i in starts if first < i < end] if several else [])
            for lo, hi in zip(pieces, pieces[1:] + [end]):
                found.append((lo, hi, change_points.level(self.points[lo:hi], self.spread).median))
        return found


class SeriesAnalysis(NamedTuple):
    series: object  # series.Series
    cells: dict  # cell -> CellAnalysis, in the series' order

    @property
    def first_rule(self):
        """(node starts whose first race counts, those whose first race is left out): the same in every cell of the
        series (changes.first_race_rule over its node starts); (0, 0) for a series without cells."""
        return next(iter(self.cells.values())).first_rule if self.cells else (0, 0)


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
        first_race_rule(points),
        returns.newest_against_own(cell, judged, figure, found),
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


def changes_newest_first(analysed):
    """(when, series, change) of every cell's changes over the series, newest first."""
    rows = [(c.when, series, c) for series, cells in analysed for a in cells.values() for c in a.changes]
    rows.sort(key=lambda r: r[0], reverse=True)
    return rows


def largest(rows):
    """Of changes_newest_first's rows, the (when, series, change) of the largest ratio either way, or None."""
    return max(rows, key=lambda r: abs(math.log(r[2].comparison.ratio))) if rows else None


def unjudged_cells(analysed):
    """How many cells have no spread to judge a change by (one race; one race a configuration)."""
    return sum(1 for _, cells in analysed for a in cells.values() if not a.judged)


def _where_it_began(back, cell_changes):
    """A like-with-like alert (returns.newest_against_own) told by the slower step the newest races are in, where the
    slowdown began, when the cell's last change is one; else by the comparison itself."""
    last = cell_changes[-1] if cell_changes else None
    if last is None or last.kind != change_points.STEP or last.comparison.verdict != uncertainty.SLOWER:
        return back
    return dataclasses.replace(last, what_changed=[*last.what_changed, f"{back.what_changed[0]}: {back.comparison.text()}"])


def alerts(analysed, within):
    """The slower changes of a cost (not a crossover width) that the newest races are in: a step that begins among the
    newest `within` races of its series, or a drift up that goes on to the newest race; else, where the history left
    the newest races' configuration and came back to it, those races slower than its own earlier run (like with like:
    a slowdown that began before the switch back, beyond `within`, is still the newest races')."""
    found = []
    for series, cells in analysed:
        for cell, a in cells.items():
            points, cell_changes = a.points, a.changes
            # a step at the switch back to the newest races' configuration: its races are judged like with like
            # (a.returned), not against the other configuration's
            back_at = returned_runs(points)[1][0] if a.returned is not None else None
            for k, c in enumerate(cell_changes):
                if c.comparison.verdict != uncertainty.SLOWER or not a.figure.is_cost:
                    continue
                newest = c.kind == change_points.STEP and len(points) - c.index <= within
                ongoing = c.kind == change_points.DRIFT and k == len(cell_changes) - 1
                # a change on a running node that a later node start ended is not the newest races'
                ended = c.basis == change_points.BASIS_WITHIN and start_of(points[-1]) != start_of(points[c.index])
                if ended:
                    continue
                if (newest or ongoing) and c.index != back_at:
                    found.append(c)
            back = a.returned
            if back and back.comparison.verdict == uncertainty.SLOWER and a.figure.is_cost and not any(c.cell == cell for c in found):
                found.append(_where_it_began(back, cell_changes))
    return found
