"""Seed 003's figures for the layout sweep, in one place: what the seed measured on 3 data nodes behind a client node,
as the report sets them beside ours (normalized to 1S0R, as the seed's own charts are).

Query throughput (the seed's second article): a single node answers ~80 queries/s (1S0R); a query involves the
nodes that hold the copies it is sent to, so throughput ~ 80 x participating nodes: 2S0R and 1S1R "roughly 150",
3S0R, 3S1R and every fully replicated layout ~250 (the seed's three-node figure); 2S1R, four copies on three nodes,
"slightly less" than 250: the node holding two copies is the bottleneck.

Single-document indexing (the seed's first article, "realtime indexing", one document per request): more shards,
more throughput; replicas cost 20-60% ("in most cases"); "fully replicated" 3S2R runs at 40% of an unreplicated setup.
The seed's chart of normalized values is not in its text: only these statements are, and only they are shown.
"""

from runners.contracts.layouts import parse_layout

SEED_DATA_NODES = 3  # the seed's cluster: S1, S2, S3 (and the client node C1 beside JMeter)
NODE_RATE = 80  # q/s of one node (1S0R)
# q/s the seed gives for 1, 2 and 3 participating nodes; beyond them the rule of thumb, NODE_RATE x nodes
QUERY_RATES = {1: 80, 2: 150, 3: 250}
REPLICA_COST = (0.20, 0.60)  # "adding replicas will drop your indexing throughput by 20-60%"
FULLY_REPLICATED_3S2R = 0.40  # "[3S, 2R] operates at 40% the throughput of an unreplicated setup"


def participating_nodes(layout, data_nodes=SEED_DATA_NODES):
    """The nodes a query of this layout involves: its shard copies, spread over at most the data nodes."""
    shards, replicas = parse_layout(layout)
    return min(shards * (replicas + 1), data_nodes)


def uneven(layout, data_nodes=SEED_DATA_NODES):
    """More copies than nodes, not a multiple of them: some node holds more copies than another (2S1R on 3)."""
    shards, replicas = parse_layout(layout)
    copies = shards * (replicas + 1)
    return copies > data_nodes and copies % data_nodes != 0


def query_rate(layout, data_nodes=SEED_DATA_NODES):
    """The seed's q/s for this layout on `data_nodes` data nodes."""
    nodes = participating_nodes(layout, data_nodes)
    return QUERY_RATES.get(nodes, NODE_RATE * nodes)


def query_ratio(layout, data_nodes=SEED_DATA_NODES):
    """The seed's query throughput against 1S0R: a number, or a text for an uneven layout (below the number)."""
    ratio = query_rate(layout, data_nodes) / QUERY_RATES[1]
    return f"< {ratio:.2f} (a node holds more copies)" if uneven(layout, data_nodes) else ratio


def single_doc_ratio(layout):
    """What the seed says of this layout's single-document throughput against 1S0R, as text."""
    shards, replicas = parse_layout(layout)
    if (shards, replicas) == (1, 0):
        return "1.00"
    if (shards, replicas) == (3, 2):
        return f"{FULLY_REPLICATED_3S2R:.2f}"
    if replicas == 0:
        return "> 1 (more shards, more throughput)"
    low, high = (1 - REPLICA_COST[1], 1 - REPLICA_COST[0])
    return f"{low:.2f}-{high:.2f} (replicas cost {REPLICA_COST[0]:.0%}-{REPLICA_COST[1]:.0%})"


SINGLE_DOC_NOTE = (
    "Seed 003 (one document per request, ~1 kB documents with shingled text, 3 data nodes on 3 machines behind a client "
    "node, an hour per layout) normalizes its single-document throughput to an unreplicated setup and states: more shards, "
    f"more throughput; replicas cost {REPLICA_COST[0]:.0%}-{REPLICA_COST[1]:.0%} in most cases; 3S2R runs at "
    f"{FULLY_REPLICATED_3S2R:.0%}. Its text does not say whether the base is 1S0R or the same shards unreplicated: both "
    "of our ratios are shown (vs 1S0R, and vs the same shards with 0 replicas: the replica cost itself). Its chart's other "
    "values are not in its text, so none is invented here."
)
