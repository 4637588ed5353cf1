"""The layout sweep's tables (seed 003): indexing and coverage throughput per layout of shards and replicas, where
the shards went and which node did the work."""

from report.shared.readers import failed
from report.shared.sections import Section, normalized, pct
from report.studies import layout_seed, widths
from report.studies.ingest import epoch_task, epoch_wall, ingest_prefix, ingest_problem, ingest_record
from runners.contracts import records
from runners.studies import layouts as layout_rules

LAYOUT_CELLS = (("D_td", "msearch"), ("D_td", "terms"), ("D_hdr", "msearch"), ("D_hdr", "terms"))


LAYOUT_BASELINE = "1S0R"


def layout_ops(race):
    """{layout: {task name within the layout: op}} for the layouts the race swept (its track parameter layouts,
    else the vocabulary's), in sweep order: a layout's tasks share its ingest's prefix (report/studies/ingest.py)."""
    ops = race.op_metrics()
    found = {}
    for layout in race.param("layouts"):
        prefix = ingest_prefix(race, layout=layout)
        mine = {task[len(prefix) :]: op for task, op in ops.items() if task.startswith(prefix)} if prefix is not None else {}
        if mine:
            found[layout] = mine
    return found


def layout_ingest_rows(race):
    """Per layout: documents (primaries, from layout-stats), bulk wall time (its epochs', epoch_wall), docs/s."""
    rows = []
    for layout, ops in layout_ops(race).items():
        epochs = (layout_ingest(race).get(layout) or {}).get("epochs") or []
        walls = [epoch_wall(ops, row, epoch_task("", row["epoch"])) for row in epochs]
        if not epochs:  # a race without the layout's ingest record: its bulk tasks
            walls = [op["duration"] / 1000 for task, op in ops.items() if task.startswith(epoch_task("", ""))]
        copies = layout_records(race).get(layout, {}).get("ingested", [])
        docs = sum(c["docs"] for c in copies if c["primary"])
        wall = sum(walls) if walls and None not in walls else None
        rows.append(
            {
                "layout": layout,
                "docs": docs,
                "wall_s": wall,
                "failed": ingest_problem(race, layout=layout) is not None,
                "docs_per_s": docs / wall if wall and docs else None,
            }
        )
    return rows


def layout_ingest_table(race):
    rows = layout_ingest_rows(race)
    if not rows:
        return None
    base = next((r["docs_per_s"] for r in rows if r["layout"] == LAYOUT_BASELINE and not r["failed"]), None)
    header = ["layout", "shards", "replicas", "docs", "bulk wall (s)", "docs/s", f"vs {LAYOUT_BASELINE}"]
    body = []
    for r in rows:
        shards, replicas = layout_rules.parse_layout(r["layout"])
        rate = "FAILED" if r["failed"] else r["docs_per_s"]
        body.append([r["layout"], shards, replicas, r["docs"], r["wall_s"], rate, normalized(rate, base)])
    return header, body


def layout_data_nodes(race):
    """The race's data nodes (its search-pool record), else the seed's 3 (the layout sweep's meta data_nodes)."""
    return (widths.search_pool(race) or {}).get("data-nodes") or layout_seed.SEED_DATA_NODES


def layout_query_table(race):
    """Coverage throughput (coverages/s, median, all search clients together) per layout and cell; beside the mean
    ratio to 1S0R, seed 003's q/s model on the race's data nodes, normalized to 1S0R as the seed's chart is
    (report/studies/layout_seed.py)."""
    found = layout_ops(race)
    if not found:
        return None
    header = ["layout"] + [f"{v} {t} (cov/s)" for v, t in LAYOUT_CELLS] + [f"mean vs {LAYOUT_BASELINE}", f"seed 003 vs {LAYOUT_BASELINE}"]
    nodes = layout_data_nodes(race)

    base = [layout_rate(race, LAYOUT_BASELINE, v, t) for v, t in LAYOUT_CELLS]
    body = []
    for layout in found:
        rates = [layout_rate(race, layout, v, t) for v, t in LAYOUT_CELLS]
        ratios = [normalized(r, b) for r, b in zip(rates, base)]
        valid = [x for x in ratios if x is not None]
        mean = sum(valid) / len(valid) if valid and len(valid) == len(ratios) else None
        body.append([layout] + rates + [mean, layout_seed.query_ratio(layout, nodes)])
    return header, body


