"""The report's network sections: the RTT sweep and the cross-cluster comparison, each beside a simple model, and
what each network fault did.

Model (the issue's, stated so it can be wrong): a coverage costs its time at zero RTT plus one RTT per HTTP round trip
it waits for in sequence: serial 30 (one _search per node), msearch and terms 1. Through cross-cluster search with
minimized round trips, one round trip to the remote per search; without, the coordinating cluster talks to every
remote shard itself, so the cost grows with shards x RTT. The fitted slope (ms of coverage time per ms of RTT) is
the number of round trips the coverage really waited for.
"""

import math

import numpy as np
from scipy import stats

from report.shared import charts, readers, sections
from report.shared.figures import COST, Figure
from report.shared.sections import Chart, Section
from report.studies.coverage_answer import TOOK, WALL, median_text
from runners.contracts.queries import TRANSPORTS, VARIANTS, rtt_samples

SERIAL_ROUND_TRIPS = 30  # one _search per node of the 30-node coverage
SEED_001 = (
    "seed 001 (two single-node 7.2 clusters, 190 ms RTT, 200 shards, one geo-grid search): took 40-70 ms "
    "direct, 240-270 ms through CCS with minimized round trips, 8,800-8,900 ms without"
)


def model_round_trips(transport):
    return SERIAL_ROUND_TRIPS if transport == "serial" else 1


def _median(op):
    return None if op is None or readers.failed(op) else readers.service_ms(op, "median")


def _cell(op):
    return None if op is None else readers.failed_label(op) if readers.failed(op) else readers.service_ms(op, "median")


def _slope(points):
    """Least-squares ms of coverage time per ms of RTT over the valid points (None with fewer than two RTTs)."""
    points = [(r, m) for r, m in points if m is not None]
    if len({r for r, _ in points}) < 2:
        return None
    return float(np.polyfit([r for r, _ in points], [m for _, m in points], 1)[0])


def round_trips(race):
    """The RTT sweep's headline figure, for the history: {(variant, transport): (slope, low, high, points)}, the
    least-squares ms of coverage time per ms of RTT over the valid points (the round trips the coverage waited for;
    _slope's fit) with its 95% t-interval (None with fewer than three RTTs)."""
    found = {}
    for key, points in rtt_series(race).items():
        valid = [(r, _median(op)) for r, op in points if _median(op) is not None]
        if len({r for r, _ in valid}) < 2:
            continue
        fit = stats.linregress([r for r, _ in valid], [m for _, m in valid])
        half = float(stats.t.ppf(0.975, len(valid) - 2)) * fit.stderr if len(valid) > 2 else None
        found[key] = (float(fit.slope), None if half is None else fit.slope - half, None if half is None else fit.slope + half, len(valid))
    return found


def rtt_series(race):
    """{(variant, transport): [(rtt, op)]} of the RTT sweep tasks this race ran, in sweep order."""
    ops = race.op_metrics()
    series = {}
    for v in race.param("rtt_variants"):
        for t in race.param("rtt_transports"):
            points = [(r, ops.get(race.task_of(variant=v, transport=t, **{"rtt-ms": r}))) for r in race.param("rtt_ms")]
            if any(op for _, op in points):
                series[(v, t)] = points
    return series


def ccs_series(race):
    """{(variant, transport, minimize): [(rtt, op)]} of the cross-cluster tasks this race ran."""
    ops = race.op_metrics()
    series = {}
    for v in race.param("ccs_variants"):
        for t in race.param("ccs_transports"):
            for minimize in race.param("ccs_minimize_roundtrips"):
                points = [(r, ops.get(_ccs_task(race, v, t, r, **{"minimize-roundtrips": minimize}))) for r in race.param("ccs_rtt_ms")]
                if any(op for _, op in points):
                    series[(v, t, minimize)] = points
    return series


