"""Ingest: per-epoch bulk that records each response's `took`, per-epoch cost from /_stats, document-count check."""

import copy
import glob
import logging
import os

from esrally.driver import runner as rally_runner
from esrally.track import params as rally_params

from runners import records
from runners.context import CONTEXT_KEY

LOG = logging.getLogger(__name__)
INGEST_RECORD = "ingest.json"
TOOK_DIR = "bulk-took"
STATS_METRICS = "indexing,refresh,merge,flush"


def _took_file(epoch):
    return os.path.join(TOOK_DIR, f"epoch-{epoch}-{os.getpid()}.txt")


class EpochBulkParamSource:
    """Rally's own bulk parameter source (corpus slicing per client, test mode, progress), plus the epoch and the
    race's record folder so that the bulk runner can file each response's `took` under its epoch."""

    def __init__(self, track, params, **kwargs):
        self._inner = rally_params.BulkIndexParamSource(track, params, **kwargs)
        self._extra = {"epoch": params["epoch"], "record-dir": params.get(CONTEXT_KEY, {}).get("record-dir")}

    def partition(self, partition_index, total_partitions):
        part = copy.copy(self)
        part._inner = self._inner.partition(partition_index, total_partitions)
        return part

    def params(self):
        result = dict(self._inner.params())
        result.update(self._extra)
        return result

    def __getattr__(self, name):  # infinite, size(), percent_completed, ... come from Rally's source
        if name.startswith("_"):  # copy.copy probes dunders before _inner exists
            raise AttributeError(name)
        return getattr(self._inner, name)


class BulkWithTook:
    """Rally's bulk runner, unchanged in what it sends and measures; additionally appends the response's `took`
    (server-side handler time) to the race record, so per-epoch took sums reach the user without a metrics store."""

    def __init__(self):
        self._bulk = rally_runner.BulkIndex()

    async def __call__(self, es, params):
        result = await self._bulk(es, params)
        if params.get("record-dir") and result.get("took") is not None:
            records.append_line(params["record-dir"], _took_file(params["epoch"]), str(result["took"]))
        return result

    def __repr__(self):
        return "cluster-metrics-bulk"


def _stats_snapshot(stats):
    total = stats["_all"]["total"]
    return {
        "index_ms": total["indexing"]["index_time_in_millis"],
        "index_docs": total["indexing"]["index_total"],
        "refresh_ms": total["refresh"]["total_time_in_millis"],
        "merge_ms": total["merges"]["total_time_in_millis"],
        "merged_bytes": total["merges"]["total_size_in_bytes"],
        "flush_ms": total["flush"]["total_time_in_millis"],
    }


class IngestEpochCost:
    """Measures one epoch's ingest cost: /_stats deltas (indexing, refresh, merge, flush time, merged MB) since the
    previous snapshot, and the sum and count of the epoch's bulk `took`. epoch 0 only takes the starting snapshot.

    Writes the epoch's row to <race>/cluster-metrics/ingest.json; returns 1 op and the row as sample meta.
    The epoch's wall time is not here: Rally's task transitions would inflate it. It is the duration of the task
    bulk-epoch-N in race.json."""

    async def __call__(self, es, params):
        context = params[CONTEXT_KEY]
        record_dir, epoch = context["record-dir"], params["epoch"]
        response = await es.perform_request("GET", f"/{context['index']}/_stats/{STATS_METRICS}")
        snapshot = _stats_snapshot(response.body)
        record = records.read(record_dir, INGEST_RECORD, {"epochs": []})
        if epoch == 0:
            record = {"epochs": [], "snapshot": snapshot, "challenge": params.get("challenge")}
            records.write(record_dir, INGEST_RECORD, record)
            return {"weight": 1, "unit": "ops", "success": True}
        previous = record.get("snapshot")
        if previous is None:
            return {"weight": 1, "unit": "ops", "success": False, "error-type": "cluster-metrics",
                    "error-description": f"epoch {epoch}: no starting /_stats snapshot (the schedule must run "
                                         "ingest-stats-start before the first bulk)"}
        tooks = []
        for path in glob.glob(os.path.join(record_dir, TOOK_DIR, f"epoch-{epoch}-*.txt")):
            with open(path) as f:
                tooks += [int(line) for line in f if line.strip()]
        row = {
            "epoch": epoch,
            "docs": snapshot["index_docs"] - previous["index_docs"],
            "bulk_requests": len(tooks),
            "bulk_took_ms": sum(tooks),
            "index_ms": snapshot["index_ms"] - previous["index_ms"],
            "refresh_ms": snapshot["refresh_ms"] - previous["refresh_ms"],
            "merge_ms": snapshot["merge_ms"] - previous["merge_ms"],
            "flush_ms": snapshot["flush_ms"] - previous["flush_ms"],
            "merged_mb": (snapshot["merged_bytes"] - previous["merged_bytes"]) / 2**20,
        }
        record["epochs"] = [r for r in record["epochs"] if r["epoch"] != epoch] + [row]
        record["snapshot"] = snapshot
        records.write(record_dir, INGEST_RECORD, record)
        LOG.info("cluster-metrics ingest epoch %s: %s", epoch, row)
        return {"weight": 1, "unit": "ops", "success": True, **row}

    def __repr__(self):
        return "ingest-epoch-cost"


class VerifyDocCount:
    """Nothing lost: after ingest, _count of the index must equal the document count of the ingested corpus.
    Returns 1 op; a difference is a failed sample naming both numbers."""

    async def __call__(self, es, params):
        context = params[CONTEXT_KEY]
        index, expected = context["index"], context["expected-docs"]
        response = await es.perform_request("GET", f"/{index}/_count")
        actual = response.body["count"]
        if actual != expected:
            return {"weight": 1, "unit": "ops", "success": False, "error-type": "cluster-metrics",
                    "error-description": f"index {index} holds {actual} documents, the ingested corpus has {expected}",
                    "actual": actual, "expected": expected}
        return {"weight": 1, "unit": "ops", "success": True, "actual": actual, "expected": expected}

    def __repr__(self):
        return "verify-doc-count"
