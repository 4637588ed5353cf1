"""Track processor: ties the track to the generated corpus and to the race, before the cluster is touched.

On every track load for a race it
- checks every track parameter the user gave (type and range), naming the parameter and what it expects;
- names each ingest's record after its task (runners/studies/ingest.py name_records);
- reads the generator's manifest, checks each file the race uses (size, and sha256 unless the track parameter
  verify_corpus_checksums is false) and the ground truth's sha256, once per race and host (CorpusChecks), and sets
  each document set's count and size;
- for coverage-width, adds each width's corpus set to the track (its index and corpora, named by the corpus contract)
  and binds the tasks of that width (WIDTH_KEY) to it;
- writes the corpus fingerprint into each index mapping's _meta, so that query challenges can tell what it holds;
- hands the first task, check-privileges, the privileges the challenge needs and its cells to record (_set_privileges);
- validates each of our operations (operations.OPERATIONS) and hands it the race context of its corpus set (a
  challenge that reads no generated corpus, source-large, gets the race's record folder alone).
Any problem raises a SystemSetupError whose message names the input and the fix.
"""

import copy
import json
import logging
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from esrally import exceptions, paths
from esrally.track import loader
from esrally.track import track as track_model

from runners.contracts import corpus, parameters, records
from runners.contracts.context import CONTEXT_KEY, DEFAULT_CLUSTER, RaceContext
from runners.operations import OPERATIONS
from runners.shared import host_load, interleave
from runners.studies import coverage, ingest, load, memory, privileges, scope, settle, warm_up, widths
from runners.studies.network import ClearToxics, clear_toxics
from runners.studies.widths import WIDTH_KEY

LOG = logging.getLogger(__name__)


def _tasks(challenge):
    for task in challenge.schedule:
        yield from task  # a parallel element iterates over its tasks, a plain task over itself


@dataclass(frozen=True)
class TrackLoad:
    """One load of the track, as Rally's configuration asks it (built once per load by on_after_load_track, handed to
    each step that reads it): the corpus folder, test mode, the user's track parameters, and the race with its corpus
    checks (CorpusChecks), which esrally list/info has not."""

    root: str  # the generated corpus's folder: Rally's local.dataset.cache
    test_mode: bool
    user_params: dict  # --track-params, checked (parameters.check) before the request is built
    race_id: Optional[str] = None  # None: esrally list/info, no race
    record_dir: Optional[str] = None  # the race's record folder
    verified: Optional["CorpusChecks"] = None  # the race's corpus checks on this host (noted in its record folder)

    @classmethod
    def of(cls, cfg, user_params):
        race_id = cfg.opts("system", "race.id", mandatory=False)
        root = cfg.opts("benchmarks", "local.dataset.cache")
        test_mode = bool(cfg.opts("track", "test.mode.enabled", mandatory=False, default_value=False))
        if not race_id:
            return cls(root, test_mode, user_params)
        record_dir = os.path.join(paths.race_root(cfg, race_id), records.RECORD_DIR)
        verified = CorpusChecks(record_dir, parameters.value(user_params, "verify_corpus_checksums"))
        return cls(root, test_mode, user_params, race_id, record_dir, verified)


