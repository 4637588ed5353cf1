"""The track parameters: each one's default as track.json declares it (its one home) and what it accepts, as the
module of its study declares it.

track.json declares every parameter with its default at its top (runners/contracts/track_files.py reads them). Each study module
declares the rules of its own parameters beside its runners (`PARAMETER_RULES`, with runners/contracts/rules.py); this module
holds the track-wide ones, and the study package hands it the others when it is imported (runners/studies/__init__.py:
contracts import nothing of the studies), as runners/operations.py collects the OPERATIONS tables. The
track processor checks the values a user gave against these rules when the track loads, before anything is sent to the
cluster, and names the parameter and what it expects. The template renders any value without failing (typed Rally
fields fall back to the default), so that this check, not a JSON error, is what a user sees.
"""

import functools
import json

import jinja2

from runners.contracts import rules
from runners.contracts.queries import TRANSPORTS, VARIANTS, VOCABULARY_MODULE
from runners.contracts.rules import ParameterError  # noqa: F401 (callers catch parameters.ParameterError)
from runners.contracts.track_files import Expression, declared_defaults

# the track-wide parameters: the index, the corpus, every coverage's query and schedule
PARAMETER_RULES = {
    "number_of_shards": rules.integer(1, 1024),
    "number_of_replicas": rules.integer(0),
    "source_enabled": rules.boolean,
    "epochs": rules.integer(1),
    "variants": rules.names(tuple(VARIANTS)),
    "transports": rules.names(TRANSPORTS),
    "warmup_iterations": rules.integer(0),
    "iterations": rules.integer(1),
    "percents": rules.percents,
    "hdr_digits": rules.integer(0, rules.MAX_HDR_DIGITS),
    "request_timeout": rules.positive_number,
    "verify_corpus_checksums": rules.boolean,
    "coverage_assertions": rules.assertions,
    "track_total_hits": rules.boolean,
    # the study's cells each in a block of its own, or taking turns in shuffled passes (runners/shared/interleave.py)
    "schedule": rules.one_of("blocked", "interleaved"),
    "schedule_seed": rules.integer(0),
}


def _defaults():
    """track.json's declared defaults as values (its expressions over the vocabulary evaluated as Jinja would)."""
    environment = jinja2.Environment()
    return {
        name: environment.compile_expression(default)(vocabulary=VOCABULARY_MODULE) if isinstance(default, Expression) else default
        for name, default in declared_defaults().items()
    }


DEFAULTS = _defaults()  # name -> default, in track.json's order


def collect(tables, declared):
    """{parameter: rule} of (module name, PARAMETER_RULES) pairs; a parameter two modules rule, one no module rules
    or a rule of no declared parameter is refused, naming it."""
    collected, ruled_by = {}, {}
    for module, table in tables:
        for name, rule in table.items():
            if name in collected:
                raise RuntimeError(
                    f"track parameter {name!r} is ruled by runners/studies/{ruled_by[name]}.py and runners/studies/{module}.py"
                )
            collected[name], ruled_by[name] = rule, module
    unruled, undeclared = declared - collected.keys(), collected.keys() - declared
    if unruled or undeclared:  # a parameter nobody checks, or a rule of no parameter: the track and the modules disagree
        raise RuntimeError(
            f"track.json declares parameters without a rule: {sorted(unruled)}; rules without a declaration: {sorted(undeclared)}"
        )
    return collected


_study_tables = None  # () -> the study modules' (module name, PARAMETER_RULES) pairs: install_study_rules


def install_study_rules(tables):
    """The study modules' rule tables, handed by their package when it is imported (runners/studies/__init__.py), before
    any study module runs: the rules are collected from them at the first check."""
    global _study_tables
    _study_tables = tables
    all_rules.cache_clear()


@functools.lru_cache(maxsize=1)
def all_rules():
    """{parameter: rule} of every track parameter: this module's and each study module's."""
    if _study_tables is None:
        raise RuntimeError("the study modules' parameter rules are not loaded: import runners.studies before checking a parameter")
    return collect([("parameters", PARAMETER_RULES), *_study_tables()], DEFAULTS.keys())


def check(user_params):
    """Every user-given track parameter against its rule; raises ParameterError naming each bad one."""
    problems = []
    for name, value in sorted((user_params or {}).items()):
        if name not in DEFAULTS:
            continue  # Rally itself rejects unknown parameters ("Unused track parameters")
        try:
            all_rules()[name](value)
        except ParameterError as e:
            problems.append(f"track parameter {name} must be {e}, got {value!r}")
    if problems:
        raise ParameterError("; ".join(problems))


def value(user_params, name):
    """The effective value of a parameter (the user's, else the default)."""
    return (user_params or {}).get(name, DEFAULTS[name])


def check_operation_value(operation_param, value, track_param):
    """An operation parameter that a track parameter sets, checked with that track parameter's rule."""
    try:
        all_rules()[track_param](value)
    except ParameterError as e:
        raise ValueError(f"{operation_param} must be {e}, got {value!r} (track parameter {track_param})") from None


def accepted(name):
    """What a parameter accepts, in the words its check uses to refuse a value."""
    try:
        all_rules()[name](object())
    except ParameterError as e:
        return str(e)
    raise AssertionError(f"the rule of {name} accepted an object()")
