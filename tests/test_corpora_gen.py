"""corpora-gen: determinism, ground truth against an independent computation, option checks, corruption detection."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import cmgen
from tests.conftest import REPO

GENERATE = str(REPO / "corpora-gen" / "generate")
SMALL = ["--epochs", "2", "--rows-per-epoch", "2500", "--nodes", "7", "--tasks", "11", "--seed", "7"]


def run(*args, env=None):
    return subprocess.run([sys.executable, GENERATE, *args], capture_output=True, text=True, env=env)


def tree_bytes(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_parameters_give_identical_files_across_processes(tmp_path):
    assert run(*SMALL, "--out", str(tmp_path / "a")).returncode == 0
    assert run(*SMALL, "--out", str(tmp_path / "b")).returncode == 0
    a, b = tree_bytes(tmp_path / "a"), tree_bytes(tmp_path / "b")
    assert a.keys() == b.keys() and len(a) == 6  # 2 epochs x (full + -1k) + manifest + ground truth
    assert a == b


def test_other_seed_gives_other_data(tmp_path):
    run(*SMALL, "--out", str(tmp_path / "a"))
    run(*SMALL[:-1], "8", "--out", str(tmp_path / "b"))
    name = "cluster-metrics-epoch-1/cluster-metrics-epoch-1.json"
    assert (tmp_path / "a" / name).read_bytes() != (tmp_path / "b" / name).read_bytes()


def _read_rows(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


@pytest.mark.parametrize("section,suffix", [("full", ""), ("test_mode", "-1k")])
def test_ground_truth_matches_an_independent_computation(tmp_path, section, suffix):
    run(*SMALL, "--out", str(tmp_path))
    truth = json.loads((tmp_path / "cluster-metrics" / "ground-truth.json").read_text())["epochs"][section]
    for epoch in (1, 2):
        rows = _read_rows(tmp_path / f"cluster-metrics-epoch-{epoch}" / f"cluster-metrics-epoch-{epoch}{suffix}.json")
        assert all(r["epoch"] == epoch for r in rows)
        nodes = sorted({r["node"] for r in rows})
        assert nodes == [f"N{i:03d}" for i in range(1, 8)]  # every node present, the -1k file included
        for node in nodes:
            expected = truth[str(epoch)][node]
            mine = [r for r in rows if r["node"] == node]
            assert expected["count"] == len(mine)
            for field in ("cpu", "mem", "net"):
                # as Elasticsearch stores a float field: the decimal text parsed, rounded to float32
                values = np.array([r[field] for r in mine], dtype=np.float32).astype(np.float64)
                assert expected["sum"][field] == pytest.approx(float(np.sum(values)), rel=1e-12)
                assert expected["sum"][field] == math.fsum(values)
                for p in (0, 50, 90, 100):
                    assert expected["percentiles"][field][str(p)] == pytest.approx(float(np.percentile(values, p)), rel=1e-12)


def test_float32_rounding_is_what_is_summed(tmp_path):
    run(*SMALL, "--out", str(tmp_path))
    truth = json.loads((tmp_path / "cluster-metrics" / "ground-truth.json").read_text())["epochs"]["full"]["1"]
    rows = _read_rows(tmp_path / "cluster-metrics-epoch-1" / "cluster-metrics-epoch-1.json")
    decimals = math.fsum(r["cpu"] for r in rows if r["node"] == "N001")
    float32s = math.fsum(float(np.float32(r["cpu"])) for r in rows if r["node"] == "N001")
    assert truth["N001"]["sum"]["cpu"] == float32s
    assert decimals != float32s  # the rounding is real, so a checker that ignores it would be wrong


def test_rows_per_node_are_balanced():
    columns = cmgen.epoch_columns(cmgen.Params(epochs=1, rows_per_epoch=1000, nodes=30, tasks=5), 1)
    counts = np.bincount(columns["node"], minlength=30)
    assert counts.min() >= 33 and counts.max() <= 34


@pytest.mark.slow  # generator processes
def test_rerun_is_a_noop_and_damage_is_detected_and_repaired(tmp_path):
    assert run(*SMALL, "--out", str(tmp_path)).returncode == 0
    again = run(*SMALL, "--out", str(tmp_path))
    assert "nothing to do" in again.stdout
    victim = tmp_path / "cluster-metrics-epoch-2" / "cluster-metrics-epoch-2.json"
    original = victim.read_bytes()
    victim.write_bytes(original[: len(original) // 2])
    check = run(*SMALL, "--out", str(tmp_path), "--check")
    assert check.returncode == 1
    assert "truncated or edited" in check.stderr and "corpora-gen/generate --out" in check.stderr
    edited = bytearray(original)
    edited[10] = ord("9") if edited[10] != ord("9") else ord("8")
    victim.write_bytes(bytes(edited))
    assert "sha256 differs from the manifest (edited)" in run(*SMALL, "--out", str(tmp_path), "--check").stderr
    repaired = run(*SMALL, "--out", str(tmp_path))
    assert "regenerating" in repaired.stderr and victim.read_bytes() == original


@pytest.mark.parametrize(
    "args,message",
    [
        (["--rows-per-epoch", "0"], "--rows-per-epoch must be a positive integer"),
        (["--epochs", "-1"], "--epochs must be a positive integer"),
        (["--nodes", "100000"], "--nodes must be at most 99,999"),
        (["--widths", "30,x"], "--widths must be comma-separated node counts"),
        (["--rows-per-node", "5"], "--rows-per-node goes with --widths"),
        (["--widths", "30", "--nodes", "30"], "--widths gives the node count of each set: drop --nodes"),
        (["--seed", "abc"], "--seed must be a non-negative integer"),
    ],
)
def test_bad_options_name_the_option(tmp_path, args, message):
    result = run(*args, "--out", str(tmp_path))
    assert result.returncode == 2 and message in result.stderr


def test_unwritable_out_is_named(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = run(*SMALL, "--out", str(blocker / "sub"))
    assert result.returncode == 2 and "--out" in result.stderr and "not writable" in result.stderr


def test_default_out_honours_rally_home(tmp_path):
    env = dict(os.environ, RALLY_HOME=str(tmp_path))
    assert run(*SMALL, env=env).returncode == 0
    assert (tmp_path / ".rally" / "benchmarks" / "data" / "cluster-metrics" / "manifest.json").is_file()


def test_parallel_generation_gives_the_same_bytes(tmp_path):
    assert run(*SMALL, "--jobs", "1", "--out", str(tmp_path / "one")).returncode == 0
    assert run(*SMALL, "--jobs", "2", "--out", str(tmp_path / "two")).returncode == 0
    assert tree_bytes(tmp_path / "one") == tree_bytes(tmp_path / "two")


# sha256 of the SMALL corpus as this generator and numpy 2.1.3 (requirements.txt) write it: a change in the bytes,
# from the generator or from numpy's random streams, is noticed here instead of in a benchmark's numbers
PINNED = {
    "cluster-metrics-epoch-1.json": "f091daa11116e0946f0700d9b33c2e5901b578937dbb54fd516e1e03cac40739",
    "cluster-metrics-epoch-1-1k.json": "203ff28214167010596638df161655a3017da9081ad7301ad92974cbded2d55b",
    "cluster-metrics-epoch-2.json": "f9346516b2169df07e3565e29ca0628b02f0a5cedefbdc8c1b053b8efb7b7e61",
    "cluster-metrics-epoch-2-1k.json": "209f9794d635f325c2acbd36cb4b0795613efe8b5bae0c84e022e430b350854e",
    "ground-truth.json": "0c61077cdf95e390847e070d7a45c87b59e3a849664afa2ea8d4f38d040c0f73",
}


def test_small_corpus_bytes_are_pinned(tmp_path):
    assert run(*SMALL, "--out", str(tmp_path)).returncode == 0
    manifest = json.loads((tmp_path / "cluster-metrics" / "manifest.json").read_text())
    written = {f["file"]: f["sha256"] for f in manifest["files"]}
    written["ground-truth.json"] = manifest["ground_truth"]["sha256"]
    assert written == PINNED
    assert manifest["made_with"] == {"numpy": np.__version__} and manifest["generator"]["version"] == cmgen.corpus.GENERATOR_VERSION == 3


def test_rank_grid_holds_the_exact_order_statistics(tmp_path):
    run(*SMALL, "--out", str(tmp_path))
    truth = json.loads((tmp_path / "cluster-metrics" / "ground-truth.json").read_text())["epochs"]["full"]["2"]
    rows = _read_rows(tmp_path / "cluster-metrics-epoch-2" / "cluster-metrics-epoch-2.json")
    for node in ("N001", "N007"):
        for field in ("cpu", "mem", "net"):
            cents = sorted(round(r[field] * 100) for r in rows if r["node"] == node)
            grid = truth[node]["ranks"][field]
            ranks = list(range(0, len(cents) - 1, grid["step"])) + [len(cents) - 1]
            assert grid["cents"] == [cents[i] for i in ranks]


def test_top_rows_are_each_nodes_highest_cpu_rows_with_the_ties(tmp_path):
    # 3,000 rows per node: the top 1000 are a real cut, and with cpu in hundredths some rows tie at the cut
    run("--epochs", "1", "--rows-per-epoch", "6000", "--nodes", "2", "--tasks", "5", "--seed", "4", "--out", str(tmp_path))
    truth = json.loads((tmp_path / "cluster-metrics" / "ground-truth.json").read_text())["epochs"]
    rows = _read_rows(tmp_path / "cluster-metrics-epoch-1" / "cluster-metrics-epoch-1.json")
    tied = 0
    for section, count in (("full", 6000), ("test_mode", 1000)):
        for node in ("N001", "N002"):
            mine = sorted(
                (
                    (-round(r["cpu"] * 100), r["task"], round(r["mem"] * 100), round(r["net"] * 100))
                    for r in rows[:count]
                    if r["node"] == node
                )
            )
            depth = min(len(mine), cmgen.corpus.FETCH_TRUTH_ROWS)
            depth += sum(1 for row in mine[depth:] if row[0] == mine[depth - 1][0])
            tied += depth - min(len(mine), cmgen.corpus.FETCH_TRUTH_ROWS)
            assert truth[section]["1"][node]["top"] == [[task, -cpu, mem, net] for cpu, task, mem, net in mine[:depth]]
    assert tied > 0  # the ties at the cut are kept


def test_another_numpy_version_is_reported(tmp_path):
    assert run(*SMALL, "--out", str(tmp_path)).returncode == 0
    path = tmp_path / "cluster-metrics" / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["made_with"]["numpy"] = "1.26.0"
    path.write_text(json.dumps(manifest))
    result = run(*SMALL, "--out", str(tmp_path), "--check")
    assert "made with numpy 1.26.0" in result.stderr and result.returncode == 0


@pytest.mark.slow  # generator processes
def test_width_sets_live_side_by_side_named_by_their_width_and_rows(tmp_path):
    """The coverage-width sweep's sets: one per width, beside the main corpus, each with its own index name; a set
    wider than Rally's 1,000 test-mode rows gets a test-mode file of one row per node, so test mode sees every node."""
    assert run(*SMALL, "--out", str(tmp_path)).returncode == 0
    result = run("--widths", "12,1200", "--rows-per-epoch", "3000", "--epochs", "1", "--tasks", "11", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    per_node = run("--widths", "12", "--rows-per-node", "100", "--epochs", "1", "--tasks", "11", "--out", str(tmp_path))
    assert per_node.returncode == 0, per_node.stderr
    for width, rows in ((12, 3000), (1200, 3000), (12, 1200)):
        name = cmgen.corpus.width_set(width, rows)
        manifest = cmgen.corpus.load_manifest(tmp_path, name)
        assert manifest["index"] == name and len(manifest["nodes"]) == width
        assert manifest["generator"]["rows_per_epoch"] == rows
        assert cmgen.corpus.check_files(tmp_path, manifest) == []
        test_file = cmgen.corpus.file_entry(manifest, 1, True)
        assert test_file["documents"] == max(1000, width)
        truth = cmgen.corpus.load_ground_truth(tmp_path, manifest)["epochs"]["test_mode"]["1"]
        assert sorted(truth) == manifest["nodes"] and all(entry["count"] > 0 for entry in truth.values())
    assert cmgen.corpus.load_manifest(tmp_path)["index"] == cmgen.corpus.INDEX  # the main corpus is untouched
    again = run("--widths", "12,1200", "--rows-per-epoch", "3000", "--epochs", "1", "--tasks", "11", "--out", str(tmp_path))
    assert again.stdout.count("up to date") == 2


@pytest.mark.slow  # generator processes
def test_track_load_measurement_reads_the_corpus_it_is_given(tmp_path):
    """corpora-gen/measure_track_load.py: the scaling table's load columns, for a corpus anywhere."""
    assert run(*SMALL, "--out", str(tmp_path)).returncode == 0
    tool = str(REPO / "corpora-gen" / "measure_track_load.py")
    params = '{"epochs": 2, "variants": ["D_td"]}'
    result = subprocess.run(
        [sys.executable, tool, "--data-root", str(tmp_path), "--challenge", "query-decomposition", "--track-params", params],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    measured = json.loads(result.stdout.strip().splitlines()[-1])
    truth = tmp_path / "cluster-metrics" / "ground-truth.json"
    assert measured["ground_truth_mb"] == round(truth.stat().st_size / 1e6, 1) and measured["corpora"] == 0
    assert measured["first_load_s"] > 0 and measured["ground_truth_of"] == "coverage-D_td-serial"
