"""How busy the load driver's host was over each timed cell and over the race, from the race's host-load record (its
lines: runners/shared/host_load.py), and whether it was busy enough to name: the report's first lines, the console's
warning after `make race` and the trend's "what changed with it" say it.

A cell's window is its measured coverages' first request to last answer (the validation lines); an interval of the
record that overlaps it counts in proportion to the overlap."""

import math
from dataclasses import dataclass

from runners.contracts import records
from runners.contracts.host_load import CLOCK_TICKS, COUNTERS

# Busy: beyond what plain races on a quiet host measured (docs/history.md, "The host in a race's record"), below what
# a neighbour's busy loop on one core takes
FOREIGN_BUSY = 20.0  # % of one core taken by processes other than Rally's and Elasticsearch's, over the cells
STEAL_BUSY = 5.0  # % of the CPU time the hypervisor gave to something else, over the cells
NOT_RECORDED = "host not recorded"


@dataclass(frozen=True)
class HostLoad:
    """The host's load over a window (the counters summed over it, the levels at its worst)."""

    host: str
    seconds: float  # of the window the record covers
    cpus: int
    foreign: float  # % of one core
    steal: float  # % of the CPU time
    iowait: float  # % of the CPU time
    rally: float  # % of one core
    elasticsearch: float  # % of one core
    running: float | None  # the most runnable tasks at an interval's end
    load1: float | None  # the highest one-minute load
    mem_available_kb: int | None  # the least
    major_faults: int | None
    freq_mhz: float | None  # the lowest
    throttled: int | None

    @property
    def busy(self):
        """What makes the host busy over the window, plainly; empty when it was not."""
        said = []
        if self.foreign >= FOREIGN_BUSY:
            said.append(f"other processes took {self.foreign:.0f}% of a core")
        if self.steal >= STEAL_BUSY:
            said.append(f"steal {self.steal:.1f}%")
        return said

    def text(self):
        return f"other processes {self.foreign:.0f}% of a core, steal {self.steal:.1f}%, iowait {self.iowait:.1f}%"


def lines(race):
    return [line for line in race.record(records.HOST_LOAD, []) if isinstance(line, dict)]


def load_over(intervals, start, end):
    """{host: HostLoad} over [start, end], or {} where no interval overlaps it."""
    return _loads(_parts(intervals, start, end))


def _parts(intervals, start, end):
    """{host: [(line, its share in the window, seconds of overlap)]} of the intervals that overlap [start, end]."""
    by_host = {}
    for line in intervals:
        try:
            lo, hi = float(line["start"]), float(line["end"])
        except (KeyError, TypeError, ValueError):
            continue
        overlap = min(hi, end) - max(lo, start)
        if hi <= lo or overlap <= 0 and not (start == end and lo <= start <= hi):
            continue
        weight = 1.0 if start == end else overlap / (hi - lo)
        by_host.setdefault(str(line.get("host")), []).append((line, weight, max(overlap, 0.0)))
    return by_host


def _loads(parts):
    return {host: _summed(host, host_parts) for host, host_parts in sorted(parts.items())}


def _summed(host, parts):
    def total(name):
        return sum(float(line.get(name) or 0) * weight for line, weight, _ in parts)

    def extreme(name, pick):
        values = [line[name] for line, _, _ in parts if isinstance(line.get(name), (int, float))]
        return pick(values) if values else None

    seconds = sum(part for _, _, part in parts)
    span = sum((float(line["end"]) - float(line["start"])) * weight for line, weight, _ in parts)
    ticks_of_a_core = span * CLOCK_TICKS
    cpu_ticks = total("total")

    def of_core(name):
        return 100 * total(name) / ticks_of_a_core if ticks_of_a_core > 0 else math.nan

    def of_cpu(name):
        return 100 * total(name) / cpu_ticks if cpu_ticks > 0 else math.nan

    faults = [line.get("major_faults") for line, _, _ in parts]
    throttled = [line.get("throttled") for line, _, _ in parts]
    return HostLoad(
        host=host,
        seconds=seconds,
        cpus=extreme("cpus", max) or 0,
        foreign=of_core("foreign"),
        steal=of_cpu("steal"),
        iowait=of_cpu("iowait"),
        rally=of_core("rally"),
        elasticsearch=of_core("elasticsearch"),
        running=extreme("running", max),
        load1=extreme("load1", max),
        mem_available_kb=extreme("mem_available_kb", min),
        major_faults=None if None in faults else round(total("major_faults")),
        freq_mhz=extreme("freq_mhz", min),
        throttled=None if None in throttled else round(total("throttled")),
    )


