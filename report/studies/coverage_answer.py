"""The coverage study's answer, seed 000's in its own terms: what to run instead of production, and server `took`
against client wall time, per cell and per coverage (report/studies/coverage.py: the coverage's service time per cell
as Rally measured it, its validation and its drift within the race).

Each table puts the seed's figure beside ours in its own column. Our figures come from each measured coverage's
record (runners/studies/coverage.py: wall-ms, took, took-sum; warm-ups left out), on every path: a race read from its folder
or from Rally's metrics store. A figure is a median with its 95% order-statistic interval and sample count
(report/shared/uncertainty.py); a failed cell is FAILED and is never a baseline, a share or a speedup.
"""

import math
import re

from report.shared import readers, sections, uncertainty
from report.shared.figures import COST, LEAST_WALL_MS, PLAUSIBLE_WALL_MS, Figure, implausible
from report.shared.sections import Section
from report.studies import coverage, profile, widths
from runners.contracts.queries import TRANSPORTS, VARIANTS

# Seed 000 (Elasticsearch 8.17.2, one node on an 8-core host, 5 x 1,000,000 rows, 15 samples a cell; its means)
SEED_TOOK_SERIAL = {"A": 19, "B": 192, "C_td": 1070, "C_hdr": 597, "D_td": 1199, "D_hdr": 712}
SEED_WALL = {  # serial, msearch wall per coverage (ms)
    "A": (135, 13),
    "B": (310, 33),
    "C_td": (1193, 138),
    "C_hdr": (730, 86),
    "D_td": (1323, 150),
    "D_hdr": (845, 101),
}
SEED_MSEARCH_TOOK_SUM = {"D_td": 1277}  # the only cell whose summed sub-search took the seed states
SEED_CORES, SEED_SEARCH_POOL = 8, 13
SEED_FINAL = [("D_td", "serial", 1323, 1.0), ("D_td", "msearch", 150, 8.8), ("D_hdr", "msearch", 101, 13.1)]
SEED_DRIFT = "D_td serial 1,199 ms against an earlier baseline of 1,225 ms: 2.1%"
PRODUCTION = ("D_td", "serial")

NO_INTERVAL = (
    f"A figure marked (n=N) has no interval: from {uncertainty.min_samples(uncertainty.CONFIDENCE) - 1} samples or fewer "
    f"there is none, and a saving or speed-up needs {uncertainty.MIN_SAMPLES} a side (a --test-mode race has one).\n"
)
WALL, TOOK, TOOK_SUM = "wall-ms", "took", "took-sum"  # the coverage record's fields (runners/studies/coverage.py)
FAILED, NO_TOOK = "FAILED", "no took"
NO_SHARE = "no share"  # of a production query whose median took is 0 ms


def measured(race, key, field):
    """The cell's measured values of one record field; None when the cell failed or a value is missing."""
    return readers.measured(race, readers.study_task(race, key), field)


def _cells(race):
    """The coverage cells the race recorded or Rally reported (a cell whose every request failed records nothing, and
    is still shown, FAILED); none for a race without coverage records (an older track version)."""
    recorded = {line.get("task") for line in readers.validation(race)}
    if not recorded:
        return []
    return readers.in_study_order(
        set(readers.coverage_cells(race)) | {(v, t) for v in VARIANTS for t in TRANSPORTS if readers.study_task(race, (v, t)) in recorded}
    )


def _failed(race, key):
    return readers.failed(race.op_metrics().get(readers.study_task(race, key)))


def median_text(values, digits=1):
    """'median [low, high] n=N' of a cell's values, or the word for why there is none."""
    if values is None:
        return NO_TOOK
    if not values:
        return "-"
    interval = uncertainty.median_interval(values)
    if interval.low is None:  # the table's note says once why there is no interval
        return f"{interval.median:,.{digits}f} (n={interval.n})"
    return f"{interval.median:,.{digits}f} " + interval.text(digits)


def _median(values):
    return uncertainty.median_interval(values).median if values else None


def _mean(values):
    return sum(values) / len(values) if values else None


def _figure(race, key, field, text):
    """A cell's figure: FAILED for a failed cell, else text(values) (None when a value is missing)."""
    return FAILED if _failed(race, key) else text(measured(race, key, field))