class ClusterMetricsProcessor(loader.TrackProcessor):
    def __init__(self):
        self.cfg = None  # set by Rally's processor registry

    def on_after_load_track(self, track):
        """The load-time steps, in this order, each in the module of what it serves; the first problem raises a
        SystemSetupError naming the input and the fix, before anything is sent to the cluster."""
        user_params = self.cfg.opts("track", "params", mandatory=False, default_value={}) or {}
        try:
            parameters.check(user_params)  # esrally info too: a bad value is named there, not rendered silently
        except parameters.ParameterError as e:
            raise exceptions.SystemSetupError(f"{e}. Correct it in --track-params.") from None
        for challenge in track.challenges:
            ingest.name_records(list(_tasks(challenge)))
        request = TrackLoad.of(self.cfg, user_params)
        if not request.race_id:
            _describe(track, request)  # esrally list/info: counts from the manifest, nothing checked
            return
        selected = track.selected_challenge_or_default
        tasks = list(_tasks(selected))
        main, width_sets = _corpus_sets(track, selected, request)
        context = main or next(iter(width_sets.values()))  # a challenge has corpus tasks, or the race's records alone
        hosts = self.cfg.opts("driver", "load_driver_hosts", mandatory=False, default_value=None)
        try:
            check_epochs(selected, context)
            interleave.check_pace(tasks, request.user_params)
            memory.check_parallel_hdr(tasks, request.user_params)
            interleave.assign(tasks, parameters.value(request.user_params, "schedule_seed"), hosts)
        except ValueError as e:
            raise exceptions.SystemSetupError(f"Challenge [{selected.name}]: {e}.") from None
        load.set_load_driver_hosts(tasks, request.race_id, hosts)
        _bind_operations(track, selected, main, width_sets, _clusters(self.cfg))
        _bind_sampler_cluster(tasks, self.cfg)
        try:
            warm_up.bind(tasks)  # after the cells are bound: the pass runs them as they run
            if request.test_mode:
                settle.for_test_mode(tasks)
                warm_up.for_test_mode(tasks)
        except ValueError as e:
            raise exceptions.SystemSetupError(f"Challenge [{selected.name}]: {e}.") from None
        privileges.hand_to_check(selected.name, tasks, context, OPERATIONS)

    def on_prepare_track(self, track, data_root_dir):
        """Before the benchmark starts, on each load-driver host (Rally's track preparator there, with that host's
        rally.ini): the corpus and ground truth the runners will read are checked on this host (check_load_driver_host);
        then the toxics an earlier race left on the proxies of a network challenge are cleared, so that Rally's own
        telemetry requests at the start do not crawl through them (the challenge's clear-toxics-before task then
        clears them again, as a task in the results)."""
        try:
            check_load_driver_host(track, data_root_dir)
        except corpus.CorpusError as e:
            raise exceptions.SystemSetupError(f"Load-driver host {socket.gethostname()}: {e}") from None
        for task in _tasks(track.selected_challenge_or_default):
            if OPERATIONS.get(task.operation.type) and OPERATIONS[task.operation.type].runner is ClearToxics:
                yield clear_toxics, {"params": dict(task.operation.params)}
                return


def _corpus_sets(track, selected, request):
    """(the main corpus's context or None, {width: context}) of the challenge that runs, each file it reads checked
    once per race and host; the main corpus's fingerprint in its index's mapping. A challenge that reads no
    generated corpus (source-large) gets a context of the race's record folder alone."""
    try:
        # the main corpus unless every corpus-bound task of the race names a width set (coverage-width)
        main = None
        if any(_reads_main_corpus(t) for t in _tasks(selected)):
            main = _main_context(track, corpus.require_manifest(request.root), request)
        width_sets = _width_sets(track, selected, request)
    except corpus.CorpusError as e:
        # Rally loads the track again on each load-driver host, with that host's rally.ini: say which host
        raise exceptions.SystemSetupError(f"{e} (host {socket.gethostname()})") from None
    if main is None and not width_sets:
        main = RaceContext.records_only(request.record_dir)
    for index in track.indices:
        if main and index.name == main.index:
            index.body.setdefault("mappings", {})["_meta"] = {corpus.FINGERPRINT_KEY: main.fingerprint}
    return main, width_sets


def _main_context(track, manifest, request):
    """The main corpus's context: the epochs of track.json's corpora (track parameter epochs)."""
    epochs = []
    for data_set in track.corpora:
        epoch = data_set.meta_data.get("epoch")
        entry = _entry(manifest, epoch, request.test_mode)
        if entry is None:
            raise corpus.CorpusError(
                f"The generated corpus has no epoch {epoch} for corpus {data_set.name} (generated: "
                f"{manifest['generator']['epochs']} epochs). Lower the track parameter epochs or {corpus.FIX} "
                "with more epochs."
            )
        _set_counts(data_set, entry)
        epochs.append(epoch)
    return set_context(manifest, epochs, request)


