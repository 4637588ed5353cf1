"""What a report says first: whether the race finished, and which tasks failed, how often and why.

Rally writes a race's `results` only when it reaches the end of the race; a race it stopped early (a node that died,
Ctrl-C, an error of Rally's own) has none, and its race.json then says nothing of what ran. The track's records count
every coverage it attempted, a failed one with its cause (records.ERROR, runners/studies/coverage.py), so the report can say
what failed either way. A race that did not finish has no answer: its report gives no speed-up, saving or fastest
configuration, only what failed and, marked partial, what passed before it stopped.
"""

from dataclasses import dataclass

from report.shared import readers, sections, uncertainty
from report.shared.races import NOT_FINISHED, finished  # noqa: F401 (the report's callers read them here too)
from report.studies import coverage
from report.studies.memory import FLOOR_MEASURE
from runners.contracts import records
from runners.contracts import settle_record as settling


@dataclass(frozen=True)
class TaskOutcome:
    task: str
    attempted: int | None  # coverages the track recorded (warm-ups included); None: a task that records none
    failed: int | None  # of them, those that failed; None: only Rally's error rate is known
    error_rate: float | None  # Rally's, where the race has results
    cause: str  # the first failure's description, or where to find it

    def failed_text(self):
        if self.failed is not None:
            return f"{self.failed} of {self.attempted}"
        return f"{self.error_rate:.0%} of its samples" if self.error_rate is not None else "-"


def _line_failed(line):
    return line.get(records.ERROR) is not None or (line.get("failed-checks") or 0) > 0


def _line_cause(line):
    return line.get(records.ERROR) or f"{line.get('failed-checks')} failed checks against the ground truth"


def failures(race):
    """Every task with a failed sample, in the order the race first recorded them. Of a race that finished, the tasks
    Rally counted errors for (its error rate: what the runner returned for each measured sample), with the failed
    coverages the track recorded and the first one's cause; of a race that did not finish, every task whose recorded
    coverages include a failed one. A breaker floor's recorded coverages are the steps of its bisection, whose trips
    are what it measures, not failures: only Rally's error rate speaks for it."""
    per_task = {}
    for line in readers.validation(race):
        per_task.setdefault(line.get("task"), []).append(line)
    ops, done = race.op_metrics(), finished(race)
    found = []
    for task, lines in per_task.items():
        bisection = (race.cells.get(task) or {}).get("measure") == FLOOR_MEASURE
        failed = [] if bisection else [line for line in lines if _line_failed(line)]
        error_rate = (ops.get(task) or {}).get("error_rate")
        if (error_rate or 0) > 0 if done else failed:
            cause = _line_cause(failed[0]) if failed else RALLY_LOG
            found.append(
                TaskOutcome(task, len(lines), len(failed), error_rate, cause)
                if failed
                else TaskOutcome(task, None, None, error_rate, cause)
            )
    for task, op in ops.items():
        if task not in per_task and readers.failed(op):
            found.append(TaskOutcome(task, None, None, op["error_rate"], RALLY_LOG))
    return found


RALLY_LOG = "Rally's log names it (~/.rally/logs/rally.log)"


def outcome_lines(race):
    """The report's first lines: whether the race finished and, for each task with failed samples, how many failed
    and the first cause. A clean race gets one line."""
    found = failures(race)
    recorded = len(readers.validation(race))
    if not finished(race):
        lines = [
            f"**This race {NOT_FINISHED}.** Rally stopped before the end of the race and wrote no results (a node that "
            "died, Ctrl-C, an error of Rally's own: its log, ~/.rally/logs/rally.log, says which). A race that did not "
            "finish has no answer: this report gives no speed-up, saving or fastest configuration from it. Race it "
            "again once the cause is mended.",
            "",
        ]
    elif found:
        lines = [
            f"**{len(found)} task(s) FAILED** (a failed sample is a wrong answer, an error answer or none): they are "
            "marked FAILED below and are never a baseline, a speed-up or the fastest configuration.",
            "",
        ]
    else:
        lines = [
            (
                f"The race finished and no task failed ({recorded:,} coverages recorded)."
                if recorded
                else "The race finished and no task failed."
            ),
            "",
        ]
    if found:
        header = ["task", "failed samples", "first cause"]
        lines += [sections.markdown(header, [[f.task, f.failed_text(), _short(f.cause)] for f in found]), ""]
    elif recorded == 0 and not finished(race):
        lines += ["_No coverage was recorded before it stopped._", ""]
    return lines + settle_lines(race) + _drift_lines(race)


