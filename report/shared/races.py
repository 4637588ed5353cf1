"""A race of this track as every report reads it, and where races come from.

A race is generic: Rally's race document (race.json, or the store's), each sample's service time, and the track's
records by name (`race.record(NAME)`, runners/contracts/records.py); a study reads its own records through it. Races
come from one source (`source()`): a Rally home's race folders, or Rally's metrics store when the Rally configuration
names an Elasticsearch one, a store's race rebuilt from the record operations its samples carry (`replayed`)."""

import functools
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from esrally.track import loader

from report import ReportError
from report.shared import readers, uncertainty
from report.shared.samples import FROM_STORE, Samples
from report.shared.store import Store
from runners.contracts import cells, parameters, records
from runners.contracts.corpus import races_root
from runners.contracts.took_files import recount_bulk_tooks
from runners.contracts.track_files import rendered_tasks, track_dir

NOT_FINISHED = "DID NOT FINISH"
# parameters that hold a list (a user may give a comma-separated string)
LIST_PARAMETERS = {name for name, default in parameters.DEFAULTS.items() if isinstance(default, list)}


@dataclass
class Race:
    race_id: str
    path: Path | None  # its folder in a Rally home; None for a race read from a store
    data: dict  # Rally's race document
    # each task's measured samples (report/shared/samples.py), set when the race is loaded: Rally's service times from a
    # metrics store, else each coverage's wall time from the track's own records (runners/studies/coverage.py), which
    # every race keeps; a history read from a store by aggregation, each task's order statistics in their place
    samples: Samples = field(default_factory=Samples)
    # task -> {load-driver host: {"clients", "samples", "measured"}}: from a metrics store only (report/shared/store.py)
    hosts: dict = field(default_factory=dict)
    source: str = "race.json"  # where Rally's figures came from
    # every top-level file of the race's record folder, name -> its text: what record() reads (from files and from a
    # store alike: a store's race is replayed into a folder that is gone once loaded)
    record_texts: dict = field(default_factory=dict)
    _parsed: dict = field(default_factory=dict, repr=False, compare=False)

    def record(self, name, default=None):
        """A record a runner wrote with runners/contracts/records.py: a .jsonl record as its list of lines, any other as
        its JSON; default when the race has none. How a study's report reads what its runner measured. Parsed once and
        shared: a reader does not change it."""
        text = self.record_texts.get(name) if isinstance(name, str) else None
        if text is None:
            return default
        if name not in self._parsed:
            if name.endswith(".jsonl"):
                self._parsed[name] = [json.loads(line) for line in text.splitlines() if line.strip()]
            else:
                self._parsed[name] = json.loads(text)
        return self._parsed[name]

    def derived(self, key, compute):
        """compute(race), once per race: what a reader builds from the records (an index of them) and asks for often."""
        if ("derived", key) not in self._parsed:
            self._parsed[("derived", key)] = compute(self)
        return self._parsed[("derived", key)]

    def record_names(self, prefix="", suffix=""):
        """The names of the race's records that start and end so, in name order."""
        return sorted(name for name in self.record_texts if name.startswith(prefix) and name.endswith(suffix))

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
        recorded = self.record(records.CELLS)
        if recorded is not None:
            return recorded
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


def finished(race):
    """Rally reached the end of the race: race.json (or the metrics store's race document) holds its results."""
    return bool((race.data.get("results") or {}).get("op_metrics"))


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
    tasks = {line["task"] for line in readers.validation(race) if line.get("measured")}
    return {task: readers.measured(race, task, "wall-ms") for task in sorted(tasks)} or None


def load(race_dir, data=None, samples=None):
    """A race from its folder in a Rally home: race.json (or `data`, the same document from a metrics store) and the
    track's records beside it; its samples those given (a metrics store's), else its coverage records' wall times."""
    race_dir = Path(race_dir)
    data = data or json.loads((race_dir / "race.json").read_text())
    folder = race_dir / records.RECORD_DIR
    texts = {p.name: p.read_text() for p in sorted(folder.iterdir()) if p.is_file()} if folder.is_dir() else {}
    race = Race(data["race-id"], race_dir, data, record_texts=texts)
    for name in texts:
        race.record(name)  # every record read now: a malformed one is named here, when the race is loaded
    check_validation_lines(race.record(records.VALIDATION, []))
    race.samples = Samples(record_samples(race)) if samples is None else samples
    return race


def check_validation_lines(lines):
    """The coverage record as runners/studies/coverage.py writes it, or a ValueError naming the line: an object a line,
    `measured` true, false or null (a time-based task; the text "false" is not false), and no measured coverage that
    answered recorded twice (its window to the millisecond, its wall and its tooks: a copied line, which doubles n;
    none of the 51 real records has one). A failed coverage may repeat: those of a race whose node died are recorded
    alike, cause and all."""
    answered = {}  # a measured coverage that answered (its whole line) -> its line number
    for n, line in enumerate(lines, 1):
        if not isinstance(line, dict):
            raise ValueError(f"{records.VALIDATION} line {n} is a {type(line).__name__}, not an object")
        measured = line.get("measured")
        if not (measured is None or isinstance(measured, bool)):
            raise ValueError(f"{records.VALIDATION} line {n}: measured is {measured!r}, not true, false or null")
        if measured and records.ERROR not in line and isinstance(line.get("window"), list):
            key = json.dumps(line, sort_keys=True)
            if key in answered:
                raise ValueError(
                    f"{records.VALIDATION} line {n} repeats line {answered[key]} (the same timed window, wall and took): a copied line"
                )
            answered[key] = n


