"""The report's ingest-changes sections: seed 000's ingest changes, each measured alone against the baseline (each
ingest into an index of its own), and where an epoch's wall time goes, beside the seed's segment table.

Each builder returns (header, rows), or None when the race has no data for it (report/shared/sections.py's contract). A failed
ingest (failed bulk requests, a document count other than the corpus's, or none verified) is FAILED and never has a
saving; a failed baseline gives no change a saving. The seed's figures stay in columns of their own."""

import math
import statistics
from dataclasses import dataclass

from scipy import stats

from report.shared import sections
from report.shared.figures import COST, Figure, summed_walls
from report.shared.sections import Section
from report.shared.uncertainty import CONFIDENCE
from report.studies import ingest
from runners.contracts import records
from runners.contracts.queries import INGEST_CHANGE_BASELINE, INGEST_CHANGES

# seed 000's table "change | expected savings | trade-off", in its own words, per change of the vocabulary; the seed
# has no row for the changes together
SEED_CHANGES = {
    "bulk-size": ("Bulk batch 1000 → 10,000", "fewer fsyncs/round-trips, ~5–10s", "larger memory per batch"),
    "clients": ("Concurrent bulk requests (worker pool)", "parallel use of ES indexing threads", "more client complexity"),
    "refresh": ("index.refresh_interval: -1 during bulk", "~1–5s", "data not visible until manual refresh"),
    "translog": ("index.translog.durability: async", "~5–10s", "risk of last-window data loss on crash"),
    "all": ("no row: the four above together", "-", "-"),
}
SEED_WALL_S = 76.867  # seed 000's ingest: the mean epoch wall (ms 76,867), 1,000-row bulks from one client
SEED_TOOK_S = 39.858  # its mean took_sum per epoch
SEED_BASELINE = (
    "the seed's ingest: 1,000-row bulks, one client, refresh after each epoch",
    f"(the reference: {SEED_WALL_S:.1f} s wall per epoch)",
    "-",
)
# seed 000's segment table, per epoch: (segment, ~seconds, share)
SEED_SEGMENTS = {"client": (37, "47%"), "index": (34, "42%"), "other": (6, "11%")}

# what each tuned track parameter changes against the baseline, as the report says it (the race's values filled in)
CHANGE_TEXT = {
    "tuned_bulk_size": "bulk size {bulk_size} → {tuned_bulk_size}",
    "tuned_clients": "clients {bulk_clients} → {tuned_clients}",
    "tuned_refresh_interval": "refresh_interval {tuned_refresh_interval} during ingest",
    "tuned_translog_durability": "translog.durability {tuned_translog_durability} during ingest",
}
BASELINE_TEXT = "bulk size {bulk_size}, clients {bulk_clients}, the index's default refresh and translog"


def change_records(race):
    """The ingest records of ingest-changes: {the baseline or a change: its record} of those that ran."""
    found = {}
    for name in (INGEST_CHANGE_BASELINE, *INGEST_CHANGES):
        data = race.record(ingest.ingest_record(race, change=name))
        if data is not None:
            found[name] = data
    return found


def main_baseline(race, name):
    """True when the baseline of the changes is the race's own ingest (full: the study's ingest, ingest.json, tasks
    bulk-epoch-N), which runs after the changes, rather than ingest-changes' change-baseline ingest."""
    return (
        name == INGEST_CHANGE_BASELINE and name not in change_records(race) and bool(ingest.ingest_of(race)) and bool(change_records(race))
    )


def ingests(race):
    """The baseline and the changes this race ran, in the vocabulary's order (the schedule's): those with a record or
    a task of their own (a change whose record is missing still shows, as failed)."""
    tasks = race.op_metrics()
    prefixes = {name: ingest.ingest_prefix(race, change=name) for name in (INGEST_CHANGE_BASELINE, *INGEST_CHANGES)}
    return [
        name
        for name, prefix in prefixes.items()
        if name in change_records(race)
        or (prefix is not None and any(task.startswith(prefix) for task in tasks))
        or main_baseline(race, name)
    ]