def took_table(race):
    """Per cell: server took per coverage (median with its interval, and the mean the seed used), took summed over
    the coverage's searches, the client's wall time, and the seed's took_avg."""
    cells = _cells(race)
    if not cells:
        return None
    header = [
        "variant",
        "transport",
        "took (ms) [95%] n",
        "took mean (ms)",
        "searches' took summed (ms)",
        "wall (ms)",
        "seed took_avg (ms)",
    ]
    body = []
    for v, t in cells:
        took = None if _failed(race, (v, t)) else measured(race, (v, t), TOOK)
        row = [
            v,
            t,
            _figure(race, (v, t), TOOK, median_text),
            FAILED if _failed(race, (v, t)) else (_mean(took) if took is not None else NO_TOOK),
            _figure(race, (v, t), TOOK_SUM, median_text),
            _figure(race, (v, t), WALL, median_text),
            SEED_TOOK_SERIAL.get(v) if t == "serial" else SEED_MSEARCH_TOOK_SUM.get(v) if t == "msearch" else None,
        ]
        body.append(row)
    return header, body


TOOK_NOTE = (
    "took: Elasticsearch's own time for the coverage (serial: the 30 searches' tooks summed, as the seed's took_avg; "
    "_msearch: the response's took; terms: its one search's). searches' took summed: _msearch's sub-searches' tooks "
    "added up, the server work the seed compared with serial's sum. wall: the client's timed window, first request "
    "to last byte. Elasticsearch reports each search's took in whole milliseconds, rounded down: a serial coverage's "
    "sum of 30 understates by up to 30 ms, and a search under 1 ms reads 0 (variant A). "
    "Each a median of the measured coverages with its 95% order-statistic interval; from 5 samples or "
    "fewer there is no interval (a --test-mode race has one). The seed's column is its mean of 15 (serial; for "
    "_msearch it states D_td's summed sub-search took only).\n"
) + NO_INTERVAL


def difference(a, b):
    """b's median minus a's, with an interval holding at 95% (each median's at 97.5%, as in the ratio of two cells):
    (value, low, high); low and high None with too few samples."""
    ia, ib = uncertainty.median_interval(a, uncertainty.SIDE_CONFIDENCE), uncertainty.median_interval(b, uncertainty.SIDE_CONFIDENCE)
    value = ib.median - ia.median
    if ia.low is None or ib.low is None:
        return value, None, None
    return value, ib.low - ia.high, ib.high - ia.low


def _difference_text(value, low, high):
    return f"{value:,.1f}" + ("" if low is None else f" [{low:,.1f}, {high:,.1f}]")


ATTRIBUTION = [  # (component, variant, minus, the production query its share is of, the seed's ms and share)
    ("filter + framework (A)", "A", None, "D_td", 19, "< 2%"),
    ("3x sum (B - A)", "B", "A", "D_td", 173, "14%"),
    ("3x t-digest percentiles (C_td - A)", "C_td", "A", "D_td", 1051, "88%"),
    ("3x HDR percentiles (C_hdr - A)", "C_hdr", "A", "D_hdr", 578, "-"),
]


def took_attribution_table(race):
    """The seed's subtractive attribution on serial took per coverage (each aggregation family's cost is its variant
    less the filter alone), with its share of the production query's took; _msearch's summed sub-search took beside
    it when the race has it."""
    transports = [t for t in ("serial", "msearch") if all((v, t) in _cells(race) for v in ("A", "B", "C_td", "C_hdr", "D_td"))]
    if not transports:
        return None
    fields = {"serial": TOOK, "msearch": TOOK_SUM}
    header = ["component"]
    for t in transports:
        header += [f"{t} {'took' if t == 'serial' else 'sub-searches took summed'} (ms) [95%]", f"{t} share"]
    header += ["seed took (ms)", "seed share"]
    body = []
    for label, variant, minus, production, seed_ms, seed_share in ATTRIBUTION:
        row = [label]
        for t in transports:
            keys = [(variant, t)] + ([(minus, t)] if minus else [])
            if any(_failed(race, k) for k in keys + [(production, t)]):
                row += [FAILED, "-"]
                continue
            values = measured(race, (variant, t), fields[t])
            base = measured(race, (minus, t), fields[t]) if minus else [0.0] * len(values or [])
            whole = measured(race, (production, t), fields[t])
            if not values or not base or not whole:
                row += [NO_TOOK, "-"]
                continue
            value, low, high = difference(base, values)
            share = sections.ratio(value, _median(whole))
            row += [_difference_text(value, low, high), NO_SHARE if share is None else f"{sections.pct(share)} of {production}"]
        body.append(row + [seed_ms, seed_share])
    return header, body


