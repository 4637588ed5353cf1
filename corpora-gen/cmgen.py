"""Deterministic generator of the cluster-metrics corpus, its manifest and its exact ground truth.

Rows are built column-wise with numpy and formatted into one byte matrix per chunk (fixed-width fields,
padding stripped with a single boolean mask), so 5M rows never mean 5M json.dumps calls.
"""

import hashlib
import json
import math
import os
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: the corpus contract
from runners.contracts import corpus  # noqa: E402
from runners.contracts.corpus import FIELDS, GROUND_TRUTH_PERCENTS, corpus_name, file_name  # noqa: E402

CHUNK_ROWS = 250_000
NET_MAX_CENTS = 99_999_999  # net is clipped below 1,000,000.00 so it fits its fixed-width field


@dataclass(frozen=True)
class Params:
    epochs: int = 5
    rows_per_epoch: int = 1_000_000
    nodes: int = 30
    tasks: int = 200
    seed: int = 42

    def validate(self):
        for name in ("epochs", "rows_per_epoch", "nodes", "tasks"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"--{name.replace('_', '-')} must be a positive integer, got {value!r}")
        if self.nodes > corpus.MAX_NODES:
            raise ValueError(f"--nodes must be at most {corpus.MAX_NODES:,} (names are N00001..N{corpus.MAX_NODES}), got {self.nodes}")
        if self.tasks > 9999:
            raise ValueError(f"--tasks must be at most 9999 (names are T0001..T9999), got {self.tasks}")
        if self.rows_per_epoch < self.nodes:
            raise ValueError(
                f"--rows-per-epoch ({self.rows_per_epoch}) must be at least --nodes ({self.nodes}) "
                "so that every node reports in every epoch"
            )
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"--seed must be a non-negative integer, got {self.seed!r}")


def name_width(count):
    return max(3, len(str(count)))


def node_names(nodes):
    return [f"N{i:0{name_width(nodes)}d}" for i in range(1, nodes + 1)]


# ------------------------------------------------------------------ values


def _cluster_profile(params):
    """Per-task base cpu load and net rate, per-node cpu factor and memory baseline: fixed for the whole corpus."""
    rng = np.random.default_rng([params.seed, 0])
    task_cpu = rng.gamma(shape=2.0, scale=12.0, size=params.tasks)  # most tasks light, a few heavy
    task_net = rng.lognormal(mean=1.5, sigma=1.0, size=params.tasks)  # MB/s, orders of magnitude apart
    node_cpu = rng.uniform(0.7, 1.3, size=params.nodes)  # faster and slower hardware
    node_mem = rng.uniform(25.0, 75.0, size=params.nodes)  # % memory in use at epoch 1
    node_mem_drift = rng.normal(0.0, 3.0, size=params.nodes)  # % per epoch, slow leak or release
    return task_cpu, task_net, node_cpu, node_mem, node_mem_drift