def settle_lines(race):
    """How the race settled the node before its first timed cell (runners/studies/settle.py's record): a line for a
    node that settled, named first in bold for one that did not (its figures are those of a node still getting
    faster, as a first race on a node just started is: docs/schedule.md) or a settling cut short by a failed pass."""
    lines = []
    for line in race.record(settling.SETTLE, []):
        passes, seconds, ratio = len(line.get("passes") or []), line.get("seconds"), line.get("pace-ratio")
        rule = f"the median of the last {line.get('window')} passes against the {line.get('window')} before"
        pace = "" if ratio is None else f", {ratio:.2f}x"
        served = _served_text(line)
        if line.get("settled"):
            lines.append(
                f"The node settled before the timed cells: {passes} passes over them in {seconds:.0f} s ({rule}{pace}, "
                f"within {line.get('tolerance'):.0%}){served}.{_bulk_text(line)}"
            )
        elif line.get("stopped-by") == settling.TIME_LIMIT:
            still = (
                f"the passes were still getting faster ({rule}{pace}, beyond {line.get('tolerance'):.0%})"
                if not line.get("paced", False)
                else f"the node had not yet served the searches its compiler needs{served}"
            )
            lines.append(
                f"**The node had NOT settled before the timed cells:** after {passes} passes in {seconds:.0f} s (the "
                f"time limit, settle_time_limit) {still}. Its figures are those of a node still warming up: race it "
                f"again on this node, or with a longer settle_time_limit.{_bulk_text(line)}"
            )
        else:
            lines.append(f"**The settling stopped at a failed pass** (pass {passes}, task {line.get('task')}): the failures above say why.")
    return lines + [""] if lines else []


def _served_text(line):
    """The query phases the searching nodes had served since they started, against the floor (settle_node_searches);
    empty for a record without a floor (older races, or 0)."""
    floor, served = line.get(settling.NODE_SEARCHES_KEY) or 0, line.get("served-searches") or [None]
    if not floor:
        return ""
    if served[-1] is None:
        return "; the nodes' searches since they started could not be read (_nodes/stats), so the pace alone decided"
    uptime = line.get("jvm-uptime-s")
    age = "" if uptime is None else f", a node up {uptime:.0f} s when it began"
    return f"; {served[-1]:,} query phases served since the node started, against settle_node_searches {floor:,}{age}"


def _bulk_text(line):
    """A node that had served bulk requests in its process (an ingest) and was in its first race since (its searches
    when the settling began short of the floor; without a floor, any race): the settling does not undo what the bulks
    left (docs/schedule.md, "What it goes with"). Empty otherwise, or for a record without the count (older races)."""
    bulk, before = line.get(settling.BULK_REQUESTS_KEY), line.get(settling.SEARCHES_BEFORE_KEY)
    floor = line.get(settling.NODE_SEARCHES_KEY) or 0
    known = bool(floor) and before is not None  # with a floor and the count, a first race is told from a later one
    if not bulk or (known and before >= floor):
        return ""
    return (
        f" The node had served {bulk:,} bulk requests since it started (an ingest in its process) and "
        f"{'an unknown number of' if before is None else f'{before:,}'} query phases when the settling began: this "
        f"{'is' if known else 'may be'} its first race since it started, which the settling "
        "does not make like the next ones (on 9.5.3 such a race read the serial t-digest about 7% above the races "
        'after it over 7 node starts, on 8.17.2 within 2%: docs/schedule.md, "What it goes with"); race that cell '
        "again on this node for its settled figure."
    )


def _drift_lines(race):
    """A finished race's cells whose samples drift within the race (report/studies/coverage.py drifting): named first, since
    their figures hold for part of the race only (a cold JVM at the start, a node slowing down)."""
    if not finished(race):
        return []
    every = coverage.drifts(race)
    found = coverage.drifting(every)
    if not found:
        return []
    named = ", ".join(f"{task} ({d.ratio:.2f}x {d.verdict})" for task, d in found.items())
    judged = sum(d.verdict is not None for d in every.values())
    return [
        f"**{len(found)} of {judged} cells drift within the race** (the last third of their samples against the first, beyond "
        f"noise; the drift section): {named}. Their figures hold for part of the race only. The verdicts hold together: a race "
        f"without drift names any of its {judged} cells at most 5% of the time.",
        "",
    ]


def _short(text, limit=300):
    text = " ".join(str(text).split()).replace("|", "/")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def partial_table(race):
    """A race that did not finish: per recorded task, the coverages that passed and failed, and the median wall of
    those that passed and were measured, marked partial: what ran before it stopped, never an answer."""
    per_task = {}
    for line in readers.validation(race):
        per_task.setdefault(line.get("task"), []).append(line)
    if not per_task:
        return None
    header = ["task", "coverages recorded", "passed", "failed", "partial: median wall of the passed measured ones (ms)"]
    body = []
    for task, lines in per_task.items():
        passed = [line for line in lines if not _line_failed(line)]
        walls = [line["wall-ms"] for line in passed if line.get("measured") is not False and line.get("wall-ms") is not None]
        median = uncertainty.median_interval(walls).median if walls else None
        body.append([task, len(lines), len(passed), len(lines) - len(passed), "-" if median is None else f"{median:,.1f} (n={len(walls)})"])
    return header, body


PARTIAL_NOTE = (
    "Partial: the coverages the track recorded before the race stopped. The cells did not all run their measured "
    "coverages, and a cell's failures may have come from the cause that stopped the race: compare nothing here.\n"
)