def epoch_rows(race, record, prefix):
    """Per epoch of one ingest record, in s: wall (ingest.epoch_wall; prefix: that of the ingest's task names, for an
    older race's task of the epoch), the bulk tooks' sum, /_stats indexing, and /_stats refresh + merge + flush."""
    ops = race.op_metrics()
    rows = []
    for e in sorted((record or {}).get("epochs", []), key=lambda r: r["epoch"]):
        rows.append(
            {
                "epoch": e["epoch"],
                "wall": ingest.epoch_wall(ops, e, ingest.epoch_task(prefix or "", e["epoch"])),
                "took": e["bulk-took-ms"] / 1000,
                "index": e["index-ms"] / 1000,
                "other": (e["refresh-ms"] + e["merge-ms"] + e["flush-ms"]) / 1000,
            }
        )
    return rows


def change_rows(race, name):
    """epoch_rows of the baseline or one change of ingest-changes."""
    if main_baseline(race, name):
        return epoch_rows(race, ingest.ingest_of(race), ingest.ingest_prefix(race))
    return epoch_rows(race, change_records(race).get(name), ingest.ingest_prefix(race, change=name))


def change_problem(race, name):
    """Why one ingest of ingest-changes failed, or None: ingest.ingest_problem's reasons under its task prefix, no
    record of its cost, or a document count never checked (its verify-doc-count did not run)."""
    if main_baseline(race, name):
        return ingest.ingest_problem(race)
    problem = ingest.ingest_problem(race, change=name)
    if problem:
        return problem
    if not change_records(race).get(name, {}).get("epochs"):
        return f"no ingest record ({ingest.ingest_record(race, change=name)})"
    task = ingest.ingest_task(race, change=name)
    if task is None or not {task, ingest.count_task(records.ingest_prefix(task))} & race.op_metrics().keys():
        return f"its document count was not verified ({task or 'its ingest task'} did not run)"
    return None


@dataclass(frozen=True)
class Saving:
    """A change's saving against the baseline over n paired epochs: the mean share of the baseline's wall (and the mean
    seconds), the mean's 95% t-interval (None below 2 epochs), and the smallest and largest epoch's share."""

    n: int
    mean: float
    seconds: float
    low: float | None
    high: float | None
    smallest: float
    largest: float


def saving(baseline, change):
    """Epoch N of the change against epoch N of the baseline (each into a fresh index, so both hold the same
    documents at that epoch): per epoch (baseline wall - change wall) / baseline wall. The epochs are the samples:
    their mean, Student's t-interval of the mean (n - 1 degrees of freedom) and min..max. None without a common
    epoch with both walls."""
    base = {r["epoch"]: r["wall"] for r in baseline if r["wall"]}
    pairs = [(base[r["epoch"]], r["wall"]) for r in change if r["epoch"] in base and r["wall"] is not None]
    if not pairs:
        return None
    shares = [(b - c) / b for b, c in pairs]
    mean = statistics.fmean(shares)
    low = high = None
    if len(shares) > 1:
        half = stats.t.ppf((1 + CONFIDENCE) / 2, len(shares) - 1) * statistics.stdev(shares) / math.sqrt(len(shares))
        low, high = mean - half, mean + half
    return Saving(len(shares), mean, statistics.fmean(b - c for b, c in pairs), low, high, min(shares), max(shares))


def _described(race, name):
    """What the ingest changes against the baseline, with this race's values."""
    values = {p: race.param(p) for p in ("bulk_size", "bulk_clients", *CHANGE_TEXT)}
    if name == INGEST_CHANGE_BASELINE:
        return BASELINE_TEXT.format(**values)
    return "; ".join(CHANGE_TEXT[p].format(**values) for p in INGEST_CHANGES[name])