def _bind_operations(track, selected, main, width_sets, clusters):
    """Each task of our operations gets the race context of its corpus set (a width's task is bound to its width's set
    first) and, where it counts iterations, its warm-up as it runs; the challenge that runs has each of its tasks
    validated (its parameters, the cluster it asks, its operation's own rules), naming the task."""
    as_params = {}  # each context's operation parameter, built once
    for challenge in track.challenges:
        for task in _tasks(challenge):
            width = width_sets.get(task.operation.params.get(WIDTH_KEY)) if challenge is selected else None
            if width:
                _bind_to_set(task, width)
            context = width or main or next(iter(width_sets.values()), None)  # the record folder is the race's
            operation = OPERATIONS.get(task.operation.type)
            if operation is None or context is None:
                continue
            # only the challenge that runs is checked: another's needs (a proxy, a remote) are not this race's
            if challenge is selected:
                try:
                    scope.validate(task.operation.params, operation.param_source)
                    _check_cluster(task.operation.params, clusters)
                    if operation.validate:
                        operation.validate(task.operation.params, task.clients, context)
                except ValueError as e:
                    raise exceptions.SystemSetupError(f"Task [{task.name}]: {e}.") from None
            if context.index not in as_params:
                as_params[context.index] = context.as_param()
            task.operation.params[CONTEXT_KEY] = as_params[context.index]
            if task.time_period is None and task.warmup_time_period is None:
                # the warmup as it runs (after --test-mode's reduction): Rally does not tell a runner which samples
                # are warmup, and the coverage records each sample as measured or not (runners/studies/coverage.py)
                task.operation.params[coverage.WARMUPS_KEY] = task.warmup_iterations or 0


def _clusters(cfg):
    """The cluster aliases of Rally's --target-hosts (None where Rally has none to give, as in esrally info)."""
    hosts = cfg.opts("client", "hosts", mandatory=False, default_value=None)
    return set(hosts.all_hosts) if hasattr(hosts, "all_hosts") else None


def _bind_sampler_cluster(tasks, cfg):
    """Each of our tasks tells the host-load sampler how to reach the target cluster's nodes (host_load.cluster_param,
    from --target-hosts and --client-options as the user gave them to Rally)."""
    hosts = cfg.opts("client", "hosts", mandatory=False, default_value=None)
    options = cfg.opts("client", "options", mandatory=False, default_value=None)
    cluster = host_load.cluster_param(getattr(hosts, "default", None), getattr(options, "default", None))
    for task in tasks:
        if CONTEXT_KEY in task.operation.params and cluster:
            task.operation.params[host_load.CLUSTER_KEY] = cluster


def _check_cluster(params, clusters):
    """A task that asks another cluster than the target ("cluster": a runner's, or "remote"'s direct cells) names one
    of --target-hosts, before anything runs."""
    cluster = params.get("cluster", DEFAULT_CLUSTER)
    if clusters is not None and cluster not in clusters:
        raise ValueError(
            f"it asks the cluster {cluster!r}, which --target-hosts does not name (it names {', '.join(sorted(clusters))}): "
            f'give it as --target-hosts=\'{{"default": [...], "{cluster}": ["host:port"]}}\' or leave out the cells that '
            "ask it (track parameter ccs_direct: [])"
        )


def _entry(manifest, epoch, test_mode):
    # without a -1k sibling (at most test_mode_rows rows per epoch) test mode uses the epoch's own file
    return (test_mode and corpus.file_entry(manifest, epoch, True)) or corpus.file_entry(manifest, epoch, False)


