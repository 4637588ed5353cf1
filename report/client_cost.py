"""What the load driver adds per request (a benchmark, not a test): the track's own request path beside a minimal
client, on the same node and the same bytes, taking turns.

Sides, each timed from the first byte sent to the last byte read, over the same pre-built bodies:
- plain: one kept-alive http.client connection (the standard library's), no retries, nothing decoded;
- track: Rally's asynchronous client, as Rally creates it for a race, through the track's own send path:
  runners.studies.coverage.send_requests for searches, runners.studies.ingest.EpochBulk (Rally's bulk runner) for bulks;
- static: the track side on Rally's `static_responses` client option (canned answers, no server): what Rally's
  client and the track's runner cost alone, the load driver's own floor per request.

Searches: each turn sends `--coverages` coverages of one cell (the node searches of one epoch: serial, one _search
per node; msearch, one _msearch), turns alternate plain, track, static, static, track, plain, ... A coverage is a
sample. Bulks: the corpus's epochs, bulk after bulk into a scratch index (the corpus index's mapping and shard
count, deleted at the end), by one client, turns alternating plain and track (ABAB); a bulk is a sample, and each turn's
document count must equal what it sent.

Prints a markdown table: per side and kind, the median with its 95% interval and sample count, and the track's
per-request excess over plain (the track's median minus plain's, per request), with the ratio's interval
(report.shared.uncertainty). Writes the same as JSON with --out.

    python -m report.client_cost [--target-hosts ...] [--client-options ...] [--cells A/serial,A/msearch]
        [--coverages 30] [--rounds 3] [--bulk-docs N] [--bulk-size 1000] [--out client-cost.json]
"""

import argparse
import asyncio
import base64
import http.client
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.parse

from esrally.client import factory

from report import ReportError
from report.shared import cluster, readers, uncertainty
from runners.contracts import corpus, queries
from runners.studies import coverage
from runners.studies.ingest import EpochBulk

SIDES = ("plain", "track", "static")
SCRATCH_INDEX = "cluster-metrics-client-cost"  # the bulk side's index, deleted at the end
STATIC_ANSWERS = [  # Rally's static_responses format: the first path that matches answers
    {"path": "*/_bulk", "body": {"errors": False, "took": 1, "items": []}},
    {"path": "*", "body": {"took": 1, "timed_out": False, "hits": {"total": {"value": 0, "relation": "eq"}, "hits": []}}},
]


class ClientCostError(Exception):
    """A side got an answer it should not have: the benchmark stops rather than time a failure."""


class PlainClient:
    """The minimal client: one kept-alive connection, the request's bytes as given, the answer's bytes read whole.
    TLS and credentials as Rally's client options give them (Rally's own SSL context and basic auth or API key)."""

    def __init__(self, rally_factory):
        url = urllib.parse.urlsplit(rally_factory.hosts[0])
        if url.scheme == "https":
            self._connection = http.client.HTTPSConnection(url.hostname, url.port, context=rally_factory.ssl_context)
        else:
            self._connection = http.client.HTTPConnection(url.hostname, url.port)
        self._prefix = url.path.rstrip("/")
        self._auth = _authorization(rally_factory.client_options)

    def send(self, method, path, query, body, headers):
        target = f"{self._prefix}{path}?{urllib.parse.urlencode(query)}" if query else f"{self._prefix}{path}"
        self._connection.request(method, target, body=body, headers={**headers, **self._auth})
        response = self._connection.getresponse()
        answer = response.read()
        if not 200 <= response.status < 300:
            raise ClientCostError(f"{method} {path}: HTTP {response.status}: {answer[:300]!r}")
        return answer

    def close(self):
        self._connection.close()


def _authorization(client_options):
    basic, api_key = client_options.get("basic_auth"), client_options.get("api_key")
    if basic:
        return {"authorization": "Basic " + base64.b64encode(f"{basic[0]}:{basic[1]}".encode()).decode()}
    if api_key:
        key = f"{api_key[0]}:{api_key[1]}" if isinstance(api_key, (list, tuple)) else api_key
        return {"authorization": "ApiKey " + (base64.b64encode(key.encode()).decode() if ":" in key else key)}
    return {}


