"""The report's coverage-width section: each cell's time against the width, the width at which terms overtakes
_msearch per variant, what bounds _msearch's concurrency on the node, and the ingest per width.

A crossover is named only beyond the noise: at each width, terms against _msearch through report/shared/uncertainty.py's
verdict on the cells' samples (a race from Rally's metrics store); terms "overtakes" at the narrowest width from
which it is faster at every wider width of the sweep. A failed cell has no verdict, so a crossover never rests on it.
Without samples (race.json alone) the table shows the ratio of medians and names no crossover.
"""

import numpy as np

from report.shared import charts, readers, sections, uncertainty
from report.shared.figures import PLACE, Figure
from report.shared.sections import Chart, Section
from report.studies import ingest
from runners.contracts import queries, records
from runners.contracts.queries import TRANSPORTS, VARIANTS
from runners.contracts.records import SEARCH_POOL


def width_transport(transport, max_concurrent_searches=0):
    """A transport of the width sweep: msearch with a max_concurrent_searches is its own, "msearch-msc-1" (0, or
    none: Elasticsearch's default, plain "msearch")."""
    return f"{transport}-msc-{max_concurrent_searches}" if max_concurrent_searches else transport


def width_key(cell):
    """(width, variant, transport as width_transport names it) of a width sweep's coverage cell (runners/contracts/cells.py),
    else None (another task's cell: a width's ingest, {"width": 300, "measure": "ingest"})."""
    if not cell or "width" not in cell or "variant" not in cell:
        return None
    return cell["width"], cell["variant"], width_transport(cell["transport"], cell.get("max-concurrent-searches") or 0)


def width_cells(race):
    """{(width, variant, transport): op} of the sweep's coverage tasks, transport as width_transport names it. A
    race that ended early (a node that died) has no summary in race.json or the store, only its samples there: a cell
    is then built from its samples (median; a failed sample fails the cell)."""
    ops = race.op_metrics()
    for name, samples in race.samples.items():
        if name not in ops:
            ops[name] = _from_samples(name, samples)
    cells = {}
    for name, op in ops.items():
        key = width_key(race.cells.get(name))
        if key:
            cells[key] = op
    return cells


def _from_samples(name, samples):
    if samples is None:
        return {"task": name, "error_rate": 1.0, "service_time": {}}
    return {"task": name, "error_rate": 0.0, "service_time": {"50_0": float(np.median(samples)), "mean": float(np.mean(samples))}}


def _transport_order(transport):
    base, _, concurrency = transport.partition("-msc-")
    return TRANSPORTS.index(base), int(concurrency or 0)


def transports_of(cells):
    return sorted({t for _, _, t in cells}, key=_transport_order)


def widths_of(cells):
    return sorted({w for w, _, _ in cells})


def variants_of(cells):
    return [v for v in VARIANTS if any(cv == v for _, cv, _ in cells)]


def _samples(race, key):
    task = next((task for task, cell in race.cells.items() if width_key(cell) == key), None)
    return race.samples.of(task)


def width_table(race):
    """Per variant and width: each transport's median [95% interval] n, or FAILED, or why it was not run."""
    cells = width_cells(race)
    if not cells:
        return None
    transports = transports_of(cells)
    header = ["variant", "width (nodes)"] + [f"{label(t)} (ms)" for t in transports]
    body = []
    for v in variants_of(cells):
        for w in widths_of(cells):
            row = [v, w]
            for t in transports:
                op = cells.get((w, v, t))
                if op is None:
                    row.append(_not_run(race, w, v, t))
                elif readers.failed(op):
                    row.append(readers.failed_label(op))
                else:
                    samples = _samples(race, (w, v, t))
                    if samples:  # the median and its interval from the same samples
                        interval = uncertainty.median_interval(samples)
                        row.append(f"{sections.fmt(interval.median)} {interval.text()}")
                    else:
                        row.append(sections.fmt(readers.service_ms(op, "median")))
            body.append(row)
    return header, body


