"""The report's load sections: latency against offered rate per cell, each cell's redline, and the live challenge's
ingest and query figures with and without the other.

Latency is Rally's: from the moment the schedule meant to send a coverage to its last byte, so it includes waiting
behind earlier coverages; service time is the coverage alone. Rally keeps a p99 only from 100 samples on; with fewer,
the redline uses the largest latency (never below the p99), and the table says which one it used.
"""

from report.shared import charts, readers, sections
from report.shared.sections import Chart, Section
from report.studies import hosts
from runners.contracts.queries import TRANSPORTS


def tail_latency(op):
    """(ms, "p99" or "max"): Rally's p99 when it has one, else the largest latency."""
    latency = op.get("latency", {})
    if "99_0" in latency:
        return latency["99_0"], "p99"
    return latency.get("100_0", latency.get("mean")), "max"


def cells(race):
    """{(variant, transport): {"calibration": op, "steps": [(percent, op, step record)]}} of this race."""
    ops = race.op_metrics()
    found = {}
    for v in race.param("load_variants"):
        for t in race.param("load_transports"):
            tasks = [(p, race.task_of(variant=v, transport=t, **{"load-percent": p})) for p in race.param("load_steps")]
            steps = [(p, ops.get(task), hosts.load_steps(race).get(task)) for p, task in tasks]
            steps = [s for s in steps if s[1]]
            if steps:
                found[(v, t)] = {"calibration": ops.get(race.task_of(variant=v, transport=t, measure="calibration")), "steps": steps}
    return found


