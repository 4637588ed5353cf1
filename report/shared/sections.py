"""What a race's report is made of: a Section (a table, its note and summary line), a Chart, and a table's numbers as
markdown. A study's tables live in the study's module (report/studies/ingest.py, coverage.py, layouts.py, ...); they
read a race's cells through report/shared/readers.py.

A study's table returns (header, rows), or None when the race has no data for it, or a sentence saying why it cannot
be built, so that the report can say so plainly."""

from typing import Callable, NamedTuple, Optional, Union


def normalized(value, base):
    return value / base if isinstance(value, (int, float)) and isinstance(base, (int, float)) and base else None


def ratio(numerator, denominator):
    """numerator / denominator, or None where either is missing or the denominator is 0 (a took counts whole
    milliseconds: a small index answers in 0): a share or ratio of nothing is no figure, never a division error."""
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def pct(x):
    """A fraction as a percentage with one decimal, or None."""
    return None if x is None else f"{100 * x:.1f}%"


def fmt(value):
    if value is None:
        return "-"
    if isinstance(value, float):
        if abs(value) >= 100:
            return f"{value:,.0f}"
        return f"{value:,.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def markdown(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(fmt(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


class Chart(NamedTuple):
    """One chart of a race's report. A study module lists its own in CHARTS; report/catalog.py collects them, and the
    report shows each one the race has (its draw wrote the file)."""

    file: str  # the PNG's name in the race's report folder
    draw: Callable  # (race, path) -> the path written, or None when the race has nothing to draw
    caption: str


class Section(NamedTuple):
    """One section of a race's report. Each study module lists its own in SECTIONS, in report order, and
    report/__main__.py joins every study's."""

    title: str
    build: Callable  # race -> (header, rows), None when the race has no data for it, or a sentence why it cannot be built
    lacks: str  # what a race without it lacks (the report names those in one sentence)
    note: Optional[Union[str, Callable]]  # under the table: text, or race -> text
    summary: Optional[Callable] = None  # race -> the line `make report` prints of this section, when the race has it