def _settings_read(race, name):
    """The index settings the ingest ran with, as its ingest's set-up read them (runners/studies/ingest.py); "-" for a record
    without them."""
    found = change_records(race).get(name, {}).get("index-settings")
    return ", ".join(f"{key.removeprefix('index.')} {value}" for key, value in found.items()) if found else "-"


def changes_table(race):
    """Per ingest (the baseline, then each change): its wall per epoch (mean) and in total, bulk took and /_stats
    indexing in total, its saving against the baseline (saving()), and seed 000's change, expected saving and
    trade-off beside it."""
    names = ingests(race)
    if not names:
        return None
    header = [
        "ingest",
        "what it changes",
        "index settings at its start",
        "wall per epoch, mean (s)",
        "wall, total (s)",
        "bulk took, total (s)",
        "ES indexing /_stats, total (s)",
        "saving per epoch, mean (s)",
        "saving, mean (% of wall)",
        f"{CONFIDENCE:.0%} t-interval",
        "min..max over epochs",
        "seed 000: change",
        "seed 000: expected savings",
        "seed 000: trade-off",
    ]
    baseline = change_rows(race, INGEST_CHANGE_BASELINE)
    baseline_problem = change_problem(race, INGEST_CHANGE_BASELINE)
    body = []
    for name in names:
        rows = change_rows(race, name)
        walls = [r["wall"] for r in rows if r["wall"] is not None]
        figures = [
            statistics.fmean(walls) if walls else None,
            sum(walls) if walls else None,
            sum(r["took"] for r in rows) if rows else None,
            sum(r["index"] for r in rows) if rows else None,
        ]
        problem = change_problem(race, name)
        if problem:
            saved = [f"FAILED: {problem}", "-", "-", "-"]
        elif name == INGEST_CHANGE_BASELINE:
            saved = ["(the baseline)", "-", "-", "-"]
        elif baseline_problem:
            saved = ["no saving: the baseline FAILED", "-", "-", "-"]
        else:
            s = saving(baseline, rows)
            saved = (
                ["no epoch with a wall time in both", "-", "-", "-"]
                if s is None
                else [
                    s.seconds,
                    sections.pct(s.mean),
                    f"{sections.pct(s.low)} .. {sections.pct(s.high)}" if s.low is not None else f"none: {s.n} epoch",
                    f"{sections.pct(s.smallest)} .. {sections.pct(s.largest)}",
                ]
            )
        seed = SEED_BASELINE if name == INGEST_CHANGE_BASELINE else SEED_CHANGES[name]
        body.append([name, _described(race, name), _settings_read(race, name), *figures, *saved, *seed])
    return header, body


def answer_table(race):
    """The ingest's answer: each change's saving per epoch against the baseline with its interval and verdict, and the
    seed's expected saving beside it."""
    names = [name for name in ingests(race) if name != INGEST_CHANGE_BASELINE]
    if not names:
        return None
    baseline, baseline_problem = change_rows(race, INGEST_CHANGE_BASELINE), change_problem(race, INGEST_CHANGE_BASELINE)
    header = [
        "change",
        "what it changes",
        f"saving per epoch, mean (% of wall) [{CONFIDENCE:.0%}]",
        "verdict",
        "seed 000: expected savings",
    ]
    body = []
    for name in names:
        problem = change_problem(race, name) or (baseline_problem and "the baseline FAILED")
        s = None if problem else saving(baseline, change_rows(race, name))
        if problem or s is None:
            figure, verdict = f"FAILED: {problem}" if problem else "no epoch with a wall time in both", "no verdict"
        elif s.low is None:
            figure, verdict = f"{sections.pct(s.mean)} (n={s.n})", "no verdict: one epoch"
        else:
            figure = f"{sections.pct(s.mean)} [{sections.pct(s.low)}, {sections.pct(s.high)}]"
            verdict = "saves" if s.low > 0 else "costs" if s.high < 0 else "no difference beyond the epochs' spread"
        body.append([name, _described(race, name), figure, verdict, SEED_CHANGES.get(name, (None, "-"))[1]])
    return header, body


