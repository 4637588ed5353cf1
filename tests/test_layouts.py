"""layout-sweep on a local cluster of 3 nodes, started for this module alone and stopped right after it."""

import json

import pytest

from conftest import assert_clean, doc_count, launcher, rendered_challenges, rendered_tasks, run_race
from runners.operations import OPERATIONS

pytestmark = pytest.mark.integration

MULTI_NODE_PORT = 9270
PARAMS = {"layouts": ["1S0R", "2S1R"], "epochs": 2}  # 2 of the corpus's 5 epochs: only those are ingested and queried


@pytest.fixture(scope="module")
def layout_race(rally_home, small_corpus):
    """The challenge whose meta asks for more than one data node, on a cluster of 3 (the only race that needs it)."""
    started = launcher("start", "--nodes", "3", "--heap", "1g", port=MULTI_NODE_PORT)
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        yield run_race(rally_home, "layout-sweep", f"--track-params={json.dumps(PARAMS)}", port=MULTI_NODE_PORT)
    finally:
        stopped = launcher("stop", port=MULTI_NODE_PORT)
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr


def test_layout_sweep_runs_clean_on_three_nodes(layout_race):
    tasks = list(rendered_tasks(rendered_challenges(PARAMS)["layout-sweep"]))
    assert rendered_challenges()["layout-sweep"]["meta"]["data_nodes"] == 3
    ours = [t["operation"]["name"] for t in tasks if t["operation"]["operation-type"] in OPERATIONS]
    assert_clean(layout_race, ours)
    # epochs 2 of 5: a coverage of an epoch not ingested would find nothing and fail its counts
    bulks = {task for task in layout_race.error_rates() if "-bulk-epoch-" in task}
    assert bulks == {f"layout-{layout}-bulk-epoch-{epoch}" for layout in PARAMS["layouts"] for epoch in (1, 2)}


def test_each_layout_places_its_copies_over_the_nodes_and_loses_nothing(layout_race):
    placement = json.loads((layout_race.record_dir() / "layout-2S1R.json").read_text())
    nodes = [c["node"] for c in placement["ingested"]]
    assert len(set(nodes)) == 3 and len(nodes) == 4  # 2 primaries + 2 replicas over 3 nodes: one holds two
    assert doc_count(port=MULTI_NODE_PORT) == 1000 * PARAMS["epochs"]
