"""The race context: what every runner and parameter source of this track needs to know about the race.

The track processor builds it once per track load and puts it into each of our operations' parameters as a plain
dict (operation parameters travel to Rally's worker processes, which unpickle them before this package is
importable); runners read it back as a typed RaceContext.
"""

import functools
import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from runners.contracts import corpus

CONTEXT_KEY = "cluster-metrics"  # the operation parameter that carries the context
DEFAULT_CLUSTER = "default"  # Rally's name of the --target-hosts cluster without an alias (operation parameter "cluster")


@dataclass(frozen=True)
class RaceContext:
    index: str
    nodes: tuple  # node names, as the corpus has them
    epochs: tuple  # the epochs this race ingests and queries (track parameter epochs)
    section: str  # ground-truth section of the files this race uses: "full" or "test_mode"
    ground_truth: str  # path of ground-truth.json
    ground_truth_sha256: str
    epoch_docs: dict  # epoch (str) -> documents of that epoch's file
    record_dir: str  # <race>/cluster-metrics: what race.json cannot hold
    fingerprint: dict  # written into the index's _meta at create time, checked before timed queries

    @property
    def expected_docs(self):
        """Documents of the ingested epochs' files: what the index must hold after ingest."""
        return sum(self.epoch_docs.values())

    @property
    def has_corpus(self):
        """False for the context of a challenge that reads no generated corpus (records_only)."""
        return bool(self.ground_truth)

    @classmethod
    def records_only(cls, record_dir):
        """The context of a challenge that reads no generated corpus (source-large makes its own documents): the race's
        record folder, and no index, epoch or ground truth."""
        return cls(
            index="",
            nodes=(),
            epochs=(),
            section="",
            ground_truth="",
            ground_truth_sha256="",
            epoch_docs={},
            record_dir=record_dir,
            fingerprint={},
        )

    def as_param(self):
        return asdict(self)

    @classmethod
    def of(cls, params):
        value = params[CONTEXT_KEY]
        return value if isinstance(value, cls) else cls(**value)

    def truth(self):
        """This race's section of the ground truth: {epoch (str): {node: entry}}."""
        return _ground_truth(self.ground_truth, self.ground_truth_sha256)["epochs"][self.section]

    def corpus_file(self, epoch):
        """The path of one epoch's corpus file as this race ingests it (the file Rally's bulk reads: the -1k sibling in
        a test-mode section), from the set's manifest beside the ground truth (corpus.ground_truth_path)."""
        root = Path(self.ground_truth).parent.parent
        entry = corpus.file_entry(corpus.require_manifest(root, self.index), int(epoch), self.section == corpus.SECTIONS[True])
        if entry is None:
            raise corpus.CorpusError(f"The corpus {self.index} under {root} has no epoch {epoch}; {corpus.FIX}.")
        return corpus.file_path(root, entry)


@functools.lru_cache(maxsize=2)
def _ground_truth(path, sha256):
    """Parsed once per process and version (the track processor has checked its sha256 against the manifest)."""
    data = Path(path).read_bytes()
    if hashlib.sha256(data).hexdigest() != sha256:
        raise corpus.CorpusError(f"The ground truth {path} changed during the race; {corpus.FIX}.")
    return json.loads(data)
