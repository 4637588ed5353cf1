"""Like with like: the races of a history split into series that measured the same thing (challenge, corpus, track
parameters, cluster shape), and in each series a point per race and cell: the race's median with its 95% interval.
A race that did not finish, or a cell that failed in it, is an exclusion with its reason, never a point."""

import json
import math
from dataclasses import dataclass, field

from report import outcome
from report.history.races import RECORD_ERRORS, facts_of, unreadable
from report.shared import uncertainty
from report.studies import ingest, ingest_changes, large_source, network, profile, widths

INGEST_WALL = "ingest wall (s)"  # a race's baseline ingest: its epochs' walls summed, a figure of its own series
CROSSOVER = "crossover width (nodes)"  # coverage-width: the width from which terms beats an _msearch (report/studies/widths)
ROUND_TRIPS = "round trips (ms per ms of RTT)"  # rtt-sweep: the fitted slope of a coverage's time (report/studies/network)
LARGE_FETCH = "large fetch wall (ms)"  # source-large: a fetch's wall per _source mode and format (report/studies/large_source)
PROFILE_TOOK = "profile took (ms)"  # profile-breakdown: the took of its calls, profile ON and OFF (report/studies/profile)
# a figure's unit by its name's start; a coverage cell's is ms
UNITS = ((INGEST_WALL, "s"), (CROSSOVER, "nodes"), (ROUND_TRIPS, "ms/ms"))
# no sample of a race can take longer than an hour: the track's slowest coverage takes seconds at full scale (a
# 3,000-node serial sweep about 30 s), and each of its requests times out at request-timeout (120 s by default); a
# sample is also never longer than its task's duration in race.json. A wall beyond either is a broken record.
PLAUSIBLE_WALL_MS = 3_600_000.0


def ingest_change_cell(name):
    """ingest-changes: the baseline's or one change's epochs' walls summed (s), a figure of its own series."""
    return f"{INGEST_WALL}: {name}"


def unit(cell):
    return next((u for prefix, u in UNITS if cell.startswith(prefix)), "ms")


def in_seconds(cell):
    return unit(cell) == "s"


def is_time(cell):
    """A figure that is a cost (ms, s, ms per ms of RTT): up is slower. A crossover width is a place, not a cost."""
    return unit(cell) != "nodes"


def verdict_text(cell, verdict):
    """A change's verdict as its figure says it: a width goes higher or lower, a cost slower or faster."""
    if is_time(cell):
        return verdict
    return {uncertainty.SLOWER: "higher", uncertainty.FASTER: "lower"}.get(verdict, verdict)


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
    outliers: dict = field(default_factory=dict)  # cell -> race ids alone between a step and its way back

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


def implausible(values, bound, unit="ms"):
    """Why these samples cannot be times (one that is not a number, not finite, not above 0, or beyond `bound`), or
    None: such a sample is failed, never part of a figure."""
    for value in values:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"a sample of {value!r} is not a number"
        if not math.isfinite(value) or value <= 0:
            return f"a sample of {value!r} {unit} is not a finite time above 0"
        if value > bound:
            return f"a sample of {value:,.0f} {unit} is beyond any plausible time ({bound:,.0f} {unit})"
    return None


def _wall_bound_ms(op):
    """The longest a sample of this task can have taken: its task's duration (race.json, ms) and at most an hour."""
    duration = (op or {}).get("duration")
    usable = isinstance(duration, (int, float)) and math.isfinite(duration) and duration > 0
    return min(PLAUSIBLE_WALL_MS, duration) if usable else PLAUSIBLE_WALL_MS


def _cell_points(race):
    """{cell: (median, low, high, n)} of a finished race; {cell: why} for a cell that failed, has no samples, or has a
    sample that cannot be a time (implausible)."""
    found = {}
    for task in sorted(task for task, cell in race.cells.items() if "variant" in cell and "transport" in cell):  # a coverage cell
        op = race.op_metrics().get(task)
        if race.order_statistics is not None:  # read from a store by aggregation: no samples, their order statistics
            n, failed, at = race.order_statistics.get(task, (0, 0, {}))
            samples = "absent" if not n else None if failed else at
        else:
            samples = (race.samples or {}).get(task, "absent")
        if samples == "absent" and op is None:
            continue  # the challenge's cell did not run in this race (another challenge's task)
        if samples is None or samples == "absent" or not samples:
            found[task] = "failed" if samples is None or (op and (op.get("error_rate") or 0) > 0) else "no samples recorded"
            continue
        problem = implausible(list(samples.values()) if isinstance(samples, dict) else samples, _wall_bound_ms(op))
        if problem:
            found[task] = f"failed: {problem}"
            continue
        interval = uncertainty.median_interval_of(n, samples) if isinstance(samples, dict) else uncertainty.median_interval(samples)
        found[task] = (interval.median, interval.low, interval.high, interval.n)
    rows = ingest.ingest_rows(race)
    if rows:
        walls = [row["wall_s"] for row in rows]
        problem = None if None in walls else implausible(walls, PLAUSIBLE_WALL_MS / 1000, "s")
        failed = ingest.ingest_problem(race) or None in walls
        found[INGEST_WALL] = "failed" if failed else f"failed: {problem}" if problem else (sum(walls), None, None, len(walls))
    for name in ingest_changes.ingests(race):
        if ingest_changes.main_baseline(race, name):
            continue  # full's baseline is the race's own ingest: INGEST_WALL above
        change_walls = [row["wall"] for row in ingest_changes.change_rows(race, name)]
        failed = ingest_changes.change_problem(race, name) or not change_walls or None in change_walls
        problem = None if failed else implausible(change_walls, PLAUSIBLE_WALL_MS / 1000, "s")
        found[ingest_change_cell(name)] = (
            "failed" if failed else f"failed: {problem}" if problem else (sum(change_walls), None, None, len(change_walls))
        )
    found.update(_headline_figures(race))
    return found


