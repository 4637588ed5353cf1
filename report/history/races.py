"""Which races a history holds: this track's races in a Rally home (race.json files) or a metrics store, selected as
`esrally list races` selects them (challenge, user tags, Elasticsearch version, date range), each with the facts of
what it ran on. A race that did not finish is kept, to be listed as excluded, never a point."""

import json
import os
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone

from report import ReportError
from report import races as race_files
from report.shared import uncertainty
from runners.contracts import records
from runners.contracts.corpus import races_root
from runners.studies.ingest import recount_bulk_tooks

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


def parse_date(text, name):
    if text is None:
        return None
    for fmt in ("%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", RALLY_TIMESTAMP):
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
    raise ReportError(f"{name} {text!r}: give a date as YYYY-MM-DD (or YYYY-MM-DDTHH:MM:SS, UTC)")


def timestamp(data):
    return datetime.strptime(data["race-timestamp"], RALLY_TIMESTAMP).replace(tzinfo=timezone.utc)


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


def _joined(values):
    found = sorted({str(v) for v in values if v is not None})
    return ", ".join(found) if found else None


def facts_of(race):
    recorded = race.cluster_facts
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
    )


@dataclass
class Found:
    races: list  # the selected races (report.races.Race), oldest first
    skipped: dict  # why the track's other races were not selected -> how many
    other_tracks: int  # races of other tracks in the same place
    where: str


def _selected(documents, selection, where, load):
    """Found: of (race document, its source) pairs, this track's races that the selection takes, each loaded."""
    selected, skipped, other = [], {}, 0
    for data, source in documents:
        if data is None:
            skipped[source] = skipped.get(source, 0) + 1  # an unreadable document: its reason
            continue
        if not records.is_our_track(data.get("track")):
            other += 1
            continue
        why = selection.why_not(data)
        if why:
            skipped[why] = skipped.get(why, 0) + 1
            continue
        selected.append((data, source))
    selected.sort(key=lambda pair: pair[0]["race-timestamp"])
    return Found([load(data, source) for data, source in selected], skipped, other, where)


def _read(path):
    try:
        return json.loads(path.read_text()), path.parent
    except (OSError, ValueError) as e:
        return None, f"unreadable race.json ({e.__class__.__name__})"


def from_files(selection, rally_home=None):
    root = races_root(rally_home)
    documents = (_read(path) for path in sorted(root.glob("*/race.json")))
    return _selected(documents, selection, f"the Rally home's races under {root}", lambda data, folder: race_files.load(folder, data))


STORE_BATCH = 100  # races a store is asked about at once: 100 races x 100 cells stay within search.max_buckets (65,536)


def from_store(selection, store):
    """The store's race documents (rally-races-*) of this track, selected here as from files; each selected race read
    with bounded queries, a batch of races at a time: its records other than its coverages' validation lines (cells,
    cluster facts, the ingest), and each cell's sample count, failure and order statistics by aggregation."""
    documents = ((data, None) for data in store.race_documents())
    found = _selected(documents, selection, f"Rally's metrics store at {store.address}", lambda data, _: data)
    loaded = []
    for first in range(0, len(found.races), STORE_BATCH):
        batch = {data["race-id"]: data for data in found.races[first : first + STORE_BATCH]}
        texts = store.records_beside_coverages(batch)
        statistics = store.order_statistics(batch, uncertainty.interval_ranks)
        for race_id, data in batch.items():
            with tempfile.TemporaryDirectory(prefix="cluster-metrics-race-") as race_dir:
                record_dir = os.path.join(race_dir, records.RECORD_DIR)
                records.replay(record_dir, texts[race_id])
                recount_bulk_tooks(record_dir)
                race = race_files.load(race_dir, data)
            race.path, race.samples, race.source = None, None, found.where
            race.order_statistics = statistics.get(race_id, {})
            loaded.append(race)
    found.races = loaded
    return found


def check_found(found, selection):
    """A clear message when nothing is left to make a history of, naming what was found."""
    if found.races:
        return
    if not found.skipped:
        others = f" (it holds {found.other_tracks} race(s) of other tracks)" if found.other_tracks else ""
        raise ReportError(f"no race of the {records.TRACK_NAME} track in {found.where}{others}: race it first (make race), then make trend")
    seen = "; ".join(f"{n} x {why}" for why, n in sorted(found.skipped.items(), key=lambda kv: -kv[1])[:6])
    raise ReportError(f"no race in {found.where} matches {selection.text()}: the track's races there have {seen}")