ANSWER_NOTE = (
    f"saving: (baseline wall - change wall) / baseline wall, epoch by epoch, its mean and {CONFIDENCE:.0%} t-interval over "
    "the epochs (within this race: make repeat for race to race). The seed's savings are seconds per epoch of its 76.9 s "
    "wall, from a Python client on 8 cores; the detailed table below sets both side by side.\n"
)


def _segments(rows):
    """Seed 000's segments of the mean epoch, from /_stats (see SEGMENT_NOTE): {part: seconds}; None without walls."""
    rows = [r for r in rows if r["wall"] is not None]
    if not rows:
        return None
    mean = {key: statistics.fmean(r[key] for r in rows) for key in ("wall", "took", "index", "other")}
    return {**mean, "client": max(0.0, mean["wall"] - mean["index"] - mean["other"])}


SEGMENTS = (
    ("client", "Client + network: wall - (ES indexing + ES other), at least 0"),
    ("index", "ES indexing: /_stats indexing time"),
    ("other", "ES other: /_stats refresh + merge + flush time"),
    ("wall", "wall: the epoch's bulks, first start to last end"),
    ("took", "for reference, the seed's server time: bulk took sum (a coarse clock here)"),
)


def segment_table(race):
    """Where an epoch's wall time goes, seed 000's segments beside ours, per epoch (the mean over epochs): for the
    baseline of ingest-changes and for the race's own ingest (ingest.json: full, ingest-baseline, ...)."""
    found = []
    if INGEST_CHANGE_BASELINE in change_records(race):
        found.append(("ingest-changes baseline", change_rows(race, INGEST_CHANGE_BASELINE), change_problem(race, INGEST_CHANGE_BASELINE)))
    if ingest.ingest_of(race):
        found.append(
            (f"{race.challenge} ingest", epoch_rows(race, ingest.ingest_of(race), ingest.ingest_prefix(race)), ingest.ingest_problem(race))
        )
    columns = [(label, _segments(rows), problem) for label, rows, problem in found]
    columns = [c for c in columns if c[1] is not None]
    if not columns:
        return None
    header = ["segment", "seed 000 (s per epoch)", "seed 000 share"]
    for label, _, _ in columns:
        header += [f"{label} (s per epoch)", f"{label} share"]
    seed = {**SEED_SEGMENTS, "wall": (SEED_WALL_S, "100%"), "took": (SEED_TOOK_S, sections.pct(SEED_TOOK_S / SEED_WALL_S))}
    body = []
    for key, label in SEGMENTS:
        row = [label, *seed[key]]
        for _, parts, problem in columns:
            row += ["FAILED", "-"] if problem else [parts[key], sections.pct(parts[key] / parts["wall"] if parts["wall"] else None)]
        body.append(row)
    return header, body