def _factory(target_hosts, client_options, static_file=None, version=None):
    """Rally's client factory for the cluster as `esrally race` takes it; `version`: the cluster's, as a race passes it
    (Rally's client then rewrites the content types to the compatible-with ones on every request)."""
    hosts, options = cluster.settings(target_hosts, client_options)
    options = dict(options)
    if static_file:
        options["static_responses"] = static_file
    return factory.EsClientFactory(hosts, options, distribution_version=version)


def coverage_requests(manifest, cell, epoch=1):
    """The requests of one coverage of `cell` ("<variant>/<transport>") over the corpus's nodes, as the track builds them."""
    variant, transport = cell.split("/")
    nodes = manifest["nodes"]
    if transport == "terms":
        searches = [queries.terms_search(variant, epoch, len(nodes))]
    else:
        searches = [queries.node_search(variant, epoch, node) for node in nodes]
    return coverage.build_requests(manifest["index"], transport, searches)


def bulk_bodies(root, manifest, index, bulk_size, limit):
    """[(docs, bytes)] of every full-scale corpus file in epoch order, an action line before each document (as Rally's
    bulk reader adds it), at most `limit` documents."""
    action = json.dumps({"index": {"_index": index}}).encode() + b"\n"
    bodies, sent = [], 0
    for entry in sorted((e for e in manifest["files"] if not e["test_mode"]), key=lambda e: e["epoch"]):
        with open(corpus.file_path(root, entry), "rb") as f:
            batch = []
            for line in f:
                if sent >= limit:
                    break
                batch += [action, line]
                sent += 1
                if len(batch) == 2 * bulk_size:
                    bodies.append((bulk_size, b"".join(batch)))
                    batch = []
            if batch:
                bodies.append((len(batch) // 2, b"".join(batch)))
    return bodies


async def _track_coverage(es, requests):
    with es.new_request_context():
        return (await coverage.send_requests(es, requests, 120))[1]


async def _track_bulk(es, runner, index, docs, body):
    params = {"index": index, "action-metadata-present": True, "body": body, "bulk-size": docs, "unit": "docs"}
    with es.new_request_context():
        started = time.perf_counter()
        result = await runner(es, params)
        seconds = time.perf_counter() - started
    if not result.get("success", True) or result.get("error-count"):
        raise ClientCostError(f"track bulk: {result.get('error-description') or result}")
    return seconds


def _plain_coverage(plain, requests):
    started = time.perf_counter()
    for path, query, body, headers in requests:
        plain.send("POST", path, query, body, headers)
    return time.perf_counter() - started


def _plain_bulk(plain, index, body):
    started = time.perf_counter()
    answer = plain.send("POST", f"/{index}/_bulk", None, body, coverage.NDJSON)
    seconds = time.perf_counter() - started
    if b'"errors":false' not in answer[:200]:
        raise ClientCostError(f"plain bulk: errors in {answer[:300]!r}")
    return seconds


def _turn_order(rounds, sides):
    """ABC CBA ABC ...: each side as often early as late in the run."""
    return [side for r in range(rounds) for side in (sides if r % 2 == 0 else tuple(reversed(sides)))]


class Bench:
    def __init__(self, target_hosts, client_options):
        self.plain = PlainClient(_factory(target_hosts, client_options))
        self.version = json.loads(self.plain.send("GET", "/", None, None, {}))["version"]["number"]
        static = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump(STATIC_ANSWERS, static)
        static.close()
        self._static_file = static.name
        self._scratch = False  # whether this run made the scratch index (only then does it delete it)
        self.clients = {
            side: _factory(target_hosts, client_options, static.name if side == "static" else None, self.version).create_async(client_id=0)
            for side in ("track", "static")
        }

    async def coverages(self, requests, coverages, rounds):
        samples = {side: [] for side in SIDES}
        for side in _turn_order(rounds, SIDES):
            for i in range(coverages + 1):  # the turn's first coverage warms its connection: not a sample
                seconds = _plain_coverage(self.plain, requests) if side == "plain" else await _track_coverage(self.clients[side], requests)
                if i:
                    samples[side].append(seconds)
        return samples

    async def bulks(self, bodies, rounds, create_body, count_check):
        samples, runner = {side: [] for side in SIDES}, EpochBulk()
        docs = sum(d for d, _ in bodies)
        for side in _turn_order(rounds, ("plain", "track")) + ["static"]:
            if side != "static":
                self._recreate(create_body)
            for n, body in bodies:
                if side == "plain":
                    samples[side].append(_plain_bulk(self.plain, SCRATCH_INDEX, body))
                else:
                    samples[side].append(await _track_bulk(self.clients[side], runner, SCRATCH_INDEX, n, body))
            if side != "static":
                count_check(side, docs)
        return samples

    def _recreate(self, create_body):
        self._scratch = True
        self.plain.send("DELETE", f"/{SCRATCH_INDEX}", {"ignore_unavailable": "true"}, None, {})
        self.plain.send("PUT", f"/{SCRATCH_INDEX}", None, json.dumps(create_body).encode(), coverage.JSON)
        self.plain.send("GET", "/_cluster/health", {"wait_for_status": "yellow", "timeout": "60s"}, None, {})

    def twin_body(self, index):
        """The corpus index's mapping (without its corpus mark) and shard and replica counts: the scratch index's body."""
        mapping = json.loads(self.plain.send("GET", f"/{index}/_mapping", None, None, {}))[index]["mappings"]
        mapping.pop("_meta", None)
        settings = json.loads(self.plain.send("GET", f"/{index}/_settings", None, None, {}))[index]["settings"]["index"]
        shards = {k: settings[k] for k in ("number_of_shards", "number_of_replicas")}
        return {"mappings": mapping, "settings": {"index": shards}}

    def count(self):
        self.plain.send("POST", f"/{SCRATCH_INDEX}/_refresh", None, None, {})
        return json.loads(self.plain.send("GET", f"/{SCRATCH_INDEX}/_count", None, None, {}))["count"]

    async def close(self):
        try:
            if self._scratch:
                self.plain.send("DELETE", f"/{SCRATCH_INDEX}", {"ignore_unavailable": "true"}, None, {})
        finally:
            self.plain.close()
            for client in self.clients.values():
                await client.close()
            os.unlink(self._static_file)


def summary(kind, requests_per_sample, samples):
    """Rows of the table: each side's median (ms) with interval, and the track's excess per request over plain."""
    rows = []
    for side in SIDES:
        values = [s * 1000 for s in samples[side]]
        if not values:
            continue
        interval = uncertainty.median_interval(values)
        rows.append(
            {
                "kind": kind,
                "side": side,
                "samples": len(values),
                "median-ms": interval.median,
                "low-ms": interval.low,
                "high-ms": interval.high,
            }
        )
    plain, track = samples["plain"], samples["track"]
    ratio, low, high = uncertainty.ratio_interval(plain, track)
    excess = (statistics.median(track) - statistics.median(plain)) * 1000 / requests_per_sample
    static = statistics.median(samples["static"]) * 1000 / requests_per_sample if samples["static"] else None
    return rows, {
        "kind": kind,
        "requests": requests_per_sample,
        "samples": min(len(plain), len(track)),
        "plain-ms": statistics.median(plain) * 1000,
        "track/plain": ratio,
        "low": low,
        "high": high,
        "excess-ms-per-request": excess,
        "static-ms-per-request": static,
    }


RESULTS = "client-cost.json"  # in the reports folder (make client-cost): what a race's report reads


def race_section(race, out_root):
    """The race's report section: for each of its coverage cells the benchmark measured (reports/client-cost.json),
    what the load driver adds to one coverage (the track's median minus plain's, with the ratio's 95% interval) beside
    the race's median wall of that cell, and that share; or how to measure it."""
    path = os.path.join(out_root, RESULTS)
    if not os.path.isfile(path):
        return (
            "_no client-cost measurement yet: make client-cost (the track's request path beside a plain client, on the running cluster)._\n"
        )
    with open(path) as f:
        measured = {r["summary"]["kind"]: r["summary"] for r in json.load(f)}
    lines = [
        "| cell | requests | load driver per coverage (ms) [95%] | race's median wall (ms) | share | per request (ms) | Rally's client alone per request (ms) |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for kind, d in measured.items():
        if "/" not in kind:
            continue
        wall = readers.measured(race, readers.study_task(race, tuple(kind.split("/"))), "wall-ms")
        median_wall = statistics.median(wall) if wall else None
        excess = d["excess-ms-per-request"] * d["requests"]
        bounds = "" if d["low"] is None else f" [{(d['low'] - 1) * d['plain-ms']:.2f}, {(d['high'] - 1) * d['plain-ms']:.2f}]"
        share = f"{excess / median_wall:.0%}" if median_wall else "-"
        static = "-" if d["static-ms-per-request"] is None else f"{d['static-ms-per-request']:.3f}"
        wall_text = f"{median_wall:.2f}" if median_wall else "not in this race"
        lines.append(
            f"| {kind} | {d['requests']} | {excess:.2f}{bounds} | {wall_text} | {share} | {d['excess-ms-per-request']:.3f} | {static} |"
        )
    for kind, d in measured.items():
        if kind.startswith("bulk"):
            lines.append(
                f"\nBulk ({kind.split()[1]} documents): the track's path takes {d['track/plain']:.3f}x the plain client's time per bulk "
                f"({d['excess-ms-per-request']:+.2f} ms, {d['samples']} bulks a side)."
            )
    lines.append(
        "\nMeasured by make client-cost (report/client_cost.py) on the cluster it reached, alternating sides; the share "
        "holds for this race when both ran on the same machine and cluster. Rally's client alone: its static_responses "
        "option, no server. What remains is Rally's client stack per request (its perform_request, elastic_transport "
        "and aiohttp): the track's own send loop is about 1% of it (cProfile), and a track that bypassed Rally's client "
        "would no longer be measured the way Rally measures every other track.\n"
    )
    return "\n".join(lines)


def table(results):
    def ms(v):
        return "-" if v is None else f"{v:.3f}"

    lines = ["| kind | side | n | median ms [95%] |", "|---|---|---:|---|"]
    for rows, _ in results:
        for r in rows:
            lines.append(f"| {r['kind']} | {r['side']} | {r['samples']} | {ms(r['median-ms'])} [{ms(r['low-ms'])}, {ms(r['high-ms'])}] |")
    lines += [
        "",
        "| kind | requests/sample | track/plain [95%] | track's excess per request (ms) | static per request (ms) |",
        "|---|---:|---|---:|---:|",
    ]
    for _, d in results:
        ratio = "-" if d["track/plain"] is None else f"{d['track/plain']:.3f} [{ms(d['low'])}, {ms(d['high'])}]"
        lines.append(f"| {d['kind']} | {d['requests']} | {ratio} | {d['excess-ms-per-request']:.3f} | {ms(d['static-ms-per-request'])} |")
    return "\n".join(lines)


async def run(args):
    root = corpus.data_root()
    manifest = corpus.require_manifest(root)
    bench = Bench(args.target_hosts, args.client_options)
    results = []
    try:
        for cell in [c for c in args.cells.split(",") if c]:
            requests = coverage_requests(manifest, cell)
            samples = await bench.coverages(requests, args.coverages, args.rounds)
            results.append(summary(cell, len(requests), samples))
            print(f"{cell}: done", file=sys.stderr)
        if args.bulk_docs:
            bodies = bulk_bodies(root, manifest, SCRATCH_INDEX, args.bulk_size, args.bulk_docs)

            def count_check(side, docs):
                found = bench.count()
                if found != docs:
                    raise ClientCostError(f"{side}: the scratch index holds {found} documents after {docs} were sent")

            create_body = bench.twin_body(manifest["index"])
            samples = await bench.bulks(bodies, args.bulk_rounds, create_body, count_check)
            results.append(summary(f"bulk {args.bulk_size}", 1, samples))
    finally:
        await bench.close()
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m report.client_cost", description=__doc__.split("\n\n")[0])
    cluster.add_arguments(parser)
    parser.add_argument("--cells", default="A/serial,A/msearch,D_td/serial,D_td/msearch")
    parser.add_argument("--coverages", type=int, default=30, help="coverages per turn")
    parser.add_argument("--rounds", type=int, default=3, help="turns of each side (alternating order)")
    parser.add_argument("--bulk-docs", type=int, default=0, help="documents per bulk turn (0: no bulk side)")
    parser.add_argument("--bulk-size", type=int, default=1000)
    parser.add_argument("--bulk-rounds", type=int, default=2, help="bulk turns of plain and track each (ABAB)")
    parser.add_argument("--out", help="also write the results as JSON")
    args = parser.parse_args(argv)
    results = asyncio.run(run(args))
    print(table(results))
    if args.out:
        with open(args.out, "w") as f:
            json.dump([{"rows": rows, "summary": d} for rows, d in results], f, indent=1)


if __name__ == "__main__":
    try:
        main()
    except ReportError as e:  # settings Rally cannot read, named with their fix
        raise SystemExit(str(e))
