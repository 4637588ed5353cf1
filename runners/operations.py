"""This track's operation types, collected from the runner modules that declare them.

A runner module declares the operation types it implements in a table of its own at module level,
`OPERATIONS = {"<type>": Operation(...)}` (runners/registry.py): runner, privilege need, parameter source and
load-time validation, beside the runner. This module finds every such module of the package by that declaration
and merges their tables; registration (runners/__init__.py), the track processor and the privilege check read the
merge. A parameter source is registered under the operation's name, so a track task names it as
"param-source": "<operation type>".
"""

import importlib
import pkgutil
import re
from pathlib import Path

from runners.index_body import FreshIndexBodyParamSource

DECLARES = re.compile(r"^OPERATIONS = \{", re.MULTILINE)

# parameter sources of Rally's own operations, by the name a task gives as its param-source
PARAM_SOURCES = {"fresh-index-body": FreshIndexBodyParamSource}


def declaring_modules(folder=Path(__file__).parent):
    """The names of the folder's modules that declare an OPERATIONS table (read as text first: importing every module,
    the track processor among them, to look would import this one again)."""
    for module in pkgutil.iter_modules([str(folder)]):
        if module.name != "operations" and DECLARES.search((Path(folder) / f"{module.name}.py").read_text()):
            yield module.name


def merge(tables):
    """{operation type: Operation} and {operation type: module name} of (module name, OPERATIONS table) pairs; an
    operation type two modules declare is refused, naming both."""
    collected, declared_by = {}, {}
    for name, table in tables:
        for operation_type, operation in table.items():
            if operation_type in collected:
                raise RuntimeError(
                    f"operation type {operation_type!r} is declared by runners/{declared_by[operation_type]}.py and runners/{name}.py"
                )
            collected[operation_type], declared_by[operation_type] = operation, name
    return collected, declared_by


OPERATIONS, DECLARED_BY = merge((name, importlib.import_module(f"runners.{name}").OPERATIONS) for name in sorted(declaring_modules()))
