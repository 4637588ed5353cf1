#!/usr/bin/env python3
"""Benchmark: the vectorized corpus writer against a naive per-row json.dumps writer of the same rows.

Not a test: it prints both wall times and their ratio, measured in one run on this machine.
It also checks that both writers wrote the same values (every line of epoch 1 parsed and compared).
"""
import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cmgen  # noqa: E402


def naive_write(params, out_dir, timings):
    """The seed's client path: one dict and one json.dumps per row."""
    profile = cmgen._cluster_profile(params)
    nodes, tasks = cmgen.node_names(params.nodes), [f"T{i:0{cmgen.name_width(params.tasks)}d}" for i in range(1, params.tasks + 1)]
    for epoch in range(1, params.epochs + 1):
        began = time.monotonic()
        cols = cmgen.epoch_columns(params, epoch, profile)
        timings["columns"] += time.monotonic() - began
        node, task = cols["node"].tolist(), cols["task"].tolist()
        cpu, mem, net = cols["cpu"].tolist(), cols["mem"].tolist(), cols["net"].tolist()
        with open(Path(out_dir) / cmgen.file_name(epoch), "w") as f:
            for i in range(params.rows_per_epoch):
                f.write(
                    json.dumps(
                        {
                            "epoch": epoch,
                            "node": nodes[node[i]],
                            "task": tasks[task[i]],
                            "cpu": cpu[i] / 100,
                            "mem": mem[i] / 100,
                            "net": net[i] / 100,
                        },
                        separators=(",", ":"),
                    )
                    + "\n"
                )


def same_values(fast_file, naive_file):
    with open(fast_file) as a, open(naive_file) as b:
        for count, (x, y) in enumerate(zip(a, b), 1):
            if json.loads(x) != json.loads(y):
                raise SystemExit(f"line {count} differs:\n{x}{y}")
    return count


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--rows-per-epoch", type=int, default=1_000_000)
    args = parser.parse_args()
    params = cmgen.Params(epochs=args.epochs, rows_per_epoch=args.rows_per_epoch)
    with tempfile.TemporaryDirectory() as tmp:
        fast_dir, naive_dir = Path(tmp) / "fast", Path(tmp) / "naive"
        naive_dir.mkdir()
        began = time.monotonic()
        cmgen.generate(params, fast_dir, jobs=1)
        fast = time.monotonic() - began
        began = time.monotonic()
        cmgen.generate(params, Path(tmp) / "parallel", jobs=os.cpu_count() or 1)
        parallel = time.monotonic() - began
        same = all((Path(tmp) / "parallel" / p.relative_to(fast_dir)).read_bytes() == p.read_bytes() for p in fast_dir.rglob("*.json"))
        began = time.monotonic()
        timings = {"columns": 0.0}
        naive_write(params, naive_dir, timings)
        naive = time.monotonic() - began
        lines = same_values(fast_dir / cmgen.corpus_name(1) / cmgen.file_name(1), naive_dir / cmgen.file_name(1))
    rows = params.epochs * params.rows_per_epoch
    print(f"rows: {rows:,} ({params.epochs} epochs); values identical on all {lines:,} lines of epoch 1")
    columns = timings["columns"]  # drawing the random columns: the same work on both sides
    print(f"vectorized generate (incl. ground truth, -1k files, sha256): {fast:6.1f} s")
    print(f"naive per-row json.dumps writer (corpus only):               {naive:6.1f} s")
    print(f"speedup end to end: {naive / fast:.1f}x")
    print(f"of which drawing the random columns, the same on both sides:   {columns:6.1f} s")
    print(
        f"vectorized generate, {os.cpu_count()} processes (make corpus's default):   {parallel:6.1f} s "
        f"(files byte-identical to 1 process: {same}); speedup end to end: {naive / parallel:.1f}x"
    )
    print(
        f"speedup of the writing alone (columns excluded, ground truth included on the fast side): "
        f"{(naive - columns) / (fast - columns):.1f}x"
    )


if __name__ == "__main__":
    main()
