"""Untimed checks of what the index holds: nothing lost after ingest, and the right corpus before timed queries."""

import elasticsearch

from runners.contracts.context import DEFAULT_CLUSTER, RaceContext
from runners.contracts.corpus import FINGERPRINT_KEY, INGEST_FIX, CorpusError
from runners.contracts.queries import SOURCE_MODE_SETTING
from runners.contracts.registry import Need, Operation
from runners.shared import restore, results
from runners.studies.search_pool import SearchPool

SEARCH_POOL_KEY = "search-pool"  # operation parameter: then record what bounds _msearch's concurrency (SearchPool)


class VerifyDocCount:
    """Nothing lost: after ingest, _count of the index must equal the document count of the ingested corpus.
    Returns 1 op; a difference is a failed sample naming both numbers."""

    async def __call__(self, es, params):
        context = RaceContext.of(params)
        response = await es.perform_request("GET", f"/{context.index}/_count")
        actual, expected = response.body["count"], context.expected_docs
        if actual != expected:
            return results.failed(
                f"index {context.index} holds {actual} documents, the ingested corpus has {expected}",
                meta={"actual": actual, "expected": expected},
            )
        return {"weight": 1, "unit": "ops", "success": True, "actual": actual, "expected": expected}

    def __repr__(self):
        return "verify-doc-count"


class VerifyCorpus:
    """Before the first timed query: the index holds the corpus this race's ground truth describes.

    Checks the corpus fingerprint the track wrote into the index mapping's _meta when it created the index
    (generator parameters, ground-truth sha256, full or test-mode files) and the exact document count of every
    (epoch, node) the race queries, after putting back any setting an earlier race noted and did not restore
    (runners/shared/restore.py). A mismatch raises, which ends the race before any timed request, with a message
    that names the fix. Returns 1 op.

    Also the index's shape (shape_differences): shards, replicas, _source mode, and no setting or mark that another
    challenge left (the force merge of source-cost, the ingest settings of an aborted ingest-tuned).

    Operation parameters: shape (what to expect: number_of_shards, number_of_replicas, source-mode, parameters: the track parameter that sets a key, altered-by: the
    challenge whose alteration is expected here); cluster (default "default"), which of --target-hosts' clusters holds the index (the
    cross-cluster challenge checks the remote cluster's index this way, directly on that cluster); epochs (default:
    the race's), the epochs that must be complete now (the live challenge queries before its last epoch is in)."""

    multi_cluster = True  # Rally passes every cluster's client; this check picks one

    async def __call__(self, es, params):
        context = RaceContext.of(params)
        cluster = params.get("cluster", DEFAULT_CLUSTER)
        if cluster not in es:
            raise CorpusError(
                f"--target-hosts names no cluster {cluster!r} (it names {', '.join(sorted(es))}): give "
                f'both, e.g. --target-hosts=\'{{"default": ["127.0.0.1:9200"], '
                f'"{cluster}": ["127.0.0.1:9400"]}}\''
            )
        es = es[cluster]
        # a setting an earlier race changed and was killed before restoring (runners/shared/restore.py): back first
        restored = await restore.leftovers(es)
        try:
            mapping = (await es.indices.get_mapping(index=context.index)).body
        except elasticsearch.NotFoundError:
            raise CorpusError(f"index {context.index} does not exist: {INGEST_FIX}.") from None
        mappings = next(iter(mapping.values()))["mappings"]
        found = mappings.get("_meta", {}).get(FINGERPRINT_KEY)
        if found != context.fingerprint:
            raise CorpusError(
                f"index {context.index} holds another corpus than this race's ground truth describes "
                f"({_difference(found, context.fingerprint)}): {INGEST_FIX}."
            )
        settings = next(
            iter((await es.perform_request("GET", f"/{context.index}/_settings", params={"flat_settings": "true"})).body.values())
        )
        differences = shape_differences(mappings, settings["settings"], params.get("shape", {}))
        if differences:
            raise CorpusError(
                f"index {context.index} holds this corpus but not in the shape this challenge measures ({'; '.join(differences)}): "
                f"{INGEST_FIX}, with this race's number_of_shards, number_of_replicas and source_enabled."
            )
        try:
            counts = await _counts(es, context)
        except elasticsearch.ApiError as e:  # a closed or broken index: the timed queries could only fail
            raise CorpusError(
                f"index {context.index} cannot be searched (HTTP {e.status_code} {e.message}): " f"{INGEST_FIX}, or open it."
            ) from None
        truth = context.truth()
        epochs = params.get("epochs") or context.epochs
        wrong = [
            f"epoch {e} node {n}: {counts.get((e, n), 0)} documents, expected {truth[str(e)][n]['count']}"
            for e in epochs
            for n in context.nodes
            if counts.get((e, n), 0) != truth[str(e)][n]["count"]
        ]
        if wrong:
            raise CorpusError(
                f"index {context.index} was created for this corpus but does not hold it "
                f"({'; '.join(wrong[:3])}{'; ...' if len(wrong) > 3 else ''}): {INGEST_FIX}."
            )
        result = {"weight": 1, "unit": "ops", "success": True, "epochs": list(epochs), "restored": restored}
        if params.get(SEARCH_POOL_KEY):  # in the same task: Rally charges each task about 5 s of wall time
            pool = await SearchPool()(es, params)
            result.update({key: value for key, value in pool.items() if key not in result})
        return result

    def __repr__(self):
        return "verify-corpus"