def layout_rate(race, layout, variant, transport):
    """A layout's coverage cell: coverages per second (Rally's median throughput, all search clients together),
    FAILED, or None when the race did not run it."""
    op = race.op_metrics().get(race.task_of(variant=variant, transport=transport, layout=layout))
    if op is None:
        return None
    return "FAILED" if failed(op) else op.get("throughput", {}).get("median")


def layout_placement_table(race):
    """Per layout: each node's shard copies, share of indexing and of search work; the busiest node."""
    if not layout_records(race):
        return None
    header = ["layout", "node", "shard copies", "indexing share", "search share", "bottleneck"]
    body = []
    for layout, record in layout_records(race).items():
        ingested, searched = record.get("ingested", []), record.get("searched", [])
        indexing = layout_rules.node_shares(ingested, "index_total")
        search = layout_rules.node_shares(searched, "query_total") if searched else {}
        bottleneck = layout_rules.bottleneck(indexing)
        for node in sorted(indexing):
            copies = " ".join(f"{'P' if c['primary'] else 'R'}{c['shard']}" for c in ingested if c["node"] == node)
            body.append([layout, node, copies, pct(indexing[node]), pct(search.get(node)), "indexing" if node == bottleneck else ""])
    return header, body


LAYOUT_NOTE = (
    "Seed 003's rules of thumb: query throughput ~ nodes involved x a single node's rate (1S0R = 1 node; 2S0R, 1S1R = 2; "
    "3S0R and every layout with 3 copies spread = 3); replicas cost 20-60% of indexing throughput; an uneven layout "
    "(2S1R on 3 nodes) makes the node with two copies the bottleneck. Read these figures with the machine in mind: "
    "nodes of one local cluster share one host's cores, so adding a node adds no CPU and the node-count scaling of "
    "the rule cannot appear; what remains visible is the cost of coordination, of replica writes and of uneven "
    "placement. Elasticsearch 8 also routes searches by adaptive replica selection (load-aware), not the round-robin "
    "the seed describes: the search share column shows where it sent them. The seed 003 column is its q/s model on "
    "this race's data nodes (80 q/s per participating node, ~150 for two, 250 for three), normalized to 1S0R as its "
    "chart is (report/studies/layout_seed.py). make layout-sweep sends every request through a coordinating-only node, as the "
    "seed's JMeter sent them through its client node; make node-scaling pins each data node to a core of its own.\n"
)

# this study's report sections, in report order
SECTIONS = [
    Section("Layout sweep: indexing throughput per layout", layout_ingest_table, "layout sweep", None),
    Section("Layout sweep: coverage throughput per layout", layout_query_table, "layout sweep coverages", lambda race: LAYOUT_NOTE),
    Section("Layout sweep: where the shards went and who did the work", layout_placement_table, "layout placement", None),
]


def layout_records(race):
    """{layout: its layout-stats record} (runners/studies/layouts.py writes layout-<layout>.json), in name order."""
    return {data["layout"]: data for data in (race.record(name) for name in race.record_names("layout-", ".json"))}


def layout_ingest(race):
    """{layout: its ingest record}: as ingest_record names it, else as races before it named it (ingest-<layout>.json)."""
    found = {}
    for layout in layout_records(race):
        data = race.record(ingest_record(race, layout=layout))
        data = data if data is not None else race.record(records.legacy_layout_ingest_record(layout))
        if data is not None:
            found[layout] = data
    return found
