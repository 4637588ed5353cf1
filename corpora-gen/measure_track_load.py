#!/usr/bin/env python3
"""What a corpus costs the track when a race loads it, without a cluster: the scaling table's load-time columns.

    .venv/bin/python corpora-gen/measure_track_load.py [--data-root DIR] [--challenge full] [--track-params JSON]

Loads the real track as a race does (Rally's track reader, then the track processor, with a race id), twice with
the same race id: the first load checks every corpus file (sha256) and the ground truth, the second trusts the
race's note (runners/processor.py, CorpusChecks). Then Rally's own look for the corpora a race uses
(loader.used_corpora: it instantiates every task's parameter source), and one coverage's ground truth parsed
(size, seconds, resident memory it added). Prints one JSON line.
"""

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from esrally import config, paths  # noqa: E402
from esrally.track import loader  # noqa: E402
from esrally.track import params as rally_params  # noqa: E402

from runners.contracts import corpus  # noqa: E402
from runners.contracts.context import RaceContext  # noqa: E402
from runners.operations import OPERATIONS  # noqa: E402
from runners.processor import ClusterMetricsProcessor  # noqa: E402

TRACK_DIR = REPO / "tracks" / "cluster-metrics"


def load(root, race_root, track_params, challenge, race_id):
    """The track as a race loads it; returns (track, seconds)."""
    cfg = config.Config()
    for section, key, value in [
        ("node", "rally.root", paths.rally_root()),
        ("node", "root.dir", str(race_root)),
        ("track", "params", track_params),
        ("track", "test.mode.enabled", False),
        ("track", "challenge.name", challenge),
        ("system", "race.id", race_id),
        ("benchmarks", "local.dataset.cache", str(root)),
    ]:
        cfg.add(config.Scope.application, section, key, value)
    began = time.perf_counter()
    track = loader.TrackFileReader(cfg).read("cluster-metrics", str(TRACK_DIR / "track.json"), str(TRACK_DIR))
    processor = ClusterMetricsProcessor()
    processor.cfg = cfg
    processor.on_after_load_track(track)
    return track, time.perf_counter() - began


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-root", type=Path, default=None, help="default: Rally's, honouring RALLY_HOME")
    parser.add_argument("--challenge", default="full")
    parser.add_argument("--track-params", type=json.loads, default={})
    args = parser.parse_args(argv)
    for name, operation in OPERATIONS.items():
        if operation.param_source:
            rally_params.register_param_source_for_name(name, operation.param_source)
    root = args.data_root or corpus.data_root()
    with tempfile.TemporaryDirectory(prefix="cluster-metrics-load-") as race_root:
        track, first = load(root, race_root, args.track_params, args.challenge, "measure")
        _, later = load(root, race_root, args.track_params, args.challenge, "measure")
        began = time.perf_counter()
        used = list(loader.used_corpora(track))
        used_seconds = time.perf_counter() - began
        # a parallel element (the interleaved cells) holds its tasks
        tasks = (t for c in track.challenges if c.name == args.challenge for e in c.schedule for t in getattr(e, "tasks", [e]))
        task = next(t for t in tasks if t.operation.type == "coverage")
        context = RaceContext.of(task.operation.params)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        began = time.perf_counter()
        context.truth()
        parse = time.perf_counter() - began
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    print(
        json.dumps(
            {
                "first_load_s": round(first, 2),
                "later_load_s": round(later, 2),
                "used_corpora_s": round(used_seconds, 2),
                "corpora": len(used),
                "ground_truth_of": task.name,
                "ground_truth_mb": round(Path(context.ground_truth).stat().st_size / 1e6, 1),
                "ground_truth_parse_s": round(parse, 2),
                "ground_truth_rss_mb": round(grown / 1024),
            }
        )
    )


if __name__ == "__main__":
    main()
