"""make accuracy: Elasticsearch's t-digest and HDR percentiles against the generator's exact ones.

Queries the cluster once per (epoch, node) and algorithm (an _msearch per epoch), for every percent the ground truth
keeps, and prints max and mean absolute and relative error per algorithm, field and percent. Also writes
reports/accuracy.md and reports/accuracy.json (the report includes the table when present).
"""

import argparse
import json
import statistics
import sys
from pathlib import Path

from report import ReportError
from report.shared.cluster import add_arguments as cluster_arguments
from report.shared.cluster import from_arguments
from report.shared.sections import fmt, markdown
from runners.contracts import corpus, queries
from runners.shared.validation import percentile_values

ALGORITHMS = {"t-digest": "C_td", "HDR": "C_hdr"}


def measure(cluster, data_root, hdr_digits=queries.DEFAULT_HDR_DIGITS):
    manifest = corpus.require_manifest(data_root)
    truth = corpus.load_ground_truth(data_root, manifest)
    percents = truth["percents"]
    section = cluster.section(manifest)
    errors = {}  # (algorithm, field, percent) -> list of (abs, rel)
    for epoch, by_node in truth["epochs"][section].items():
        nodes = sorted(by_node)
        for algorithm, variant in ALGORITHMS.items():
            searches = [queries.node_search(variant, int(epoch), n, percents, hdr_digits) for n in nodes]
            responses = cluster.post("/_msearch", queries.msearch_body(manifest["index"], searches))["responses"]
            for node, response in zip(nodes, responses):
                if "error" in response:
                    raise ReportError(f"epoch {epoch} node {node}: {response['error']}")
                for field in queries.FIELDS:
                    values = percentile_values(response["aggregations"][f"{field}_pct"]["values"])
                    for p in percents:
                        exact = by_node[node]["percentiles"][field][str(p)]
                        estimate = values[float(p)]
                        error = abs(estimate - exact)
                        errors.setdefault((algorithm, field, p), []).append((error, error / abs(exact) if exact else 0.0))
    return section, errors


def table(errors):
    header = ["algorithm", "field", "percent", "max abs error", "mean abs error", "max rel error", "mean rel error"]
    rows = []
    for (algorithm, field, p), pairs in sorted(errors.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
        abs_errors, rel_errors = [a for a, _ in pairs], [r for _, r in pairs]
        rows.append(
            [
                algorithm,
                field,
                p,
                max(abs_errors),
                statistics.fmean(abs_errors),
                f"{100 * max(rel_errors):.3f}%",
                f"{100 * statistics.fmean(rel_errors):.3f}%",
            ]
        )
    return header, rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    cluster_arguments(parser)
    parser.add_argument("--data-root", default=None, help="default: Rally's data dir ($RALLY_HOME/.rally/benchmarks/data)")
    parser.add_argument("--hdr-digits", type=int, default=queries.DEFAULT_HDR_DIGITS)
    parser.add_argument("--out", default="reports")
    args = parser.parse_args(argv)
    cluster = from_arguments(parser, args)
    with cluster.command_line():
        section, errors = measure(cluster, args.data_root or corpus.data_root(), args.hdr_digits)
    header, rows = table(errors)
    text = (
        f"# Percentile accuracy against the exact ground truth ({section} corpus)\n\n"
        "Exact: linear interpolation between closest ranks of the float32 values. "
        "Relative error is against the exact value.\n\n" + markdown(header, rows) + "\n"
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "accuracy.md").write_text(text)
    (out / "accuracy.json").write_text(
        json.dumps(
            {"section": section, "header": header, "rows": [[fmt(c) if isinstance(c, float) else c for c in r] for r in rows]}, indent=1
        )
    )
    print(text)
    print(f"written: {out / 'accuracy.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
