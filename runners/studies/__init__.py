"""The Rally plug-in by study: every module of this package is a study's (or the checks every challenge shares), and
declares beside its runners what it adds to the track, as module-level tables (runners/contracts/registry.py):
`OPERATIONS = {"<operation type>": Operation(...)}` and `PARAMETER_RULES = {"<track parameter>": rule}`. A new study is
a new module here; nothing else lists it (runners/operations.py and runners/contracts/parameters.py read the tables of
MODULES, this package's modules in name order)."""

import importlib
import pkgutil

from runners.contracts import parameters

MODULES = tuple(sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")))


def tables(name):
    """(module name, table) of every study module that declares the table `name` (OPERATIONS or PARAMETER_RULES)."""
    for module_name in MODULES:
        module = importlib.import_module(f"{__name__}.{module_name}")
        if hasattr(module, name):
            yield module_name, getattr(module, name)


parameters.install_study_rules(lambda: tables("PARAMETER_RULES"))  # before any study module checks a value
