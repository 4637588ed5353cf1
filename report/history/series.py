"""Like with like: the races of a history split into series that measured the same thing (challenge, corpus, track
parameters, cluster shape), and in each series a point per race and cell: the race's median with its 95% interval.
A race that did not finish, or a cell that failed in it, is an exclusion with its reason, never a point."""

import json
import math
from dataclasses import dataclass, field

from report.history.races import RECORD_ERRORS, facts_of, unreadable
from report.shared.figures import cells_of
from report.shared.races import NOT_FINISHED, finished


@dataclass(frozen=True)
class Point:
    race_id: str
    when: str  # race.json's race-timestamp
    median: float
    low: float | None  # the median's 95% order-statistic interval (None: too few samples for one)
    high: float | None
    n: int
    facts: object  # races.Facts
    tags: dict = field(default_factory=dict)  # the race's Rally user tags


@dataclass
class Series:
    key: tuple  # (challenge, corpus, track params, shape)
    races: list = field(default_factory=list)  # (race id, timestamp, facts), in order
    cells: dict = field(default_factory=dict)  # cell -> [Point], in race order
    excluded: list = field(default_factory=list)  # (race id, cell or None for the whole race, why)
    figures: dict = field(default_factory=dict)  # cell -> its figure (report/shared/figures.py: unit, direction)

    @property
    def challenge(self):
        return self.key[0]

    def describe(self):
        challenge, corpus, params, shape = self.key
        corpus_text = "corpus not recorded" if corpus is None else _corpus_text(corpus)
        return f"`{challenge}`, {corpus_text}, track params {params}, {shape}"


def _corpus_text(corpus):
    data = json.loads(corpus)
    generator = data.get("generator", {})
    shown = ", ".join(f"{k} {generator[k]}" for k in ("epochs", "rows_per_epoch", "nodes", "tasks", "seed") if k in generator)
    return f"corpus {shown or 'recorded'} ({data.get('section', '?')})"


def series_key(race, facts):
    return (race.challenge, facts.corpus, json.dumps(race.data.get("track-params") or {}, sort_keys=True), facts.shape)


def how_they_differ(a, b):
    """What differs between two series' keys, said plainly."""
    names = ("challenge", "corpus", "track params", "cluster shape")
    return "; ".join(
        f"{name} {x if name != 'corpus' or x is None else _corpus_text(x)} against {y if name != 'corpus' or y is None else _corpus_text(y)}"
        for name, x, y in zip(names, a, b)
        if x != y
    )


def not_a_figure(value):
    """Why a figure cannot be a point on the history's log scale (not finite, not above 0), or None."""
    median, low, high, _ = value
    for name, x in (("figure", median), ("interval's low end", low), ("interval's high end", high)):
        if x is not None and (not isinstance(x, (int, float)) or not math.isfinite(x) or (name == "figure" and x <= 0)):
            return f"failed: its {name} {x!r} is not a finite number above 0"
    return None


def build(races, figures, left_out=None):
    """[Series] of the races (oldest first), in the order their first race ran; each race's points in its series, a
    point per cell of each of `figures` (the studies' declarations: report/catalog.py). A race whose facts cannot be
    read is left out: (race id, why) appended to `left_out`."""
    by_key = {}
    pending_unrecorded = []
    for race in races:
        try:
            facts = facts_of(race)
            key = series_key(race, facts)
        except RECORD_ERRORS as e:
            if left_out is not None:
                left_out.append((race.race_id, unreadable("cluster facts", e)))
            continue
        if key[1] is None:
            pending_unrecorded.append((race, facts, key))
            continue
        _add(by_key.setdefault(key, Series(key)), race, facts, figures)
    for race, facts, key in pending_unrecorded:
        # a race from before the corpus record joins the one series of its challenge, parameters and shape that has
        # a corpus, when there is exactly one; otherwise it stands apart ("corpus not recorded")
        matches = [k for k in by_key if k[0] == key[0] and k[2:] == key[2:] and k[1] is not None]
        _add(
            by_key.setdefault(matches[0] if len(matches) == 1 else key, Series(matches[0] if len(matches) == 1 else key)),
            race,
            facts,
            figures,
        )
    for series in by_key.values():
        order = sorted(range(len(series.races)), key=lambda i: series.races[i][1])
        series.races = [series.races[i] for i in order]
        rank = {race_id: i for i, (race_id, _, _) in enumerate(series.races)}
        for cell, points in series.cells.items():
            points.sort(key=lambda p: rank[p.race_id])
    return sorted(by_key.values(), key=lambda s: s.races[0][1])


def _add(series, race, facts, figures):
    series.races.append((race.race_id, race.data["race-timestamp"], facts))
    try:
        if not finished(race):
            series.excluded.append((race.race_id, None, NOT_FINISHED))
            return
        points = cells_of(figures, race)
    except RECORD_ERRORS as e:
        series.excluded.append((race.race_id, None, unreadable("records", e)))
        return
    for cell, (figure, value) in points.items():
        series.figures[cell] = figure
        value = value if isinstance(value, str) else not_a_figure(value) or value
        if isinstance(value, str):
            series.excluded.append((race.race_id, cell, value))
            continue
        median, low, high, n = value
        series.cells.setdefault(cell, []).append(
            Point(race.race_id, race.data["race-timestamp"], median, low, high, n, facts, race.data.get("user-tags") or {})
        )