CHANGES_NOTE = (
    "Each row is one ingest of the whole corpus into a freshly created index (challenge ingest-changes): the baseline "
    "(bulk_size docs per bulk from bulk_clients clients, the index's default refresh and translog), each seed change "
    "alone in its place (the tuned_* track parameters, as ingest-tuned uses them), then all together; a setting a "
    "change alters is unset after its ingest. index settings at its start: as its ingest-setup read them, after "
    "the index was created and before the first bulk (Elasticsearch's default where unset). wall: per epoch, its first "
    "bulk's start to its last bulk's end as the ingest task change-<ingest>-ingest recorded them (older races: the "
    "duration of the task change-<ingest>-bulk-epoch-N in race.json), the mean over epochs and the total. bulk took: the sum of the bulk responses' took (a coarse clock: "
    "see the next table). ES indexing: the /_stats indexing time, summed over shards and threads. saving: per epoch, "
    "(baseline wall - change wall) / baseline wall, epoch N of the change paired with epoch N of the baseline (both "
    "indices then hold the same documents); the epochs are the samples: their mean (in s and in % of the baseline's "
    f"wall), the {CONFIDENCE:.0%} t-interval of the mean (Student's t, epochs - 1 degrees of freedom; none from one "
    "epoch) and the smallest and largest epoch's saving. The interval holds the spread from epoch to epoch within "
    "this race only, not from race to race (repeat the race for that: make repeat). A FAILED ingest (failed bulk "
    "requests, a document count other than the corpus's, or none verified) has no saving, and a failed baseline gives "
    "none. The seed's columns quote seed 000's table as written: its expected savings are per epoch of 1,000,000 "
    f"documents against its {SEED_WALL_S:.1f} s wall, and it gives none for the changes together; set our seconds "
    "beside them only at full scale (a --test-mode race ingests 1,000 documents an epoch).\n"
)

SEGMENT_NOTE = (
    "Seed 000's split of an epoch's wall time, per epoch (our figures: the mean over epochs). The seed derived it from "
    "the bulk took sum: client + network = wall - took sum, ES indexing = /_stats indexing, ES other = took sum - "
    "indexing. On this node a bulk's took is a coarse clock (Elasticsearch reads a clock cached every 200 ms, 8.17 to 9.5 alike: "
    "most bulks report 0, a few 200 ms or more), so per-epoch took sums are unreliable and are shown for reference "
    "only. Here ES indexing = /_stats indexing time; ES other = /_stats refresh + merge + flush time; client + "
    "network = wall - (ES indexing + ES other), floored at 0, from the epochs' means. The /_stats times are summed "
    "over shards and threads and can overlap one another and the client's time (merges and flushes run in the "
    "background; with several clients or shards indexing runs on several threads at once), and ES other includes the "
    "refresh after each epoch, which runs after the bulk task; what no /_stats counter holds (the translog fsync at "
    "the end of each bulk, the seed's main ES other, and building the response) falls in client + network here. The "
    "parts are an approximation, and their shares can add up to more than 100%. No interval: each part is a difference of per-epoch means of quantities that overlap, "
    "not a sample of one quantity (the epochs' own figures are in the ingest tables).\n"
)


# this study's report sections, in report order
SECTIONS = [
    Section(
        "Ingest changes one at a time: each seed change alone against the baseline",
        changes_table,
        "ingest changes",
        CHANGES_NOTE,
    ),
    Section(
        "Ingest: the seed's segments (client + network, ES indexing, ES other) per epoch",
        segment_table,
        "ingest segments",
        SEGMENT_NOTE,
    ),
]
ANSWER = Section("Ingest: what each change saves", answer_table, "ingest changes", ANSWER_NOTE)


def ingest_walls(race):
    """A race's baseline ingest (its epochs' walls summed, s) as INGEST_WALL's own cell, and each change of
    ingest-changes as "<INGEST_WALL>: <change>": full's baseline is the race's own ingest, the figure's own cell."""
    found = {}
    rows = ingest.ingest_rows(race)
    if rows:
        found[INGEST_WALL.cell()] = summed_walls([row["wall_s"] for row in rows], ingest.ingest_problem(race))
    for name in ingests(race):
        if not main_baseline(race, name):
            walls = [row["wall"] for row in change_rows(race, name)]
            found[INGEST_WALL.cell(name)] = summed_walls(walls, change_problem(race, name))
    return found


def seed_ingest_wall(cell):
    """Seed 000's ingest: its walls over its 5 epochs (s); it gives none per change."""
    return 5 * SEED_WALL_S if cell == INGEST_WALL.cell() else None


INGEST_WALL = Figure("ingest wall (s)", "s", COST, ingest_walls, seed=seed_ingest_wall)
TREND_FIGURES = (INGEST_WALL,)
