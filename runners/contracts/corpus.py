"""The corpus contract, in one place: names, paths and file formats shared by the generator (corpora-gen), the track
processor, the runners and the report.

A generated corpus lives in Rally's data directory (`$RALLY_HOME/.rally/benchmarks/data`) as a corpus set: the main
set `cluster-metrics` (make corpus), and beside it the sets of the coverage-width sweep, one per width and rows per
epoch, each named by them (width_set: `cluster-metrics-width-300-rows-1000000`). The files of set S:
  S-epoch-N/S-epoch-N.json      one epoch's rows (and its -1k sibling for --test-mode)
  S/manifest.json               what made the files, and each file's count, bytes, sha256; "index": S
  S/ground-truth.json           exact answers per section ("full", "test_mode"), epoch, node
A set's index has the set's name. Entries are looked up by their fields (epoch, test_mode), never by parsing file
names.

Ground truth entry of one (section, epoch, node):
  {"count": n, "sum": {field: exact sum of the float32 values},
   "percentiles": {field: {"50": exact interpolated value, ...}} for GROUND_TRUTH_PERCENTS,
   "ranks": {field: {"step": s, "cents": [...]}},
   "top": [[task, cpu, mem, net], ...]}
`top` holds the node's rows with the FETCH_TRUTH_ROWS highest cpu values (and every row tied with the last of them),
cpu descending, then task, mem and net ascending; task by name, the numbers in hundredths: what a fetch of up to
FETCH_TRUTH_ROWS hits sorted by cpu may return, whichever of the tied rows Elasticsearch picks.
`ranks` holds the node's sorted values (in hundredths) at ranks 0, s, 2s, ... and n - 1: order statistics on a grid of
at most RANK_GRID_INTERVALS intervals, so that a percentile estimate can be bounded by ranks for any percent.
"""

import hashlib
import json
import math
import os
import struct
from pathlib import Path

INDEX = "cluster-metrics"
MANIFEST = "manifest.json"
GROUND_TRUTH = "ground-truth.json"
FIELDS = ("cpu", "mem", "net")
TEST_MODE_DOCS = 1000  # Rally's --test-mode replaces every document set over 1000 docs by its -1k sibling
SECTIONS = {False: "full", True: "test_mode"}  # ground-truth section of the full files / the -1k files
GENERATOR_VERSION = 3  # 2: rank grid in the ground truth, numpy version in the manifest; 3: each node's top rows
FETCH_TRUTH_ROWS = 1000  # rows per node and epoch kept for the fetch check: the largest fetch_size a race may ask
GROUND_TRUTH_PERCENTS = (0, 1, 5, 10, 25, 50, 75, 90, 95, 99, 100)  # exact interpolated values kept for these
RANK_GRID_INTERVALS = 1000
MAX_NODES = 99_999  # node names are N001..N999, N0001..N9999, N00001..N99999: as wide as the node count needs
FINGERPRINT_KEY = "cluster-metrics-corpus"  # the index mapping's _meta key naming the corpus it was created for
FIX = "generate it with: make corpus (or corpora-gen/generate --out <Rally data dir>)"
# the fix every verify-corpus refusal ends with (runners/studies/index_checks.py): the index does not hold the race's
# corpus. make nightly reads it in a refused check to know that an ingest is what the cluster lacks.
INGEST_FIX = (
    "ingest it with this race's corpus and parameters first (challenge ingest-baseline, with --test-mode "
    "when this race runs in test mode, and the same epochs)"
)


class CorpusError(Exception):
    """A corpus that is missing, edited or does not match; the message names the fix."""


def width_set(nodes, rows_per_epoch):
    """The corpus set of the coverage-width sweep at `nodes` monitored nodes and that many rows per epoch."""
    return f"{INDEX}-width-{nodes}-rows-{rows_per_epoch}"


def width_fix(nodes, rows_per_epoch, epochs, out=None):
    """How to generate one width set (the track names it when the set is missing)."""
    where = f" --out {out}" if out else ""
    return f"generate it with: corpora-gen/generate --widths {nodes} --rows-per-epoch {rows_per_epoch} --epochs {epochs}{where}"


def test_mode_rows(nodes):
    """Rows of a -1k test-mode file: Rally's 1000, or one row per node where the corpus is wider (the generator's
    first `nodes` rows hold every node once), so that a test-mode coverage finds every node."""
    return max(TEST_MODE_DOCS, nodes)


def corpus_name(epoch, corpus_set=INDEX):
    return f"{corpus_set}-epoch-{epoch}"


def file_name(epoch, test_mode=False, corpus_set=INDEX):
    return f"{corpus_name(epoch, corpus_set)}{'-1k' if test_mode else ''}.json"


def rally_home():
    return Path(os.environ.get("RALLY_HOME") or Path.home())


def data_root(home=None):
    """Rally's data directory, where corpora live (RALLY_HOME defaults to the home directory)."""
    return Path(home or rally_home()) / ".rally" / "benchmarks" / "data"


