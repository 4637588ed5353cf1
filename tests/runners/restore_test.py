"""The restore notes with a stub client (seconds; the real node in tests/test_ccs.py and tests/test_costs.py)."""

import asyncio

from runners.shared import restore
from tests.runners.stub_client import StubClient


def test_leftovers_puts_every_noted_setting_back_in_one_request_and_names_them_in_a_fixed_order():
    notes = ["cluster.remote.r.proxy_address", "cluster.remote.r.mode"]  # as a search may hand them back
    hits = [{"_source": {"setting": setting, "original": None}} for setting in notes]
    put_back = dict.fromkeys(notes)
    es = StubClient(
        [(200, {"hits": {"hits": hits}}), (200, {"acknowledged": True}), (200, {"persistent": {}, "transient": {}})]
        + [(200, {"result": "deleted"})] * len(notes)
    )
    restored = asyncio.run(restore.leftovers(es))
    assert restored == ["cluster.remote.r.mode=None", "cluster.remote.r.proxy_address=None"]
    assert [s["body"] for s in es.sent if s["path"] == "/_cluster/settings" and s["method"] == "PUT"] == [{"persistent": put_back}]
    assert sorted(s["path"] for s in es.sent if s["method"] == "DELETE") == sorted(f"/{restore.NOTES_INDEX}/_doc/{n}" for n in notes)


def test_leftovers_on_a_cluster_without_notes_changes_nothing():
    es = StubClient([(404, {"error": "index_not_found_exception"})])
    assert asyncio.run(restore.leftovers(es)) == []
    assert [s["method"] for s in es.sent] == ["POST"]