def set_context(manifest, epochs, request, fix=corpus.FIX):
    """The race context of one corpus set: its files of these epochs and its ground truth checked (the request's
    CorpusChecks)."""
    root, verified = request.root, request.verified
    epoch_docs, sections = {}, set()
    for epoch in epochs:
        entry = _entry(manifest, epoch, request.test_mode)
        if entry is None:
            raise corpus.CorpusError(f"The corpus {manifest['index']} has no epoch {epoch} ({fix}).")
        problem = verified.file(root, entry)
        if problem:
            raise corpus.CorpusError(f"Corpus file {problem}; {fix}.")
        epoch_docs[str(epoch)] = entry["documents"]
        sections.add(corpus.SECTIONS[entry["test_mode"]])
    (section,) = sections or {corpus.SECTIONS[False]}
    ground_truth = verified.ground_truth(root, manifest, fix)  # its sha256 now, before the cluster is touched
    if manifest.get("made_with", {}).get("numpy"):
        LOG.info("cluster-metrics corpus %s made with numpy %s", manifest["index"], manifest["made_with"]["numpy"])
    return RaceContext(
        index=manifest["index"],
        nodes=tuple(manifest["nodes"]),
        epochs=tuple(sorted(int(e) for e in epoch_docs)),
        section=section,
        ground_truth=str(ground_truth),
        ground_truth_sha256=manifest["ground_truth"]["sha256"],
        epoch_docs=epoch_docs,
        record_dir=request.record_dir,
        fingerprint=corpus.fingerprint(manifest, section),
    )


def _reads_main_corpus(task):
    operation = OPERATIONS.get(task.operation.type)
    return operation is not None and operation.reads_corpus and WIDTH_KEY not in task.operation.params


SET_BOUND = ("index", "corpora")  # what the track processor rebinds on such a task to its set's index and corpora


def _width_sets(track, challenge, request):
    """{width: RaceContext} of the widths the challenge's tasks name (WIDTH_KEY), each set's index and corpora added to
    the track (their names come from the corpus contract, runners/contracts/corpus.py, not from track.json)."""
    contexts = {}
    root, user_params = request.root, request.user_params
    epochs = range(1, parameters.value(user_params, "width_epochs") + 1)
    template = next(index for index in track.indices if index.name == corpus.INDEX)
    for width in sorted({t.operation.params[WIDTH_KEY] for t in _tasks(challenge) if WIDTH_KEY in t.operation.params}):
        rows = widths.rows_per_epoch(user_params, width)
        fix = corpus.width_fix(width, rows, len(epochs))
        manifest = corpus.require_manifest(root, corpus.width_set(width, rows), fix)
        context = set_context(manifest, epochs, request, fix)
        body = copy.deepcopy(template.body) or {}
        body.setdefault("mappings", {})["_meta"] = {corpus.FINGERPRINT_KEY: context.fingerprint}
        track.indices.append(track_model.Index(name=context.index, body=body))
        for epoch in epochs:
            entry = _entry(manifest, epoch, request.test_mode)
            documents = track_model.Documents(
                source_format=track_model.Documents.SOURCE_FORMAT_BULK,
                document_file=str(corpus.file_path(root, entry)),
                number_of_documents=entry["documents"],
                uncompressed_size_in_bytes=entry["bytes"],
                target_index=context.index,
            )
            track.corpora.append(track_model.DocumentCorpus(entry["corpus"], [documents], {"epoch": epoch}))
        contexts[width] = context
    return contexts


def _bind_to_set(task, context):
    """A width task's index and corpora: its set's (track.json renders the main corpus's names there)."""
    params = task.operation.params
    if "index" in params or task.operation.type in ("delete-index", "create-index"):
        params["index"] = context.index
    if "corpora" in params:
        params["corpora"] = corpus.corpus_name(params["epoch"], context.index)


