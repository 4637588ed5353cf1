"""What the track changes on a cluster's settings, noted on that cluster before it changes it.

A runner that changes a cluster-wide setting (the request breaker floor lowers indices.breaker.request.limit, the
cross-cluster challenge registers a remote cluster: persistent settings, which survive restarts) first writes a note,
a document in the small index NOTES_INDEX on the cluster itself, holding the value to put back. It restores in a
finally block, reads the value back (a mismatch fails loudly, naming the setting and the request that sets it by hand)
and only then deletes the note. A load driver killed midway (kill -9, out of memory, a second Ctrl-C) leaves the note
behind: the next race of this track finds it and puts the value back before it measures anything (every query
challenge's verify-corpus, the breaker floor and the remote registration themselves).
"""

import json
import logging

import elasticsearch

LOG = logging.getLogger(__name__)
NOTES_INDEX = "cluster-metrics-restore-notes"
JSON = {"content-type": "application/json", "accept": "application/json"}
# a small index of the track's own (its notes, a load calibration on its way to other hosts): one shard, and a replica
# only where there is a second node to hold it (a single node stays green)
SMALL_INDEX_SETTINGS = {"index.auto_expand_replicas": "0-1", "index.number_of_shards": 1}


class RestoreError(Exception):
    """A setting that could not be put back; the message names it and the request that sets it by hand."""


def body_of(response):
    """A response's JSON, whether the client was switched to raw responses (the coverage runner does) or not."""
    body = response.body
    return json.load(body) if hasattr(body, "read") else body


async def _cluster_settings(es):
    return body_of(await es.perform_request("GET", "/_cluster/settings", params={"flat_settings": "true"}))


async def persistent_settings(es):
    """Every persistent setting of the cluster, flat."""
    return (await _cluster_settings(es)).get("persistent", {})


async def persistent(es, setting):
    """The setting's persistent value (None when unset), and its transient one."""
    settings = await _cluster_settings(es)
    return settings.get("persistent", {}).get(setting), settings.get("transient", {}).get(setting)


async def put(es, setting, value):
    await put_settings(es, {setting: value})


async def put_settings(es, persistent):
    """Sets these persistent settings in one request (some only make sense together: a remote's mode and address)."""
    await es.perform_request("PUT", "/_cluster/settings", body={"persistent": persistent}, headers=JSON)


async def note(es, setting, original):
    """Before the first change: the value to put back, on the cluster (refreshed, so the next race sees it at once)."""
    try:
        await es.perform_request("PUT", f"/{NOTES_INDEX}", body={"settings": SMALL_INDEX_SETTINGS}, headers=JSON)
    except elasticsearch.BadRequestError:
        pass  # it exists
    body = {"setting": setting, "original": original}
    await es.perform_request("PUT", f"/{NOTES_INDEX}/_doc/{setting}", params={"refresh": "true"}, body=body, headers=JSON)


async def put_back(es, originals):
    """Puts each noted setting back ({setting: value}, None removes it) in one request, since some only make sense
    together (a remote's mode and its proxy address), reads them back, and deletes their notes; raises RestoreError,
    naming the settings and the request that sets them by hand, when any of it fails (the notes then stay)."""
    fix = f'PUT _cluster/settings {json.dumps({"persistent": originals})}'
    try:
        await es.perform_request("PUT", "/_cluster/settings", body={"persistent": originals}, headers=JSON)
        now = await persistent_settings(es)
    except Exception as e:  # a reset connection must not leave the limit down without a word
        raise RestoreError(
            f"could not put {', '.join(originals)} back ({type(e).__name__}: {e}); the notes in index {NOTES_INDEX} "
            f"stay and the next race of this track restores them, or set them by hand: {fix}"
        ) from e
    wrong = {setting: now.get(setting) for setting, value in originals.items() if now.get(setting) != value}
    if wrong:
        raise RestoreError(f"{wrong} read back after putting back {originals}: set them by hand: {fix}")
    for setting in originals:
        try:
            await es.perform_request("DELETE", f"/{NOTES_INDEX}/_doc/{setting}", params={"refresh": "true"})
        except elasticsearch.NotFoundError:
            pass


async def leftovers(es):
    """Puts back every setting an earlier race noted and did not restore (it was killed), in one request; returns
    what it restored, sorted by setting (search hits of equal score come in no set order)."""
    try:
        found = body_of(await es.perform_request("POST", f"/{NOTES_INDEX}/_search", body={"size": 100}, headers=JSON))
    except elasticsearch.NotFoundError:
        return []  # no note was ever written on this cluster
    originals = dict(sorted((hit["_source"]["setting"], hit["_source"]["original"]) for hit in found["hits"]["hits"]))
    if not originals:
        return []
    await put_back(es, originals)
    LOG.warning("restored %s: an earlier race changed them and ended before putting them back", originals)
    return [f"{setting}={original}" for setting, original in originals.items()]
