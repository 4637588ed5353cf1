"""The layout sweep (seed 003): shards and replicas on a multi-node cluster, where the shards went and which node
does the work."""

from runners.contracts import records, rules
from runners.contracts.context import RaceContext
from runners.contracts.layouts import parse_layout, record_name  # noqa: F401 (the study's names, read by the report too)
from runners.contracts.registry import Need, Operation


class LayoutError(Exception):
    """A layout the cluster cannot hold; the message names the fix."""


def shard_copies(stats, node_names):
    """Every shard copy of the index from `_stats?level=shards`: shard, primary, node name, documents, store bytes,
    indexing operations and query phases since the index was created."""
    copies = []
    for index in stats["indices"].values():
        for shard, shard_copies_ in index["shards"].items():
            for copy in shard_copies_:
                copies.append(
                    {
                        "shard": int(shard),
                        "primary": copy["routing"]["primary"],
                        "node": node_names.get(copy["routing"]["node"], copy["routing"]["node"]),
                        "docs": copy["docs"]["count"],
                        "store_bytes": copy["store"]["size_in_bytes"],
                        "index_total": copy["indexing"]["index_total"],
                        "query_total": copy["search"]["query_total"],
                    }
                )
    return sorted(copies, key=lambda c: (c["shard"], not c["primary"]))


def node_shares(copies, key):
    """{node: that node's share of `key` (index_total or query_total) summed over its shard copies}."""
    per_node = {}
    for copy in copies:
        per_node[copy["node"]] = per_node.get(copy["node"], 0) + copy[key]
    total = sum(per_node.values())
    return {node: (value / total if total else 0.0) for node, value in sorted(per_node.items())}


def bottleneck(shares, margin=0.05):
    """The node whose share is above an even split by more than `margin` (an uneven layout's hot node), or None."""
    if not shares:
        return None
    node = max(shares, key=shares.get)
    return node if shares[node] - 1 / len(shares) > margin else None


async def _data_nodes(es):
    nodes = (await es.perform_request("GET", "/_nodes/_all/none")).body["nodes"]
    return {node_id: node["name"] for node_id, node in nodes.items() if any(r.startswith("data") for r in node["roles"])}


class CheckLayouts:
    """Untimed, first: every layout of the sweep fits the cluster (replicas + 1 <= data nodes), so that no layout
    waits forever for replicas that cannot be allocated. Raises, naming the fix, before anything is created.
    Returns 1 op and the data nodes' names (data-node-names: a metrics store maps each meta key once per index, and
    search-pool's data-nodes is a count)."""

    async def __call__(self, es, params):
        nodes = await _data_nodes(es)
        too_big = [name for name in params["layouts"] if parse_layout(name)[1] + 1 > len(nodes)]
        if too_big:
            raise LayoutError(
                f"layout(s) {', '.join(too_big)} need more than the cluster's {len(nodes)} data node(s): "
                "start a cluster with enough nodes (make es-start NODES=3) or drop them from the track "
                "parameter layouts"
            )
        return {"weight": 1, "unit": "ops", "success": True, "data-node-names": sorted(nodes.values())}

    def __repr__(self):
        return "check-layouts"


class LayoutStats:
    """Where the index's shard copies are and what each did since the index was created (`_stats?level=shards`):
    after ingest (phase "ingested": placement, documents, indexing operations per copy) and after the coverages
    (phase "searched": query phases per copy). Writes <race>/cluster-metrics/layout-<layout>.json; returns 1 op and
    each node's share of the phase's work."""

    async def __call__(self, es, params):
        context, layout, phase = RaceContext.of(params), params["layout"], params["phase"]
        stats = (await es.perform_request("GET", f"/{context.index}/_stats/docs,store,indexing,search", params={"level": "shards"})).body
        copies = shard_copies(stats, await _data_nodes(es))
        record = records.read(context.record_dir, record_name(layout), {"layout": layout})
        record[phase] = copies
        key = "index_total" if phase == "ingested" else "query_total"
        meta = records.write(context.record_dir, record_name(layout), record)
        return {"weight": 1, "unit": "ops", "success": True, "shares": node_shares(copies, key), **meta}

    def __repr__(self):
        return "layout-stats"


def validate_layouts(params, clients, context):
    """Load-time check of check-layouts: every layout parses (track parameter layouts)."""
    for name in params.get("layouts") or ():
        parse_layout(name)
    if not params.get("layouts"):
        raise ValueError("no layouts to sweep (track parameter layouts)")


def validate_layout_stats(params, clients, context):
    parse_layout(params.get("layout"))
    if params.get("phase") not in ("ingested", "searched"):
        raise ValueError(f"phase must be ingested or searched, got {params.get('phase')!r}")


def layout_list(value):
    """The rule of the track parameter layouts."""
    items = value.split(",") if isinstance(value, str) else value
    try:
        if not isinstance(items, list) or not items:
            raise ValueError
        for item in items:
            parse_layout(item)
    except ValueError:
        raise rules.ParameterError(
            "a non-empty list (or comma-separated string) of layouts <shards>S<replicas>R, " 'e.g. ["1S0R", "2S1R"]'
        ) from None


PARAMETER_RULES = {
    "layouts": layout_list,
    "layout_bulk_size": rules.integer(1),
    "layout_bulk_clients": rules.integer(1),
    "search_clients": rules.integer(1),
    "layout_iterations": rules.integer(1),
}


OPERATIONS = {
    "check-layouts": Operation(CheckLayouts, Need("reads the nodes", ("monitor",)), validate=validate_layouts),
    "layout-stats": Operation(
        LayoutStats, Need("reads shard-level index stats", ("monitor",), ("monitor",)), validate=validate_layout_stats
    ),
}
