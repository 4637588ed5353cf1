"""profile-breakdown's tables: the profile's shares, what profiling costs (took ON against OFF) and the seed's
single-call phases, from the calls the runner recorded (runners/studies/profile.py, records.PROFILE_CALLS).

Each builder returns (header, rows), None when the race has no profile, or a sentence when the task failed: a task
with an error rate above 0 answered wrongly or not at all, and no overhead or phase is read from it."""

import statistics

from report.shared import readers, sections
from report.shared.figures import COST, Figure, median_or_why
from report.shared.sections import Section
from report.shared.uncertainty import CONFIDENCE, median_interval, min_samples
from runners.contracts import records
from runners.studies import profile as runner

# seed 000, D_td, one node's _search: its profile overhead table (mean took per call) and its single-call phases
SEED_TOOK = {True: 74.8, False: 40.8}
SEED_WALL = 45.7
SEED_PHASES = {  # phase -> (est. ms, share); the network's share is of the wall, the others' of took
    "network": (5, 0.11),
    runner.PHASE_FILTER: (7, 0.17),
    runner.PHASE_PERCENTILES: (22, 0.54),
    runner.PHASE_SUMS: (6, 0.15),
    "build": (5, 0.12),
}
MIN_SAMPLES = min_samples(CONFIDENCE)  # measured calls a side for a 95% interval of the median
PHASE_LABELS = {
    runner.PHASE_FILTER: "Filter / postings intersection",
    runner.PHASE_PERCENTILES: "{n}x percentiles collect",
    runner.PHASE_SUMS: "{n}x sum collect",
    runner.PHASE_OTHER: "{n}x other aggregations collect",
}


def _calls(race):
    """{profile ON (bool): the successful measured calls} of the race's profile task, in the order they ran."""
    calls = {False: [], True: []}
    for call in race.record(records.PROFILE_CALLS, []):
        if call["success"] and runner.is_measured(call):
            calls[call["profile"]].append(call)
    return calls


def _tasks(race):
    """The race's profile tasks: those it recorded calls of, and those whose every call failed before an answer."""
    ops = race.op_metrics()
    named = [task for task, cell in race.cells.items() if cell.get("measure") == "profile" and task in ops]
    return list(dict.fromkeys([*(call["task"] for call in race.record(records.PROFILE_CALLS, [])), *named]))


def _has_profile(race):
    return bool(race.record(records.PROFILE_CALLS, []) or race.record(records.PROFILE, {}) or _tasks(race))


def _measured_calls(race):
    """The race's measured calls (_calls), None without a profile, or the sentence saying why none is read (_problem)."""
    if not _has_profile(race):
        return None
    return _problem(race) or _calls(race)


def _problem(race):
    """Why no figure can be read from the race's profile: the task failed (its error rate), or no call was recorded;
    else None."""
    ops = race.op_metrics()
    for task in _tasks(race):
        if readers.failed(ops.get(task)):
            return f"{task} {readers.failed_label(ops[task])}: a wrong or missing answer, so no figure is read from it"
    if not race.record(records.PROFILE_CALLS, []):
        return "this race recorded no profile ON / OFF calls (it ran before profile-breakdown recorded them)"
    return None


def took_figures(race):
    """The study's headline figures, for the history: {"ON" | "OFF": the measured calls' took (ms)}, {} without a
    profile, or the sentence saying why none is read."""
    calls = _measured_calls(race)
    if not isinstance(calls, dict):
        return calls or {}
    return {"ON" if profiled else "OFF": [c["took-ms"] for c in calls[profiled]] for profiled in (True, False)}


def _median(values):
    return statistics.median(values) if values else None


def _interval(values, percent=False):
    """The 95% interval of the median as text (ms, or a ratio - 1 in %), or "-" with too few values (the note says so)."""
    interval = median_interval(values) if values else None
    if interval is None or interval.low is None:
        return "-"
    if percent:
        return f"[{_percent(interval.low)}, {_percent(interval.high)}]"
    return f"[{interval.low:.1f}, {interval.high:.1f}]"


