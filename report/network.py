"""The report's network sections: the RTT sweep and the cross-cluster comparison, each beside a simple model.

Model (the issue's, stated so it can be wrong): a coverage costs its time at zero RTT plus one RTT per HTTP round trip
it waits for in sequence: serial 30 (one _search per node), msearch and terms 1. Through cross-cluster search with
minimized round trips, one round trip to the remote per search; without, the coordinating cluster talks to every
remote shard itself, so the cost grows with shards x RTT. The fitted slope (ms of coverage time per ms of RTT) is
the number of round trips the coverage really waited for.
"""

import numpy as np

from report import tables
from runners.queries import rtt_samples
from runners.tasks import ccs_task_name, rtt_task_name

SERIAL_ROUND_TRIPS = 30  # one _search per node of the 30-node coverage
SEED_001 = (
    "seed 001 (two single-node 7.2 clusters, 190 ms RTT, 200 shards, one geo-grid search): took 40-70 ms "
    "direct, 240-270 ms through CCS with minimized round trips, 8,800-8,900 ms without"
)


def model_round_trips(transport):
    return SERIAL_ROUND_TRIPS if transport == "serial" else 1


def _median(op):
    return None if op is None or tables.failed(op) else tables.service_ms(op, "median")


def _cell(op):
    return None if op is None else tables.failed_label(op) if tables.failed(op) else tables.service_ms(op, "median")


def _slope(points):
    """Least-squares ms of coverage time per ms of RTT over the valid points (None with fewer than two RTTs)."""
    points = [(r, m) for r, m in points if m is not None]
    if len({r for r, _ in points}) < 2:
        return None
    return float(np.polyfit([r for r, _ in points], [m for _, m in points], 1)[0])


def rtt_series(race):
    """{(variant, transport): [(rtt, op)]} of the RTT sweep tasks this race ran, in sweep order."""
    ops = race.op_metrics()
    series = {}
    for v in race.param("rtt_variants"):
        for t in race.param("rtt_transports"):
            points = [(r, ops.get(rtt_task_name(v, t, r))) for r in race.param("rtt_ms")]
            if any(op for _, op in points):
                series[(v, t)] = points
    return series


def ccs_series(race):
    """{(variant, transport, minimize): [(rtt, op)]} of the cross-cluster tasks this race ran."""
    ops = race.op_metrics()
    series = {}
    for v in race.param("rtt_variants"):
        for t in race.param("ccs_transports"):
            for minimize in race.param("ccs_minimize_roundtrips"):
                points = [(r, ops.get(ccs_task_name(v, t, minimize, r))) for r in race.param("rtt_ms")]
                if any(op for _, op in points):
                    series[(v, t, minimize)] = points
    return series


def _samples_row(race, label_columns):
    """Measured samples at each RTT, by the track's rule (a --test-mode race runs one)."""
    counts = [rtt_samples(r, race.param("rtt_iterations")) for r in race.param("rtt_ms")]
    return ["samples per point", *[""] * (label_columns - 1), *counts]


def rtt_table(race):
    series = rtt_series(race)
    if not series:
        return None
    rtts = race.param("rtt_ms")
    header = ["variant", "transport", *[f"{r} ms" for r in rtts], "fitted ms per ms RTT", "model"]
    body = []
    for (v, t), points in series.items():
        body.append([v, t, *[_cell(op) for _, op in points], _slope([(r, _median(op)) for r, op in points]), model_round_trips(t)])
    body.append([*_samples_row(race, 2), "", ""])
    return header, body


def ccs_table(race):
    series = ccs_series(race)
    if not series:
        return None
    rtts = race.param("rtt_ms")
    header = ["variant", "transport", "minimize round trips", *[f"{r} ms" for r in rtts], "fitted ms per ms RTT"]
    body = [
        [v, t, str(m).lower(), *[_cell(op) for _, op in points], _slope([(r, _median(op)) for r, op in points])]
        for (v, t, m), points in series.items()
    ]
    body.append([*_samples_row(race, 3), ""])
    return header, body


