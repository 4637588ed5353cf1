"""layout-sweep on a local cluster of 3 data nodes behind a coordinating-only node (as make layout-sweep starts it),
started for this module alone and stopped right after it."""

import json

import pytest

from runners.operations import OPERATIONS
from runners.studies.single_doc import OK, RECORD_KEY, single_doc_index
from tests.conftest import assert_clean, doc_count, http, launcher, rendered_challenges, rendered_tasks, run_race

pytestmark = pytest.mark.integration

MULTI_NODE_PORT = 9270  # the coordinating node; the data nodes 9271-9273 (transport 9370-9373)
# 2 of the corpus's 5 epochs: only those are ingested and queried. The two ends of the seed's layouts: 1S0R, one copy on
# one node; 2S2R, three copies of each shard, one per data node (2S1R, between them, is full scale's). Two search and two
# single-document clients (defaults 4: six coverages a task in test mode, four here) and 2 s of single documents (test
# mode caps the default 60 at 10): each piece still runs with more than one client, in a third less time on four nodes
# sharing two cores
PARAMS = {
    "layouts": ["1S0R", "2S2R"],
    "epochs": 2,
    "search_clients": 2,
    "single_doc_clients": 2,
    "single_doc_seconds": 2,
}


@pytest.fixture(scope="module")
def layout_race(rally_home, small_corpus):
    """The challenge whose meta asks for more than one data node, on a cluster of 3 (the only race that needs it),
    every request of the race sent to the coordinating node."""
    started = launcher("start", "--nodes", "3", "--coordinating", "1", "--heap", "1g", port=MULTI_NODE_PORT)
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        yield run_race(rally_home, "layout-sweep", f"--track-params={json.dumps(PARAMS)}", port=MULTI_NODE_PORT)
    finally:
        stopped = launcher("stop", port=MULTI_NODE_PORT)
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr


# what the version tier then no longer sees on 9.5.3: docs/tests.md
@pytest.mark.versions("layout-sweep", left_out="a cluster of four nodes: the version tier's costliest race, 73 s of its 357")
def test_layout_sweep_runs_clean_on_three_nodes(layout_race):
    tasks = list(rendered_tasks(rendered_challenges(PARAMS)["layout-sweep"]))
    assert rendered_challenges()["layout-sweep"]["meta"]["data_nodes"] == 3
    ours = [t["operation"]["name"] for t in tasks if t["operation"]["operation-type"] in OPERATIONS]
    assert_clean(layout_race, ours)
    # epochs 2 of 5: a coverage of an epoch not ingested would find nothing and fail its counts; one ingest task each
    ingests = {task for task in layout_race.error_rates() if task.endswith("-ingest")}
    assert ingests == {f"layout-{layout}-ingest" for layout in PARAMS["layouts"]}
    for layout in PARAMS["layouts"]:
        record = json.loads((layout_race.record_dir() / f"ingest-layout-{layout}.json").read_text())
        assert [row["epoch"] for row in record["epochs"]] == [1, 2] and record["count"] == {"actual": 2000, "expected": 2000}


def test_each_layout_places_its_copies_over_the_nodes_and_loses_nothing(layout_race):
    single = [c["node"] for c in json.loads((layout_race.record_dir() / "layout-1S0R.json").read_text())["ingested"]]
    assert len(single) == 1 and single[0] in {"node-1", "node-2", "node-3"}  # one copy, on a data node
    copies = [c["node"] for c in json.loads((layout_race.record_dir() / "layout-2S2R.json").read_text())["ingested"]]
    assert sorted(copies) == sorted(["node-1", "node-2", "node-3"] * 2)  # 2 primaries + 4 replicas: two copies a node
    assert doc_count(port=MULTI_NODE_PORT) == 1000 * PARAMS["epochs"]


def test_every_request_went_through_the_coordinating_node(layout_race):
    """The seed's client node: it holds no shard, and the data nodes' HTTP ports saw no connection (Rally, the launcher's
    health checks and this test all talk to the coordinating node)."""
    nodes = http("GET", "/_nodes/stats/http,indices", port=MULTI_NODE_PORT)[1]["nodes"].values()
    by_name = {n["name"]: n for n in nodes}
    assert set(by_name) == {"coord-1", "node-1", "node-2", "node-3"}
    roles = {n["name"]: n["roles"] for n in http("GET", "/_nodes", port=MULTI_NODE_PORT)[1]["nodes"].values()}
    assert roles["coord-1"] == [] and all("data" in roles[f"node-{i}"] for i in (1, 2, 3))
    assert by_name["coord-1"]["http"]["total_opened"] > 0
    assert [by_name[f"node-{i}"]["http"]["total_opened"] for i in (1, 2, 3)] == [0, 0, 0]


def test_each_layout_indexes_single_documents_into_its_own_index_and_counts_them(layout_race):
    rates = layout_race.error_rates()
    for layout in PARAMS["layouts"]:
        assert rates[f"layout-{layout}-single-doc"] == 0 and rates[f"layout-{layout}-single-doc-count"] == 0
        section = json.loads((layout_race.record_dir() / f"layout-{layout}.json").read_text())[RECORD_KEY]
        assert section["acknowledged"] == section["count"] > 0 and section["outcomes"] == {OK: section["requests"]}
        assert section["index"] == single_doc_index(layout) and section["clients"] == PARAMS["single_doc_clients"]
        # Rally's throughput of the task is documents per second
        assert layout_race.op_metrics()[f"layout-{layout}-single-doc"]["throughput"]["unit"] == "docs/s"
    # each single-document index is deleted after its check; the bulk-ingested index still holds exactly its corpus
    assert http("GET", "/_cat/indices/cluster-metrics-single-doc-*?format=json", port=MULTI_NODE_PORT)[1] == []
    assert doc_count(port=MULTI_NODE_PORT) == 1000 * PARAMS["epochs"]
