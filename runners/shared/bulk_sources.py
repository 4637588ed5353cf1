"""The ingest's parameter sources (runners/studies/ingest.py): Rally's own bulk parameter source, read epoch by epoch,
with what the ingest's runners need beside each bulk (its epoch, the race's record folder and record, the client that
sends it, and for a whole ingest in one task, the index to set up first and each bulk's place in the client's run)."""

import copy

from esrally.track import params as rally_params

from runners.contracts import corpus
from runners.contracts.context import RaceContext
from runners.shared.index_body import FreshIndexBodyParamSource

RECORD_KEY = "record"  # an ingest task's record file, set at load by name_records (runners/studies/ingest.py)
CREATE_PARAMS_KEY = "create-index-request-params"  # the ingest task's parameter: the index creation's request parameters


class EpochBulkParamSource:
    """Rally's own bulk parameter source (corpus slicing per client, test mode, progress), plus the epoch and the
    race's record folder so that the bulk runner can file each response's `took` under its epoch."""

    def __init__(self, track, params, **kwargs):
        self._inner = rally_params.BulkIndexParamSource(track, params, **kwargs)
        self._extra = {
            "epoch": params["epoch"],
            "record-dir": RaceContext.of(params).record_dir,
            RECORD_KEY: params[RECORD_KEY],
        }

    def partition(self, partition_index, total_partitions):
        part = copy.copy(self)
        part._inner = self._inner.partition(partition_index, total_partitions)
        # the client that sends: Rally 2.13 shares one inner source among the clients of a worker process, so a client
        # sends whichever bulk comes next, not a fixed slice of its own
        part._extra = {**self._extra, "client": partition_index}
        return part

    def params(self):
        result = dict(self._inner.params())
        result.update(self._extra)
        return result

    def __getattr__(self, name):  # infinite, size(), percent_completed, ... come from Rally's source
        if name.startswith("_"):  # copy.copy probes dunders before _inner exists
            raise AttributeError(name)
        return getattr(self._inner, name)


class IngestEpochsParamSource:
    """Every epoch of an ingest, in order, as Rally's own bulk parameter source reads each epoch's corpus (its slicing
    per client, test mode, bulk bodies with their action lines as the file holds them), and the index to set up first
    (runners/shared/index_body.py: the track's index body with the task's settings).

    Each client owns a fixed slice of each epoch (its own Rally source per epoch: Rally 2.13 would share one among the
    clients of a worker process), so that client 0 holds the first documents of every epoch; each bulk's parameters
    say its epoch, whether it is this client's first and last of that epoch, and whether it is its last of all."""

    def __init__(self, track, params, **kwargs):
        self._track, self._params, self._kwargs = track, params, kwargs
        context = RaceContext.of(params)
        self._epochs = [int(e) for e in params["epochs"]]
        index = FreshIndexBodyParamSource(track, params, **kwargs).params()
        self._extra = {
            "epochs": self._epochs,
            "epoch-docs": {str(e): context.epoch_docs[str(e)] for e in self._epochs},
            "record-dir": context.record_dir,
            RECORD_KEY: params[RECORD_KEY],
            "indices": index["indices"],
            # not "request-params": Rally's bulk runner would send those with every bulk
            CREATE_PARAMS_KEY: index.get("request-params"),
        }
        self.infinite = False
        self._client, self._clients = 0, 1
        self._iterator = self._pending = None

    def partition(self, partition_index, total_partitions):
        part = copy.copy(self)
        part._client, part._clients = partition_index, total_partitions
        part._iterator = part._pending = None
        return part

    def _bulks(self):
        context = RaceContext.of(self._params)
        for epoch in self._epochs:
            inner = rally_params.BulkIndexParamSource(
                self._track, {**self._params, "corpora": corpus.corpus_name(epoch, context.index)}, **self._kwargs
            ).partition(self._client, self._clients)
            first = True
            while True:
                try:
                    bulk = dict(inner.params())
                except StopIteration:
                    break
                yield {**bulk, "epoch": epoch, "first-of-epoch": first}
                first = False

    def params(self):
        if self._iterator is None:  # one pass: the look-ahead tells each bulk whether it is this client's last
            self._iterator = self._bulks()
            self._pending = next(self._iterator, None)
        current = self._pending
        if current is None:
            raise StopIteration
        self._pending = nxt = next(self._iterator, None)
        last_of_epoch = nxt is None or nxt["epoch"] != current["epoch"]
        return {
            **current,
            **self._extra,
            "client": self._client,
            "clients": self._clients,
            "last": nxt is None,
            "last-of-epoch": last_of_epoch,
        }
