"""Node scaling (make node-scaling): the layout sweep's coverage throughput on 1 data node, then on 2, each data node
pinned to a core of its own (node.processors 1), all behind a coordinating-only node; one report of the races.

    python -m report --node-scaling --race ID1 --race ID2      (the report; make node-scaling runs it)
    python -m report.scaling track-params --layouts 2S0R,1S1R [--extra "k:v,k:v" or JSON]   (a race's track params
                                                                file for make node-scaling: prints its path)
"""

import argparse
import json
import sys
import tempfile
from pathlib import Path

from report.shared import sections
from report.studies import layout_seed, layouts, widths

SCALING_NOTE = (
    "cov/s: coverages per second (Rally's median throughput over all search clients), a coverage being one _msearch "
    "with a search per monitored node or one terms search; per data node: the mean ratio to 1S0R on the race with the "
    "fewest data nodes, divided by the data nodes. The seed's model (report/studies/layout_seed.py) is its q/s on that many data "
    "nodes normalized to 1S0R. What one host can show: each data node has a core of its own, but Rally and the "
    "coordinating node run unpinned on the same cores, and disk, memory bandwidth and the page cache are shared; a "
    "ratio here is a lower bound on what a second machine would add, never the seed's three independent machines "
    "(docs/layouts.md, Node scaling).\n"
)


def _data_node_processors(race):
    """The allocated processors of each data node (search-pool record), e.g. "1, 1"; None without a record."""
    pool = widths.search_pool(race) or {}
    found = [str(n.get("allocated-processors")) for n in pool.get("nodes", []) if n.get("data")]
    return ", ".join(found) or None


def scaling_table(race_list):
    """Per race (ordered by data nodes) and layout: each layout cell's cov/s, the mean ratio to 1S0R on the fewest
    data nodes, that ratio per data node, and the seed's model. None when no race swept a layout."""
    ordered = sorted(race_list, key=layouts.layout_data_nodes)
    cells = layouts.LAYOUT_CELLS
    header = ["data nodes", "data node processors", "layout", "race"]
    header += [f"{v} {t} (cov/s)" for v, t in cells] + [f"mean vs {layouts.LAYOUT_BASELINE} on the fewest nodes", "per data node"]
    header += [f"seed 003 vs {layouts.LAYOUT_BASELINE}"]
    base = None
    for race in ordered:
        if layouts.LAYOUT_BASELINE in layouts.layout_ops(race):
            base = [layouts.layout_rate(race, layouts.LAYOUT_BASELINE, v, t) for v, t in cells]
            break
    body = []
    for race in ordered:
        nodes = layouts.layout_data_nodes(race)
        for layout in layouts.layout_ops(race):
            rates = [layouts.layout_rate(race, layout, v, t) for v, t in cells]
            ratios = [sections.normalized(r, b) for r, b in zip(rates, base or [None] * len(cells))]
            mean = sum(ratios) / len(ratios) if ratios and None not in ratios else None
            body.append(
                [nodes, _data_node_processors(race), layout, race.race_id[:8]]
                + rates
                + [mean, mean / nodes if mean is not None else None, layout_seed.query_ratio(layout, nodes)]
            )
    return (header, body) if body else None


def scaling_report(race_list, out_root):
    """reports/node-scaling-<ids>/node-scaling.md: the one section comparing the races."""
    table = scaling_table(race_list)
    out = Path(out_root) / ("node-scaling-" + "-".join(r.race_id[:8] for r in race_list))
    out.mkdir(parents=True, exist_ok=True)
    text = "# cluster-metrics: node scaling\n\n## Node scaling: coverage throughput per data node count\n\n"
    if table is None:
        text += "_none of these races swept a layout (make node-scaling races layout-sweep)._\n"
    else:
        text += sections.markdown(*table) + "\n\n" + SCALING_NOTE
    (out / "node-scaling.md").write_text(text)
    return out / "node-scaling.md", text


def track_params(layouts, extra=None):
    """The track parameters of one node-scaling race: the user's (Rally's own k:v or JSON syntax) with these layouts."""
    from esrally.utils import opts  # Rally's own parser of --track-params

    params = opts.to_dict(extra) if extra else {}
    params["layouts"] = [name for name in layouts.split(",") if name]
    return params


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("track-params", help="write one race's track parameters to a JSON file and print its path")
    p.add_argument("--layouts", required=True)
    p.add_argument("--extra", default=None, help="the user's TRACK_PARAMS")
    args = parser.parse_args(argv)
    params = track_params(args.layouts, args.extra)
    # Rally reads --track-params from a file when its name ends in .json: no quoting of JSON through make and the shell
    with tempfile.NamedTemporaryFile("w", prefix="node-scaling-", suffix=".json", delete=False) as f:
        json.dump(params, f)
    print(f.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
