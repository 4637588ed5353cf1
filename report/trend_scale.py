"""make trend-scale: how long the trend takes over a store of many races (a benchmark, not a test).

    python -m report.trend_scale --port 9220 [--races 500] [--cells 100] [--samples 15]

Fills a local metrics store node of its own (make trend-scale starts one on TREND_SCALE_PORT and stops it after) with
races of this track as Rally writes them: a race document each (rally-races-*), and per race a check-privileges sample
carrying the cells and cluster-facts records and, per cell, its measured samples (rally-metrics-*), with a 20% step in
a tenth of the cells at race 400 (a new version) so that the history has changes to find. Then times the trend over
them, as make trend METRICS_STORE=yes reads them: selection, bounded queries and aggregations, series, change
finding, the report and its charts. Prints the figures docs/history.md gives.
"""

import argparse
import json
import math
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

from report import catalog
from report.history import analysis, races, series, trend
from report.shared.races import Stored
from report.shared.store import SERVICE_TIME, Store
from runners.contracts import records


def _bulk(port, lines):
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/_bulk?refresh=false",
        data=("\n".join(lines) + "\n").encode(),
        headers={"Content-Type": "application/x-ndjson"},
    )
    with urllib.request.urlopen(request, timeout=600) as answer:
        body = json.loads(answer.read())
    if body.get("errors"):
        raise SystemExit(f"bulk errors: {json.dumps([i for i in body['items'] if 'error' in next(iter(i.values()))][:2])[:1000]}")


LAST_NIGHT = 1_790_000_000  # 2026-09-21, the newest race's time (s)


def fill(port, race_count, cell_count, sample_count, seed=1):
    rng = np.random.default_rng(seed)
    cells = {f"coverage-V{c:03d}-serial": {"variant": f"V{c:03d}", "transport": "serial"} for c in range(cell_count)}
    levels = np.exp(rng.normal(math.log(200), 0.8, cell_count))
    stepped = set(range(0, cell_count, 10))
    index = {"index": {"_index": "rally-metrics-2026-11"}}
    for r in range(race_count):
        race_id = f"scale-{r:05d}"
        version = "9.5.3" if r >= 400 else "8.17.2"
        night = LAST_NIGHT - (race_count - 1 - r) * 86_400  # a night each, the newest in the past (a future race is left out)
        when = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(night))
        start = night * 1000  # a node started for each nightly race
        facts = {
            "nodes": {"n1": {"version": version, "start-time-ms": start, "uptime-ms": 60_000, "jvm": "j", "heap-max-bytes": 2**30}},
            "settings": {"persistent": {}, "transient": {}},
            "corpus": {"generator": {"rows_per_epoch": 1000000}, "section": "full"},
        }
        operations = [{"write": records.CELLS, "data": cells}, {"write": records.CLUSTER_FACTS, "data": facts}]
        document = {
            "race-id": race_id,
            "race-timestamp": when,
            "track": records.TRACK_NAME,
            "challenge": "production-comparison",
            "track-params": {},
            "user-tags": {"env": "nightly"},
            "cluster": {"distribution-version": version},
            "results": {"op_metrics": [{"task": task, "error_rate": 0, "service_time": {}} for task in cells]},
        }
        lines = [json.dumps({"index": {"_index": "rally-races-2026-11", "_id": race_id}}), json.dumps(document)]
        base = {"race-id": race_id, "race-timestamp": when, "name": SERVICE_TIME, "@timestamp": start, "sample-type": "normal"}
        sample = {**base, "task": "check-privileges", "value": 1.0, "relative-time": 0, "meta": {records.META_KEY: json.dumps(operations)}}
        lines += [json.dumps(index), json.dumps(sample)]
        start_level = rng.normal(0, 0.10)
        for c, task in enumerate(cells):
            level = levels[c] * math.exp(start_level + (math.log(1.2) if c in stepped and r >= 400 else 0))
            for value in level * np.exp(rng.normal(0, 0.04, sample_count)):
                sample = {**base, "task": task, "value": float(value), "relative-time": c, "meta": {"success": True}}
                lines += [json.dumps(index), json.dumps(sample)]
        _bulk(port, lines)
    urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/rally-*/_refresh", method="POST"), timeout=600).read()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--races", type=int, default=500)
    parser.add_argument("--cells", type=int, default=100)
    parser.add_argument("--samples", type=int, default=15)
    args = parser.parse_args(argv)
    store = Store.local("127.0.0.1", args.port)
    if store.race_count():
        parser.error(f"the store on port {args.port} holds races already: give a node of its own (make trend-scale)")
    store.prepare_local_node()
    from esrally import metrics  # Rally's own template for its race documents, as Rally installs it on its first race

    races_template = json.loads((Path(metrics.__file__).parent / "resources" / "races-template.json").read_text())
    races_template["template"]["settings"]["index"]["number_of_replicas"] = 0
    store._request("PUT", "/_index_template/rally-races", races_template)
    began = time.monotonic()
    fill(args.port, args.races, args.cells, args.samples)
    filled = time.monotonic() - began
    timings = []
    for _ in range(3):
        began = time.monotonic()
        found = races.select(races.Selection(), Stored(store))
        read = time.monotonic() - began
        analysed = analysis.analyse(series.build(found.races, catalog.TREND_FIGURES))
        with tempfile.TemporaryDirectory() as out:
            _, line = trend.write_report(analysed, found, races.Selection(), out, "race")
        timings.append((read, time.monotonic() - began))
    print(f"filled {args.races} races x {args.cells} cells x {args.samples} samples in {filled:.0f} s")
    print(line)
    for read, whole in timings:
        print(f"trend over the store: {whole:.1f} s (reading the races: {read:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