def overhead_table(race):
    """took of the profile ON and OFF calls (median, its 95% interval, n, mean) and the overhead of profiling: the
    median of the paired ratios ON / OFF - 1 (the two calls of one iteration, back to back) and, in the mean column,
    mean ON / mean OFF - 1 as the seed computed it; the seed's figures beside."""
    calls = _measured_calls(race)
    if not isinstance(calls, dict):
        return calls  # no profile (None), or why no figure can be read
    header = ["measurement", "median (ms)", "95% interval", "n", "mean (ms)", "seed (mean, ms)"]
    rows, means = [], {}
    for profiled in (True, False):
        took = [c["took-ms"] for c in calls[profiled]]
        means[profiled] = statistics.fmean(took) if took else None
        label = f"took, profile {'ON' if profiled else 'OFF'} (server)"
        rows.append([label, _median(took), _interval(took), len(took), means[profiled], SEED_TOOK[profiled]])
    ratios = _paired_ratios(calls)
    seed = SEED_TOOK[True] / SEED_TOOK[False] - 1
    mean_ratio = means[True] / means[False] - 1 if means[True] is not None and means[False] else None
    rows.append(
        [
            "overhead (ON / OFF - 1)",
            _percent(_median(ratios)),
            _interval(ratios, percent=True),
            len(ratios),
            _percent(mean_ratio),
            _percent(seed),
        ]
    )
    return header, rows


def _paired_ratios(calls):
    """took ON / took OFF - 1 of each iteration whose two calls were both measured and right (an OFF took of 0 ms,
    Elasticsearch's floor, has no ratio)."""
    off = {c["iteration"]: c["took-ms"] for c in calls[False]}
    return [c["took-ms"] / off[c["iteration"]] - 1 for c in calls[True] if off.get(c["iteration"])]


def _percent(x):
    return "-" if x is None else f"{100 * x:+.0f}%"


def overhead_note(race):
    calls = _calls(race)
    note = (
        "took: Elasticsearch's own time of each measured call (ms, floored), the same search for the same node and "
        "epoch, once with profile: true and once without in every iteration, the order alternating. 95% interval: the "
        "order-statistic interval of the median (report/shared/uncertainty.py). overhead: the median over the iterations of "
        "took ON / took OFF - 1 (its interval likewise, in %); its mean column: mean ON / mean OFF - 1, as the seed "
        "computed it. seed: study 000's profile overhead table (D_td, mean took per call, 74.8 / 40.8 ms).\n"
    )
    return note + _too_few(calls)


def _too_few(calls):
    counts = {profiled: len(calls[profiled]) for profiled in (True, False)}
    if min(counts.values()) >= MIN_SAMPLES:
        return ""
    return (
        f"\nToo few samples: {counts[True]} measured ON and {counts[False]} OFF calls; a 95% interval needs "
        f"{MIN_SAMPLES} a side (track parameter profile_iterations): no interval, and figures that rest on few calls.\n"
    )


def _phase_shares(calls):
    """({phase: share of took ON}, {phase: how many parts}, rest): each phase's profiled nanoseconds (aggregations:
    their time without build_aggregation and reduce, i.e. collecting) summed over the measured ON calls, over their
    took summed; rest: what the profile leaves unattributed (the aggregations' build time included), or None when the
    profiled parts exceed took (searched in concurrent slices, whose times the profile adds up)."""
    on = calls[True]
    took_nanos = sum(c["took-ms"] for c in on) * 1e6
    nanos, parts = {}, {}
    for c in on:
        for name, part in c["parts"].items():
            kind = runner.phase(name)
            nanos[kind] = nanos.get(kind, 0) + part["nanos"] - part.get("build-nanos", 0)
            parts.setdefault(kind, set()).add(name)
    if not took_nanos:
        return {}, {}, None
    shares = {kind: n / took_nanos for kind, n in nanos.items()}
    rest = 1 - sum(shares.values())
    return shares, {kind: len(names) for kind, names in parts.items()}, (rest if rest >= 0 else None)