def replayed(data, texts, samples=None):
    """A store's race from the record operations its samples carry (in sample order), replayed into a folder that is
    gone once loaded, with the samples the store gives (report/shared/samples.py); each ingest's bulk tooks recounted
    over every load-driver host's."""
    with tempfile.TemporaryDirectory(prefix="cluster-metrics-race-") as race_dir:
        record_dir = os.path.join(race_dir, records.RECORD_DIR)
        records.replay(record_dir, texts)
        recount_bulk_tooks(record_dir)
        race = load(race_dir, data, samples)
    race.path = None  # no folder: everything came from the store
    return race


def rally_home_of(rally_home):
    """The Rally home given (checked: it exists and is a folder, not empty text), or None for the user's. Its absence is
    named with the fix, not mistaken for a home without races."""
    if rally_home is None:
        return None
    if not str(rally_home).strip():
        raise ReportError("--rally-home is empty: give the folder that holds .rally (your home: --rally-home ~), or leave it out")
    home = Path(rally_home).expanduser()
    if not home.exists():
        raise ReportError(f"--rally-home {rally_home}: no such folder; give the folder that holds .rally (e.g. --rally-home ~)")
    if not home.is_dir():
        raise ReportError(f"--rally-home {rally_home} is a file: give the folder that holds .rally (e.g. --rally-home ~)")
    return str(home)


class Files:
    """The races of a Rally home: its race folders (race.json and the track's records beside it)."""

    def __init__(self, rally_home=None):
        self.rally_home = rally_home
        self.root = races_root(rally_home)
        self.where = f"the Rally home's races under {self.root}"

    def race(self, race_id=None):
        """The race with that id (a unique prefix is enough), or the newest race of this track."""
        candidates = list(self.root.glob("*/race.json"))
        if race_id:
            matches = [p for p in candidates if p.parent.name.startswith(race_id)]
            if len(matches) != 1:
                raise ReportError(
                    f"{'no' if not matches else 'more than one'} race matching {race_id!r} under {self.root}; "
                    "list them with: esrally list races"
                )
            return load(matches[0].parent)
        ours = [
            (data["race-timestamp"], path)
            for path in candidates
            if records.is_our_track((data := json.loads(path.read_text())).get("track"))
        ]
        if ours:
            return load(max(ours)[1].parent)  # by Rally's own race timestamp: file times mean nothing in a clone
        raise ReportError(f"no race of the {records.TRACK_NAME} track under {self.root}; run one first: make race")

    def documents(self):
        """(race document, its folder, None) of every race folder, or (None, folder, why) for one that cannot be read
        or holds no race.json (a race still running, or one Rally ended before it wrote it: named, never dropped
        without a word)."""
        try:
            folders = sorted(p for p in self.root.iterdir() if p.is_dir()) if self.root.is_dir() else []
        except OSError as e:
            raise ReportError(f"{self.root} cannot be read ({e.strerror or e}): give a Rally home you can read") from None
        for folder in folders:
            path = folder / "race.json"
            if not path.exists():
                yield None, folder, NO_RACE_JSON
                continue
            try:
                yield json.loads(path.read_text()), folder, None
            except (OSError, ValueError) as e:
                yield None, folder, f"unreadable race.json ({e.__class__.__name__}: {str(e)[:120]})"

    def loaded(self, selected, load_or_why):
        """(document, folder, race or why) of each selected (document, folder), in order, each race with its samples."""
        for data, folder in selected:
            yield data, folder, load_or_why(load, folder, data)


NO_RACE_JSON = "no race.json (a race still running, or one that ended before Rally wrote it)"


class Stored:
    """The races of Rally's metrics store: its race documents (rally-races-*) and, per race, the record operations its
    samples carry and each cell's samples."""

    BATCH = 100  # races a store is asked about at once: 100 races x 100 cells stay within search.max_buckets (65,536)

    def __init__(self, store):
        self.store = store
        self.where = f"Rally's metrics store at {store.address}"

    def race(self, race_id=None):
        """The race with that id (a unique prefix is enough), or the newest race of this track, from the store alone:
        Rally's figures, every sample's service time, and the track's records with the bulk tooks of every load-driver
        host."""
        data = self.store.race(race_id, track=None if race_id else records.TRACK_NAME)
        samples = Samples(self.store.service_times(data["race-id"]), source=FROM_STORE)
        race = replayed(data, self.store.record_operations(data["race-id"]), samples)
        race.hosts = self.store.host_samples(data["race-id"])
        race.source = self.where
        return race

    def documents(self):
        for data in self.store.race_documents():
            yield data, f"race {(data or {}).get('race-id', '?') if isinstance(data, dict) else '?'} in the store", None

    def loaded(self, selected, load_or_why):
        """(document, its source, race or why) of each selected (document, source), in order, a batch of races at a
        time with bounded queries: their records other than the coverages' validation lines (cells, cluster facts, the
        ingest), and each cell's sample count, failure and order statistics by aggregation, in place of samples."""
        for first in range(0, len(selected), self.BATCH):
            batch = selected[first : first + self.BATCH]
            ids = {data["race-id"]: data for data, _ in batch}
            texts = self.store.records_beside_coverages(ids)
            statistics = self.store.order_statistics(ids, uncertainty.interval_ranks)
            for data, where in batch:
                samples = Samples(statistics=statistics.get(data["race-id"], {}), source=FROM_STORE)
                race = load_or_why(replayed, data, texts.get(data["race-id"], []), samples)
                if not isinstance(race, str):
                    race.source = self.where
                yield data, where, race


def source(rally_home=None, configuration_name=None):
    """Where the races are: Rally's metrics store when the Rally configuration (rally.ini, or rally-NAME.ini) names an
    Elasticsearch one, else the Rally home's race folders."""
    rally_home = rally_home_of(rally_home)
    store = Store.from_config(rally_home, configuration_name)
    return Stored(store) if store else Files(rally_home)
