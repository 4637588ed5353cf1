"""make report / make compare on race.json fixtures copied from real --test-mode races of this track
(tests/fixtures/races is a Rally home holding them), and make accuracy against the real node."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import matplotlib.image
import pytest

from report import ReportError
from report.__main__ import main as report_main
from report.shared import races, readers, sections, uncertainty
from report.studies import coverage, ingest, layouts
from runners.contracts import records
from tests.conftest import REPO, TEST_PORT, ensure_test_index
from tests.race_shapes import stopped_midway

HOME = Path(__file__).parents[1] / "fixtures" / "races"
FULL, PROFILE, PRODUCTION = "b8b9bc99", "23248411", "87d33580"


def test_newest_race_of_the_track_is_the_default():
    race = races.Files(HOME).race()
    stamps = {json.loads(p.read_text())["race-timestamp"]: p.parent.name for p in (HOME / ".rally/benchmarks/races").glob("*/race.json")}
    assert len(stamps) == 3 and race.race_id == stamps[max(stamps)]


def test_unknown_race_is_said_plainly():
    with pytest.raises(ReportError, match="no race matching 'ffffffff'"):
        races.Files(rally_home=HOME).race("ffffffff")


def test_full_race_report_has_every_table_and_real_numbers(tmp_path, capsys):
    assert report_main(["--race", FULL, "--rally-home", str(HOME), "--out", str(tmp_path)]) == 0
    race = races.Files(rally_home=HOME).race(FULL)
    text = (tmp_path / race.race_id / "report.md").read_text()
    for title in ("Ingest per epoch", "service time per coverage", "Speedup against D_td serial"):
        assert title in text
    # only the sections the race has; one sentence names the others
    assert "## Profile breakdown" not in text and "## Layout sweep" not in text
    absent = next(line for line in text.splitlines() if line.startswith("_Not in this race:"))
    assert "profile breakdown" in absent and "layout sweep" in absent and "coverage," not in absent
    # numbers come from race.json: D_td serial's median is in the table, and its speedup is 1.00
    d_td_serial = race.op_metrics()["coverage-D_td-serial"]["service_time"]["mean"]
    assert sections.fmt(d_td_serial) in text
    speedups = dict((row[0], row) for row in coverage.speedup_table(race)[1])
    assert speedups["D_td"][1] == pytest.approx(1.0)
    rows = ingest.ingest_rows(race)
    assert [r["epoch"] for r in rows] == [1, 2, 3, 4, 5] and all(r["docs"] == 1000 and r["wall_s"] > 0 for r in rows)
    assert rows[0]["wall_s"] == race.op_metrics()["bulk-epoch-1"]["duration"] / 1000  # race.json keeps ms
    assert "D_td serial:" in capsys.readouterr().out


def test_charts_are_produced_and_not_empty(tmp_path):
    report_main(["--race", FULL, "--rally-home", str(HOME), "--out", str(tmp_path)])
    race = races.Files(rally_home=HOME).race(FULL)
    for name in ("coverage.png", "ingest.png"):
        path = tmp_path / race.race_id / name
        assert path.stat().st_size > 10_000
        pixels = matplotlib.image.imread(path)
        assert pixels.std() > 0.05  # something drawn, not a blank canvas


def test_query_only_race_says_it_has_no_ingest(tmp_path):
    report_main(["--race", PRODUCTION, "--rally-home", str(HOME), "--out", str(tmp_path)])
    text = next(tmp_path.glob("*/report.md")).read_text()
    absent = next(line for line in text.splitlines() if line.startswith("_Not in this race:"))
    assert "ingest" in absent and "took" in absent  # a race of an older track version: no coverage records
    assert "## Ingest per epoch" not in text and "## Subtractive cost attribution" not in text
    assert not list(tmp_path.glob("*/ingest.png"))


def test_compare_puts_races_side_by_side_with_ratios(tmp_path, capsys):
    assert report_main(["--race", FULL, "--race", PRODUCTION, "--compare", "--rally-home", str(HOME), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    full, production = races.Files(rally_home=HOME).race(FULL), races.Files(rally_home=HOME).race(PRODUCTION)
    line = next(l for l in out.splitlines() if l.startswith("| coverage-D_td-serial median"))
    a = full.op_metrics()["coverage-D_td-serial"]["service_time"]["mean"]
    b = production.op_metrics()["coverage-D_td-serial"]["service_time"]["mean"]
    assert sections.fmt(b / a) in line
    assert "ingest wall (s)" in out


def test_compare_needs_two_races():
    with pytest.raises(SystemExit):
        report_main(["--race", FULL, "--compare", "--rally-home", str(HOME)])


def test_accuracy_against_the_real_node(shared_races, small_corpus, tmp_path):
    ensure_test_index(shared_races)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "report.accuracy",
            "--target-hosts",
            f"127.0.0.1:{TEST_PORT}",
            "--data-root",
            str(small_corpus),
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stderr
    data = json.loads((tmp_path / "accuracy.json").read_text())
    assert data["section"] == "test_mode"
    assert {row[0] for row in data["rows"]} == {"t-digest", "HDR"}
    # p0 and p100 are exact for t-digest (it keeps min and max)
    t_digest_extremes = [row for row in data["rows"] if row[0] == "t-digest" and row[2] in (0, 100)]
    assert t_digest_extremes and all(float(row[3]) == 0.0 for row in t_digest_extremes)


def _copy_race(src_id, home, race_id, change):
    """A copy of a fixture race under another id, with `change` applied to its race.json."""
    src = next((HOME / ".rally/benchmarks/races").glob(f"{src_id}*"))
    dst = home / ".rally" / "benchmarks" / "races" / race_id
    shutil.copytree(src, dst)
    data = json.loads((dst / "race.json").read_text())
    change(data)
    data["race-id"] = race_id
    (dst / "race.json").write_text(json.dumps(data))
    return dst


def test_races_from_a_track_repository_are_found(tmp_path):
    def from_repository(data):
        data["track"] = "tracks/cluster-metrics"  # Rally names a repository's track by its path
        data["race-timestamp"] = "29991231T000000Z"

    _copy_race(FULL, tmp_path, "feedfeed-0000-0000-0000-000000000000", from_repository)
    assert races.Files(tmp_path).race().race_id.startswith("feedfeed")


def _fail(task, rate=0.4):
    def change(data):
        for op in data["results"]["op_metrics"]:
            if op["task"] == task:
                op["error_rate"] = rate

    return change


def test_a_failed_cell_is_marked_and_never_ranked(tmp_path, capsys):
    """A fast cell that answered wrongly: FAILED in every table, never the fastest, no speedup from it."""
    full = races.Files(rally_home=HOME).race(FULL)
    fastest = readers.fastest_cell(readers.coverage_cells(full))
    task = f"coverage-{fastest[0]}-{fastest[1]}"
    _copy_race(FULL, tmp_path, "badcell0-0000-0000-0000-000000000000", _fail(task))
    race = races.Files(rally_home=tmp_path).race("badcell0")
    cells = readers.coverage_cells(race)
    assert readers.fastest_cell(cells) != fastest and readers.valid_median(cells, fastest) is None
    by_variant = dict((row[0], row) for row in coverage.coverage_table(race)[1])
    assert "FAILED (40% errors)" in by_variant[fastest[0]]
    speedups = dict((row[0], row) for row in coverage.speedup_table(race)[1])
    assert "FAILED" in speedups[fastest[0]]
    assert report_main(["--race", "badcell0", "--rally-home", str(tmp_path), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert f"FAILED cells (not ranked): {fastest[0]} {fastest[1]}" in out
    assert f"fastest cell {fastest[0]} {fastest[1]}" not in out


def test_a_failed_baseline_gives_no_speedups(tmp_path):
    _copy_race(FULL, tmp_path, "badbase0-0000-0000-0000-000000000000", _fail("coverage-D_td-serial"))
    race = races.Files(rally_home=tmp_path).race("badbase0")
    assert "baseline D_td serial FAILED" in coverage.speedup_table(race)
    report_main(["--race", "badbase0", "--rally-home", str(tmp_path), "--out", str(tmp_path / "out")])
    text = next((tmp_path / "out").glob("*/report.md")).read_text()
    assert "no speedup can be measured against it" in text


def test_compare_gives_no_ratio_for_a_failed_cell(tmp_path, capsys):
    _copy_race(FULL, tmp_path, "aaaaaaaa-0000-0000-0000-000000000000", lambda d: None)
    _copy_race(FULL, tmp_path, "bbbbbbbb-0000-0000-0000-000000000000", _fail("coverage-D_hdr-msearch"))
    report_main(["--race", "aaaaaaaa", "--race", "bbbbbbbb", "--compare", "--rally-home", str(tmp_path), "--out", str(tmp_path / "out")])
    line = next(l for l in capsys.readouterr().out.splitlines() if l.startswith("| coverage-D_hdr-msearch median"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[2] == "FAILED" and cells[3] == "-"


LAYOUT_HOME = Path(__file__).parents[1] / "fixtures" / "layout-race"  # a real --test-mode layout-sweep race, 3 nodes


def test_layout_sweep_tables_from_a_real_race(tmp_path):
    race = races.Files(LAYOUT_HOME).race()
    assert set(layouts.layout_records(race)) == {"1S0R", "2S0R", "3S0R", "1S1R", "2S1R", "3S1R", "1S2R", "3S2R"}
    per_layout = {row[0]: row for row in layouts.layout_ingest_table(race)[1]}
    assert per_layout["1S0R"][6] == pytest.approx(1.0) and per_layout["2S1R"][3] == 5000
    bulk_wall = sum(op["duration"] for task, op in race.op_metrics().items() if task.startswith("layout-2S1R-bulk-epoch-")) / 1000
    assert per_layout["2S1R"][5] == pytest.approx(5000 / bulk_wall)
    query = {row[0]: row for row in layouts.layout_query_table(race)[1]}
    assert query["3S2R"][1] == race.op_metrics()["layout-3S2R-coverage-D_td-msearch"]["throughput"]["median"]
    placement = [row for row in layouts.layout_placement_table(race)[1] if row[0] == "2S1R"]
    assert len(placement) == 3  # three nodes; the one holding two copies does half the indexing
    hot = [row for row in placement if len(row[2].split()) == 2]
    assert len(hot) == 1 and hot[0][3] == "50.0%" and hot[0][5] == "indexing"
    assert report_main(["--rally-home", str(LAYOUT_HOME), "--out", str(tmp_path)]) == 0
    text = next(tmp_path.glob("*/report.md")).read_text()
    assert "Layout sweep: where the shards went" in text and "nodes of one local cluster share one host's cores" in text


def test_a_failed_layout_cell_is_marked(tmp_path):
    def fail(data):
        for op in data["results"]["op_metrics"]:
            if op["task"] == "layout-2S1R-coverage-D_hdr-terms":
                op["error_rate"] = 1.0

    src = next((LAYOUT_HOME / ".rally/benchmarks/races").glob("*"))
    dst = tmp_path / ".rally" / "benchmarks" / "races" / "cafecafe-0000-0000-0000-000000000000"
    shutil.copytree(src, dst)
    data = json.loads((dst / "race.json").read_text())
    fail(data)
    data["race-id"] = dst.name
    (dst / "race.json").write_text(json.dumps(data))
    query = {row[0]: row for row in layouts.layout_query_table(races.Files(rally_home=tmp_path).race("cafecafe"))[1]}
    assert query["2S1R"][4] == "FAILED" and query["2S1R"][5] is None


def _scaled(factor):
    """Every coverage's service times times `factor`: a repeat of the race on a slower or faster run."""

    def change(data):
        for op in data["results"]["op_metrics"]:
            if op["task"].startswith("coverage-"):
                op["service_time"] = {k: v * factor if isinstance(v, (int, float)) else v for k, v in op["service_time"].items()}

    return change