ATTRIBUTION_NOTE = (
    "Each component is its variant's median took less variant A's (the filter alone), per 30-node coverage; the "
    "interval holds at 95% (each median's at 97.5%). share: the component over the production query's median took "
    "(D_td; HDR's over D_hdr). The shares of one query need not add up to 100%: the seed's 88% + 14% + < 2% did not "
    "either (aggregations share the collection loop). The seed's figures are its means over 15 samples on 8 cores.\n"
) + NO_INTERVAL


def attribution_note(race):
    """ATTRIBUTION_NOTE, and once why a share is missing where one is."""
    table = took_attribution_table(race)
    if table and any(NO_SHARE in row for row in table[1]):
        return ATTRIBUTION_NOTE + (
            f"{NO_SHARE}: the production query's median took is 0 ms (took counts whole milliseconds, and this index "
            "answers in less than one), so no share of it can be given.\n"
        )
    return ATTRIBUTION_NOTE


def transport_saving_table(race):
    """Serial against _msearch wall per variant: each median with its interval, and the saving (1 - msearch / serial)
    with its 95% interval and verdict (report/shared/uncertainty.py)."""
    cells = _cells(race)
    variants = [v for v in VARIANTS if (v, "serial") in cells and (v, "msearch") in cells]
    if not variants:
        return None
    header = [
        "variant",
        "serial wall (ms) [95%]",
        "msearch wall (ms) [95%]",
        "saving [95%]",
        "seed serial (ms)",
        "seed msearch (ms)",
        "seed saving",
    ]
    body = []
    for v in variants:
        serial, msearch = (None if _failed(race, (v, t)) else measured(race, (v, t), WALL) for t in ("serial", "msearch"))
        seed_serial, seed_msearch = SEED_WALL[v]
        body.append(
            [
                v,
                _figure(race, (v, "serial"), WALL, median_text),
                _figure(race, (v, "msearch"), WALL, median_text),
                _saving(serial, msearch),
                seed_serial,
                seed_msearch,
                sections.pct(1 - seed_msearch / seed_serial),
            ]
        )
    return header, body


def _saving(serial, msearch):
    if not serial or not msearch:
        return "no verdict: a failed cell"
    comparison = uncertainty.compare(serial, msearch)
    if comparison.verdict is None:
        ratio = sections.ratio(_median(msearch), _median(serial))
        return "no figure: a median of 0 ms" if ratio is None else f"{1 - ratio:.1%} (n={min(len(serial), len(msearch))})"
    return f"{1 - comparison.ratio:.1%} [{1 - comparison.high:.1%}, {1 - comparison.low:.1%}] {comparison.verdict}"


def parallelism_table(race):
    """_msearch and terms: the searches' took summed against the coverage's wall, per coverage; their ratio is the
    effective parallelism (the median of the coverages' ratios, with its interval), beside the node's search pool
    and allocated processors (recorded by the verify-corpus task of every query challenge)."""
    cells = [k for k in _cells(race) if k[1] in ("msearch", "terms")]
    if not cells:
        return None
    node = ((widths.search_pool(race) or {}).get("nodes") or [{}])[0]
    pool, processors = node.get("search-pool-size", "not recorded"), node.get("allocated-processors", "not recorded")
    header = [
        "variant",
        "transport",
        "searches' took summed (ms)",
        "wall (ms)",
        "effective parallelism [95%]",
        "search pool",
        "allocated processors",
        "seed",
    ]
    body = []
    for v, t in cells:
        row = [v, t]
        if _failed(race, (v, t)):
            body.append(row + [FAILED, FAILED, FAILED, pool, processors, None])
            continue
        took, wall = measured(race, (v, t), TOOK_SUM), measured(race, (v, t), WALL)
        ratios = [a / b for a, b in zip(took, wall) if b] if took and wall else None
        seed = (
            f"{SEED_MSEARCH_TOOK_SUM[v] / SEED_WALL[v][1]:.1f}x ({SEED_CORES} cores, pool ~{SEED_SEARCH_POOL})"
            if (t == "msearch" and v in SEED_MSEARCH_TOOK_SUM)
            else None
        )
        row += [median_text(took), median_text(wall), median_text(ratios, 2) if ratios else NO_TOOK, pool, processors, seed]
        body.append(row)
    return header, body