def model_base(points, round_trips):
    """The model's coverage time at zero RTT: the median over the valid points of measured - round trips x RTT, so
    that one noisy point (the first task of a race runs cold) does not tilt the whole model."""
    rest = [m - round_trips * r for r, m in points if m is not None]
    return float(np.median(rest)) if rest else None


def _departures(points, transport):
    """(largest relative distance of measurement from model, at which RTT)."""
    valid = [(r, _median(op)) for r, op in points if _median(op) is not None]
    if len(valid) < 2:
        return None
    base = model_base(valid, model_round_trips(transport))
    distances = [((m - (base + model_round_trips(transport) * r)) / (base + model_round_trips(transport) * r), r) for r, m in valid]
    return max(distances, key=lambda d: abs(d[0]))


def rtt_note(race):
    """What the sweep shows against the model, in sentences computed from this race."""
    series = rtt_series(race)
    lines = [
        f"Model: a base time + RTT x round trips ({SERIAL_ROUND_TRIPS} for serial, 1 for msearch and terms); the "
        "base is the median over the points of measured - round trips x RTT. The RTT is added by Toxiproxy on one open connection: half on the way up, half down; no TCP "
        "handshake is repeated (the client keeps its connections)."
    ]
    for (v, t), points in series.items():
        slope = _slope([(r, _median(op)) for r, op in points])
        worst = _departures(points, t)
        if slope is None or worst is None:
            continue
        lines.append(
            f"- {v} {t}: {slope:.1f} ms per ms of RTT (model {model_round_trips(t)}); farthest from the model "
            f"at {worst[1]} ms RTT ({100 * worst[0]:+.0f}%, {_median(dict(points)[worst[1]]):.0f} ms measured)."
        )
    ratio = serial_msearch_ratio(race, 50)
    if ratio:
        lines.append("- serial / msearch at 50 ms RTT: " + "; ".join(f"{v} {x:.1f}x" for v, x in ratio.items()) + ".")
    return "\n".join(lines) + "\n"


def serial_msearch_ratio(race, rtt):
    series = rtt_series(race)
    ratios = {}
    for v in race.param("rtt_variants"):
        serial = dict(series.get((v, "serial"), [])).get(rtt)
        msearch = dict(series.get((v, "msearch"), [])).get(rtt)
        if _median(serial) and _median(msearch):
            ratios[v] = _median(serial) / _median(msearch)
    return ratios


def ccs_note(race):
    lines = [
        "Model: with minimized round trips, about one round trip to the remote per search; without, the "
        "coordinating cluster sends a shard-level request to every remote shard itself, at most "
        "max_concurrent_shard_requests (5) per node at once, so a search waits about 1 + shards / 5 round trips. "
        "An _msearch runs its 30 sub-searches max_concurrent_searches at a time (by default "
        "min(10, search threads) per data node of the coordinating cluster), so it pays those round trips once "
        "per wave of sub-searches; a terms request is one search. A cell whose remote answer was skipped or "
        "partial (skip_unavailable turns a remote failure into an HTTP 200 with fewer hits) is FAILED. "
        f"Beside it, {SEED_001}."
    ]
    for (v, t, m), points in ccs_series(race).items():
        slope = _slope([(r, _median(op)) for r, op in points])
        if slope is not None:
            lines.append(f"- {v} {t}, minimize {str(m).lower()}: {slope:.1f} round trips per coverage.")
    pairs = {}
    for (v, t, m), points in ccs_series(race).items():
        for r, op in points:
            pairs.setdefault((v, t, r), {})[m] = _median(op)
    slowest = max((r for (_, _, r) in pairs), default=None)
    for (v, t, r), by_setting in pairs.items():
        if r == slowest and by_setting.get(True) and by_setting.get(False):
            lines.append(
                f"- at {r} ms: {v} {t} without minimized round trips takes " f"{by_setting[False] / by_setting[True]:.1f}x as long as with."
            )
    return "\n".join(lines) + "\n"