def epoch_columns(params, epoch, profile=None):
    """All rows of one epoch as integer columns: node index, task index, cpu/mem/net in hundredths."""
    task_cpu, task_net, node_cpu, node_mem, node_mem_drift = profile or _cluster_profile(params)
    rng = np.random.default_rng([params.seed, epoch])
    rows, nodes = params.rows_per_epoch, params.nodes
    # every block of `nodes` rows holds each node once, in a shuffled order: any prefix of k*nodes rows
    # (the -1k test file included) has every node, and each node gets rows/nodes rows (+1 for a remainder)
    blocks = -(-rows // nodes)
    node = np.argsort(rng.random((blocks, nodes)), axis=1).astype(np.int32).ravel()[:rows]
    task = rng.integers(0, params.tasks, size=rows, dtype=np.int32)
    progress = np.arange(rows, dtype=np.float64) / rows  # position within the epoch, for the memory drift
    cpu = task_cpu[task] * node_cpu[node] + rng.normal(0.0, 6.0, size=rows)
    mem = node_mem[node] + node_mem_drift[node] * (epoch - 1 + progress) + rng.normal(0.0, 1.5, size=rows)
    net = task_net[task] * rng.lognormal(0.0, 0.75, size=rows)
    return {
        "node": node,
        "task": task,
        "cpu": np.rint(np.clip(cpu, 0.0, 100.0) * 100).astype(np.int64),
        "mem": np.rint(np.clip(mem, 0.0, 100.0) * 100).astype(np.int64),
        "net": np.minimum(np.rint(np.clip(net, 0.0, None) * 100), NET_MAX_CENTS).astype(np.int64),
    }


def as_float32(cents):
    """The value Elasticsearch stores for the text "12.34" in a float field: parsed as double, rounded to float."""
    return (cents.astype(np.float64) / 100.0).astype(np.float32)


# ------------------------------------------------------------------ formatting

_SPACE = ord(" ")
_DIGITS = np.frombuffer(b"0123456789", dtype=np.uint8)


def _fixed_digits(count, width):
    """(count, width) ASCII table: row v holds v zero-padded, e.g. 7 -> b"007"."""
    values = np.arange(count, dtype=np.int64)[:, None] // 10 ** np.arange(width - 1, -1, -1) % 10
    return _DIGITS[values]


def _blank_leading_zeros(table, keep_last):
    """Leading zeros become spaces, except the last `keep_last` columns ("0.25", never ".25")."""
    table = table.copy()
    lead = np.cumsum(table[:, :-keep_last] != ord("0"), axis=1) == 0
    table[:, :-keep_last][lead] = _SPACE
    return table


def _cents_table(count, int_width):
    """(count, int_width + 3) ASCII table: row c holds c/100 as d.dd, left-padded with spaces."""
    digits = _fixed_digits(count, int_width + 2)
    table = np.hstack([digits[:, :int_width], np.full((count, 1), ord("."), np.uint8), digits[:, int_width:]])
    return _blank_leading_zeros(table, keep_last=4)


_PERCENT_TABLE = _cents_table(10_001, 3)  # cpu, mem: 0.00 .. 100.00
_LOW_PADDED = _cents_table(10_000, 2)  # net below 100.00, or the low part of a larger value
_LOW_FULL = _fixed_digits(10_000, 4)  # low part after a non-zero high part: "0512" -> 05.12
_LOW_FULL = np.hstack([_LOW_FULL[:, :2], np.full((10_000, 1), ord("."), np.uint8), _LOW_FULL[:, 2:]])
_HIGH = _blank_leading_zeros(_fixed_digits(10_000, 4), keep_last=1)
_HIGH[0] = _SPACE  # no high part at all


def _net_field(cents):
    """(rows, 9) ASCII of net (below 1,000,000.00) as d.dd, left-padded with spaces."""
    high, low = np.divmod(cents, 10_000)
    low_part = np.where((high > 0)[:, None], _LOW_FULL[low], _LOW_PADDED[low])
    return np.hstack([_HIGH[high], low_part])


def format_rows(epoch, columns, start, stop, nodes, tasks):
    """NDJSON bytes of rows [start, stop): table look-ups fill one fixed-width byte matrix, whose padding
    spaces are then removed in one pass (no key or name holds a space)."""
    node_w, task_w = name_width(nodes), name_width(tasks)
    pieces = [
        f'{{"epoch":{epoch},"node":"N'.encode(),
        _fixed_digits(nodes + 1, node_w)[columns["node"][start:stop] + 1],
        b'","task":"T',
        _fixed_digits(tasks + 1, task_w)[columns["task"][start:stop] + 1],
        b'","cpu":',
        _PERCENT_TABLE[columns["cpu"][start:stop]],
        b',"mem":',
        _PERCENT_TABLE[columns["mem"][start:stop]],
        b',"net":',
        _net_field(columns["net"][start:stop]),
        b"}\n",
    ]
    width = sum(len(p) if isinstance(p, bytes) else p.shape[1] for p in pieces)
    matrix = np.empty((stop - start, width), dtype=np.uint8)
    col = 0
    for piece in pieces:
        if isinstance(piece, bytes):
            matrix[:, col : col + len(piece)] = np.frombuffer(piece, dtype=np.uint8)
            col += len(piece)
        else:
            matrix[:, col : col + piece.shape[1]] = piece
            col += piece.shape[1]
    # bytes.replace runs in C over the whole buffer: ~5x faster than a numpy boolean mask here
    return matrix.tobytes().replace(b" ", b"")


# ------------------------------------------------------------------ ground truth


def exact_percentiles(sorted_values):
    """Linear interpolation between closest ranks (numpy's default method): rank = p/100 * (n - 1);
    p0 is the minimum, p100 the maximum."""
    n = len(sorted_values)
    values = {}
    for p in GROUND_TRUTH_PERCENTS:
        rank = p / 100 * (n - 1)
        lo = int(math.floor(rank))
        hi = min(lo + 1, n - 1)
        low, high = float(sorted_values[lo]), float(sorted_values[hi])
        values[str(p)] = low + (high - low) * (rank - lo)
    return values


def rank_grid(sorted_cents):
    """The sorted values (hundredths) at ranks 0, step, 2 step, ... and n - 1: order statistics for rank bounds."""
    n = len(sorted_cents)
    step = corpus.rank_grid_step(n)
    ranks = np.append(np.arange(0, n - 1, step), n - 1)
    return {"step": step, "cents": sorted_cents[ranks].tolist()}


def _top_rows(columns, rows, bounds, nodes, tasks, result):
    """Each node's rows with the corpus.FETCH_TRUTH_ROWS highest cpu values and every row tied with the last of them,
    in the order the corpus contract names (cpu descending, then task, mem, net): one lexsort for all nodes."""
    keys = {name: columns[name][:rows].astype(np.int64) for name in ("node", "task", "cpu", "mem", "net")}
    order = np.lexsort((keys["net"], keys["mem"], keys["task"], -keys["cpu"], keys["node"]))
    task_names = [f"T{i:0{name_width(tasks)}d}" for i in range(1, tasks + 1)]
    for i, name in enumerate(node_names(nodes)):
        mine = order[bounds[i] : bounds[i + 1]]
        depth = min(len(mine), corpus.FETCH_TRUTH_ROWS)
        last_cpu = keys["cpu"][mine[depth - 1]]
        depth += int(np.count_nonzero(keys["cpu"][mine[depth:]] == last_cpu))  # sorted: the ties follow at once
        top = mine[:depth]
        result[name]["top"] = [
            [task_names[t], c, m, n] for t, c, m, n in zip(*(keys[k][top].tolist() for k in ("task", "cpu", "mem", "net")))
        ]


def ground_truth(columns, rows, nodes, tasks):
    """Per node of the first `rows` rows: count, sums, exact percentiles, the rank grid of the float32 values
    Elasticsearch stores (float32 rounding keeps the order of the hundredths, so cents sort like the values) and
    the top rows by cpu."""
    node = columns["node"][:rows].astype(np.int64)
    counts = np.bincount(node, minlength=nodes)
    bounds = np.concatenate([[0], np.cumsum(counts)])
    result = {name: {"count": int(counts[i]), "sum": {}, "percentiles": {}, "ranks": {}} for i, name in enumerate(node_names(nodes))}
    _top_rows(columns, rows, bounds, nodes, tasks, result)
    for field in FIELDS:
        # one sort on (node, value) orders every node's values at once
        keyed = np.sort((node << 32) | columns[field][:rows])
        cents = keyed & 0xFFFFFFFF
        values = as_float32(cents).astype(np.float64)
        for i, name in enumerate(node_names(nodes)):
            group = values[bounds[i] : bounds[i + 1]]
            result[name]["sum"][field] = math.fsum(group.tolist())  # exact; ES accumulates in double
            result[name]["percentiles"][field] = exact_percentiles(group)
            result[name]["ranks"][field] = rank_grid(cents[bounds[i] : bounds[i + 1]])
    return result


# ------------------------------------------------------------------ files


def _atomic_write(path, data):
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _generate_epoch(params, out, epoch, corpus_set):
    """One epoch's files (full and -1k) and ground truth; epochs are independent, so they can run in parallel."""
    columns = epoch_columns(params, epoch)
    folder = Path(out) / corpus_name(epoch, corpus_set)
    folder.mkdir(parents=True, exist_ok=True)
    files, truth = [], {}
    test_rows = corpus.test_mode_rows(params.nodes)
    for test_mode in (False, True):
        if test_mode and params.rows_per_epoch <= test_rows:
            continue
        rows = test_rows if test_mode else params.rows_per_epoch
        path = folder / file_name(epoch, test_mode, corpus_set)
        digest, size = hashlib.sha256(), 0
        tmp = path.with_suffix(".json.tmp")
        with open(tmp, "wb", buffering=16 << 20) as f:
            for start in range(0, rows, CHUNK_ROWS):
                data = format_rows(epoch, columns, start, min(rows, start + CHUNK_ROWS), params.nodes, params.tasks)
                f.write(data)
                digest.update(data)
                size += len(data)
        os.replace(tmp, path)
        files.append(
            {
                "corpus": corpus_name(epoch, corpus_set),
                "epoch": epoch,
                "file": path.name,
                "test_mode": test_mode,
                "documents": rows,
                "bytes": size,
                "sha256": digest.hexdigest(),
            }
        )
        truth["test_mode" if test_mode else "full"] = ground_truth(columns, rows, params.nodes, params.tasks)
    return epoch, files, truth


def generate(params, out, progress=None, jobs=1, corpus_set=corpus.INDEX):
    """Writes every corpus file of the set, its ground truth and, last, its manifest. Returns the manifest.
    jobs > 1 generates epochs in that many processes; the bytes do not depend on it."""
    params.validate()
    out = Path(out)
    results = {}
    if jobs > 1 and params.epochs > 1:
        with ProcessPoolExecutor(max_workers=min(jobs, params.epochs)) as pool:
            futures = [pool.submit(_generate_epoch, params, out, e, corpus_set) for e in range(1, params.epochs + 1)]
            for future in as_completed(futures):
                epoch, files, truth = future.result()
                results[epoch] = (files, truth)
                if progress:
                    progress(len(results) * params.rows_per_epoch, params.epochs * params.rows_per_epoch)
    else:
        for e in range(1, params.epochs + 1):
            results[e] = _generate_epoch(params, out, e, corpus_set)[1:]
            if progress:
                progress(e * params.rows_per_epoch, params.epochs * params.rows_per_epoch)
    files = [f for e in sorted(results) for f in results[e][0]]
    truth = {
        section: {str(e): results[e][1][section] for e in sorted(results) if section in results[e][1]} for section in ("full", "test_mode")
    }
    corpus.manifest_path(out, corpus_set).parent.mkdir(parents=True, exist_ok=True)
    # compact: the rank grids are ~450k numbers at full scale
    truth_bytes = json.dumps(
        {"generator": asdict(params), "percents": list(GROUND_TRUTH_PERCENTS), "epochs": truth}, sort_keys=True, separators=(",", ":")
    ).encode()
    _atomic_write(corpus.ground_truth_path(out, corpus_set), truth_bytes)
    manifest = {
        "generator": generator_record(params),
        "made_with": made_with(),
        "index": corpus_set,
        "nodes": node_names(params.nodes),
        "files": files,
        "ground_truth": {"file": corpus.GROUND_TRUTH, "sha256": hashlib.sha256(truth_bytes).hexdigest()},
    }
    _atomic_write(corpus.manifest_path(out, corpus_set), json.dumps(manifest, sort_keys=True, indent=2).encode())
    return manifest


def generator_record(params):
    """The parameters as the manifest records them: same record, same files (given the same numpy)."""
    return dict(asdict(params), version=corpus.GENERATOR_VERSION)


def made_with():
    """What made the bytes besides the parameters: numpy's random streams and distributions may change between
    numpy versions (numpy's policy allows it), so the version is recorded and a difference reported."""
    return {"numpy": np.__version__}


def made_with_difference(manifest):
    """A sentence when the corpus was made by another numpy than this one, else None."""
    theirs = (manifest or {}).get("made_with", {}).get("numpy")
    if theirs and theirs != np.__version__:
        return (
            f"the corpus was made with numpy {theirs}, this is numpy {np.__version__}: the same parameters may "
            "give other bytes (the sha256 check tells; regenerate with --force to make it with this numpy)"
        )
    return None


def manifest_matches_params(manifest, params):
    return manifest is not None and manifest.get("generator") == generator_record(params)
