"""The storage runner with a stub client: it refuses an index in another _source mode, waits out the cached store
size, and records what the index reports."""

import asyncio
import json

import pytest

from runners.contracts import records
from runners.contracts.context import CONTEXT_KEY
from runners.studies import storage
from tests.runners.stub_client import StubClient


def settings_answer(mode=None, interval=None):
    settings = {"index.mapping.source.mode": mode} if mode else {}
    defaults = {"index.mapping.source.mode": "STORED", "index.store.stats_refresh_interval": "10s"}
    if interval:
        settings["index.store.stats_refresh_interval"] = interval
    return (200, {"cluster-metrics": {"settings": settings, "defaults": defaults}})


def mapping_answer(enabled=None):
    source = {} if enabled is None else {"_source": {"enabled": enabled}}
    return (200, {"cluster-metrics": {"mappings": {**source, "properties": {}}}})


def store_answer(size, segments):
    return (200, {"_all": {"primaries": {"store": {"size_in_bytes": size}, "segments": {"count": segments}, "docs": {"count": 90}}}})


DISK_USAGE = (
    200,
    {
        "cluster-metrics": {
            "store_size_in_bytes": 900,
            "fields": {
                "_source": {"total_in_bytes": 400, "stored_fields_in_bytes": 400, "inverted_index": {"total_in_bytes": 0}},
                "cpu": {"total_in_bytes": 60, "doc_values_in_bytes": 40, "points_in_bytes": 20, "inverted_index": {"total_in_bytes": 0}},
            },
        }
    },
)


@pytest.fixture
def slept(monkeypatch):
    seconds = []

    async def sleep(value):
        seconds.append(value)

    monkeypatch.setattr(storage.asyncio, "sleep", sleep)
    return seconds


def run(client, context, mode, **extra):
    params = {CONTEXT_KEY: context.as_param(), "source-mode": mode, **extra}
    return asyncio.run(storage.SourceStorage()(client, params))


def test_the_mode_the_index_reports_is_checked_first(context, slept):
    client = StubClient([settings_answer("synthetic"), mapping_answer()])
    result = run(client, context, "stored")
    assert result["success"] is False and "is in _source mode 'synthetic'" in result["error-description"]
    assert len(client.sent) == 2 and slept == []  # nothing measured, nothing merged


def test_a_default_mode_is_read_in_any_case_and_the_cached_size_waited_out(context, slept):
    client = StubClient(
        [
            settings_answer(interval="2s"),
            mapping_answer(),
            store_answer(3000, 7),
            (200, {}),
            (200, {}),
            (200, {"cluster-metrics": {"mappings": {"_meta": {"cluster-metrics-corpus": {"seed": 3}}}}}),
            (200, {"acknowledged": True}),
            store_answer(2000, 1),
            DISK_USAGE,
        ]
    )
    result = run(client, context, "stored")
    assert result["success"] is True and result["store-bytes"] == 2000
    assert slept == [3.0, 3.0]  # the interval + 1 s, before each store size
    assert [r["path"] for r in client.sent][3:5] == ["/cluster-metrics/_forcemerge", "/cluster-metrics/_refresh"]
    # the merged index says so in its _meta, beside the corpus fingerprint: no query challenge times it as the standard one
    marked = client.sent[6]
    assert marked["method"] == "PUT" and marked["body"]["_meta"] == {
        "cluster-metrics-corpus": {"seed": 3},
        "cluster-metrics-altered": "source-cost: force-merged to one segment",
    }
    row = json.load(open(f"{context.record_dir}/{records.source_record('stored')}"))
    assert row["ingested"] == {"store_bytes": 3000, "segments": 7, "docs": 90}
    assert row["merged"]["segments"] == 1
    assert row["disk-usage"]["fields"]["_source"] == {"total": 400, "stored_fields": 400}
    assert row["disk-usage"]["fields"]["cpu"] == {"total": 60, "doc_values": 40, "points": 20}


def test_the_mappings_own_switch_is_disabled(context, slept):
    client = StubClient([settings_answer(), mapping_answer(enabled=False)])
    assert "is in _source mode 'disabled'" in run(client, context, "stored")["error-description"]


def test_an_unknown_mode_is_named_at_load(context):
    with pytest.raises(ValueError, match="source-mode must be one of stored, synthetic, disabled"):
        storage.validate_storage_stats({"source-mode": "zstd"}, 1, context)
