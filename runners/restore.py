"""What the track changes on a cluster's settings, noted on that cluster before it changes it.

A runner that lowers a cluster-wide setting (the request breaker floor lowers indices.breaker.request.limit, a
persistent setting that survives restarts) first writes a note, a document in the small index NOTES_INDEX on the
cluster itself, holding the value to put back. It restores in a finally block, reads the value back (a mismatch fails
loudly, naming the setting and the request that sets it by hand) and only then deletes the note. A load driver killed
midway (kill -9, out of memory, a second Ctrl-C) leaves the note behind: the next race of this track finds it and
puts the value back before it measures anything (every query challenge's verify-corpus, and the breaker floor itself).
"""

import json
import logging

import elasticsearch

LOG = logging.getLogger(__name__)
NOTES_INDEX = "cluster-metrics-restore-notes"
JSON = {"content-type": "application/json", "accept": "application/json"}


class RestoreError(Exception):
    """A setting that could not be put back; the message names it and the request that sets it by hand."""


def by_hand(setting, value):
    return f'PUT _cluster/settings {{"persistent": {{"{setting}": {json.dumps(value)}}}}}'


def body_of(response):
    """A response's JSON, whether the client was switched to raw responses (the coverage runner does) or not."""
    body = response.body
    return json.load(body) if hasattr(body, "read") else body


async def persistent(es, setting):
    """The setting's persistent value (None when unset), and its transient one."""
    settings = body_of(await es.perform_request("GET", "/_cluster/settings", params={"flat_settings": "true"}))
    return settings.get("persistent", {}).get(setting), settings.get("transient", {}).get(setting)


async def put(es, setting, value):
    await es.perform_request("PUT", "/_cluster/settings", body={"persistent": {setting: value}}, headers=JSON)


async def note(es, setting, original):
    """Before the first change: the value to put back, on the cluster (refreshed, so the next race sees it at once).
    The notes index has a replica only where there is a second node to hold it (a single node stays green)."""
    try:
        await es.perform_request(
            "PUT", f"/{NOTES_INDEX}", body={"settings": {"index.auto_expand_replicas": "0-1", "index.number_of_shards": 1}}, headers=JSON
        )
    except elasticsearch.BadRequestError:
        pass  # it exists
    body = {"setting": setting, "original": original}
    await es.perform_request("PUT", f"/{NOTES_INDEX}/_doc/{setting}", params={"refresh": "true"}, body=body, headers=JSON)


async def put_back(es, setting, original):
    """Puts the persistent value back (None removes it), reads it back, and deletes the note; raises RestoreError,
    naming the setting and the request that sets it by hand, when any of it fails (the note then stays)."""
    try:
        await put(es, setting, original)
        now, _ = await persistent(es, setting)
    except Exception as e:  # a reset connection must not leave the limit down without a word
        raise RestoreError(
            f"could not put {setting} back to {original!r} ({type(e).__name__}: {e}); the note in index {NOTES_INDEX} "
            f"stays and the next race of this track restores it, or set it by hand: {by_hand(setting, original)}"
        ) from e
    if now != original:
        raise RestoreError(f"{setting} reads {now!r} after it was put back to {original!r}: set it by hand: {by_hand(setting, original)}")
    try:
        await es.perform_request("DELETE", f"/{NOTES_INDEX}/_doc/{setting}", params={"refresh": "true"})
    except elasticsearch.NotFoundError:
        pass


async def leftovers(es):
    """Puts back every setting an earlier race noted and did not restore (it was killed); returns what it restored."""
    try:
        found = body_of(await es.perform_request("POST", f"/{NOTES_INDEX}/_search", body={"size": 100}, headers=JSON))
    except elasticsearch.NotFoundError:
        return []  # no note was ever written on this cluster
    restored = []
    for hit in found["hits"]["hits"]:
        setting, original = hit["_source"]["setting"], hit["_source"]["original"]
        await put_back(es, setting, original)
        LOG.warning("restored %s to %r: an earlier race changed it and ended before putting it back", setting, original)
        restored.append(f"{setting}={original}")
    return restored