def _not_run(race, width, variant, transport):
    """Why a cell of the sweep is missing: the caps the schedule applies (challenges/coverage-width.json), or "-"."""
    if transport == "serial" and width > race.param("width_serial_max_nodes"):
        return f"not run (above width_serial_max_nodes {race.param('width_serial_max_nodes')})"
    hdr_max = race.param("width_hdr_terms_max_nodes")
    if transport == "terms" and queries.percentile_algorithm(variant) == "hdr" and width > hdr_max:
        return f"not run (HDR over terms above width_hdr_terms_max_nodes {hdr_max}: heap)"
    return "-"


def label(transport):
    """msearch-msc-1 -> "msearch (max_concurrent_searches 1)"; plain msearch is Elasticsearch's default."""
    base, _, concurrency = transport.partition("-msc-")
    if concurrency:
        return f"{base} (max_concurrent_searches {concurrency})"
    return f"{base} (default concurrency)" if base == "msearch" else base


def _against(race, cells, width, variant, msearch):
    """terms against one msearch transport at one width: (verdict, its text); verdict FASTER means terms is faster."""
    a_key, b_key = (width, variant, msearch), (width, variant, "terms")
    a_op, b_op = cells.get(a_key), cells.get(b_key)
    if a_op is None or b_op is None:
        return None, "not both run"
    if readers.failed(a_op) or readers.failed(b_op):
        return None, "FAILED"
    a, b = _samples(race, a_key), _samples(race, b_key)
    if not a or not b:  # the note under the table says why once
        return None, f"{readers.service_ms(b_op, 'median') / readers.service_ms(a_op, 'median'):.3f} (medians)"
    comparison = uncertainty.compare(a, b)
    if comparison.verdict is None:
        return None, f"{uncertainty.median_interval(b).median / uncertainty.median_interval(a).median:.3f} (no verdict)"
    return comparison.verdict, comparison.text()


def crossover(race, cells, variant, msearch):
    """(width or None, statement): the narrowest width of the sweep from which terms is faster than this msearch at
    every wider width, beyond noise. The widest widths without a verdict (a failed cell, too few samples) are left out
    of the claim and named; one in the middle ends it."""
    widths = [w for w in widths_of(cells) if (w, variant, msearch) in cells or (w, variant, "terms") in cells]
    verdicts = {w: _against(race, cells, w, variant, msearch) for w in widths}
    if not race.samples.individual:
        return None, "no verdict"
    unjudged = []
    while widths and verdicts[widths[-1]][0] is None:
        unjudged.insert(0, widths.pop())
    caveat = "; ".join(f"no verdict at {w}: {verdicts[w][1]}" for w in unjudged)
    first = None
    for w in reversed(widths):
        if verdicts[w][0] != uncertainty.FASTER:
            break
        first = w
    if first is None:
        statement = f"terms does not overtake within the sweep ({widths[0]} to {widths[-1]} nodes)" if widths else "no width with a verdict"
    elif first == widths[0]:
        statement = f"terms is faster already at the narrowest width, {first} nodes"
    else:
        statement = f"terms overtakes between {widths[widths.index(first) - 1]} and {first} nodes (faster from {first} on)"
    return first, statement + (f" ({caveat})" if caveat else "")


def crossover_widths(race, cells=None):
    """The sweep's headline figure: {(variant, msearch transport): (crossover width or None, the width before it or
    None, statement)} per variant and msearch setting; the crossover lies between the two widths."""
    cells = width_cells(race) if cells is None else cells
    if not cells or "terms" not in transports_of(cells):
        return {}
    widths = widths_of(cells)
    found = {}
    for v in variants_of(cells):
        for m in (t for t in transports_of(cells) if t.startswith("msearch")):
            first, statement = crossover(race, cells, v, m)
            before = widths[widths.index(first) - 1] if first is not None and widths.index(first) > 0 else None
            found[(v, m)] = (first, before, statement)
    return found


def crossover_note(race):
    """What the cells and the crossover column say, and once why a figure has no verdict."""
    why = (
        "This race has no record of its measured coverages (a race of an older track version): the cells are ratios of "
        "Rally's medians, without a verdict. "
        if not race.samples.individual
        else f"(no verdict): fewer than {uncertainty.MIN_SAMPLES} measured samples a side (a --test-mode race has one). "
    )
    return (
        "Each cell: terms' median / msearch's median at that width, its 95% interval and the verdict: "
        '"faster" means terms is faster beyond the noise. ' + uncertainty.VERDICT_RULE + " The crossover is the narrowest "
        "width from which terms is faster at every wider width of the sweep; a FAILED cell has no verdict, so no crossover "
        "rests on it. " + why + "\n"
    )