def parallelism_note(race):
    node = ((widths.search_pool(race) or {}).get("nodes") or [{}])[0]
    cores = node.get("allocated-processors")
    here = (
        f"This node has {cores} allocated processors and a search pool of {node.get('search-pool-size')} threads against the "
        f"seed's {SEED_CORES} cores and ~{SEED_SEARCH_POOL}: the parallelism the seed saw (8.5x) cannot appear here; "
        f"the work itself runs on at most {cores} cores at once. "
        if cores
        else "This race did not record the node's search pool (a race from before the search-pool task). "
    )
    return (
        here + "A sub-search's took runs from its own start on the node to its end, so a sub-search queued behind "
        "others in the search pool counts its wait too: above the core count, the ratio measures the queue as well as "
        "concurrent work. terms is one search on one shard: its ratio is took over wall, below 1 by the client's and "
        "the network's share.\n" + NO_INTERVAL
    )


def client_table(race):
    """wall - took per cell, per coverage: what the client and the connection add to Elasticsearch's own time (the
    seed's measure of client and network)."""
    cells = _cells(race)
    if not cells:
        return None
    header = ["variant", "transport", "wall - took (ms) [95%]", "share of wall", "seed"]
    body = []
    for v, t in cells:
        if _failed(race, (v, t)):
            body.append([v, t, FAILED, "-", None])
            continue
        took, wall = measured(race, (v, t), TOOK), measured(race, (v, t), WALL)
        gaps = [w - k for w, k in zip(wall, took)] if took and wall else None
        share = sections.pct(_median(gaps) / _median(wall)) if gaps and _median(wall) else "-"
        seed = None
        if (v, t) == PRODUCTION:
            call = profile.SEED_WALL - profile.SEED_TOOK[False]
            seed = (
                f"{SEED_WALL[v][0] - SEED_TOOK_SERIAL[v]} ms ({1 - SEED_TOOK_SERIAL[v] / SEED_WALL[v][0]:.0%}; one call: "
                f"{call:.1f} ms, {call / profile.SEED_WALL:.0%})"
            )
        body.append([v, t, median_text(gaps) if gaps else NO_TOOK, share, seed])
    return header, body


CLIENT_NOTE = (
    "wall - took of each measured coverage: the client (sending, receiving the bytes; decoding and checking come "
    "after the timed window), the connection and what Elasticsearch does outside its took (HTTP handling, writing the "
    "response). Serial pays it per request (30 per coverage). The seed: D_td serial 1,323 - 1,199 ms per coverage, "
    "and 45.7 - 40.8 ms for one call. took is in whole milliseconds, so a cell of a few ms has a coarse gap.\n"
) + NO_INTERVAL


def recommendation_table(race):
    """The seed's final table: the production query and the configurations a user should run, each with its wall per
    coverage and its speed-up over production (the ratio of medians with its 95% interval and verdict)."""
    cells = _cells(race)
    if PRODUCTION not in cells:
        return None
    if _failed(race, PRODUCTION):
        return f"the production cell D_td serial {FAILED}: no speed-up can be measured against it"
    base = measured(race, PRODUCTION, WALL)
    candidates = [(v, t) for v, t, _, _ in SEED_FINAL]
    fastest = _fastest(race, cells)
    if fastest and fastest not in candidates:
        candidates.append(fastest)
    seed = {(v, t): (ms, x) for v, t, ms, x in SEED_FINAL}
    header = ["configuration", "wall per coverage (ms) [95%]", "speed-up over production [95%]", "seed wall (ms)", "seed speed-up"]
    body = []
    for key in candidates:
        if key not in cells:
            continue
        label = f"{key[0]} {key[1]}" + (
            " (production)" if key == PRODUCTION else " (fastest here)" if key == fastest and key not in seed else ""
        )
        values = None if _failed(race, key) else measured(race, key, WALL)
        speedup = FAILED if values is None else ("1.0x (baseline)" if key == PRODUCTION else _speedup(base, values))
        seed_wall, seed_speedup = seed.get(key) or (None, None)
        body.append([label, _figure(race, key, WALL, median_text), speedup, seed_wall, f"{seed_speedup:.1f}x" if seed_speedup else None])
    return header, body


ANSWERS_PRODUCTION = ("D_td", "D_hdr")  # the variants that compute what production does (sums and percentiles)


def _answering_medians(race, cells):
    """{cell: its median wall} of the cells that answer the production question and did not fail."""
    answering = [k for k in cells if k[0] in ANSWERS_PRODUCTION]
    return {k: _median(measured(race, k, WALL)) for k in answering if not _failed(race, k) and measured(race, k, WALL)}


