"""Which races a history holds: this track's races in a Rally home (race.json files) or a metrics store, selected as
`esrally list races` selects them (challenge, user tags, Elasticsearch version, date range), each with the facts of
what it ran on. A race that did not finish is kept, to be listed as excluded, never a point."""

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from report import ReportError
from report.shared import host_load
from runners.contracts import records
from runners.contracts.settle_record import SETTLE, WINDOW_KEY

RALLY_TIMESTAMP = "%Y%m%dT%H%M%SZ"  # race.json's race-timestamp


@dataclass(frozen=True)
class Selection:
    """What the user asked for: challenges (none: every one), user tags {key: value} (all must match), an Elasticsearch
    version prefix ("9." or "8.17.2"), and a date range (datetime, inclusive)."""

    challenges: tuple = ()
    tags: dict = field(default_factory=dict)
    version: str | None = None
    since: datetime | None = None
    until: datetime | None = None

    def text(self):
        parts = [f"challenge {', '.join(self.challenges)}"] if self.challenges else []
        parts += [f"user tag {k}:{v}" for k, v in sorted(self.tags.items())]
        parts += [f"Elasticsearch {self.version}"] if self.version else []
        parts += [f"from {self.since:%Y-%m-%d}"] if self.since else []
        parts += [f"to {self.until:%Y-%m-%d}"] if self.until else []
        return "; ".join(parts) or "every race of the track"

    def why_not(self, data):
        """Why a race document is not selected, or None when it is."""
        if self.challenges and data.get("challenge") not in self.challenges:
            return f"challenge {data.get('challenge')}"
        tags = data.get("user-tags") or {}
        for key, value in self.tags.items():
            if str(tags.get(key)) != value:
                return f"user tag {key}:{tags.get(key, '(none)')}"
        version = (data.get("cluster") or {}).get("distribution-version") or ""
        if self.version and not (version == self.version or version.startswith(self.version.rstrip(".") + ".")):
            return f"Elasticsearch {version or '?'}"
        when = timestamp(data)
        if (self.since and when < self.since) or (self.until and when > self.until):
            return f"date {when:%Y-%m-%d}"
        return None


def parse_tags(texts):
    """--user-tag k:v (repeated, or comma-separated as Rally takes them) -> {k: v}; a tag without a colon is refused."""
    tags = {}
    for text in texts or ():
        for item in filter(None, (part.strip() for part in text.split(","))):
            key, colon, value = item.partition(":")
            if not colon or not key:
                raise ReportError(f"--user-tag {item!r}: give key:value, as esrally race --user-tag takes it (e.g. env:nightly)")
            tags[key] = value
    return tags


def parse_date(text, name, end_of_day=False):
    """A date given as YYYY-MM-DD (the whole day: its start, or with end_of_day its last second, so that --until DAY
    holds that day's races), YYYY-MM-DDTHH:MM:SS or Rally's race timestamp, UTC."""
    if text is None:
        return None
    try:
        day = datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=timezone.utc)
        return day + timedelta(days=1, microseconds=-1) if end_of_day else day
    except ValueError:
        pass
    for fmt in ("%Y-%m-%dT%H:%M:%S", RALLY_TIMESTAMP):
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
    raise ReportError(f"{name} {text!r}: give a date as YYYY-MM-DD (or YYYY-MM-DDTHH:MM:SS, UTC)")


def date_range(since, until):
    """(since, until) of --since and --until: --until DAY holds the whole day; a range that ends before it begins is
    refused, naming both."""
    first, last = parse_date(since, "--since"), parse_date(until, "--until", end_of_day=True)
    if first and last and last < first:
        raise ReportError(f"--since {since} is after --until {until}: the range is reversed; swap them")
    return first, last


def timestamp(data):
    return datetime.strptime(data["race-timestamp"], RALLY_TIMESTAMP).replace(tzinfo=timezone.utc)


# race.json's fields the history reads, and the JSON type Rally writes each as: another type is a malformed race
FIELD_TYPES = {"track": str, "challenge": str, "cluster": dict, "user-tags": dict, "track-params": dict, "rally-version": str}
FUTURE_SLACK = timedelta(days=1)  # a race dated later than this after now had a wrong clock: never the newest race