class CorpusChecks:
    """The corpus checks of one race on this host, each done once: Rally loads the track in several processes per
    race (the coordinator, the track preparation, every worker), and a sha256 of every file in each of them costs
    seconds per GB. The first process to check a file or ground truth (sha256, unless checksum is false) notes it
    in the race's record folder with the file's size and modification time; the others check those and trust the
    note, so a file edited during the race is still caught."""

    NOTE = "corpus-checks.jsonl"

    def __init__(self, record_dir, checksum):
        self.path = os.path.join(record_dir, self.NOTE)
        self.checksum = checksum

    def _noted(self, path):
        stat = os.stat(path)
        line = json.dumps({"path": str(path), "bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns}, sort_keys=True)
        try:
            with open(self.path) as f:
                return line, any(existing.strip() == line for existing in f)
        except FileNotFoundError:
            return line, False

    def _note(self, line):
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        with open(self.path, "a") as f:
            f.write(line + "\n")

    def file(self, root, entry):
        """What is wrong with a corpus file (corpus.check_file), or None."""
        path = corpus.file_path(root, entry)
        if not self.checksum or not path.is_file():
            return corpus.check_file(root, entry, checksum=self.checksum)
        line, noted = self._noted(path)
        problem = corpus.check_file(root, entry, checksum=not noted)
        if problem is None and not noted:
            self._note(line)
        return problem

    def ground_truth(self, root, manifest, fix):
        """The ground truth's path, its sha256 checked (once per race and host)."""
        path = corpus.ground_truth_path(root, manifest["index"])
        line, noted = self._noted(path) if path.is_file() else (None, False)
        if not noted:
            corpus.check_ground_truth(root, manifest, fix)  # names a missing or edited file
            self._note(line)
        return path


def check_load_driver_host(track, data_root_dir):
    """The corpus files and the ground truth at the paths the race's runners read (the coordinator's Rally data
    directory: Rally hands its paths to every load-driver host) are on this host and match the manifest (sizes, and
    the ground truth's sha256), and this host's own data directory (rally.ini, where Rally's preparator looks) is that
    same path; for every corpus set the race uses. Raises a CorpusError that names the fix."""
    contexts = {}
    for task in _tasks(track.selected_challenge_or_default):
        if CONTEXT_KEY in task.operation.params and RaceContext.of(task.operation.params).has_corpus:
            context = RaceContext.of(task.operation.params)
            contexts.setdefault(context.index, context)
    for context in contexts.values():
        root = Path(context.ground_truth).parent.parent  # corpus.ground_truth_path(root, set)
        fix = f"every load-driver host needs the corpus at the coordinator's path {root}: {corpus.FIX}, or copy that folder"
        manifest = corpus.require_manifest(root, context.index)
        test_mode = context.section == corpus.SECTIONS[True]
        for epoch in context.epochs:
            entry = corpus.file_entry(manifest, epoch, test_mode)
            problem = (
                f"epoch {epoch}: not in {corpus.manifest_path(root, context.index)}"
                if entry is None
                else corpus.check_file(root, entry, False)
            )
            if problem:
                raise corpus.CorpusError(f"corpus file {problem}; {fix}")
        corpus.check_ground_truth(root, manifest)
        if Path(data_root_dir).resolve() != root.resolve():
            raise corpus.CorpusError(
                f"this host's Rally data directory is {data_root_dir}, the race's corpus is at {root} (the coordinator's); "
                f"{fix}, and set local.dataset.cache = {root} in the [benchmarks] section of this host's rally.ini"
            )


def _set_counts(data_set, entry):
    """A document set as the manifest has it: file, documents, bytes (track.json holds placeholders)."""
    for docs in data_set.documents:
        docs.document_file = os.path.join(os.path.dirname(docs.document_file), entry["file"])
        docs.number_of_documents = entry["documents"]
        docs.uncompressed_size_in_bytes = entry["bytes"]


def _describe(track, request):
    """esrally list/info: the document counts of the generated corpus, or a plain statement that there is none yet."""
    root, test_mode = request.root, request.test_mode
    manifest = corpus.load_manifest(root)
    missing = []
    for data_set in track.corpora:
        epoch = data_set.meta_data.get("epoch")
        entry = manifest and ((test_mode and corpus.file_entry(manifest, epoch, True)) or corpus.file_entry(manifest, epoch, False))
        if entry:
            _set_counts(data_set, entry)
        else:
            missing.append(epoch)
    if missing:
        where = f"no generated epoch {', '.join(map(str, missing))} under {root}" if manifest else f"no corpus generated under {root}"
        track.description += (
            f" (document counts are placeholders: {where}; counts come from the corpus's manifest at race " "time, make corpus)"
        )


def check_epochs(challenge, context):
    """The challenge that runs has the epochs it needs (its meta min_epochs)."""
    needed = challenge.meta_data.get("min_epochs", 1) if challenge.meta_data else 1
    if context.has_corpus and len(context.epochs) < needed:
        raise ValueError(f"needs at least {needed} epochs, this race has {len(context.epochs)} (track parameter epochs)")
