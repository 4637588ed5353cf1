"""The layout sweep's seed-003 tables on fixture races: the real --test-mode layout-sweep race of tests/fixtures
(3 nodes) copied, with what a race of this version adds (each layout's single-document task, its count check and
records, the search-pool record) written into the copy; node scaling from two such races."""

import json
import shutil
from pathlib import Path

import pytest

from report import scaling
from report.__main__ import main as report_main
from report.shared import races
from report.studies import layout_seed, layouts, single_doc
from runners.contracts import records
from runners.studies.layouts import record_name
from runners.studies.search_pool import SEARCH_POOL
from runners.studies.single_doc import RECORD_KEY, single_doc_index

LAYOUT_HOME = Path(__file__).parents[1] / "fixtures" / "layout-race"
# docs/s per layout and its per-second samples (a steady rate, +-2): 1S0R the base
RATES = {"1S0R": 400.0, "2S0R": 600.0, "1S1R": 300.0, "2S1R": 360.0, "3S2R": 160.0}


def op(task, rate, unit="docs/s", error_rate=0.0):
    stats = {"min": rate, "mean": rate, "median": rate, "max": rate, "unit": unit}
    return {"task": task, "operation": task, "throughput": stats, "error_rate": error_rate, "duration": 60000.0}


def fixture_race(
    home, race_id, rates=RATES, data_nodes=3, processors=2, fail=(), miscount=()
):  # parameters: a test race's fields, each a keyword with its default
    """A copy of the layout fixture race under `home` as race_id, with single-document results for `rates`' layouts
    (fail: layouts whose task had errors; miscount: whose count check failed) and a search-pool record."""
    src = next((LAYOUT_HOME / ".rally/benchmarks/races").glob("*"))
    dst = home / ".rally" / "benchmarks" / "races" / race_id
    shutil.copytree(src, dst)
    data = json.loads((dst / "race.json").read_text())
    data["race-id"] = race_id
    record_dir = dst / records.RECORD_DIR
    for layout, rate in rates.items():
        data["results"]["op_metrics"].append(op(f"layout-{layout}-single-doc", rate, error_rate=0.05 if layout in fail else 0.0))
        data["results"]["op_metrics"].append(
            op(f"layout-{layout}-single-doc-count", 1.0, "ops/s", error_rate=1.0 if layout in miscount else 0.0)
        )
        record = json.loads((record_dir / record_name(layout)).read_text()) if (record_dir / record_name(layout)).is_file() else {}
        samples = [int(rate) + (-2, 0, 2)[i % 3] for i in range(30)]
        acknowledged = sum(samples) + 10
        record.update(layout=layout)
        record[RECORD_KEY] = {
            "index": single_doc_index(layout),
            "clients": 4,
            "requests": acknowledged,
            "acknowledged": acknowledged,
            "count": acknowledged - (1 if layout in miscount else 0),
            "outcomes": {"ok": acknowledged},
            "per-second": samples,
        }
        records.write(str(record_dir), record_name(layout), record)
    nodes = [{"name": f"node-{i + 1}", "data": True, "allocated-processors": processors} for i in range(data_nodes)]
    nodes.insert(0, {"name": "coord-1", "data": False, "allocated-processors": 2})
    records.write(str(record_dir), SEARCH_POOL, {"nodes": nodes, "data-nodes": data_nodes, "default-max-concurrent-searches": 12})
    (dst / "race.json").write_text(json.dumps(data))
    return races.Files(rally_home=home).race(race_id[:8])


def test_single_doc_table_gives_docs_per_second_against_1s0r_with_intervals_and_the_seeds_figures(tmp_path):
    race = fixture_race(tmp_path, "5d0c0000-0000-0000-0000-000000000000")
    header, body = single_doc.single_doc_table(race)
    rows = {row[0]: dict(zip(header, row)) for row in body}
    assert list(rows) == [layout for layout in race.param("layouts") if layout in RATES]  # sweep order
    assert rows["1S0R"]["docs/s"] == 400.0 and rows["1S0R"]["vs 1S0R"] == pytest.approx(1.0)
    assert rows["2S1R"]["vs 1S0R"] == pytest.approx(0.9) and rows["2S1R"]["vs same shards, 0 replicas"] == pytest.approx(0.6)
    assert rows["1S1R"]["vs same shards, 0 replicas"] == pytest.approx(0.75)
    assert rows["3S2R"]["vs same shards, 0 replicas"] is None  # 3S0R not swept in this race: no replica cost
    # per-second samples 398/400/402: the median and its interval, and the ratio's interval around 0.4 for 3S2R
    assert rows["3S2R"]["per-second median [95% interval]"] == "160.0 [158.0, 162.0] n=30"
    ratio, low, high = (float(x) for x in rows["3S2R"]["vs 1S0R 95% interval"].replace("[", "").replace("]", "").replace(",", "").split())
    assert ratio == pytest.approx(0.4) and low < 0.4 < high and high - low < 0.02
    # the seed's figures beside ours: 1S0R = 1, 3S2R 0.40, a replicated layout 0.40-0.80, more shards above 1
    assert rows["1S0R"]["seed 003 vs 1S0R"] == "1.00" and rows["3S2R"]["seed 003 vs 1S0R"] == "0.40"
    assert rows["2S1R"]["seed 003 vs 1S0R"].startswith("0.40-0.80") and rows["2S0R"]["seed 003 vs 1S0R"].startswith("> 1")
    assert rows["1S0R"]["acknowledged / counted"] == f"{30 * 400 + 10} / {30 * 400 + 10}"