def races_root(home=None):
    return Path(home or rally_home()) / ".rally" / "benchmarks" / "races"


def manifest_path(root, corpus_set=INDEX):
    return Path(root) / corpus_set / MANIFEST


def ground_truth_path(root, corpus_set=INDEX):
    return Path(root) / corpus_set / GROUND_TRUTH


def file_path(root, entry):
    return Path(root) / entry["corpus"] / entry["file"]


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(8 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def load_manifest(root, corpus_set=INDEX):
    """The manifest, or None when there is none."""
    path = manifest_path(root, corpus_set)
    if not path.is_file():
        return None
    return json.loads(path.read_text())


def require_manifest(root, corpus_set=INDEX, fix=FIX):
    """The set's manifest, made by this generator version; fix: how to generate the set (FIX for the main one)."""
    manifest = load_manifest(root, corpus_set)
    if manifest is None:
        raise CorpusError(f"No {corpus_set} corpus: {manifest_path(root, corpus_set)} does not exist; {fix}.")
    if manifest.get("generator", {}).get("version") != GENERATOR_VERSION:
        raise CorpusError(
            f"The corpus {corpus_set} under {root} was made by generator version "
            f"{manifest.get('generator', {}).get('version')}, this track reads version "
            f"{GENERATOR_VERSION}; regenerate it ({fix}, with --force)."
        )
    return manifest


def section_for_count(manifest, count):
    """The ground-truth section whose files hold `count` documents in all ("full" or "test_mode"), or None."""
    for test_mode, section in SECTIONS.items():
        if count == sum(f["documents"] for f in manifest["files"] if f["test_mode"] == test_mode):
            return section
    return None


def file_entry(manifest, epoch, test_mode):
    for entry in manifest["files"]:
        if entry["epoch"] == epoch and entry["test_mode"] == test_mode:
            return entry
    return None


def check_file(root, entry, checksum=True):
    """None when the file matches its manifest entry, else what is wrong with it."""
    path = file_path(root, entry)
    if not path.is_file():
        return f"{path}: missing"
    size = path.stat().st_size
    if size != entry["bytes"]:
        return f"{path}: {size} bytes, the manifest says {entry['bytes']} (truncated or edited)"
    if checksum and sha256_of(path) != entry["sha256"]:
        return f"{path}: sha256 differs from the manifest (edited)"
    return None


def check_files(root, manifest, checksum=True):
    """What is wrong with each file of the manifest (an empty list when all match)."""
    return [problem for entry in manifest["files"] if (problem := check_file(root, entry, checksum))]


def check_ground_truth(root, manifest, fix=FIX):
    """The ground truth's path, after checking its sha256 against the manifest (read, not parsed: the runners that
    need its answers parse it, once per process, runners/contracts/context.py)."""
    path = ground_truth_path(root, manifest.get("index", INDEX))
    if not path.is_file():
        raise CorpusError(f"The corpus's ground truth {path} does not exist; {fix}.")
    if sha256_of(path) != manifest["ground_truth"]["sha256"]:
        raise CorpusError(f"The ground truth {path} does not match its sha256 in the manifest (edited); {fix}.")
    return path


def load_ground_truth(root, manifest, fix=FIX):
    """The ground truth, after checking its sha256 against the manifest."""
    return json.loads(check_ground_truth(root, manifest, fix).read_bytes())


def fingerprint(manifest, section):
    """What the index is created for: written into its mapping's _meta, checked before any timed query."""
    return {"generator": manifest["generator"], "ground_truth_sha256": manifest["ground_truth"]["sha256"], "section": section}


def as_float32(value):
    """The float32 Elasticsearch keeps for a float field's value (a _source value is the text as sent)."""
    return struct.unpack("<f", struct.pack("<f", value))[0]


def stored_value(cents):
    """The value Elasticsearch stores for the text "12.34" in a float field: parsed as a double, rounded to float32."""
    return as_float32(cents / 100.0)


def rank_grid_step(count):
    return max(1, math.ceil((count - 1) / RANK_GRID_INTERVALS))


class OrderStatistics:
    """A node's sorted values on the ground truth's rank grid (0-based ranks 0, step, 2 step, ..., count - 1).
    Lookups round outwards to the grid, so bounds built from them are never tighter than the exact ones."""

    def __init__(self, ranks, count):
        self.step, self.count = ranks["step"], count
        self.values = [stored_value(c) for c in ranks["cents"]]

    def _rank(self, i):
        return min(i * self.step, self.count - 1)

    def at_or_below(self, rank):
        """The value at the largest grid rank <= rank (the minimum for a rank below 0)."""
        i = max(0, min(math.floor(rank / self.step), len(self.values) - 1))
        if i + 1 < len(self.values) and self._rank(i + 1) <= rank:
            i += 1  # the last grid rank, count - 1, is not a multiple of the step
        return self.values[i]

    def at_or_above(self, rank):
        """The value at the smallest grid rank >= rank (the maximum for a rank beyond the last)."""
        i = max(0, min(math.ceil(rank / self.step), len(self.values) - 1))
        return self.values[i]