def _fastest(race, cells):
    """The fastest cell that answers the production question (a cheaper variant leaves out what it needs)."""
    valid = _answering_medians(race, cells)
    return min(valid, key=valid.get) if valid else None


def answer_line(race):
    """The console's line: production's wall per coverage and the fastest configuration that computes its answer (D_td
    or D_hdr, ANSWERS_PRODUCTION) with its speed-up interval; a failed cell never ranks, and a cheaper variant that
    leaves out what production needs is never offered. A race without coverage records (an older track version):
    Rally's medians, without an interval."""
    failed = [f"{v} {t}" for v, t in readers.coverage_cells(race) if _failed(race, (v, t))]
    tail = f"; FAILED cells (not ranked): {', '.join(failed)}" if failed else ""
    if _failed(race, PRODUCTION):
        return f"production {PRODUCTION[0]} {PRODUCTION[1]}: {FAILED}; no speed-up can be given" + tail
    if readers.validation(race):
        medians = _answering_medians(race, _cells(race))
    else:
        ops = readers.coverage_cells(race)
        medians = {key: readers.valid_median(ops, key) for key in ops if key[0] in ANSWERS_PRODUCTION}
        medians = {key: value for key, value in medians.items() if value is not None}
    if PRODUCTION not in medians:
        return f"production {PRODUCTION[0]} {PRODUCTION[1]}: not measured; no speed-up can be given" + tail
    line = f"production {PRODUCTION[0]} {PRODUCTION[1]}: {medians[PRODUCTION]:,.0f} ms per coverage"
    fastest = min(medians, key=medians.get)
    if fastest == PRODUCTION:
        return line + "; no other configuration that computes its answer was faster" + tail
    speedup = (
        _speedup(measured(race, PRODUCTION, WALL), measured(race, fastest, WALL))
        if readers.validation(race)
        else f"{medians[PRODUCTION] / medians[fastest]:.1f}x (no interval: Rally's medians)"
    )
    return line + f"; fastest that computes its answer: {fastest[0]} {fastest[1]}, {medians[fastest]:,.0f} ms, {speedup}" + tail


def _speedup(base, values):
    """production / cell: compare(cell, production) is the ratio production over cell; its 'slower' is the
    production's, so the cell is faster."""
    comparison = uncertainty.compare(values, base)
    if comparison.verdict is None:
        ratio = sections.ratio(_median(base), _median(values))
        return "no figure: a median of 0 ms" if ratio is None else f"{ratio:.1f}x (n={min(len(base), len(values))})"
    word = {uncertainty.SLOWER: "faster", uncertainty.FASTER: "slower"}.get(comparison.verdict, comparison.verdict)
    return f"{comparison.ratio:.1f}x [{comparison.low:.1f}, {comparison.high:.1f}] {word}"


RECOMMENDATION_NOTE = (
    "Configurations that compute what production does (D_td, or D_hdr: the same sums, percentiles by HDR); the "
    "fastest of them here is added when it is not one of the seed's. Read on this cluster, at this width (30 nodes) and round-trip time (loopback): over a network serial pays the "
    "round trip 30 times per coverage (the RTT sweep's section), and at other widths the crossover section says where "
    "terms overtakes _msearch. Both changes are the client's: no Elasticsearch setting, mapping or re-ingest.\n"
) + NO_INTERVAL


def answer_note(race):
    """Under the answer's table: how to read it, and why the seed's figures differ."""
    node = ((widths.search_pool(race) or {}).get("nodes") or [{}])[0]
    here = (
        f"this node {node['allocated-processors']} cores and a pool of {node.get('search-pool-size')}"
        if node.get("allocated-processors")
        else "this node fewer"
    )
    return (
        "Configurations that compute production's answer (its sums and percentiles): wall per 30-node coverage, median "
        "[95% interval] n, and production's median over theirs with its interval and verdict. The seed had 8 cores and a "
        f"search pool of ~13 ({here}), which is why its _msearch speed-ups are larger.\n"
    )