@dataclass(frozen=True)
class NodeLoad:
    """One of the cluster's nodes over a window, as _nodes/stats tells it (the sampler's `nodes` lines)."""

    name: str
    host: str
    seconds: float  # of the window the lines cover
    cpu: float  # the node process's CPU, % of one core
    host_cpu: float | None  # its host's CPU use (os.cpu.percent), %, the mean over the lines


def node_spans(intervals):
    """The lines that carry the nodes' CPU, each as the span it covers ([nodes_start, end]): what nodes_over reads."""
    return [{**line, "start": line["nodes_start"]} for line in intervals if isinstance(line.get("nodes"), dict) and "nodes_start" in line]


def nodes_over(spans, start, end):
    """{node name: NodeLoad} over [start, end] from the node spans (node_spans), each counted in proportion to its
    overlap; {} where none overlaps."""
    found = {}
    for parts in _parts(spans, start, end).values():
        for line, weight, overlap in parts:
            for node in line["nodes"].values():
                if not isinstance(node, dict) or not all(isinstance(node.get(k), (int, float)) for k in ("cpu_ms", "ms")):
                    continue
                sums = found.setdefault(
                    str(node.get("name")), {"host": str(node.get("host")), "cpu": 0.0, "ms": 0.0, "seconds": 0.0, "os": []}
                )
                sums["cpu"] += node["cpu_ms"] * weight
                sums["ms"] += node["ms"] * weight
                sums["seconds"] += overlap
                if isinstance(node.get("os_cpu_percent"), (int, float)):
                    sums["os"].append((node["os_cpu_percent"], weight))
    return {
        name: NodeLoad(
            name=name,
            host=sums["host"],
            seconds=sums["seconds"],
            cpu=100 * sums["cpu"] / sums["ms"] if sums["ms"] > 0 else math.nan,
            host_cpu=sum(v * w for v, w in sums["os"]) / sum(w for _, w in sums["os"]) if sums["os"] else None,
        )
        for name, sums in sorted(found.items())
    }


def nodes_error(race):
    """Why the sampler could not ask the cluster's nodes (the first reason it recorded), or None."""
    return next((str(line["nodes_error"]) for line in lines(race) if line.get("nodes_error")), None)


def nodes_table(race):
    """(header, rows) of each node's CPU per timed cell (and its host's); None where the record has no node lines."""
    spans = node_spans(lines(race))
    rows = []
    for task, (start, end) in sorted(cell_windows(race).items(), key=lambda item: item[1]):
        for node in nodes_over(spans, start, end).values():
            host_cpu = "" if node.host_cpu is None else f"{node.host_cpu:.0f}"
            rows.append([task, node.name, node.host, f"{node.seconds:.1f}", f"{node.cpu:.0f}", host_cpu])
    if not rows:
        return None
    header = ["cell (task)", "node", "its host", "seconds", "node process, % of a core", "its host's CPU % (os.cpu.percent)"]
    return header, rows