def _samples_row(race, label_columns, rtts="rtt_ms", iterations="rtt_iterations"):
    """Measured samples at each RTT, by the track's rule (a --test-mode race runs one)."""
    counts = [rtt_samples(r, race.param(iterations)) for r in race.param(rtts)]
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
    rtts = race.param("ccs_rtt_ms")
    header = ["variant", "transport", "minimize round trips", *[f"{r} ms" for r in rtts], "fitted ms per ms RTT"]
    body = [
        [v, t, str(m).lower(), *[_cell(op) for _, op in points], _slope([(r, _median(op)) for r, op in points])]
        for (v, t, m), points in series.items()
    ]
    body.append([*_samples_row(race, 3, "ccs_rtt_ms", "ccs_iterations"), ""])
    return header, body


# Seed 001's own point: 190 ms RTT, 200 shards on the remote, took and curl's wall per cell (ms, the ranges it gives;
# a far direct request paid a new TCP connection, as curl opens one). Its near cluster is our remote asked without
# the link (the seed's two clusters held the same index).
SEED_001_RTT_MS, SEED_001_SHARDS = 190, 200
SEED_001_CELLS = {
    "direct-near": ((40, 70), (130, 170)),
    "direct-far-new-connection": ((40, 70), (520, 550)),
    "minimize-true": ((240, 270), (330, 360)),
    "minimize-false": ((8800, 8900), (8900, 9000)),
}


def ccs_cells(race, v, t, rtt):
    """(cell label, task name) of every cell of one variant, transport and RTT, in the challenge's order."""
    cells = [(f"direct-{route}", _ccs_task(race, v, t, rtt, route=route)) for route in race.param("ccs_direct")]
    minimize = race.param("ccs_minimize_roundtrips")
    return cells + [(f"minimize-{str(m).lower()}", _ccs_task(race, v, t, rtt, **{"minimize-roundtrips": m})) for m in minimize]


def _ccs_task(race, v, t, rtt, **how):
    """The task of a ccs-roundtrips cell: through CCS (minimize-roundtrips) or direct (route), at an RTT."""
    return race.task_of(variant=v, transport=t, **{"rtt-ms": rtt}, **how)


def model_cell_round_trips(cell, shards):
    """Round trips over the link one request of the cell waits for in sequence, in the seed's network: none near; one
    far on a kept-alive connection, two on a new one (the TCP handshake, then the request); one through CCS with
    minimized round trips; without, the shard list, then the shard requests in waves of 5 per node."""
    return {
        "direct-near": 0,
        "direct-far": 1,
        "direct-far-new-connection": 2,
        "minimize-true": 1,
        "minimize-false": 1 + math.ceil(shards / 5),
    }[cell]


def _range_text(values):
    return f"{min(values):,.0f}-{max(values):,.0f}"


def ccs_point_table(race):
    """Seed 001's table at each RTT of the race: per variant, transport and cell, took and wall (median [95%] n, and
    the range as the seed gives it), the model's round trips, and the seed's ranges at its 190 ms."""
    shards = race.param("ccs_shards")
    header = ["RTT", "variant", "transport", "cell", "took (ms) [95%] n", "took range", "wall (ms) [95%] n", "wall range"]
    header += ["model round trips", f"seed 001 took ({SEED_001_RTT_MS} ms)", "seed wall"]
    body = []
    ops = race.op_metrics()
    for rtt in race.param("ccs_rtt_ms"):
        for v in race.param("ccs_variants"):
            for t in race.param("ccs_transports"):
                for cell, task in ccs_cells(race, v, t, rtt):
                    if task not in ops:
                        continue
                    took, wall = readers.measured(race, task, TOOK), readers.measured(race, task, WALL)
                    seed = SEED_001_CELLS.get(cell)
                    if readers.failed(ops[task]):
                        figures = [readers.failed_label(ops[task]), "", "", ""]
                    else:
                        figures = [
                            median_text(took),
                            _range_text(took) if took else "",
                            median_text(wall),
                            _range_text(wall) if wall else "",
                        ]
                    body.append(
                        [f"{rtt} ms", v, t, cell, *figures, model_cell_round_trips(cell, shards)]
                        + ([_range_text(seed[0]), _range_text(seed[1])] if seed else ["-", "-"])
                    )
    return (header, body) if body else None