def step_coverages(race):
    """Coverages a step ran: load_iterations rounded up to a multiple of the clients (Rally counts per client)."""
    clients = race.param("load_clients")
    return -(-race.param("load_iterations") // clients) * clients


def achieved_rate(race, op):
    """Coverages per second over the step's duration (Rally's own throughput is a running average that starts
    low, which reads as a shortfall on short steps)."""
    duration_ms = op.get("duration")  # race.json keeps a task's duration in milliseconds
    return step_coverages(race) / (duration_ms / 1000) if duration_ms else None


def load_table(race):
    found = cells(race)
    if not found:
        return None
    header = [
        "variant",
        "transport",
        "step",
        "target /s",
        "achieved /s",
        "latency p50 (ms)",
        "latency tail (ms)",
        "service p50 (ms)",
        "errors",
    ]
    body = []
    for (v, t), cell in found.items():
        for percent, op, record in cell["steps"]:
            tail, which = tail_latency(op)
            body.append(
                [
                    v,
                    t,
                    f"{percent}%",
                    record["target_per_s"] if record else None,
                    achieved_rate(race, op),
                    op.get("latency", {}).get("50_0"),
                    f"{sections.fmt(tail)} ({which})",
                    readers.service_ms(op, "median"),
                    readers.failed_label(op) if readers.failed(op) else "0",
                ]
            )
    return header, body


def redline(cell, limit_ms):
    """(highest target rate whose tail latency is under limit_ms with no failed sample, whether a step above it
    exists that failed the test); None when no step passes. Every step up to the redline must pass too: a rate is
    only sustainable if the lower ones were."""
    best, exceeded = None, False
    for _, op, record in cell["steps"]:
        tail, _ = tail_latency(op)
        if readers.failed(op) or tail is None or tail >= limit_ms or record is None:
            exceeded = True
            break
        best = record["target_per_s"]
    return best, exceeded


def redline_table(race):
    found = cells(race)
    if not found:
        return None
    limit = race.param("redline_latency_ms")
    header = ["variant", "transport", "one client /s (calibration)", f"redline /s (tail latency < {limit} ms, 0 errors)"]
    body = []
    for (v, t), cell in found.items():
        calibration = cell["calibration"]
        calibrated = next((r["calibrated_per_s"] for _, _, r in cell["steps"] if r), None)
        if calibration is None or readers.failed(calibration):
            body.append([v, t, "FAILED" if calibration else None, "FAILED"])
            continue
        rate, exceeded = redline(cell, limit)
        text = (
            "none: the lowest step already fails"
            if rate is None
            else (rate if exceeded else f">= {sections.fmt(rate)} (every step passed)")
        )
        body.append([v, t, calibrated, text])
    return header, body


def _live_ops(race):
    """The live challenge's four tasks, found by their cells (its coverages' cells carry the race's live variant and
    transport)."""
    ops = race.op_metrics()
    coverage = {"variant": race.param("live_variant"), "transport": race.param("live_transport")}
    found = {
        "ingest alone": ops.get(race.task_of(live="ingest-alone")),
        "ingest with queries": ops.get(race.task_of(live="ingest-with-queries")),
        "queries alone": ops.get(race.task_of(**coverage, live="queries-alone")),
        "queries with ingest": ops.get(race.task_of(**coverage, live="queries-with-ingest")),
    }
    return found if any(found.values()) else None


def live_table(race):
    found = _live_ops(race)
    if not found:
        return None
    header = ["", "alone", "with the other", "ratio with / alone"]

    def pair(a, b, value):
        x, y = value(found[a]), value(found[b])
        failed = readers.failed(found[a]) or readers.failed(found[b])
        ratio = y / x if isinstance(x, (int, float)) and isinstance(y, (int, float)) and x and not failed else None
        return [
            readers.failed_label(found[a]) if readers.failed(found[a]) else x,
            readers.failed_label(found[b]) if readers.failed(found[b]) else y,
            ratio,
        ]

    throughput = lambda op: op and op.get("throughput", {}).get("median")  # noqa: E731
    body = [
        ["ingest (docs/s, median)", *pair("ingest alone", "ingest with queries", throughput)],
        ["coverage latency p50 (ms)", *pair("queries alone", "queries with ingest", lambda op: op and op.get("latency", {}).get("50_0"))],
        ["coverage latency tail (ms)", *pair("queries alone", "queries with ingest", lambda op: op and tail_latency(op)[0])],
        ["coverage service p50 (ms)", *pair("queries alone", "queries with ingest", lambda op: readers.service_ms(op, "median"))],
    ]
    return header, body


LOAD_NOTE = (
    "target: the step's rate (its percent of the cell's calibrated one-client rate), as Poisson arrivals; "
    "achieved: the step's coverages / its duration. Latency counts from when the schedule meant to send the coverage, so waiting behind "
    "earlier ones shows; service time does not. tail: Rally's p99 from 100 samples on, else the largest "
    "latency (never below the p99).\n"
)
LIVE_NOTE = (
    "ingest: the last epoch's bulk load beside the coverages, against the epoch before it (the same size) "
    "alone. Coverages: the latest complete epoch at live_target_throughput, alone and while the next epoch "
    "is ingested; each is checked exactly against that epoch's ground truth (the epoch being ingested is "
    "filtered out by the epoch term, so its partial, refreshing documents cannot enter an answer). The "
    "epoch being ingested is queried only after its refresh and a document count equal to the corpus's.\n"
)


# this study's report sections, in report order
SECTIONS = [
    Section("Under load: latency against offered rate", load_table, "coverage load", LOAD_NOTE),
    Section("Under load: the redline per cell", redline_table, "redline", None),
    Section("Load-driver hosts: what each host's clients ran", hosts.hosts_table, "several load-driver hosts", hosts.HOSTS_NOTE),
    Section("Live: ingest and coverages, each alone and beside the other", live_table, "live", LIVE_NOTE),
]


def load_lines(race, path):
    """Latency (p50 solid, tail dashed) against the achieved rate, one panel per transport, one line per variant."""
    found = cells(race)
    if not found:
        return None
    transports = [t for t in TRANSPORTS if any(t == key[1] for key in found)]
    fig, axes = charts.plt.subplots(1, len(transports), figsize=(5 * len(transports), 4.5), squeeze=False)
    for ax, t in zip(axes[0], transports):
        for (v, cell_t), cell in found.items():
            if cell_t != t:
                continue
            ok = [
                (achieved_rate(race, op), op.get("latency", {}).get("50_0"), tail_latency(op)[0])
                for _, op, _ in cell["steps"]
                if not readers.failed(op)
            ]
            ok = [p for p in ok if None not in p]
            (line,) = ax.plot([p[0] for p in ok], [p[1] for p in ok], "o-", label=f"{v} p50")
            ax.plot([p[0] for p in ok], [p[2] for p in ok], "s--", color=line.get_color(), label=f"{v} tail")
        ax.axhline(race.param("redline_latency_ms"), color="grey", lw=0.8, ls=":")
        charts.axes(ax, "achieved coverages per second", "latency (ms)", t, legend=7)
    return charts.save(fig, path, f"Coverage latency against rate — race {race.race_id[:8]} (dotted: redline limit)")


CHARTS = (Chart("load.png", load_lines, "Coverage latency against offered rate"),)
