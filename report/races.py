"""Finding and loading races of this track in a Rally home."""

import functools
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from esrally.track import loader

from report import ReportError
from report.studies import ingest, ingest_changes, large_source, widths
from runners.contracts import cells, parameters, records
from runners.contracts.corpus import races_root
from runners.contracts.queries import SOURCE_MODES
from runners.contracts.track_files import rendered_tasks, track_dir
from runners.studies.ingest import recount_bulk_tooks
from runners.studies.load import read_steps

# parameters that hold a list (a user may give a comma-separated string)
LIST_PARAMETERS = {name for name, default in parameters.DEFAULTS.items() if isinstance(default, list)}


@dataclass
class Race:
    race_id: str
    path: Path
    data: dict
    ingest: dict = field(default_factory=dict)
    profile: dict = field(default_factory=dict)
    profile_calls: list = field(default_factory=list)  # profile-breakdown: each call, profile ON and OFF (runners/studies/profile.py)
    layouts: dict = field(default_factory=dict)  # layout -> its layout-stats record
    layout_ingest: dict = field(default_factory=dict)  # layout-sweep: layout -> its ingest record
    load_steps: dict = field(default_factory=dict)  # coverage-load step task -> its calibrated and target rate
    sources: dict = field(default_factory=dict)  # source-cost: _source mode -> its storage record
    source_ingest: dict = field(default_factory=dict)  # source-cost: _source mode -> its ingest record
    memory: list = field(default_factory=list)  # aggregation-memory: each cell's request breaker floor record
    validation: list = field(default_factory=list)  # each coverage's validation counts (runners/studies/coverage.py)
    width_ingest: dict = field(default_factory=dict)  # coverage-width: width -> its ingest record
    search_pool: dict | None = None  # coverage-width: the search pool and _msearch's default concurrency
    ingest_changes: dict = field(default_factory=dict)  # ingest-changes: the baseline or a change -> its ingest record
    large_source: dict = field(default_factory=dict)  # source-large: what made its documents, and every fetch
    # task -> each measured sample's service time (ms), None when a sample failed: Rally's from a metrics store, else
    # each coverage's wall time from the track's own records (runners/studies/coverage.py), which every race keeps
    samples: dict | None = None
    samples_source: str = "each coverage's wall time in the track's records"
    # task -> {load-driver host: {"clients", "samples", "measured"}}: from a metrics store only (report/store.py)
    hosts: dict = field(default_factory=dict)
    source: str = "race.json"  # where Rally's figures came from
    recorded_cells: dict | None = None  # task -> its cell, as the race recorded them (runners/contracts/cells.py), if it did
    cluster_facts: dict | None = None  # what the race ran on (runners/shared/cluster_facts.py), if it recorded it
    # task -> (n, failed, {rank: value}): each cell's order statistics as a store's aggregation gives them (a history
    # read from a store: report/history/races.py), in place of `samples`
    order_statistics: dict | None = None
    # every top-level file of the race's record folder, name -> its text: what record() reads (from files and from a
    # store alike: a store's race is replayed into a folder that is gone once loaded)
    record_texts: dict = field(default_factory=dict)

    def record(self, name, default=None):
        """A record a runner wrote with runners/contracts/records.py: a .jsonl record as its list of lines, any other as
        its JSON; default when the race has none. How a study's report reads what its runner measured."""
        text = self.record_texts.get(name)
        if text is None:
            return default
        if name.endswith(".jsonl"):
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        return json.loads(text)

    @property
    def challenge(self):
        return self.data.get("challenge")

    @property
    def version(self):
        """The Elasticsearch version Rally found on the cluster (race.json's cluster.distribution-version), or None."""
        return (self.data.get("cluster") or {}).get("distribution-version")

    @property
    def label(self):
        tags = self.data.get("user-tags") or {}
        tag_text = ",".join(f"{k}:{v}" for k, v in sorted(tags.items()))
        return f"{self.race_id[:8]} {self.challenge}" + (f" [{tag_text}]" if tag_text else "")

    def param(self, name):
        """The track parameter's value in this race: the user's (a comma-separated string as a list), else its
        default (runners/contracts/parameters.py)."""
        given = self.data.get("track-params", {}).get(name)
        value = parameters.DEFAULTS[name] if given is None else given
        return value.split(",") if isinstance(value, str) and name in LIST_PARAMETERS else value

    @functools.cached_property
    def cells(self):
        """{task: cell} of this race: as it recorded them, else as its track renders them with its parameters."""
        if self.recorded_cells is not None:
            return self.recorded_cells
        return rendered_cells(self.challenge, json.dumps(self.data.get("track-params") or {}, sort_keys=True))

    @functools.cached_property
    def _cell_index(self):
        return cells.index(self.cells)

    def task_of(self, **cell):
        """The task that measured this cell in this race (its variant, transport and condition, runners/contracts/cells.py), or
        None: task_of(variant="D_td", transport="serial", **{"rtt-ms": 50})."""
        return self._cell_index.get(cells.key(cell))

    def op_metrics(self):
        return {op["task"]: op for op in self.data.get("results", {}).get("op_metrics", [])}

    def measured(self, task, field):
        """The task's measured coverages' values of a validation record field (runners/studies/coverage.py: wall-ms, took,
        took-sum), in the order they ran; None when the task failed (a failed cell has no figure) or a measured
        coverage lacks the field (an answer without took)."""
        op = self.op_metrics().get(task)
        if op is not None and (op.get("error_rate") or 0) > 0:
            return None
        values = [line.get(field) for line in self._measured_lines.get(task, [])]
        return None if any(v is None for v in values) else values

    @functools.cached_property
    def _measured_lines(self):
        """{task: its measured coverages' validation lines} in the order the coverages started (their timed window's
        first request), indexed once: the report asks per cell and field. The record holds them in the order they
        ended, and a metrics store in the order Rally stamped them: with several clients the two differ, and the drift
        check (first third against last) must read one order whatever the race was read from."""
        by_task = {}
        for line in self.validation:
            if line.get("measured"):
                by_task.setdefault(line.get("task"), []).append(line)
        for lines in by_task.values():
            lines.sort(key=_started)  # stable: lines without a window keep their recorded order
        return by_task