def ccs_point_note(race):
    """What differs between the seed's point and ours, and what this machine cannot show."""
    shards = race.param("ccs_shards")
    return (
        f"Seed 001: two single-node Elasticsearch 7.2 clusters (t2.medium, Docker) in Ohio and Sydney, {SEED_001_RTT_MS} ms "
        f"RTT, {SEED_001_SHARDS} shards of 500,000 documents, one geo-grid search by curl (took, and `time` for the wall), "
        f"1 warm-up then 3 samples. Ours: two single-node 8.17.2 clusters (1 GB heap) on one 2-core host, the RTT added "
        f"by Toxiproxy, the remote's index in {shards} shards (its corpus: track parameter epochs), the 30-node coverage "
        "(terms: one search, as the seed's; msearch: 30 sub-searches), Rally's client. took: Elasticsearch's; wall: first "
        "byte sent to last byte received (curl's wall also held its process start and the seed's own link to Ohio: about "
        "90 ms of its near cell). Model: a cell's wall is about its took + round trips x RTT. direct-far-new-connection "
        "opens a new connection per request (the client's connections closed before each, as curl); Toxiproxy accepts the connection itself on "
        "loopback and dials the cluster at once, so the TCP handshake crosses no latency here: the seed's extra round "
        "trip (its far cell's 520-550 ms against CCS's 330-360 ms) cannot appear, and the two far cells should match. "
        "This kernel has no netem to delay the handshake itself. D_hdr (ccs_variants) at 200 shards does not fit 1 GB "
        "nodes: the remote's parent breaker rejects its shard results, and without minimized round trips the local "
        "node, which then reduces the 200 shards' histograms itself, outside every breaker, died of OutOfMemoryError.\n"
    )


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
    distances = [
        (sections.ratio(m - (base + model_round_trips(transport) * r), base + model_round_trips(transport) * r), r) for r, m in valid
    ]
    distances = [d for d in distances if d[0] is not None]  # a model of 0 ms has no relative distance
    return max(distances, key=lambda d: abs(d[0])) if distances else None


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


# this study's report sections, in report order
def faults_table(race):
    """network-faults: per fault, each coverage under it (every sample must fail) and the healed coverage after it (it
    must succeed), with Rally's error rate and median service time, and whether that is what the fault should give;
    then the document count after them all. None for a race without fault tasks."""
    ops = race.op_metrics()
    rows = []
    for fault in race.param("faults"):
        cells = [(v, t) for v in VARIANTS for t in TRANSPORTS]
        for name, op in [
            (f"{v} {t} under the fault", ops.get(race.task_of(variant=v, transport=t, fault=fault, phase="under"))) for v, t in cells
        ]:
            if op is not None:
                rate = op.get("error_rate") or 0
                held = "yes: every sample failed" if rate >= 1 else f"NO: {100 * (1 - rate):.0f}% of samples succeeded under the fault"
                rows.append([fault, name, f"{100 * rate:.0f}%", readers.service_ms(op, "median"), held])
        for name, op in [(f"{v} {t} healed", ops.get(race.task_of(variant=v, transport=t, fault=fault, phase="healed"))) for v, t in cells]:
            if op is not None:
                held = readers.failed_label(op) if readers.failed(op) else "yes: it succeeded"
                rows.append([fault, name, f"{100 * (op.get('error_rate') or 0):.0f}%", readers.op_median(op), held])
    if not rows:
        return None
    count = ops.get(race.task_of(measure="doc-count"))
    if count is not None:
        rows.append(
            [
                "(all)",
                "document count after the faults",
                f"{100 * (count.get('error_rate') or 0):.0f}%",
                None,
                readers.failed_label(count) if readers.failed(count) else "yes: the corpus's",
            ]
        )
    return ["fault", "coverage", "errors", "median (ms)", "as the fault should give"], rows