def _headline_figures(race):
    """Other studies' headline figures: the crossover width (between the width before it and it: its interval) or why
    there is none; the round trips each RTT sweep cell waited for, with the fit's interval; each large fetch's wall;
    the took of profile-breakdown's calls, profile ON and OFF."""
    found = {}
    for (variant, msearch), (width, before, statement) in widths.crossover_widths(race).items():
        cell = f"{CROSSOVER}: {variant} terms against {widths.label(msearch)}"
        found[cell] = statement if width is None else (float(width), float(before or width), float(width), 1)
    for (variant, transport), figure in network.round_trips(race).items():
        found[f"{ROUND_TRIPS}: {variant} {transport}"] = figure
    for (mode, fmt), fetch in large_source.cells(race).items() if race.large_source else ():
        walls = [line.get("wall-ms") for line in fetch["measured"]]
        found[f"{LARGE_FETCH}: {mode} {fmt}"] = fetch["failed"] or _failed_or_median(walls)
    tooks = profile.took_figures(race)
    for switch in ("ON", "OFF"):
        if isinstance(tooks, str) or tooks.get(switch):
            found[f"{PROFILE_TOOK}: profile {switch}"] = tooks if isinstance(tooks, str) else _failed_or_median(tooks[switch])
    return found


def _failed_or_median(values):
    """(median, low, high, n): the values' median with its 95% order-statistic interval; why not, when a value cannot be
    a time."""
    problem = implausible(values, PLAUSIBLE_WALL_MS)
    if problem:
        return f"failed: {problem}"
    interval = uncertainty.median_interval(values)
    return interval.median, interval.low, interval.high, interval.n


def not_a_figure(value):
    """Why a figure cannot be a point on the history's log scale (not finite, not above 0), or None."""
    median, low, high, _ = value
    for name, x in (("figure", median), ("interval's low end", low), ("interval's high end", high)):
        if x is not None and (not isinstance(x, (int, float)) or not math.isfinite(x) or (name == "figure" and x <= 0)):
            return f"failed: its {name} {x!r} is not a finite number above 0"
    return None


def build(races, left_out=None):
    """[Series] of the races (oldest first), in the order their first race ran; each race's points in its series. A race
    whose facts cannot be read is left out: (race id, why) appended to `left_out`."""
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
        _add(by_key.setdefault(key, Series(key)), race, facts)
    for race, facts, key in pending_unrecorded:
        # a race from before the corpus record joins the one series of its challenge, parameters and shape that has
        # a corpus, when there is exactly one; otherwise it stands apart ("corpus not recorded")
        matches = [k for k in by_key if k[0] == key[0] and k[2:] == key[2:] and k[1] is not None]
        _add(by_key.setdefault(matches[0] if len(matches) == 1 else key, Series(matches[0] if len(matches) == 1 else key)), race, facts)
    for series in by_key.values():
        order = sorted(range(len(series.races)), key=lambda i: series.races[i][1])
        series.races = [series.races[i] for i in order]
        rank = {race_id: i for i, (race_id, _, _) in enumerate(series.races)}
        for cell, points in series.cells.items():
            points.sort(key=lambda p: rank[p.race_id])
    return sorted(by_key.values(), key=lambda s: s.races[0][1])


def _add(series, race, facts):
    series.races.append((race.race_id, race.data["race-timestamp"], facts))
    try:
        if not outcome.finished(race):
            series.excluded.append((race.race_id, None, outcome.NOT_FINISHED))
            return
        points = _cell_points(race)
    except RECORD_ERRORS as e:
        series.excluded.append((race.race_id, None, unreadable("records", e)))
        return
    for cell, value in points.items():
        value = value if isinstance(value, str) else not_a_figure(value) or value
        if isinstance(value, str):
            series.excluded.append((race.race_id, cell, value))
            continue
        median, low, high, n = value
        series.cells.setdefault(cell, []).append(
            Point(race.race_id, race.data["race-timestamp"], median, low, high, n, facts, race.data.get("user-tags") or {})
        )
