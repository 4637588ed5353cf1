"""Track processor: ties the track to the generated corpus and to the race, before the cluster is touched.

On every track load for a race it
- reads the generator's manifest and sets each document set's count and size from it (so any generated scale
  just works, and Rally checks the files' sizes); a missing or mismatched corpus fails with the command to fix it;
- validates the track's own parameters (bulk sizes, clients, coverage variants and transports);
- hands the runners their context: ground truth file, epochs, nodes, expected document count, and the race's
  record folder (per-epoch ingest cost, profile breakdown) beside race.json.
"""

import json
import logging
import os

from esrally import exceptions, paths
from esrally.track import loader

from runners import queries

META_DIR = "cluster-metrics"
CONTEXT_KEY = "cluster-metrics"
RECORD_DIR = "cluster-metrics"  # inside Rally's race folder
FIX = "generate it with: make corpus (or corpora-gen/generate --out <Rally data dir>)"
OUR_OPERATIONS = {"coverage", "cluster-metrics-bulk", "ingest-epoch-cost", "verify-doc-count", "profile-breakdown"}

LOG = logging.getLogger(__name__)


def _tasks(challenge):
    for task in challenge.schedule:
        yield from task  # a parallel element iterates over its tasks, a plain task over itself


class ClusterMetricsContext(loader.TrackProcessor):
    def __init__(self):
        self.cfg = None  # set by Rally's processor registry

    def on_after_load_track(self, track):
        race_id = self.cfg.opts("system", "race.id", mandatory=False)
        if not race_id:
            return  # esrally list/info: no corpus needed to describe the track
        data_root = self.cfg.opts("benchmarks", "local.dataset.cache")
        manifest = self._load_manifest(data_root)
        expected_docs, test_mode_files = self._apply_manifest(track, manifest, data_root)
        context = {
            "index": manifest["index"],
            "nodes": manifest["nodes"],
            "epochs": sorted({f["epoch"] for f in manifest["files"]}),
            "ground-truth": os.path.join(data_root, META_DIR, manifest["ground_truth"]["file"]),
            "truth-section": "test_mode" if test_mode_files else "full",
            "expected-docs": expected_docs,
            "record-dir": os.path.join(paths.race_root(self.cfg, race_id), RECORD_DIR),
        }
        for challenge in track.challenges:
            for task in _tasks(challenge):
                if task.operation.type in OUR_OPERATIONS:
                    self._validate(task, context)
                    task.operation.params[CONTEXT_KEY] = context

    @staticmethod
    def _load_manifest(data_root):
        path = os.path.join(data_root, META_DIR, "manifest.json")
        if not os.path.isfile(path):
            raise exceptions.SystemSetupError(f"No cluster-metrics corpus: {path} does not exist; {FIX}.")
        with open(path) as f:
            return json.load(f)

    @staticmethod
    def _apply_manifest(track, manifest, data_root):
        by_file = {f["file"]: f for f in manifest["files"]}
        full_by_epoch = {f["epoch"]: f for f in manifest["files"] if not f["test_mode"]}
        expected, test_mode_files = 0, False
        for corpus in track.corpora:
            for docs in corpus.documents:
                entry = by_file.get(os.path.basename(docs.document_file))
                if entry is None and docs.document_file.endswith("-1k.json"):
                    # a scale of at most 1000 rows per epoch has no -1k sibling: test mode uses the file itself
                    epoch = int(corpus.name.rsplit("-", 1)[1])
                    entry = full_by_epoch.get(epoch)
                    if entry:
                        docs.document_file = entry["file"]
                if entry is None or entry["corpus"] != corpus.name:
                    raise exceptions.SystemSetupError(
                        f"The generated corpus has no file {os.path.basename(docs.document_file)} for corpus "
                        f"{corpus.name} (generated: {manifest['generator']['epochs']} epochs). Lower the track "
                        f"parameter epochs or {FIX} with more epochs.")
                path = os.path.join(data_root, corpus.name, entry["file"])
                if not os.path.isfile(path) or os.path.getsize(path) != entry["bytes"]:
                    actual = os.path.getsize(path) if os.path.isfile(path) else "missing"
                    raise exceptions.SystemSetupError(
                        f"Corpus file {path} does not match the manifest ({actual} bytes, expected "
                        f"{entry['bytes']}); truncated or edited: {FIX}.")
                docs.number_of_documents = entry["documents"]
                docs.uncompressed_size_in_bytes = entry["bytes"]
                expected += entry["documents"]
                test_mode_files = test_mode_files or entry["test_mode"]
        return expected, test_mode_files

    @staticmethod
    def _validate(task, context):
        params, name = task.operation.params, task.name
        try:
            if task.operation.type == "cluster-metrics-bulk":
                size = params.get("bulk-size")
                if not isinstance(size, int) or size <= 0:
                    raise ValueError(f"bulk-size must be a positive integer, got {size!r} (track parameter "
                                     "bulk_size or tuned_bulk_size)")
                if task.clients <= 0:
                    raise ValueError(f"clients must be positive, got {task.clients}")
            elif task.operation.type == "coverage":
                queries.validate_variant(params.get("variant"))
                queries.validate_transport(params.get("transport"))
                for epoch in params.get("epochs") or context["epochs"]:
                    if epoch not in context["epochs"]:
                        raise ValueError(f"epoch {epoch} is not in the generated corpus (epochs {context['epochs']})")
                for p in params.get("percents", queries.DEFAULT_PERCENTS):
                    if not 0 <= p <= 100:
                        raise ValueError(f"percent {p} is outside 0..100 (track parameter percents)")
                digits = params.get("hdr-digits", 3)
                if not isinstance(digits, int) or not 0 <= digits <= 5:
                    raise ValueError(f"hdr-digits must be an integer 0..5, got {digits!r} (track parameter hdr_digits)")
        except ValueError as e:
            raise exceptions.SystemSetupError(f"Task [{name}]: {e}.") from None