def _started(line):
    window = line.get("window")
    return window[0] if isinstance(window, (list, tuple)) and window and isinstance(window[0], (int, float)) else float("inf")


@functools.lru_cache(maxsize=32)
def rendered_cells(challenge, track_params):
    """{task: cell} of a challenge as this repository's track renders it with these parameters (JSON text): what a race
    from before the cells record would have recorded."""
    try:
        rendered = json.loads(loader.render_template_from_file(str(track_dir() / "track.json"), json.loads(track_params)))
    except Exception as e:  # a template error or parameters this track refuses: said, not a report without cells
        raise ReportError(f"the track does not render with the race's parameters {track_params}, so its cells are unknown: {e}")
    for candidate in rendered["challenges"]:
        if candidate["name"] == challenge:
            return cells.of_tasks((task["operation"]["name"], task["operation"]) for task in rendered_tasks(candidate))
    return {}


def record_samples(race):
    """Each coverage task's measured wall times (ms) from the track's records, a failed task None; None when the race
    recorded no measured coverage (a race from before the records said which were warm-ups)."""
    tasks = {line["task"] for line in race.validation if line.get("measured")}
    return {task: race.measured(task, "wall-ms") for task in sorted(tasks)} or None


def load(race_dir, data=None):
    """A race from its folder in a Rally home: race.json (or `data`, the same document from a metrics store) and the
    track's own records beside it."""
    race_dir = Path(race_dir)
    data = data or json.loads((race_dir / "race.json").read_text())
    race = Race(data["race-id"], race_dir, data)
    race.recorded_cells = records.read(str(race_dir / records.RECORD_DIR), records.CELLS)  # before any record found by its cell
    race.cluster_facts = records.read(str(race_dir / records.RECORD_DIR), records.CLUSTER_FACTS)
    for name, attr in ((records.INGEST, "ingest"), (records.PROFILE, "profile")):
        record = race_dir / records.RECORD_DIR / name
        if record.is_file():
            setattr(race, attr, json.loads(record.read_text()))
    race.load_steps = read_steps(str(race_dir / records.RECORD_DIR))
    for record in sorted((race_dir / records.RECORD_DIR).glob("layout-*.json")):
        data = json.loads(record.read_text())
        race.layouts[data["layout"]] = data
    folder = str(race_dir / records.RECORD_DIR)
    for layout in race.layouts:
        record = ingest.ingest_record(race, layout=layout)
        data = None if record is None else records.read(folder, record)
        data = data if data is not None else records.read(folder, records.legacy_layout_ingest_record(layout))
        if data is not None:
            race.layout_ingest[layout] = data
    for mode in SOURCE_MODES:
        for name, attr in (
            (records.source_record(mode), race.sources),
            (ingest.ingest_record(race, **{"source-mode": mode}), race.source_ingest),
        ):
            data = None if name is None else records.read(folder, name)
            if data is not None:
                attr[mode] = data
    race.memory = _json_lines(race_dir / records.RECORD_DIR / records.MEMORY)
    race.validation = _json_lines(race_dir / records.RECORD_DIR / records.VALIDATION)
    race.profile_calls = _json_lines(race_dir / records.RECORD_DIR / records.PROFILE_CALLS)
    widths.load_records(race, race_dir / records.RECORD_DIR)
    ingest_changes.load_records(race, race_dir / records.RECORD_DIR)
    large_source.load_records(race, race_dir / records.RECORD_DIR)
    race.samples = record_samples(race)
    folder_path = race_dir / records.RECORD_DIR
    race.record_texts = {p.name: p.read_text() for p in sorted(folder_path.iterdir()) if p.is_file()} if folder_path.is_dir() else {}
    return race