def cell_windows(race):
    """{task: (first request, last answer)} of each task's measured coverages (wall-clock seconds)."""
    windows = {}
    for line in race.record(records.VALIDATION, []):
        window = line.get("window") if isinstance(line, dict) else None
        if not line.get("measured") or not isinstance(window, list) or len(window) != 2:
            continue
        lo, hi = windows.get(line.get("task"), (math.inf, -math.inf))
        windows[line.get("task")] = (min(lo, window[0]), max(hi, window[1]))
    return windows


def _worst(loads):
    return max(loads.values(), key=lambda load: (load.foreign / FOREIGN_BUSY + load.steal / STEAL_BUSY)) if loads else None


def per_cell(race):
    """{task: the busiest host's HostLoad over the task's measured window}, in window order."""
    record = lines(race)
    found = {}
    for task, (start, end) in sorted(cell_windows(race).items(), key=lambda item: item[1]):
        worst = _worst(load_over(record, start, end))
        if worst is not None:
            found[task] = worst
    return found


def over_cells(race):
    """The busiest host's load over the race's timed cells together (each cell's window, the time between them not),
    or None where the race has no host record or no timed cell."""
    record = lines(race)
    merged = {}
    for start, end in cell_windows(race).values():
        for host, parts in _parts(record, start, end).items():
            merged.setdefault(host, []).extend(parts)
    return _worst(_loads(merged))


def warning(race):
    """The line a reader must not miss when the host was busy over the race's cells (which cells, how busy), or None."""
    overall = over_cells(race)
    if overall is None or not overall.busy:
        return None
    cells = [task for task, load in per_cell(race).items() if load.busy]
    shown = ", ".join(cells[:4]) + (f" and {len(cells) - 4} more" if len(cells) > 4 else "")
    return (
        f"WARNING host busy during the timed cells ({overall.host}): {'; '.join(overall.busy)} "
        f"(busy from {FOREIGN_BUSY:.0f}% of a core or {STEAL_BUSY:.0f}% steal); cells met it: {shown or 'none alone'}. "
        "Its figures are the host's as much as Elasticsearch's: race again on a quiet host before reading a change."
    )


def summary_line(race):
    """The warning when the host was busy, else how quiet it was; or that the race has no host record."""
    busy = warning(race)
    if busy:
        return busy
    overall = over_cells(race)
    if overall is not None:
        return f"host quiet during race {race.race_id[:8]}'s timed cells ({overall.host}): {overall.text()}"
    record = lines(race)
    if not record:
        return f"{NOT_RECORDED} for race {race.race_id[:8]}"
    whole = _worst(load_over(record, min(line["start"] for line in record), max(line["end"] for line in record)))
    said = "; ".join(whole.busy) or "quiet"
    return f"host during race {race.race_id[:8]}, which timed no coverage ({whole.host}): {said}: {whole.text()}"


def table(race):
    """(header, rows) of the host's load per timed cell and over them; None where the race has no host record."""
    cells = per_cell(race)
    if not cells:
        return None
    header = [
        "cell (task)",
        "seconds",
        "other processes, % of a core",
        "steal %",
        "iowait %",
        "Rally, % of a core",
        "Elasticsearch, % of a core",
        "runnable (max)",
        "load1 (max)",
        "MemAvailable MB (min)",
        "major faults",
        "busy",
    ]

    def row(name, load):
        mem = "" if load.mem_available_kb is None else f"{load.mem_available_kb / 1024:,.0f}"
        return [
            name,
            f"{load.seconds:.1f}",
            f"{load.foreign:.1f}",
            f"{load.steal:.1f}",
            f"{load.iowait:.1f}",
            f"{load.rally:.0f}",
            f"{load.elasticsearch:.0f}",
            "" if load.running is None else str(load.running),
            "" if load.load1 is None else f"{load.load1:.2f}",
            mem,
            "" if load.major_faults is None else str(load.major_faults),
            "; ".join(load.busy) or "no",
        ]

    rows = [row(task, load) for task, load in cells.items()]
    overall = over_cells(race)
    if overall is not None:
        rows.append(row("all timed cells", overall))
    return header, rows