def malformed(data, now=None):
    """Why a race document cannot be part of a history (not an object, no race id, no parseable race timestamp, a
    field of another type than Rally writes, a date in the future), or None."""
    if not isinstance(data, dict):
        return f"race.json holds a {type(data).__name__}, not Rally's race document (an object)"
    if not isinstance(data.get("race-id"), str) or not data["race-id"]:
        return "race.json has no race-id"
    if not isinstance(data.get("race-timestamp"), str):
        return "race.json has no race-timestamp"
    try:
        when = timestamp(data)
    except ValueError:
        return f"race.json's race-timestamp {data['race-timestamp']!r} is not Rally's form ({RALLY_TIMESTAMP})"
    for key, kind in FIELD_TYPES.items():
        if data.get(key) is not None and not isinstance(data[key], kind):
            return f"race.json's {key} is a {type(data[key]).__name__}, not the {kind.__name__ if kind is str else 'object'} Rally writes"
    cluster_version = (data.get("cluster") or {}).get("distribution-version")  # "cluster": null as well
    if cluster_version is not None and not isinstance(cluster_version, str):
        return f"race.json's cluster.distribution-version is a {type(cluster_version).__name__}, not a version"
    if when > (now or datetime.now(timezone.utc)) + FUTURE_SLACK:
        return f"race.json is dated {when:%Y-%m-%d %H:%M}, in the future (a wrong clock): it would be the newest race the alert watches"
    return None


@dataclass(frozen=True)
class Facts:
    """What a race ran on, from race.json and the track's cluster-facts record (runners/shared/cluster_facts.py);
    None where a race from before that record cannot say."""

    version: str | None
    build: str | None
    rally: str | None
    jvm: str | None
    heap: str | None
    processors: str | None
    settings: str | None
    node_start: str | None  # the nodes' start times: the races of one node start share it
    uptime_s: float | None  # the longest-running node's uptime when the race began
    corpus: str | None
    shape: str  # node count and roles: a series' key, not a change's explanation
    host: object = None  # report.shared.host_load.HostLoad over the race's timed cells; None: host not recorded
    # the settle record (runners/studies/settle.py): the node settled before the timed cells (True), did not (False),
    # or no record (None: a race from before it, or settle off): a first race that settled counts like any other
    settled: bool | None = None


def _joined(values):
    found = sorted({str(v) for v in values if v is not None})
    return ", ".join(found) if found else None


def facts_of(race):
    recorded = race.record(records.CLUSTER_FACTS)
    if recorded is not None and not isinstance(recorded, dict):
        raise ValueError(f"{records.CLUSTER_FACTS} holds a {type(recorded).__name__}, not the facts the track records")
    cluster = race.data.get("cluster") or {}
    nodes = list(((recorded or {}).get("nodes") or {}).values())
    settings = (recorded or {}).get("settings")
    starts = sorted(n.get("start-time-ms") for n in nodes if n.get("start-time-ms") is not None)
    uptimes = [n["uptime-ms"] / 1000 for n in nodes if n.get("uptime-ms") is not None]
    roles = sorted(",".join(n.get("roles") or []) for n in nodes)
    corpus = (recorded or {}).get("corpus")
    return Facts(
        version=cluster.get("distribution-version") or _joined(n.get("version") for n in nodes),
        build=_joined(n.get("build-hash") for n in nodes) or cluster.get("revision"),
        rally=race.data.get("rally-version"),
        jvm=_joined(n.get("jvm") for n in nodes),
        heap=_joined(f"{n['heap-max-bytes'] / 2**20:.0f} MB" for n in nodes if n.get("heap-max-bytes")),
        processors=_joined(n.get("allocated-processors") for n in nodes),
        settings=None if settings is None else json.dumps(settings, sort_keys=True),
        node_start=",".join(str(s) for s in starts) if starts else None,
        uptime_s=max(uptimes) if uptimes else None,
        corpus=json.dumps(corpus, sort_keys=True) if corpus else None,
        shape=f"{len(nodes)} node(s) [{'; '.join(roles)}]" if nodes else "nodes not recorded",
        host=host_load.over_cells(race),
        settled=settled_of(race),
    )


