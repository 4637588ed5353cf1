"""What the index costs on disk in one _source mode: store size as ingested and force-merged, and where the bytes
are (the _disk_usage API)."""

import asyncio
import logging

from runners.contracts import parameters, queries, records, rules
from runners.contracts.context import RaceContext
from runners.contracts.queries import SOURCE_MODES, TRANSPORTS, VARIANTS
from runners.contracts.registry import Need, Operation
from runners.shared import results
from runners.studies.index_checks import ALTERED_KEY

LOG = logging.getLogger(__name__)
STATS_INTERVAL = "index.store.stats_refresh_interval"
JSON = {"content-type": "application/json", "accept": "application/json"}
FIELD_PARTS = ("stored_fields", "doc_values", "points", "norms", "term_vectors", "knn_vectors")


class SourceStorage:
    """The index's storage in one _source mode (untimed).

    Checks first that the index is in the mode the task names (index.mapping.source.mode, as the index reports it),
    else the sample fails: the figures would be filed under the wrong mode. Then records the primaries' store size
    and segment count as ingested (after index.store.stats_refresh_interval: the node caches the size that long); with force-merge true, merges to one segment (so that every mode is compared in the
    same shape) and records them again; then the per-field breakdown of the _disk_usage API (run_expensive_tasks:
    it reads every file), of which _source's stored fields are the mode's own cost.

    Returns 1 op and the figures; writes them to <race>/cluster-metrics/<records.source_record(mode)>."""

    async def __call__(self, es, params):
        context, mode = RaceContext.of(params), params["source-mode"]
        index = context.index
        settings = await _settings(es, index)
        reported = await _source_mode(es, index, settings)
        if reported != mode:
            description = (
                f"index {index} is in _source mode {reported!r}, this task measures {mode!r}: the "
                "create-index before it did not apply the mode"
            )
            return results.failed(description)
        cached = _store_stats_interval(settings)
        await asyncio.sleep(cached)  # the last refresh's files, not a cached size from before it
        row = {"source-mode": mode, "ingested": await _store(es, index)}
        if params.get("force-merge", True):
            await es.options(request_timeout=params.get("request-timeout", 3600)).perform_request(
                "POST", f"/{index}/_forcemerge", params={"max_num_segments": "1"}
            )
            await es.perform_request("POST", f"/{index}/_refresh")  # lets go of the merged-away segments' files
            await _mark_altered(es, index, "source-cost: force-merged to one segment")
            await asyncio.sleep(cached)
            row["merged"] = await _store(es, index)
        usage = (
            await es.options(request_timeout=params.get("request-timeout", 3600)).perform_request(
                "POST", f"/{index}/_disk_usage", params={"run_expensive_tasks": "true"}
            )
        ).body[index]
        row["disk-usage"] = {
            "total_bytes": usage["store_size_in_bytes"],
            "fields": {name: _field_bytes(f) for name, f in usage.get("fields", {}).items()},
        }
        meta = records.write(context.record_dir, records.source_record(mode), row)
        LOG.info("cluster-metrics storage in _source mode %s: %s", mode, {k: row[k] for k in row if k != "disk-usage"})
        return {
            "weight": 1,
            "unit": "ops",
            "success": True,
            "source-mode": mode,
            "store-bytes": row.get("merged", row["ingested"])["store_bytes"],
            **meta,
        }

    def __repr__(self):
        return "source-storage"


async def _settings(es, index):
    """The index's flat settings, defaults included: {"settings": {...}, "defaults": {...}}."""
    body = (await es.perform_request("GET", f"/{index}/_settings", params={"include_defaults": "true", "flat_settings": "true"})).body
    return next(iter(body.values()))


async def _source_mode(es, index, found):
    mapping = (await es.perform_request("GET", f"/{index}/_mapping")).body
    if next(iter(mapping.values()))["mappings"].get("_source", {}).get("enabled") is False:
        return "disabled"  # the mapping's own switch (track parameter source_enabled false)
    value = found.get("settings", {}).get(queries.SOURCE_MODE_SETTING) or found.get("defaults", {}).get(
        queries.SOURCE_MODE_SETTING, "stored"
    )
    return value.lower()  # a default is reported in capitals ("STORED")


def _store_stats_interval(found):
    """Seconds for which the node serves a cached store size (index.store.stats_refresh_interval, default 10s), plus
    one: a size read sooner can be the one from before the last refresh or merge."""
    value = found.get("settings", {}).get(STATS_INTERVAL) or found.get("defaults", {}).get(STATS_INTERVAL, "10s")
    return _seconds(value) + 1


def _seconds(value):
    for suffix, factor in (("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)):
        if value.endswith(suffix) and value[: -len(suffix)].replace(".", "", 1).isdigit():
            return float(value[: -len(suffix)]) * factor
    return 10.0


async def _store(es, index):
    stats = (await es.perform_request("GET", f"/{index}/_stats/store,segments,docs")).body["_all"]["primaries"]
    return {"store_bytes": stats["store"]["size_in_bytes"], "segments": stats["segments"]["count"], "docs": stats["docs"]["count"]}


def _field_bytes(field):
    """One field's bytes on disk, in total and by Lucene structure (inverted index, stored fields, doc values...)."""
    parts = {part: field.get(f"{part}_in_bytes", 0) for part in FIELD_PARTS}
    parts["inverted_index"] = field.get("inverted_index", {}).get("total_in_bytes", 0)
    return {"total": field.get("total_in_bytes", 0), **{k: v for k, v in parts.items() if v}}


def validate_storage_stats(params, clients, context):
    if params.get("source-mode") not in queries.SOURCE_MODES:
        raise ValueError(
            f"source-mode must be one of {', '.join(queries.SOURCE_MODES)}, got "
            f"{params.get('source-mode')!r} (track parameter source_modes)"
        )
    parameters.check_operation_value("force-merge", params.get("force-merge", True), "source_force_merge")


async def _mark_altered(es, index, what):
    """Says in the index mapping's _meta what this challenge did to the index after its ingest, so that the query
    challenges' verify-corpus refuses to time it as if it were the standard index (index_checks.shape_differences)."""
    meta = next(iter((await es.perform_request("GET", f"/{index}/_mapping")).body.values()))["mappings"].get("_meta", {})
    await es.perform_request("PUT", f"/{index}/_mapping", body={"_meta": {**meta, ALTERED_KEY: what}}, headers=JSON)


# source-cost: _source modes (stored last, so that the index ends as the other challenges create it), the size-0
# coverages and a fetch per mode (the fetch's own parameters: runners/studies/coverage.py)
PARAMETER_RULES = {
    "source_modes": rules.names(SOURCE_MODES),
    "source_variants": rules.names(tuple(VARIANTS)),
    "source_transports": rules.names(TRANSPORTS),
    "source_force_merge": rules.boolean,
}


OPERATIONS = {
    "source-storage": Operation(
        SourceStorage,
        Need(
            "reads store stats and disk usage, force-merges, marks the mapping",
            index=("monitor", "view_index_metadata", "maintenance", "manage"),
        ),
        validate=validate_storage_stats,
    ),
}
