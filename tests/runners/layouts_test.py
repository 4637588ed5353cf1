"""The layout sweep's runners and rules with a stub client: layouts parse, a layout that needs more nodes than the
cluster has is refused before anything is created, shard copies and each node's share of the work."""

import asyncio
import json
from pathlib import Path

import pytest

from runners.contracts.context import CONTEXT_KEY
from runners.contracts.queries import LAYOUTS
from runners.studies.layouts import CheckLayouts, LayoutError, LayoutStats, bottleneck, node_shares, parse_layout, validate_layouts
from tests.runners.stub_client import StubClient

NODES = {
    "nodes": {
        "a1": {"name": "node-1", "roles": ["data", "master"]},
        "b2": {"name": "node-2", "roles": ["data"]},
        "c3": {"name": "node-3", "roles": ["data_hot", "master"]},
        "m9": {"name": "master", "roles": ["master"]},
    }
}


def shard(node, primary, docs, index_total, query_total=0):
    return {
        "routing": {"node": node, "primary": primary},
        "docs": {"count": docs},
        "store": {"size_in_bytes": 10},
        "indexing": {"index_total": index_total},
        "search": {"query_total": query_total},
    }


# 2S1R on 3 nodes, as Elasticsearch placed it: node-3 holds a primary and a replica
STATS_2S1R = {
    "indices": {
        "cluster-metrics": {
            "shards": {
                "0": [shard("c3", True, 500, 500, 10), shard("b2", False, 500, 500, 30)],
                "1": [shard("a1", True, 500, 500, 40), shard("c3", False, 500, 500, 20)],
            }
        }
    }
}


def run(runner, answers, params):
    return asyncio.run(runner(StubClient(answers), params))


@pytest.mark.parametrize("name,parsed", [("1S0R", (1, 0)), ("2S1R", (2, 1)), ("12S3R", (12, 3))])
def test_layouts_parse(name, parsed):
    assert parse_layout(name) == parsed


@pytest.mark.parametrize("name", ["0S1R", "2S", "S1R", "2x1", "", None])
def test_bad_layouts_are_named(name):
    with pytest.raises(ValueError, match="is not <shards>S<replicas>R"):
        parse_layout(name)


def test_a_layout_needing_more_data_nodes_is_refused_naming_the_fix():
    assert run(CheckLayouts(), [(200, NODES)], {"layouts": ["3S2R"]})["data-node-names"] == ["node-1", "node-2", "node-3"]
    with pytest.raises(LayoutError, match=r"layout\(s\) 1S3R need more than the cluster's 3 data node\(s\).*NODES=3"):
        run(CheckLayouts(), [(200, NODES)], {"layouts": ["1S0R", "1S3R"]})


def test_every_layout_of_the_vocabulary_fits_three_data_nodes():
    """2S2R (fully replicated, two shards) among them: three copies of each shard, one per data node."""
    assert "2S2R" in LAYOUTS and LAYOUTS.index("2S2R") == LAYOUTS.index("1S2R") + 1
    assert run(CheckLayouts(), [(200, NODES)], {"layouts": list(LAYOUTS)})["data-node-names"] == ["node-1", "node-2", "node-3"]
    two = {"nodes": {k: v for k, v in NODES["nodes"].items() if k != "c3"}}
    with pytest.raises(LayoutError, match=r"1S2R, 2S2R, 3S2R need more than the cluster's 2 data node"):
        run(CheckLayouts(), [(200, two)], {"layouts": list(LAYOUTS)})


def test_a_coordinating_only_node_is_not_a_data_node():
    coordinating = {"nodes": {**NODES["nodes"], "k0": {"name": "coord-1", "roles": []}}}
    assert run(CheckLayouts(), [(200, coordinating)], {"layouts": ["2S2R"]})["data-node-names"] == ["node-1", "node-2", "node-3"]


def test_layout_stats_records_placement_and_shares(context):
    params = {CONTEXT_KEY: context.as_param(), "layout": "2S1R", "phase": "ingested"}
    result = run(LayoutStats(), [(200, STATS_2S1R), (200, NODES)], params)
    assert result["shares"] == {"node-1": 0.25, "node-2": 0.25, "node-3": 0.5}
    searched = run(LayoutStats(), [(200, STATS_2S1R), (200, NODES)], {**params, "phase": "searched"})
    assert searched["shares"] == {"node-1": 0.4, "node-2": 0.3, "node-3": 0.3}
    record = json.loads((Path(context.record_dir) / "layout-2S1R.json").read_text())
    assert [(c["shard"], c["primary"], c["node"]) for c in record["ingested"]] == [
        (0, True, "node-3"),
        (0, False, "node-2"),
        (1, True, "node-1"),
        (1, False, "node-3"),
    ]
    assert "searched" in record


def test_the_bottleneck_is_the_node_above_an_even_split():
    copies = [{"node": "n1", "index_total": 1}, {"node": "n2", "index_total": 1}, {"node": "n3", "index_total": 2}]
    assert bottleneck(node_shares(copies, "index_total")) == "n3"
    assert bottleneck({"n1": 0.34, "n2": 0.33, "n3": 0.33}) is None and bottleneck({}) is None


def test_load_time_validation():
    validate_layouts({"layouts": ["1S0R", "2S1R"]}, 1, None)
    with pytest.raises(ValueError):
        validate_layouts({"layouts": ["2S1X"]}, 1, None)
    with pytest.raises(ValueError, match="no layouts"):
        validate_layouts({"layouts": []}, 1, None)