FAULTS_NOTE = (
    "Each fault is on the proxy for its own coverage only (fault_request_timeout: a coverage that hangs fails at that "
    "timeout). Under a fault every sample must fail, each with a description (Rally's log; a metrics store keeps it as "
    "error-description); its median is how long the failure took to surface. After each fault one coverage without it "
    "must succeed, and after them all the index must hold the corpus's documents. A row that is not what its fault "
    "should give says NO or FAILED."
)

SECTIONS = [
    Section(
        "Over the network: median coverage time (ms) at each round-trip time",
        rtt_table,
        "RTT sweep",
        rtt_note,
        summary=lambda race: rtt_note(race).splitlines()[-1],
    ),
    Section(
        "Cross-cluster search: median coverage time (ms) at each round-trip time between the clusters",
        ccs_table,
        "cross-cluster search",
        ccs_note,
    ),
    Section(
        "Cross-cluster search at seed 001's point: took and wall per cell, beside the seed's",
        ccs_point_table,
        "seed 001's cells",
        ccs_point_note,
    ),
    Section("Network faults: what each fault did, and the link healed", faults_table, "network faults", FAULTS_NOTE),
]


def round_trip_figures(race):
    """The round trips each RTT sweep cell waited for, with the fit's interval (round_trips)."""
    return {ROUND_TRIPS.cell(f"{variant} {transport}"): figure for (variant, transport), figure in round_trips(race).items()}


# rtt-sweep's headline in the history: ms of coverage time per ms of RTT
ROUND_TRIPS = Figure("round trips (ms per ms of RTT)", "ms/ms", COST, round_trip_figures)
TREND_FIGURES = (ROUND_TRIPS,)


def _lines_against_rtt(series, path, title, model=None):
    """Median service time against RTT, one line per series; failed points are left out and marked FAILED."""
    if not series:
        return None
    fig, ax = charts.plt.subplots(figsize=(9, 5))
    for label, points in series.items():
        valid = [(r, _median(op)) for r, op in points if _median(op) is not None]
        (line,) = ax.plot([r for r, _ in valid], [m for _, m in valid], "o-", label=" ".join(map(str, label)))
        if model and valid:
            rounds = model(label)
            base = model_base(valid, rounds)
            xs = [r for r, _ in points]
            ax.plot(xs, [base + rounds * r for r in xs], "--", color=line.get_color(), alpha=0.6)
        for r, op in points:
            if readers.failed(op):
                ax.annotate("FAILED", (r, 0.03), xycoords=("data", "axes fraction"), color="red", fontsize=7, rotation=90, ha="center")
    charts.axes(ax, "round-trip time added by Toxiproxy (ms)", "median service time per coverage (ms)")
    return charts.save(fig, path, title)


def rtt_lines(race, path):
    """The RTT sweep: measured (solid) and the model base + round trips x RTT (dashed, same colour)."""
    return _lines_against_rtt(
        rtt_series(race),
        path,
        f"Coverage time against RTT — race {race.race_id[:8]} " "(dashed: model)",
        model=lambda label: model_round_trips(label[1]),
    )


def ccs_lines(race, path):
    """Cross-cluster search with and without minimized round trips against the RTT between the clusters."""
    series = {(v, t, f"minimize {str(m).lower()}"): points for (v, t, m), points in ccs_series(race).items()}
    return _lines_against_rtt(series, path, f"Cross-cluster coverage against RTT — race {race.race_id[:8]}")


CHARTS = (
    Chart("rtt.png", rtt_lines, "Coverage time against round-trip time"),
    Chart("ccs.png", ccs_lines, "Cross-cluster coverage time against round-trip time"),
)
