"""Ingest: per-epoch bulk that records each response's `took`, per-epoch cost from /_stats, document-count check."""

import copy
import glob
import logging
import os
import time

from esrally.driver import runner as rally_runner
from esrally.track import params as rally_params

from runners import parameters, records, results
from runners.context import RaceContext

LOG = logging.getLogger(__name__)
STATS_METRICS = "indexing,refresh,merge,flush"
# the index settings an ingest may change (ingest-tuned, ingest-changes): recorded as they are when it starts, so that
# the record says what it ran with
INGEST_SETTINGS = ("index.refresh_interval", "index.translog.durability")


def _took_dir(record):
    """Each ingest record keeps its bulk tooks apart (the layout sweep ingests the same epochs once per layout)."""
    return os.path.join(records.TOOK_DIR, os.path.splitext(record)[0])


def _took_file(record, epoch, client):
    """One file per epoch and client: each client appends its own bulks, and the clients that ran can be counted."""
    return os.path.join(_took_dir(record), f"epoch-{epoch}-client-{client}.txt")


def took_line(took, started, ended):
    """A bulk's line in its took file: the response's took (ms), then the bulk's wall-clock window (s)."""
    return f"{took} {started:.3f} {ended:.3f}"


def read_took_line(line):
    """(took, window) of a took file's line; an older line holds the took alone (window None)."""
    fields = line.split()
    return int(fields[0]), [float(f) for f in fields[1:3]] or None


