"""What every study's report module declares, collected: its sections (SECTIONS), its answer (ANSWER), its charts
(CHARTS) and its trend figures (TREND_FIGURES). A new study is a new module in report/studies/ declaring them; this
module finds it as runners/studies/ finds OPERATIONS, and the report, the trend and the versions study read the
collection (the history imports no study: it is handed the figures)."""

import importlib
import pkgutil

import report.studies as study_package
from report.shared.figures import Figure
from report.shared.sections import Chart, Section

# the order the studies' sections take in a race's report; a module not named here follows them, in name order (a new
# study joins the report by declaring SECTIONS, and takes its place by its name here)
REPORT_ORDER = (
    "ingest",
    "ingest_changes",
    "coverage",
    "coverage_answer",
    "layouts",
    "single_doc",
    "network",
    "load",
    "costs",
    "large_source",
    "widths",
    "memory",
    "profile",
)
# the order of the history's figures in a series: the coverage cells first, then the ingest, then the other studies'
# headline figures; a module not named here follows them, in name order
TREND_ORDER = ("coverage_answer", "ingest_changes", "widths", "network", "large_source", "profile")
# the order of a race's charts at its report's end; a module not named here follows them, in name order
CHART_ORDER = ("coverage", "ingest", "network", "load", "memory", "widths")
DECLARATIONS = {"SECTIONS": Section, "ANSWER": Section, "CHARTS": Chart, "TREND_FIGURES": Figure}


def _modules():
    found = (m.name for m in pkgutil.iter_modules(study_package.__path__))
    return {name: importlib.import_module(f"report.studies.{name}") for name in found}


def declaring(table, order):
    """The modules of report/studies/ that declare `table`: those `order` names in its order, then the others by name.
    A name in `order` that is no such module is refused, named (a renamed module would otherwise fall to the end); so is
    a declaration of the wrong type."""
    studies = {name: module for name, module in _modules().items() if hasattr(module, table)}
    stale = [name for name in order if name not in studies]
    if stale:
        raise RuntimeError(f"report/catalog.py names {', '.join(stale)}: no report module of that name declares {table}")
    rank = {name: place for place, name in enumerate(order)}
    ordered = tuple(studies[name] for name in sorted(studies, key=lambda name: (rank.get(name, len(rank)), name)))
    for module in ordered:
        declared = getattr(module, table)
        for item in declared if isinstance(declared, (list, tuple)) else (declared,):
            if not isinstance(item, DECLARATIONS[table]):
                raise RuntimeError(f"{module.__name__}.{table} holds {item!r}: each must be a {DECLARATIONS[table].__name__}")
    return ordered


STUDIES = declaring("SECTIONS", REPORT_ORDER)  # every study's report module with sections, in report order
SECTIONS = [section for module in STUDIES for section in module.SECTIONS]
ANSWERS = [module.ANSWER for module in STUDIES if hasattr(module, "ANSWER")]  # the report's first section
CHARTS = [chart for module in declaring("CHARTS", CHART_ORDER) for chart in module.CHARTS]
TREND_FIGURES = tuple(figure for module in declaring("TREND_FIGURES", TREND_ORDER) for figure in module.TREND_FIGURES)