def test_a_failed_single_doc_layout_is_marked_and_never_the_baseline(tmp_path):
    race = fixture_race(tmp_path, "5d0c0001-0000-0000-0000-000000000000", fail={"1S0R"}, miscount={"2S1R"})
    header, body = single_doc.single_doc_table(race)
    rows = {row[0]: dict(zip(header, row)) for row in body}
    assert rows["1S0R"]["docs/s"] == "FAILED (5% errors)" and rows["1S0R"]["vs 1S0R"] is None
    assert rows["2S1R"]["docs/s"].startswith("FAILED (the index's count")
    assert rows["2S0R"]["vs 1S0R"] is None and rows["2S0R"]["vs 1S0R 95% interval"] == "-"  # no baseline: no ratio


def test_the_coverage_throughput_table_carries_the_seeds_query_model(tmp_path):
    race = fixture_race(tmp_path, "5d0c0002-0000-0000-0000-000000000000")
    header, body = layouts.layout_query_table(race)
    seed = {row[0]: row[header.index("seed 003 vs 1S0R")] for row in body}
    # 80 q/s per participating node, ~150 on two, 250 on three: normalized to 1S0R (80)
    assert seed["1S0R"] == 1.0 and seed["2S0R"] == seed["1S1R"] == pytest.approx(150 / 80)
    assert seed["3S0R"] == seed["1S2R"] == seed["3S2R"] == pytest.approx(250 / 80)
    assert seed["2S1R"] == "< 3.12 (a node holds more copies)"  # four copies on three nodes: the seed's bottleneck
    assert layout_seed.query_ratio("2S2R") == pytest.approx(250 / 80)  # six copies on three nodes: even


def test_the_report_has_the_single_doc_section(tmp_path):
    fixture_race(tmp_path, "5d0c0003-0000-0000-0000-000000000000")
    assert report_main(["--race", "5d0c0003", "--rally-home", str(tmp_path), "--out", str(tmp_path / "out")]) == 0
    text = next((tmp_path / "out").glob("*/report.md")).read_text()
    assert "## Layout sweep: single-document indexing per layout" in text and "3S2R runs at 40%" in text


def test_node_scaling_compares_coverage_throughput_per_data_node_count(tmp_path, capsys):
    one = fixture_race(tmp_path, "11111111-0000-0000-0000-000000000000", data_nodes=1, processors=1)
    two = fixture_race(tmp_path, "22222222-0000-0000-0000-000000000000", data_nodes=2, processors=1)
    header, body = scaling.scaling_table([two, one])
    rows = [dict(zip(header, row)) for row in body]
    assert [r["data nodes"] for r in rows][0] == 1 and {r["data nodes"] for r in rows} == {1, 2}  # fewest nodes first
    assert {(r["data nodes"], r["data node processors"]) for r in rows} == {(1, "1"), (2, "1, 1")}  # node.processors 1 each
    base = next(r for r in rows if r["data nodes"] == 1 and r["layout"] == "1S0R")
    assert base["mean vs 1S0R on the fewest nodes"] == pytest.approx(1.0) and base["per data node"] == pytest.approx(1.0)
    two_1s1r = next(r for r in rows if r["data nodes"] == 2 and r["layout"] == "1S1R")
    cell = "D_td msearch (cov/s)"
    ratio = two_1s1r[cell] / base[cell]
    assert two_1s1r["per data node"] == pytest.approx(two_1s1r["mean vs 1S0R on the fewest nodes"] / 2)
    assert ratio > 0 and two_1s1r["seed 003 vs 1S0R"] == pytest.approx(150 / 80)
    assert (
        report_main(["--node-scaling", "--race", "11111111", "--race", "22222222", "--rally-home", str(tmp_path), "--out", str(tmp_path)])
        == 0
    )
    text = capsys.readouterr().out
    assert "## Node scaling: coverage throughput per data node count" in text and "lower bound" in text
    assert (tmp_path / "node-scaling-11111111-22222222" / "node-scaling.md").is_file()


def test_node_scaling_race_parameters_keep_the_users():
    assert scaling.track_params("2S0R,1S1R", "epochs:2,single_doc_seconds:30") == {
        "epochs": 2,
        "single_doc_seconds": 30,
        "layouts": ["2S0R", "1S1R"],
    }
