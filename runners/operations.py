"""This track's operation types, collected from the study modules that declare them.

A study module (runners/studies/) declares the operation types it implements in a table of its own at module level,
`OPERATIONS = {"<type>": Operation(...)}` (runners/contracts/registry.py): runner, privilege need, parameter source and
load-time validation, beside the runner. This module merges the tables of the study package's modules
(runners.studies.MODULES); registration (runners/__init__.py), the track processor and the privilege check read the
merge. A parameter source is registered under the operation's name, so a track task names it as
"param-source": "<operation type>".
"""

from runners import studies
from runners.shared.index_body import FreshIndexBodyParamSource

# parameter sources of Rally's own operations, by the name a task gives as its param-source
PARAM_SOURCES = {"fresh-index-body": FreshIndexBodyParamSource}


def merge(tables):
    """{operation type: Operation} and {operation type: module name} of (module name, OPERATIONS table) pairs; an
    operation type two modules declare is refused, naming both."""
    collected, declared_by = {}, {}
    for name, table in tables:
        for operation_type, operation in table.items():
            if operation_type in collected:
                raise RuntimeError(
                    f"operation type {operation_type!r} is declared by runners/studies/{declared_by[operation_type]}.py and "
                    f"runners/studies/{name}.py"
                )
            collected[operation_type], declared_by[operation_type] = operation, name
    return collected, declared_by


OPERATIONS, DECLARED_BY = merge(studies.tables("OPERATIONS"))
