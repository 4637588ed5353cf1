"""make accuracy: Elasticsearch's t-digest and HDR percentiles against the generator's exact ones.

Queries the cluster once per (epoch, node) and algorithm (an _msearch per epoch), for every percent the ground truth
keeps, and prints max and mean absolute and relative error per algorithm, field and percent. Also writes
reports/accuracy.md and reports/accuracy.json (the report includes the table when present).
"""

import argparse
import json
import statistics
import sys
import urllib.error
import urllib.request
from pathlib import Path

from report import ReportError
from report.tables import fmt, markdown
from runners import corpus, queries

ALGORITHMS = {"t-digest": "C_td", "HDR": "C_hdr"}


def post(url, path, body, ndjson=False):
    request = urllib.request.Request(
        url + path,
        data=body if ndjson else json.dumps(body).encode(),
        method="POST",
        headers={"content-type": "application/x-ndjson" if ndjson else "application/json"},
    )
    with urllib.request.urlopen(request, timeout=300) as response:
        return json.loads(response.read())


def pick_section(url, index, manifest):
    """Which ground truth matches what the cluster holds: the full files or the -1k test-mode files."""
    with urllib.request.urlopen(f"{url}/{index}/_count", timeout=60) as response:
        count = json.loads(response.read())["count"]
    section = corpus.section_for_count(manifest, count)
    if section:
        return section
    raise ReportError(
        f"index {index} holds {count} documents, which matches neither the generated corpus nor its "
        "test-mode files: ingest it first (make race) or regenerate the corpus it was ingested from"
    )


def measure(url, data_root, hdr_digits=queries.DEFAULT_HDR_DIGITS):
    manifest = corpus.require_manifest(data_root)
    truth = corpus.load_ground_truth(data_root, manifest)
    percents = truth["percents"]
    section = pick_section(url, manifest["index"], manifest)
    errors = {}  # (algorithm, field, percent) -> list of (abs, rel)
    for epoch, by_node in truth["epochs"][section].items():
        nodes = sorted(by_node)
        for algorithm, variant in ALGORITHMS.items():
            searches = [queries.node_search(variant, int(epoch), n, percents, hdr_digits) for n in nodes]
            responses = post(url, "/_msearch", queries.msearch_body(manifest["index"], searches), ndjson=True)["responses"]
            for node, response in zip(nodes, responses):
                if "error" in response:
                    raise ReportError(f"epoch {epoch} node {node}: {response['error']}")
                for field in queries.FIELDS:
                    values = response["aggregations"][f"{field}_pct"]["values"]
                    for p in percents:
                        exact = by_node[node]["percentiles"][field][str(p)]
                        estimate = values[f"{float(p)}"]
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
    parser.add_argument("--target-hosts", default="127.0.0.1:9200")
    parser.add_argument("--data-root", default=None, help="default: Rally's data dir ($RALLY_HOME/.rally/benchmarks/data)")
    parser.add_argument("--hdr-digits", type=int, default=queries.DEFAULT_HDR_DIGITS)
    parser.add_argument("--out", default="reports")
    args = parser.parse_args(argv)
    url = "http://" + args.target_hosts.split(",")[0]
    data_root = args.data_root or corpus.data_root()
    try:
        section, errors = measure(url, data_root, args.hdr_digits)
    except (ReportError, corpus.CorpusError) as e:
        raise SystemExit(str(e))
    except urllib.error.URLError as e:
        raise SystemExit(
            f"cannot reach Elasticsearch at {url} ({e.reason}): start it with make es-start, " "or pass TARGET_HOSTS=host:port"
        )
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