def crossover_table(race):
    """Per variant and msearch setting: the crossover width and, at each width, terms / msearch with its verdict."""
    cells = width_cells(race)
    found = crossover_widths(race, cells)
    if not found:
        return None
    widths = widths_of(cells)
    header = ["variant", "against", "crossover"] + [f"terms / msearch at {w}" for w in widths]
    body = [[v, label(m), statement] + [_against(race, cells, w, v, m)[1] for w in widths] for (v, m), (_, _, statement) in found.items()]
    return header, body


def crossover_answer(race):
    """The width sweep's answer: per variant and msearch setting, the width from which terms overtakes _msearch."""
    table = crossover_table(race)
    return None if table is None else (table[0][:3], [row[:3] for row in table[1]])


CROSSOVER_ANSWER_NOTE = (
    "The narrowest width from which terms is faster than _msearch beyond the noise at every wider width of the sweep; "
    "each width's ratio and verdict are in the crossover table below.\n"
)


def search_pool_note(race):
    """What bounds _msearch's concurrency here, and what the host's cores mean for the crossover."""
    pool = search_pool(race)
    parts = []
    if pool:
        node = pool["nodes"][0] if pool.get("nodes") else {}
        parts.append(
            f"This cluster: {pool['data-nodes']} data node(s); the first node has {node.get('allocated-processors')} "
            f"allocated processors and a search pool of {node.get('search-pool-size')} threads (queue "
            f"{node.get('search-queue-size')}), so an _msearch without max_concurrent_searches runs up to "
            f"{pool['default-max-concurrent-searches']} sub-searches at once (Elasticsearch: data nodes x min(search pool "
            "default, 10)). "
        )
    parts.append(
        "An _msearch sends one search per node, each with its own query phase, shard-level request and response; "
        "terms sends one search whose single shard-level pass builds a bucket per node. With few cores the sub-searches "
        "cannot run in parallel beyond the core count, so _msearch's per-search overhead grows with the width while "
        "terms pays once, plus the per-bucket cost of its aggregations (HDR histograms are the heaviest). "
        "max_concurrent_searches 1 runs the sub-searches one at a time: its gap to the default is what the node's "
        "parallelism bought. Serial above width_serial_max_nodes is not run (a request per node); its time there is "
        "about the width x the per-request time at the widest serial width. An HDR variant over terms above "
        "width_hdr_terms_max_nodes is not run: its 3 histograms per node sit in one shard response and one reduce, "
        "outside every circuit breaker, and at 3000 nodes (3 digits) a 1 GB node died of OutOfMemoryError."
    )
    serial = _serial_extrapolation(race)
    if serial:
        parts.append(" " + serial)
    return "".join(parts) + "\n"


def _serial_extrapolation(race):
    cells = width_cells(race)
    serial = {(w, v): op for (w, v, t), op in cells.items() if t == "serial" and not readers.failed(op)}
    if not serial:
        return None
    widest = max(w for w, _ in serial)
    missing = [w for w in widths_of(cells) if w > widest]
    if not missing:
        return None
    per_request = {v: readers.service_ms(op, "median") / w for (w, v), op in serial.items() if w == widest}
    text = ", ".join(f"{v} {ms:.2f} ms" for v, ms in per_request.items())
    return (
        f"Per request at {widest} nodes: {text}; at {missing[-1]} nodes a serial coverage would take about "
        f"{missing[-1] / widest:.0f}x its {widest}-node time (an estimate, not a measurement)."
    )