def test_a_set_of_repeated_races_reports_each_cells_spread(tmp_path, capsys):
    ids = [f"0000000{i}-0000-0000-0000-000000000000" for i in range(3)]
    for race_id, factor in zip(ids, (1.0, 1.1, 0.9)):
        _copy_race(FULL, tmp_path, race_id, _scaled(factor))
    assert report_main(["--race", ",".join(i[:8] for i in ids), "--rally-home", str(tmp_path), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    base = races.Files(rally_home=HOME).race(FULL).op_metrics()["coverage-D_td-msearch"]["service_time"]["mean"]
    row = next(l for l in out.splitlines() if l.startswith("| coverage-D_td-msearch |"))
    assert f"{base:.1f} / {base * 1.1:.1f} / {base * 0.9:.1f}" in row and "| 20.0% |" in row
    assert row.rstrip().endswith("| - |")  # race.json keeps no samples: no pooled interval without a metrics store


def test_sets_are_compared_race_by_race(tmp_path, capsys):
    """Three races a side: a set 30% slower is called slower in every cell, a set inside its own spread is not."""
    sets = {"a": (1.0, 1.02, 0.98), "b": (1.3, 1.32, 1.28), "c": (1.01, 0.99, 1.0)}
    for name, factors in sets.items():
        for i, factor in enumerate(factors):
            _copy_race(FULL, tmp_path, f"{name * 7}{i}-0000-0000-0000-000000000000", _scaled(factor))
    arg = {name: ",".join(f"{name * 7}{i}" for i in range(3)) for name in sets}
    assert (
        report_main(
            [
                "--race",
                arg["a"],
                "--race",
                arg["b"],
                "--race",
                arg["c"],
                "--compare",
                "--rally-home",
                str(tmp_path),
                "--out",
                str(tmp_path / "out"),
            ]
        )
        == 0
    )
    rows = [l for l in capsys.readouterr().out.splitlines() if l.startswith("| coverage-")]
    assert len(rows) == 18 and all("no difference beyond noise" in r for r in rows)
    # 30% slower is named wherever it is more than the noise floor in milliseconds (the test-mode fixture has cells
    # of a few ms, where it is not)
    medians = {r: float(r.split("|")[2].split(",")[0]) for r in rows}
    assert {r.count(" slower |") for r in rows if 0.3 * medians[r] > uncertainty.NOISE_FLOOR_MS * 1.1} == {1}
    assert {r.count(" slower |") for r in rows if 0.3 * medians[r] < uncertainty.NOISE_FLOOR_MS * 0.9} <= {0}


def test_ingest_time_is_split_between_elasticsearch_the_connection_and_the_load_driver(tmp_path):
    race = races.Files(rally_home=HOME).race(FULL)
    header, body = ingest.ingest_time_table(race)
    ops, first = race.op_metrics(), dict(zip(header, body[0]))
    bulk, epoch = ops["bulk-epoch-1"], ingest.ingest_of(race)["epochs"][0]
    n = epoch["bulk-requests"]
    assert first["wall (s)"] == pytest.approx((bulk["duration"] + bulk["processing_time"]["mean"]) / 1000)  # to the last request's end
    assert first["Elasticsearch: took (s)"] == epoch["bulk-took-ms"] / 1000
    assert first["load driver: runner (s)"] == pytest.approx((bulk["processing_time"]["mean"] - bulk["service_time"]["mean"]) * n / 1000)
    assert first["load driver: between requests (s)"] == pytest.approx(first["wall (s)"] - bulk["processing_time"]["mean"] * n / 1000)

    def overlapping(data):  # several bulk clients: the requests' times add up to more than the wall time
        for op in data["results"]["op_metrics"]:
            if op["task"].startswith("bulk-epoch-"):
                op["processing_time"]["mean"] = op["duration"] * 2

    copy = _copy_race(FULL, tmp_path, "c2c2c2c2-0000-0000-0000-000000000000", overlapping)
    record = json.loads((copy / "cluster-metrics" / "ingest.json").read_text())
    for row in record["epochs"]:
        row["bulk-requests"] = 3  # two clients' requests, each as long as the task
    (copy / "cluster-metrics" / "ingest.json").write_text(json.dumps(record))
    assert ingest.ingest_time_table(races.Files(rally_home=tmp_path).race("c2c2c2c2")) is None


def _with_epoch_walls(folder, walls):
    """The race's baseline ingest record with these epoch walls (s), as the ingest task records them."""
    path = folder / records.RECORD_DIR / records.INGEST
    record = json.loads(path.read_text())
    for row, wall in zip(sorted(record["epochs"], key=lambda r: r["epoch"]), walls):
        row["wall-s"] = wall
    path.write_text(json.dumps(record))


def test_compare_names_each_races_version_and_pairs_the_ingests_epochs(tmp_path, capsys):
    """Races on two Elasticsearch versions: the version row, and the ingest's docs/s with the epochs' walls paired
    (a 30% slower ingest on every epoch is named slower; the same walls are no difference)."""
    walls = [1.0, 1.2, 0.9, 1.1, 1.05]

    def on(version):
        return lambda data: data.setdefault("cluster", {}).update({"distribution-version": version})

    _with_epoch_walls(_copy_race(FULL, tmp_path, "aaaaaaaa-0000-0000-0000-000000000000", on("8.17.2")), walls)
    _with_epoch_walls(_copy_race(FULL, tmp_path, "bbbbbbbb-0000-0000-0000-000000000000", on("9.5.3")), [w * 1.3 for w in walls])
    _with_epoch_walls(_copy_race(FULL, tmp_path, "cccccccc-0000-0000-0000-000000000000", on("8.19.21")), walls)
    ids = ["aaaaaaaa", "bbbbbbbb", "cccccccc"]
    report_main([*(a for i in ids for a in ("--race", i)), "--compare", "--rally-home", str(tmp_path), "--out", str(tmp_path / "out")])
    lines = capsys.readouterr().out.splitlines()
    version = [c.strip() for c in next(l for l in lines if l.startswith("| Elasticsearch ")).strip("|").split("|")]
    assert version[1:4] == ["8.17.2", "9.5.3", "8.19.21"]
    docs_per_s = [c.strip() for c in next(l for l in lines if l.startswith("| ingest docs/s")).strip("|").split("|")]
    assert float(docs_per_s[1].replace(",", "")) == pytest.approx(5000 / sum(walls), rel=1e-3)
    assert docs_per_s[4].startswith("1.300 [1.300, 1.300] slower") and docs_per_s[5].endswith("no difference beyond noise")


def test_a_paired_comparison_names_a_difference_only_beyond_its_interval():
    a = [20.0, 22.0, 19.0, 21.0, 20.5]
    assert uncertainty.compare_paired(a, [x * 1.2 for x in a]).verdict == uncertainty.SLOWER
    assert uncertainty.compare_paired(a, [x / 1.2 for x in a]).verdict == uncertainty.FASTER
    # epoch ratios 0.8 to 1.3: the interval holds 1, no verdict of a difference
    noisy = uncertainty.compare_paired(a, [x * r for x, r in zip(a, [0.8, 1.3, 0.9, 1.2, 1.0])])
    assert noisy.verdict == uncertainty.SAME and noisy.low < 1 < noisy.high
    assert uncertainty.compare_paired(a[:1], a[:1]).verdict is None and uncertainty.compare_paired(a, None).verdict is None
    assert uncertainty.compare_paired(a, a[:4]).verdict is None  # pairs need partners


def test_the_report_sections_are_collected_from_every_study_module_in_the_listed_order():
    """The studies' sections in REPORT_ORDER's order, every report module that declares SECTIONS among them: one not
    listed follows the listed ones, by name (no list to edit for it to join); a listed name with no such module is
    refused, named; so is a declaration of the wrong type."""
    from report import catalog
    from report.studies import profile

    names = [module.__name__.removeprefix("report.studies.") for module in catalog.STUDIES]
    listed = [name for name in names if name in catalog.REPORT_ORDER]
    assert listed == list(catalog.REPORT_ORDER)  # the listed ones first, in REPORT_ORDER's order
    assert names == listed + sorted(set(names) - set(listed))  # then a study's module that is not listed, by name
    assert set(profile.SECTIONS) <= set(catalog.SECTIONS)
    unlisted = tuple(name for name in catalog.REPORT_ORDER if name not in ("memory", "coverage"))
    moved = [module.__name__.removeprefix("report.studies.") for module in catalog.declaring("SECTIONS", unlisted)]
    assert moved[: len(unlisted)] == list(unlisted) and moved[len(unlisted) :] == sorted(set(names) - set(unlisted))
    with pytest.raises(RuntimeError, match="report/catalog.py names memroy: no report module of that name declares SECTIONS"):
        catalog.declaring("SECTIONS", ("ingest", "memroy"))


def test_charts_and_trend_figures_are_collected_from_the_modules_that_declare_them(monkeypatch):
    """Each study's charts and trend figures come from its own module (CHARTS, TREND_FIGURES), typed: a figure's unit
    and direction are declared, never read from its name; a declaration of the wrong type is refused, named. The
    listed studies' come first, in the catalog's order; a new study's follow them (no test to edit for it to join)."""
    from report import catalog
    from report.shared.figures import COST, PLACE, Figure
    from report.studies import coverage_answer, memory, widths

    def of_listed(table, order):  # the declarations of the studies the catalog lists: a new study's follow them
        return [
            item for module in catalog.declaring(table, order) if module.__name__.split(".")[-1] in order for item in getattr(module, table)
        ]

    assert catalog.CHARTS[: len(of_listed("CHARTS", catalog.CHART_ORDER))] == of_listed("CHARTS", catalog.CHART_ORDER)
    assert catalog.TREND_FIGURES[: len(of_listed("TREND_FIGURES", catalog.TREND_ORDER))] == tuple(
        of_listed("TREND_FIGURES", catalog.TREND_ORDER)
    )
    assert [chart.file for chart in of_listed("CHARTS", catalog.CHART_ORDER)] == [
        "coverage.png",
        "ingest.png",
        "rtt.png",
        "ccs.png",
        "load.png",
        "memory.png",
        "width.png",
    ]
    assert set(memory.CHARTS) <= set(catalog.CHARTS) and catalog.TREND_FIGURES[0] is coverage_answer.COVERAGE_TIME
    assert {f.name: (f.unit, f.direction) for f in of_listed("TREND_FIGURES", catalog.TREND_ORDER)} == {
        "coverage time (ms)": ("ms", COST),
        "ingest wall (s)": ("s", COST),
        "crossover width (nodes)": ("nodes", PLACE),
        "round trips (ms per ms of RTT)": ("ms/ms", COST),
        "large fetch wall (ms)": ("ms", COST),
        "profile took (ms)": ("ms", COST),
    }
    assert widths.CROSSOVER.discrete and not any(f.discrete for f in catalog.TREND_FIGURES if f is not widths.CROSSOVER)
    with pytest.raises(ValueError, match="figure 'heap': direction must be one of"):
        Figure("heap", "MB", "bigger", dict)
    monkeypatch.setattr(memory, "TREND_FIGURES", ("heap (MB)",), raising=False)
    with pytest.raises(RuntimeError, match=r"report.studies.memory.TREND_FIGURES holds 'heap \(MB\)': each must be a Figure"):
        catalog.declaring("TREND_FIGURES", catalog.TREND_ORDER)


def test_a_race_that_did_not_finish_has_no_answer(tmp_path, capsys):
    """Rally wrote no results (the node died mid-race): make report says so in the report's first lines and on the
    console, names the failed tasks with their first cause, gives no speed-up or fastest cell, and exits non-zero;
    a compare gives it no figure and no ratio."""
    source = next((Path(__file__).parents[1] / "fixtures" / "full-race" / ".rally/benchmarks/races").iterdir())
    for race_id in ("a1a1a1a1", "dead0000"):
        dst = tmp_path / ".rally" / "benchmarks" / "races" / f"{race_id}-0000-0000-0000-000000000000"
        shutil.copytree(source, dst)
        data = json.loads((dst / "race.json").read_text())
        (dst / "race.json").write_text(json.dumps({**data, "race-id": dst.name}))
    stopped_midway(dst)
    assert report_main(["--race", "dead0000", "--rally-home", str(tmp_path), "--out", str(tmp_path / "out")]) == 1
    out = capsys.readouterr().out
    assert "DID NOT FINISH" in out and "connection failed: refused" in out and "fastest" not in out, out
    text = next((tmp_path / "out").glob("dead0000*/report.md")).read_text()
    head = text.splitlines()[:12]
    assert any("DID NOT FINISH" in line for line in head) and any("connection failed: refused" in line for line in head), head
    assert "## Partial figures" in text and "faster" not in text and "Speedup" not in text
    report_main(["--race", "a1a1a1a1", "--race", "dead0000", "--compare", "--rally-home", str(tmp_path), "--out", str(tmp_path / "cmp")])
    line = next(l for l in capsys.readouterr().out.splitlines() if l.startswith("| coverage-D_td-msearch median"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[2] == "DID NOT FINISH" and cells[3] == "no verdict: a race DID NOT FINISH", cells
