"""The client-cost benchmark (report/client_cost.py): both sides send the same bytes, a wrong answer stops it rather
than being timed, turns alternate; on the real node, a bulk turn's count is checked and the scratch index goes."""

import asyncio
import json
import statistics
from pathlib import Path

import pytest

from report import client_cost
from report.shared import races, readers
from tests.conftest import TEST_PORT, ensure_test_index, http
from tests.loopback_es import LoopbackElasticsearch

MANIFEST = {"index": "cluster-metrics", "nodes": ["N001", "N002", "N003"]}


def _bench(port):
    return client_cost.Bench(f"127.0.0.1:{port}", client_cost.cluster.DEFAULT_CLIENT_OPTIONS)


@pytest.mark.parametrize("cell,requests", [("A/serial", 3), ("D_td/msearch", 1), ("D_hdr/terms", 1)])
def test_plain_and_track_send_the_same_bytes(cell, requests):
    built = client_cost.coverage_requests(MANIFEST, cell)
    assert len(built) == requests

    async def one_turn_each():
        bench = _bench(es.port)
        try:
            return await bench.coverages(built, coverages=1, rounds=1)
        finally:
            await bench.close()

    with LoopbackElasticsearch() as es:
        samples = asyncio.run(one_turn_each())
    sent = [r for r in es.requests if r["method"] == "POST"]
    # two coverages a side (the warm-up and the sample); static answers without a server, so none of its requests arrive
    assert len(sent) == 2 * 2 * requests
    plain, track = sent[: 2 * requests], sent[2 * requests :]
    assert [(r["path"], r["body"]) for r in plain] == [(r["path"], r["body"]) for r in track]
    assert plain[0]["body"] == built[0][2] and "request_cache=false" in plain[0]["path"] or cell.endswith("msearch")
    assert {side: len(s) for side, s in samples.items()} == {"plain": 1, "track": 1, "static": 1}


def test_a_bulk_answer_with_errors_stops_the_benchmark():
    """The loopback node answers a bulk without `errors: false`: a plain bulk must not be timed as a success."""
    with LoopbackElasticsearch() as es:
        bench = _bench(es.port)
        try:
            with pytest.raises(client_cost.ClientCostError, match="plain bulk: errors"):
                client_cost._plain_bulk(bench.plain, "x", b'{"index":{}}\n{}\n')
        finally:
            asyncio.run(bench.close())


def test_turns_alternate_so_no_side_is_always_first():
    assert client_cost._turn_order(2, ("plain", "track", "static")) == ["plain", "track", "static", "static", "track", "plain"]


def test_the_excess_is_per_request_and_a_ratio_needs_enough_samples():
    samples = {"plain": [0.020] * 10, "track": [0.026] * 10, "static": [0.003] * 10}
    rows, summary = client_cost.summary("A/serial", 30, samples)
    assert summary["excess-ms-per-request"] == pytest.approx(0.2) and summary["static-ms-per-request"] == pytest.approx(0.1)
    assert summary["track/plain"] == pytest.approx(1.3) and summary["low"] == pytest.approx(1.3)
    assert [r["side"] for r in rows] == ["plain", "track", "static"]
    _, few = client_cost.summary("A/serial", 30, {"plain": [0.02] * 3, "track": [0.03] * 3, "static": []})
    assert few["low"] is None and few["static-ms-per-request"] is None


FULL_RACE = next((Path(__file__).parent / "fixtures" / "full-race" / ".rally" / "benchmarks" / "races").iterdir())


def test_a_race_report_shows_each_measured_cells_share_or_how_to_measure_it(tmp_path):
    race = races.load(FULL_RACE)
    assert "make client-cost" in client_cost.race_section(race, tmp_path)
    samples = {"plain": [0.020] * 10, "track": [0.026] * 10, "static": [0.003] * 10}
    bulk = {"plain": [0.015] * 10, "track": [0.016] * 10, "static": []}
    results = [
        client_cost.summary("A/serial", 30, samples),
        client_cost.summary("Z/serial", 30, samples),
        client_cost.summary("bulk 1000", 1, bulk),
    ]
    (tmp_path / client_cost.RESULTS).write_text(json.dumps([{"rows": r, "summary": d} for r, d in results]))
    section = client_cost.race_section(race, tmp_path)
    median_wall = statistics.median(readers.measured(race, "coverage-A-serial", "wall-ms"))
    assert f"| A/serial | 30 | 6.00 [6.00, 6.00] | {median_wall:.2f} | {6 / median_wall:.0%} |" in section
    assert "| Z/serial | 30 | 6.00 [6.00, 6.00] | not in this race | - |" in section
    assert "1.067x the plain client's time per bulk (+1.00 ms, 10 bulks a side)" in section


@pytest.mark.integration
def test_on_the_real_node_every_turn_is_counted_and_the_scratch_index_goes(shared_races, monkeypatch, capsys, tmp_path):
    """Real Elasticsearch, the suite's corpus: each side's coverages and bulks are timed, each bulk turn's count checked
    (a lost document stops the run), and no scratch index is left."""
    ensure_test_index(shared_races)
    monkeypatch.setenv("RALLY_HOME", str(shared_races.home))
    out = tmp_path / "cost.json"
    argv = ["--target-hosts", f"127.0.0.1:{TEST_PORT}", "--cells", "A/serial", "--coverages", "2", "--rounds", "1"]
    client_cost.main(argv + ["--bulk-docs", "3000", "--bulk-size", "1000", "--bulk-rounds", "1", "--out", str(out)])
    printed = capsys.readouterr().out
    assert "| A/serial | track | 2 |" in printed and "| bulk 1000 | plain | 3 |" in printed, printed
    results = json.loads(out.read_text())
    assert [r["summary"]["kind"] for r in results] == ["A/serial", "bulk 1000"]
    assert http("HEAD", f"/{client_cost.SCRATCH_INDEX}")[0] == 404