def width_ingest_table(race):
    """Per width: the documents ingested, the bulk tasks' wall time (race.json durations) and docs/s."""
    ops = race.op_metrics()
    body = []
    for w, record in sorted(width_ingest(race).items()):
        docs = sum(row["docs"] for row in record.get("epochs", []))
        prefix = ingest.ingest_prefix(race, width=w) or ""
        wall = sum(ingest.epoch_wall(ops, row, ingest.epoch_task(prefix, row["epoch"])) or 0 for row in record.get("epochs", []))
        took = sum(row["bulk-took-ms"] for row in record.get("epochs", []))
        # a race that ended early has no task durations: its wall time is unknown, not 0
        body.append([w, docs, sections.fmt(wall) if wall else "-", sections.fmt(docs / wall) if wall else "-", sections.fmt(took / 1000)])
    if not body:
        return None
    return ["width (nodes)", "documents", "bulk wall (s)", "docs/s", "bulk took (s)"], body


def width_ingest(race):
    """{width: its ingest record} of the sweep's widths that ingested."""
    found = {}
    for width in sorted(cell["width"] for cell in race.cells.values() if cell.get("measure") == "ingest" and "width" in cell):
        data = race.record(ingest.ingest_record(race, width=width))
        if data is not None:
            found[width] = data
    return found


def search_pool(race):
    """The search pool and _msearch's default concurrency the race recorded (runners/studies/search_pool.py), or None."""
    return race.record(SEARCH_POOL)


# this study's report sections, in report order
SECTIONS = [
    Section("Coverage width: median per coverage (ms) against the monitored nodes", width_table, "coverage width", search_pool_note),
    Section("Coverage width: where terms overtakes _msearch", crossover_table, "width crossover", crossover_note),
    Section("Coverage width: ingest per width", width_ingest_table, "width ingest", None),
]
ANSWER = Section("Coverage width: where terms overtakes _msearch", crossover_answer, "a width sweep", CROSSOVER_ANSWER_NOTE)


def crossover_figures(race):
    """The crossover width per variant and msearch setting, between the width before it and it (its interval), or why
    there is none."""
    found = {}
    for (variant, msearch), (width, before, statement) in crossover_widths(race).items():
        cell = CROSSOVER.cell(f"{variant} terms against {label(msearch)}")
        found[cell] = statement if width is None else (float(width), float(before or width), float(width), 1)
    return found


# coverage-width's headline in the history: a place, not a cost (a width higher or lower), on the sweep's few widths
CROSSOVER = Figure("crossover width (nodes)", "nodes", PLACE, crossover_figures, discrete=True)
TREND_FIGURES = (CROSSOVER,)


def width_lines(race, path):
    """coverage-width: median service time against the width (log-log), one panel per variant, one line per
    transport; each point's 95% interval as an error bar when the race has its samples; failed points left out."""
    cells = width_cells(race)
    if not cells:
        return None
    variants = variants_of(cells)
    columns = min(3, len(variants))
    rows = -(-len(variants) // columns)
    fig, axes = charts.plt.subplots(rows, columns, figsize=(5 * columns, 4 * rows), squeeze=False)
    for ax, v in zip(axes.flat, variants):
        for t in transports_of(cells):
            points = []
            for w in widths_of(cells):
                op = cells.get((w, v, t))
                if op is None or readers.failed(op):
                    continue
                samples = _samples(race, (w, v, t))
                interval = uncertainty.median_interval(samples) if samples else None
                # the point and its bar from the same samples (the coverage's recorded wall time, or Rally's service
                # time from a store): Rally's median from race.json can lie a hair outside the records' interval
                median = interval.median if interval else readers.service_ms(op, "median")
                low, high = (interval.low, interval.high) if interval and interval.low is not None else (median, median)
                points.append((w, median, median - low, high - median))
            if points:
                ax.errorbar(
                    [p[0] for p in points],
                    [p[1] for p in points],
                    yerr=[[p[2] for p in points], [p[3] for p in points]],
                    fmt="o-",
                    capsize=3,
                    label=label(t),
                )
        ax.set_xscale("log")
        charts.axes(ax, "monitored nodes (width)", "median per coverage (ms)", v, legend=7)
    for ax in list(axes.flat)[len(variants) :]:
        ax.set_visible(False)
    return charts.save(fig, path, f"Coverage time against width — race {race.race_id[:8]}")


CHARTS = (Chart("width.png", width_lines, "Coverage time against width"),)