async def _counts(es, context):
    """{(epoch, node): documents} for the race's epochs, from one terms aggregation."""
    body = {
        "size": 0,
        "track_total_hits": True,
        "query": {"terms": {"epoch": list(context.epochs)}},
        "aggs": {
            "epoch": {
                "terms": {"field": "epoch", "size": len(context.epochs) + 1},
                "aggs": {"node": {"terms": {"field": "node", "size": len(context.nodes) + 1}}},
            }
        },
    }
    response = (await es.perform_request("POST", f"/{context.index}/_search", body=body)).body
    return {(e["key"], n["key"]): n["doc_count"] for e in response["aggregations"]["epoch"]["buckets"] for n in e["node"]["buckets"]}


def _difference(found, expected):
    if found is None:
        return "its mapping has no corpus fingerprint: it was not created by this track's ingest"
    if found.get("section") != expected["section"]:
        return (
            f"it holds the {found.get('section')} files, this race uses the {expected['section']} files "
            "(test mode uses the 1,000-document files)"
        )
    if found.get("generator") != expected["generator"]:
        differing = sorted(
            k
            for k in set(found.get("generator", {})) | set(expected["generator"])
            if found.get("generator", {}).get(k) != expected["generator"].get(k)
        )
        return "made with other generator parameters: " + ", ".join(
            f"{k} {found.get('generator', {}).get(k)} there, {expected['generator'].get(k)} here" for k in differing
        )
    return "the ground truth's sha256 differs"


# an index created by this track's ingest carries no other settings than these (and Elasticsearch's own bookkeeping)
SETTINGS_LEFT_BY = {
    "index.refresh_interval": "ingest-tuned or ingest-changes (refresh_interval during ingest)",
    "index.translog.durability": "ingest-tuned or ingest-changes (translog.durability during ingest)",
    "index.store.stats_refresh_interval": "source-cost",
    SOURCE_MODE_SETTING: "source-cost",
}
ALTERED_KEY = "cluster-metrics-altered"  # the mapping's _meta key naming what a challenge did to the index after ingest


def shape_differences(mappings, settings, shape):
    """What differs between the index (its mapping and flat settings) and the shape a challenge expects."""
    found = []
    for key in ("number_of_shards", "number_of_replicas"):
        if key in shape and str(settings.get(f"index.{key}")) != str(shape[key]):
            parameter = shape.get("parameters", {}).get(key, key)  # the track parameter that sets it in this challenge
            found.append(
                f"{settings.get(f'index.{key}')} {key.split('_')[-1]}, this race expects {shape[key]} (track parameter {parameter})"
            )
    mode = "disabled" if mappings.get("_source", {}).get("enabled") is False else str(settings.get(SOURCE_MODE_SETTING, "stored")).lower()
    if "source-mode" in shape and mode != shape["source-mode"]:
        found.append(f"_source {mode}, this race expects {shape['source-mode']}")
    expected_by = shape.get("altered-by")
    for key, by in SETTINGS_LEFT_BY.items():
        value = settings.get(key)
        default = key == "index.translog.durability" and value == "request" or key == SOURCE_MODE_SETTING
        if value is not None and not default and not (expected_by and by.startswith(expected_by)):
            found.append(f"{key} {value}, left by {by}")
    altered = mappings.get("_meta", {}).get(ALTERED_KEY)
    if altered and not (expected_by and altered.startswith(expected_by)):
        found.append(f"{altered}")
    return found


OPERATIONS = {
    "verify-doc-count": Operation(VerifyDocCount, Need("counts the index's documents", index=("read",))),
    "verify-corpus": Operation(
        VerifyCorpus,
        Need(
            "reads the index's mapping, settings and counts, and the notes an aborted race left",
            index=("read", "view_index_metadata"),
            notes=("read",),
        ),
    ),
}