def drift_table(race, baseline):
    """Every cell of this race against the same cell of an earlier race (make report BASELINE=<id>): the ratio of
    medians with its 95% interval and the verdict rule of report/shared/uncertainty.py; the seed's sanity check is D_td
    serial's drift."""
    keys = readers.in_study_order(set(_cells(race)) & set(_cells(baseline)))
    if not keys:
        return f"race {baseline.race_id[:8]} shares no coverage cell with this race"
    header = ["cell", f"baseline {baseline.race_id[:8]} (ms)", "this race (ms)", "drift", "ratio [95%] verdict"]
    body = []
    for key in keys:
        then, now = (None if _failed(r, key) else measured(r, key, WALL) for r in (baseline, race))
        if not then or not now:
            body.append(
                [
                    readers.study_task(race, key),
                    _figure(baseline, key, WALL, median_text),
                    _figure(race, key, WALL, median_text),
                    "-",
                    "no verdict: a failed cell",
                ]
            )
            continue
        drift = sections.ratio(_median(now), _median(then))
        drift_text = "-" if drift is None else f"{drift - 1:+.1%}"
        body.append([readers.study_task(race, key), median_text(then), median_text(now), drift_text, uncertainty.compare(then, now).text()])
    return header, body


def drift_note(_race):
    return f"The seed's sanity check: {SEED_DRIFT}. {uncertainty.VERDICT_RULE}\n" + NO_INTERVAL


SAVING_NOTE = "saving: 1 - msearch / serial, the ratio's 95% interval and its verdict. " + NO_INTERVAL


# this study's report sections, in report order
SECTIONS = [
    Section("Server took against client wall per coverage (seed 000, 4.2)", took_table, "took", TOOK_NOTE),
    Section(
        "Subtractive cost attribution on took (seed 000, 4.2)",
        took_attribution_table,
        "the attribution's cells (A, B, C_td, C_hdr, D_td)",
        attribution_note,
    ),
    Section(
        "Serial against _msearch: wall per coverage and the saving (seed 000, 4.3)",
        transport_saving_table,
        "serial and msearch cells",
        SAVING_NOTE,
    ),
    Section(
        "Effective parallelism: the searches' took against the wall (seed 000, 4.3)",
        parallelism_table,
        "msearch or terms cells",
        parallelism_note,
    ),
    Section("Client and network: wall - took per coverage", client_table, "wall and took", CLIENT_NOTE),
    Section(
        "What to run: speed-up over production (seed 000's final table)",
        recommendation_table,
        "the production cell D_td serial",
        RECOMMENDATION_NOTE,
    ),
    Section("Speedup against D_td serial (median)", coverage.speedup_table, "the baseline D_td serial", None, summary=answer_line),
]
ANSWER = Section("Coverage: what to run instead of production", recommendation_table, "the production cell D_td serial", answer_note)


def coverage_times(race):
    """{task: (median, low, high, n)} of every coverage cell a finished race ran (its samples' median and 95% interval);
    {task: why} for a cell that failed, has no samples, or has a sample that cannot be a time (implausible)."""
    found = {}
    for task in sorted(task for task, cell in race.cells.items() if "variant" in cell and "transport" in cell):  # a coverage cell
        op, samples = race.op_metrics().get(task), race.samples
        if not samples.has(task) and op is None:
            continue  # the challenge's cell did not run in this race (another challenge's task)
        values = samples.values(task)
        if not values:
            found[task] = "failed" if samples.failed(task) or (op and (op.get("error_rate") or 0) > 0) else "no samples recorded"
            continue
        problem = implausible(values, _wall_bound_ms(op), least=LEAST_WALL_MS)
        if problem:
            found[task] = f"failed: {problem}"
            continue
        interval = samples.median_interval(task)
        found[task] = (interval.median, interval.low, interval.high, interval.n)
    return found


def _wall_bound_ms(op):
    """The longest a sample of this task can have taken: its task's duration (race.json, ms) and at most an hour."""
    duration = (op or {}).get("duration")
    usable = isinstance(duration, (int, float)) and math.isfinite(duration) and duration > 0
    return min(PLAUSIBLE_WALL_MS, duration) if usable else PLAUSIBLE_WALL_MS


STUDY_CELL = re.compile(r"coverage-(?P<variant>[A-Za-z0-9_]+)-(?P<transport>serial|msearch|terms)")  # the track's task names


def seed_wall(cell):
    """Seed 000's wall per coverage (ms) of a study cell, serial or msearch; None where the seed has none."""
    match = STUDY_CELL.fullmatch(cell)
    if not match or match["variant"] not in SEED_WALL or match["transport"] not in ("serial", "msearch"):
        return None
    return SEED_WALL[match["variant"]][("serial", "msearch").index(match["transport"])]


# every coverage cell's time in the history, a cell per task: its samples' median (ms)
COVERAGE_TIME = Figure("coverage time (ms)", "ms", COST, coverage_times, seed=seed_wall)
TREND_FIGURES = (COVERAGE_TIME,)