def settled_of(race):
    """Whether the race's node settled before its timed cells: every settling task of its settle record stopped by the
    rule over a window of passes (True), one did not (False), or None without a record. A test-mode settling (a window
    of one pass: runners/studies/settle.py for_test_mode) is its record's shape, not a settled node."""
    lines = race.record(SETTLE)
    if not lines:
        return None
    if not all(isinstance(line, dict) for line in lines):
        raise ValueError(f"{SETTLE} holds a line that is not an object")
    return all(line.get("settled") is True and isinstance(line.get(WINDOW_KEY), int) and line[WINDOW_KEY] > 1 for line in lines)


@dataclass
class Found:
    races: list  # the selected races (report.shared.races.Race), oldest first
    skipped: dict  # why the track's other races were not selected -> how many
    other_tracks: int  # races of other tracks in the same place
    where: str
    # (where: a race's folder or id, why): races left out of the history because their records cannot be read or are
    # malformed, and races counted once because another holds the same race (its id, or identical samples)
    left_out: list = field(default_factory=list)

    def left_out_text(self):
        return "; ".join(f"{where}: {why}" for where, why in self.left_out)


# a malformed record raises one of these when it is loaded: the race is left out with it, never a traceback
RECORD_ERRORS = (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError, ZeroDivisionError, ReportError)


def unreadable(what, error):
    """Why a race is left out: which of its records cannot be read, and the error."""
    return f"its {what} cannot be read ({error.__class__.__name__}: {str(error)[:160]})"


def select(selection, source):
    """Found: this track's races in the source (report/shared/races.py: a Rally home's folders or a metrics store) that
    the selection takes, each loaded; a race whose document or records are unreadable or malformed is left out with
    where it is and why, and a race that another already holds (the same race id, or identical samples under another
    id) counts once."""
    selected, skipped, other, left_out = [], {}, 0, []
    for data, where, problem in source.documents():
        problem = problem or malformed(data)
        if problem:
            left_out.append((str(where), problem))
            continue
        if not records.is_our_track(data.get("track")):
            other += 1
            continue
        why = selection.why_not(data)
        if why:
            skipped[why] = skipped.get(why, 0) + 1
            continue
        selected.append((data, where))
    selected.sort(key=lambda pair: (pair[0]["race-timestamp"], str(pair[1])))
    loaded, ids = [], {}
    for data, where, race in source.loaded(selected, loaded_or_why):
        if data["race-id"] in ids:  # a race id once: the first copy that could be read
            left_out.append((str(where), f"the same race-id as {ids[data['race-id']]}: counted once"))
            continue
        if isinstance(race, str):
            left_out.append((str(where), race))
            continue
        ids[data["race-id"]] = where
        loaded.append(race)
    return counted_once(Found(loaded, skipped, other, source.where, left_out))


def loaded_or_why(load, *args):
    """load(*args), or why a malformed record made it fail."""
    try:
        return load(*args)
    except RECORD_ERRORS as e:
        return unreadable("records", e)


def counted_once(found):
    """The found races less those whose samples another race already holds under another race-id (a race folder
    copied): each named in found.left_out."""
    kept, fingerprints = [], {}
    for race in found.races:
        fingerprint = race.samples.fingerprint()
        if fingerprint in fingerprints:
            found.left_out.append(
                (race.race_id, f"the same samples as race {fingerprints[fingerprint]} under another race-id: counted once")
            )
            continue
        if fingerprint:
            fingerprints[fingerprint] = race.race_id
        kept.append(race)
    found.races = kept
    return found


def check_found(found, selection):
    """A clear message when nothing is left to make a history of, naming what was found."""
    if found.races:
        return
    left_out = f"; left out: {found.left_out_text()}" if found.left_out else ""
    if found.left_out and not found.skipped:
        raise ReportError(f"no race in {found.where} could be read{left_out}")
    if not found.skipped:
        others = f" (it holds {found.other_tracks} race(s) of other tracks)" if found.other_tracks else ""
        raise ReportError(f"no race of the {records.TRACK_NAME} track in {found.where}{others}: race it first (make race), then make trend")
    seen = "; ".join(f"{n} x {why}" for why, n in sorted(found.skipped.items(), key=lambda kv: -kv[1])[:6])
    raise ReportError(f"no race in {found.where} matches {selection.text()}: the track's races there have {seen}{left_out}")