class EpochBulkParamSource:
    """Rally's own bulk parameter source (corpus slicing per client, test mode, progress), plus the epoch and the
    race's record folder so that the bulk runner can file each response's `took` under its epoch."""

    def __init__(self, track, params, **kwargs):
        self._inner = rally_params.BulkIndexParamSource(track, params, **kwargs)
        self._extra = {
            "epoch": params["epoch"],
            "record-dir": RaceContext.of(params).record_dir,
            "record": params.get("record", records.INGEST),
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


class EpochBulk:
    """Rally's bulk runner, unchanged in what it sends and measures; additionally appends the response's `took`
    (server-side handler time) to the race record, so per-epoch took sums reach the user without a metrics store.

    Sent without client retries (the client's default retries 429, 502-504 and connection errors): a bulk retried
    after a reset that Elasticsearch had already applied duplicates its documents, and a 429 retried away hides the
    rejection. A failed bulk is a failed sample (Rally's mapping of the error); verify-doc-count then tells the loss,
    and the report marks the ingest FAILED."""

    def __init__(self):
        self._bulk = rally_runner.BulkIndex()

    async def __call__(self, es, params):
        client = _OperationsNotBody(es.options(max_retries=0, retry_on_status=(), retry_on_timeout=False))
        started = time.time()
        result = await self._bulk(client, params)
        if params.get("record-dir") and result.get("took") is not None:
            name = _took_file(params["record"], params["epoch"], params.get("client", 0))
            result.update(records.append_line(params["record-dir"], name, took_line(result["took"], started, time.time())))
        return result

    def __repr__(self):
        return "epoch-bulk"


class _OperationsNotBody:
    """The client as Rally's bulk runner sees it, but its bulk(body=...) goes out as bulk(operations=...), the same
    request. elasticsearch-py 8.6 deprecates `body` there, and before each warning it walks the call stack with
    inspect.stack(), which reads source files: several ms of load-driver CPU per bulk request, counted in Rally's
    processing time of every bulk (found with Rally's --enable-driver-profiling; tracks/cluster-metrics/README.md,
    "Where per-epoch ingest cost goes")."""

    def __init__(self, client):
        self._client = client

    def bulk(self, body=None, **kwargs):
        return self._client.bulk(operations=body, **kwargs)

    def __getattr__(self, name):
        return getattr(self._client, name)


def bulk_tooks(record_dir, record, epoch):
    """Every bulk `took` of one epoch that the record folder holds, from all clients."""
    return [read_took_line(line)[0] for lines in bulk_lines(record_dir, record, epoch).values() for line in lines]


def bulk_lines(record_dir, record, epoch):
    """Each took file's lines of one epoch, by file name (one file per client)."""
    found = {}
    for path in sorted(glob.glob(os.path.join(record_dir, _took_dir(record), f"epoch-{epoch}-*.txt"))):
        with open(path) as f:
            found[os.path.basename(path)] = [line for line in f if line.strip()]
    return found


def recount_bulk_tooks(record_dir):
    """Each ingest record's per-epoch took sum and count, again from the took files: a folder rebuilt from a metrics
    store holds every load-driver host's tooks, where the epoch task counted only its own host's."""
    took_root = os.path.join(record_dir, records.TOOK_DIR)
    for stem in sorted(os.listdir(took_root)) if os.path.isdir(took_root) else []:
        name = stem + ".json"
        record = records.read(record_dir, name)
        if record:
            for row in record["epochs"]:
                tooks = bulk_tooks(record_dir, name, row["epoch"])
                row.update({"bulk-requests": len(tooks), "bulk-took-ms": sum(tooks)})
            records.write(record_dir, name, record)


def stats_snapshot(stats):
    """The cumulative /_stats counters an epoch's cost is the difference of."""
    total = stats["_all"]["total"]
    return {
        "index-ms": total["indexing"]["index_time_in_millis"],
        "index-docs": stats["_all"]["primaries"]["indexing"]["index_total"],  # documents, not copies
        "refresh-ms": total["refresh"]["total_time_in_millis"],
        "merge-ms": total["merges"]["total_time_in_millis"],
        "merged-bytes": total["merges"]["total_size_in_bytes"],
        "flush-ms": total["flush"]["total_time_in_millis"],
    }


def epoch_cost(epoch, previous, snapshot, tooks):
    """One epoch's row: the /_stats deltas between two snapshots and the sum and count of its bulk `took`s."""
    return {
        "epoch": epoch,
        "docs": snapshot["index-docs"] - previous["index-docs"],
        "bulk-requests": len(tooks),
        "bulk-took-ms": sum(tooks),
        "index-ms": snapshot["index-ms"] - previous["index-ms"],
        "refresh-ms": snapshot["refresh-ms"] - previous["refresh-ms"],
        "merge-ms": snapshot["merge-ms"] - previous["merge-ms"],
        "flush-ms": snapshot["flush-ms"] - previous["flush-ms"],
        "merged-mb": (snapshot["merged-bytes"] - previous["merged-bytes"]) / 2**20,
    }


async def _snapshot(es, context):
    return stats_snapshot((await es.perform_request("GET", f"/{context.index}/_stats/{STATS_METRICS}")).body)


async def _ingest_settings(es, context):
    """INGEST_SETTINGS of the index as they are now, Elasticsearch's default where unset, as a user spells them
    (Elasticsearch's defaults list the durability as "REQUEST", a value set by a user as given: "async")."""
    params = {"flat_settings": "true", "include_defaults": "true"}
    index = next(iter((await es.perform_request("GET", f"/{context.index}/_settings", params=params)).body.values()))
    values = {key: index.get("settings", {}).get(key, index.get("defaults", {}).get(key)) for key in INGEST_SETTINGS}
    return {key: value.lower() if isinstance(value, str) else value for key, value in values.items()}


class IngestCostStart:
    """Takes the starting /_stats snapshot of an ingest (after the index is created, before the first bulk) and
    starts the race's ingest record, with the index settings the ingest runs with (INGEST_SETTINGS). Returns 1 op."""

    async def __call__(self, es, params):
        context = RaceContext.of(params)
        record = {"epochs": [], "snapshot": await _snapshot(es, context), "index-settings": await _ingest_settings(es, context)}
        return {
            "weight": 1,
            "unit": "ops",
            "success": True,
            **records.write(context.record_dir, params.get("record", records.INGEST), record),
        }

    def __repr__(self):
        return "ingest-cost-start"


class IngestCostEpoch:
    """Measures one epoch's ingest cost (after its bulk and refresh): /_stats deltas (indexing, refresh, merge,
    flush time, merged MB) since the previous snapshot, and the sum and count of the epoch's bulk `took`.

    Writes the epoch's row to <race>/cluster-metrics/<record> (ingest.json unless the operation names another);
    returns 1 op and the row as sample meta.
    The epoch's wall time is not here: Rally's task transitions would inflate it. It is the duration of the task
    bulk-epoch-N in race.json."""

    async def __call__(self, es, params):
        context, epoch = RaceContext.of(params), params["epoch"]
        snapshot = await _snapshot(es, context)
        name = params.get("record", records.INGEST)
        record = records.read(context.record_dir, name, {})
        if "snapshot" not in record:
            return results.failed(
                f"epoch {epoch}: no starting /_stats snapshot (the schedule must run ingest-cost-start before the first bulk)"
            )
        row = epoch_cost(epoch, record["snapshot"], snapshot, bulk_tooks(context.record_dir, name, epoch))
        record["epochs"] = [r for r in record["epochs"] if r["epoch"] != epoch] + [row]
        record["snapshot"] = snapshot
        LOG.info("cluster-metrics ingest epoch %s: %s", epoch, row)
        return {"weight": 1, "unit": "ops", "success": True, **row, **records.write(context.record_dir, name, record)}

    def __repr__(self):
        return "ingest-cost-epoch"


def validate_bulk(params, clients, context):
    """Load-time check of an epoch bulk: a positive bulk size (track parameters bulk_size, tuned_bulk_size)."""
    parameters.check_operation_value("bulk-size", params.get("bulk-size"), params.get("bulk-size-parameter", "bulk_size"))
    if str(params.get("epoch")) not in context.epoch_docs:
        raise ValueError(f"epoch {params.get('epoch')} is not among this race's corpora")