def phases_table(race):
    """The seed's single-call phases, derived as it derived them: the OFF call's wall and took (medians); the network
    and HTTP as wall - took; each server phase as its share of took from the profile ON calls, times took OFF."""
    calls = _measured_calls(race)
    if not isinstance(calls, dict):
        return calls  # no profile (None), or why no figure can be read
    wall = _median([c["wall-ms"] for c in calls[False]])
    took = _median([c["took-ms"] for c in calls[False]])
    decode = _median([c["decode-ms"] for c in calls[False]])
    header = ["phase", "est. ms", "share", "seed est. ms", "seed share"]
    network = wall - took if wall is not None and took is not None else None
    rows = [
        ["wall, profile OFF (client, median)", wall, "-", SEED_WALL, "-"],
        ["took, profile OFF (server, median)", took, "-", SEED_TOOK[False], "-"],
        [
            "Network + HTTP (client): wall - took",
            network,
            sections.pct(network / wall) if network is not None and wall else "-",
            *_seed("network"),
        ],
        ["JSON decoding (client, after the wall)", decode, "-", "-", "-"],
    ]
    shares, counts, rest = _phase_shares(calls)
    for kind in (runner.PHASE_FILTER, runner.PHASE_PERCENTILES, runner.PHASE_SUMS, runner.PHASE_OTHER):
        if kind in shares:
            rows.append([PHASE_LABELS[kind].format(n=counts[kind]), _scaled(shares[kind], took), sections.pct(shares[kind]), *_seed(kind)])
    if shares:
        rows.append(["Build / reduce / serialize (not attributed)", _scaled(rest, took), sections.pct(rest) or "-", *_seed("build")])
    return header, rows


def _scaled(share, took_off):
    """A share of took ON as ms of the OFF call, the seed's way: share x took OFF."""
    return share * took_off if share is not None and took_off is not None else "-"


def _seed(kind):
    ms, share = SEED_PHASES[kind]
    return [ms, sections.pct(share)]


def phases_note(race):
    calls = _calls(race)
    shares, _, rest = _phase_shares(calls)
    note = (
        "wall: the OFF call's time at the client, from sending the request to the last byte of the answer; took: "
        "Elasticsearch's. Network + HTTP = wall - took (medians), its share of the wall; the seed's wall also held its "
        "JSON parsing, which here is timed apart, after the wall. The server phases come from the profile ON calls: "
        "the filter is the query tree's time, each collect phase its aggregations' time without their "
        "build_aggregation and reduce; share = that time summed over the measured ON calls / their took summed; "
        "Build / reduce / serialize is the rest of took ON, which the profile does not attribute (the aggregations' "
        "build, the reduce, the response, the search phases around them). est. ms = share x took OFF (median), as the "
        "seed combined the absolute total of profile OFF with the ratios of profile ON. Those ratios are only "
        "relative: profiling times every document's work, so it inflates the per-document phases (filter, collect) "
        "more than the per-request ones, and the shares are the profile's view, not a measurement of the OFF call. "
        "seed: its network share is of the wall, its other shares of took.\n"
    )
    if shares and rest is None:
        note += (
            "\nThe profiled parts add up to more than took ON: Elasticsearch searched the shard in concurrent slices and "
            "the profile sums their times, so the rest cannot be derived by subtraction.\n"
        )
    return note + _too_few(calls)


SHARES_NOTE = (
    "The profile of the measured ON calls (profile.json): each part's profiled time, the mean per call, and its share of "
    "the parts' total (sums over the calls). The query tree is the filter; the collector tree is left out, its time "
    "contains the aggregations' collect time. Profiled times are inflated by the profiling itself (Profile overhead): "
    "read the shares, not the milliseconds.\n"
)


def shares_table(race):
    """The profile's parts of the measured ON calls (profile.json): mean profiled time per call and share."""
    if not race.record(records.PROFILE):
        return None
    parts = sorted(race.record(records.PROFILE)["parts"].items(), key=lambda kv: -kv[1]["nanos"])
    header = ["part", "time (ms, profiled, per call)", "share"]
    return header, [[name, p["nanos"] / 1e6, sections.pct(p["share"])] for name, p in parts]


# this study's report sections, in report order
SECTIONS = [
    Section(
        "Profile breakdown (profile: true, shares of filter + aggregations; profiling inflates absolute time)",
        shares_table,
        "profile breakdown",
        SHARES_NOTE,
    ),
    Section(
        "Profile overhead: took with profile: true against without, the same call in pairs",
        overhead_table,
        "profile overhead",
        overhead_note,
    ),
    Section("Single-call phases (as the seed derived them)", phases_table, "single-call phases", phases_note),
]


def took_trend_figures(race):
    """The took of profile-breakdown's calls, profile ON and OFF (their medians and intervals), or why there is none."""
    tooks = took_figures(race)
    found = {}
    for switch in ("ON", "OFF"):
        if isinstance(tooks, str) or tooks.get(switch):
            found[PROFILE_TOOK.cell(f"profile {switch}")] = tooks if isinstance(tooks, str) else median_or_why(tooks[switch])
    return found


PROFILE_TOOK = Figure("profile took (ms)", "ms", COST, took_trend_figures)
TREND_FIGURES = (PROFILE_TOOK,)