def _json_lines(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


def from_store(store, race_id=None):
    """The race with that id (a unique prefix is enough), or the newest race of this track, from Rally's metrics store
    alone: Rally's figures, every sample's service time, and the track's own records (ingest cost, layouts, ...)
    rebuilt from the record operations its samples carry, with the bulk tooks of every load-driver host."""
    data = store.race(race_id, track=None if race_id else records.TRACK_NAME)
    with tempfile.TemporaryDirectory(prefix="cluster-metrics-race-") as race_dir:
        record_dir = os.path.join(race_dir, records.RECORD_DIR)
        records.replay(record_dir, store.record_operations(data["race-id"]))
        recount_bulk_tooks(record_dir)
        race = load(race_dir, data)
    race.path = None  # no folder: everything came from the store
    race.samples = store.service_times(data["race-id"])
    race.hosts = store.host_samples(data["race-id"])
    race.samples_source = "Rally's service time of each sample in the metrics store"
    race.source = f"Rally's metrics store at {store.address}"
    return race


def find(race_id=None, rally_home=None):
    """The race with that id (a unique prefix is enough), or the newest race of this track."""
    root = races_root(rally_home)
    candidates = list(root.glob("*/race.json"))
    if race_id:
        matches = [p for p in candidates if p.parent.name.startswith(race_id)]
        if len(matches) != 1:
            raise ReportError(
                f"{'no' if not matches else 'more than one'} race matching {race_id!r} under {root}; " "list them with: esrally list races"
            )
        return load(matches[0].parent)
    ours = [
        (data["race-timestamp"], path) for path in candidates if records.is_our_track((data := json.loads(path.read_text())).get("track"))
    ]
    if ours:
        return load(max(ours)[1].parent)  # by Rally's own race timestamp: file times mean nothing in a clone
    raise ReportError(f"no race of the {records.TRACK_NAME} track under {root}; run one first: make race")
