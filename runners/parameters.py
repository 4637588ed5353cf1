"""The track parameters: what each one accepts, beside its default as track.json declares it (its one home).

track.json declares every parameter with its default at its top (runners/track_files.py reads them); the track
processor checks the values a user gave against these rules when the track loads, before anything is sent to the
cluster, and names the parameter and what it expects. The template renders any value without failing (typed Rally
fields fall back to the default), so that this check, not a JSON error, is what a user sees.
"""

import json
import numbers

import jinja2

from runners.corpus import FETCH_TRUTH_ROWS, MAX_NODES
from runners.layouts import parse_layout
from runners.queries import (
    CCS_DIRECT_ROUTES,
    FETCH_KINDS,
    FETCH_TRANSPORTS,
    INGEST_CHANGES,
    SOURCE_MODES,
    TRANSPORTS,
    VARIANTS,
    VOCABULARY_MODULE,
)
from runners.toxiproxy import FAULTS
from runners.track_files import Expression, declared_defaults

MAX_HDR_DIGITS = 5  # Elasticsearch accepts number_of_significant_value_digits 0..5
MIN_RESOLUTION = 0.001  # the request breaker floor's finest relative bracket
MIB = 2**20  # source-large's MB, Elasticsearch's own: http.max_content_length "100mb" is 100 x 2^20 bytes
HTTP_MAX_CONTENT_LENGTH = 100 * MIB  # Elasticsearch's default http.max_content_length: one request body at most
MAX_RESULT_WINDOW = 10_000  # Elasticsearch's default index.max_result_window: one search's size at most


class ParameterError(ValueError):
    pass


def _integer(minimum, maximum=None):
    def check(value):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ParameterError(f"an integer{_range(minimum, maximum)}")
        if value < minimum or (maximum is not None and value > maximum):
            raise ParameterError(f"an integer{_range(minimum, maximum)}")

    return check


def _range(minimum, maximum):
    return f" from {minimum} to {maximum}" if maximum is not None else f" of at least {minimum}"


def _positive_number(value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0:
        raise ParameterError("a positive number")  # also the message for target_throughput, whose default is none


def _boolean(value):
    if not isinstance(value, bool):
        raise ParameterError("true or false")


def _one_of(*choices):
    def check(value):
        if value not in choices:
            raise ParameterError(f"one of {', '.join(map(repr, choices))}")

    return check


def _string(value):
    if not isinstance(value, str) or not value:
        raise ParameterError("a non-empty string")


def _time_value(value):
    # Elasticsearch's refresh_interval: -1 (off) or a time value such as 30s
    if isinstance(value, int) and not isinstance(value, bool) and value == -1:
        return
    if not isinstance(value, str) or not (
        value == "-1" or value[:-1].isdigit() and value[-1] in "smhd" or value.endswith("ms") and value[:-2].isdigit()
    ):
        raise ParameterError('"-1" or a time value such as "30s"')


def _names(vocabulary):
    def check(value):
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list) or not items or any(item not in vocabulary for item in items):
            raise ParameterError(f"a non-empty list (or comma-separated string) of {', '.join(vocabulary)}")

    return check


def _names_or_none(vocabulary):
    def check(value):
        if value != []:
            try:
                _names(vocabulary)(value)
            except ParameterError:
                raise ParameterError(f"a list (or comma-separated string) of {', '.join(vocabulary)}, or [] for none") from None

    return check


def _percents(value):
    if (
        not isinstance(value, list)
        or not value
        or any(isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0 <= p <= 100 for p in value)
    ):
        raise ParameterError("a non-empty list of numbers from 0 to 100")


def _layouts(value):
    items = value.split(",") if isinstance(value, str) else value
    try:
        if not isinstance(items, list) or not items:
            raise ValueError
        for item in items:
            parse_layout(item)
    except ValueError:
        raise ParameterError(
            "a non-empty list (or comma-separated string) of layouts <shards>S<replicas>R, " 'e.g. ["1S0R", "2S1R"]'
        ) from None


def _resolution(value):
    # at least MIN_RESOLUTION: a finer bracket than the breaker's own granularity never closes (runners/memory.py)
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not MIN_RESOLUTION <= value < 1:
        raise ParameterError(f"a number from {MIN_RESOLUTION} to 1 (exclusive)")


def _document_mb(value):
    # source-large sends each document in one index request: the request must fit under http.max_content_length
    largest = HTTP_MAX_CONTENT_LENGTH // MIB - 1
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= largest:
        raise ParameterError(
            f"an integer from 1 to {largest} (MB of 2^20 bytes): each document is one index request, and Elasticsearch "
            f"refuses a request body over http.max_content_length ({HTTP_MAX_CONTENT_LENGTH // MIB}mb by default)"
        )


def _positive_number_or_none(value):
    if value is not None:
        _positive_number(value)


def _list_of(rule, description):
    def check(value):
        if not isinstance(value, list) or not value:
            raise ParameterError(f"a non-empty list of {description}")
        for item in value:
            try:
                rule(item)
            except ParameterError:
                raise ParameterError(f"a non-empty list of {description}") from None

    return check


def _http_url(value):
    if not isinstance(value, str) or not value.startswith(("http://", "https://")) or value.count(":") < 2:
        raise ParameterError('an http URL with a port, e.g. "http://127.0.0.1:8474"')


def _host_port_or_empty(value):
    # "" = the address Toxiproxy's proxy listens on
    host, _, port = value.rpartition(":") if isinstance(value, str) else ("", "", "")
    if value != "" and not (host and port.isdigit() and 0 < int(port) < 65536):
        raise ParameterError('host:port (e.g. "127.0.0.1:9590"), or "" for the proxy\'s own listen address')


def _assertions(value):
    ok = isinstance(value, list) and all(
        isinstance(a, dict) and isinstance(a.get("property"), str) and a.get("condition") in (">", ">=", "<", "<=", "==") and "value" in a
        for a in value
    )
    if not ok:
        raise ParameterError('a list of Rally assertions such as [{"property": "hits", "condition": ">", "value": 0}]')


# name -> what a value must be (ParameterError says it); the default is track.json's
RULES = {
    "number_of_shards": _integer(1, 1024),
    "number_of_replicas": _integer(0),
    "source_enabled": _boolean,
    "epochs": _integer(1),
    "bulk_size": _integer(1),
    "bulk_clients": _integer(1),
    "tuned_bulk_size": _integer(1),
    "tuned_clients": _integer(1),
    "tuned_refresh_interval": _time_value,
    "tuned_translog_durability": _one_of("async", "request"),
    # ingest-changes: the seed's changes measured one at a time (each beside the baseline, in the vocabulary's order)
    "ingest_changes": _names(tuple(INGEST_CHANGES)),
    "variants": _names(tuple(VARIANTS)),
    "transports": _names(TRANSPORTS),
    "warmup_iterations": _integer(0),
    "iterations": _integer(1),
    "percents": _percents,
    "hdr_digits": _integer(0, MAX_HDR_DIGITS),
    "request_timeout": _positive_number,
    "profile_node": _string,
    "profile_epoch": _integer(1),
    "profile_iterations": _integer(1),  # measured OFF/ON pairs of profile-breakdown, each side a sample
    "verify_corpus_checksums": _boolean,
    "coverage_assertions": _assertions,
    # the study's cells each in a block of its own, or taking turns in shuffled passes (runners/interleave.py)
    "track_total_hits": _boolean,
    "schedule": _one_of("blocked", "interleaved"),
    "schedule_seed": _integer(0),
    "layouts": _layouts,
    "layout_bulk_size": _integer(1),
    "layout_bulk_clients": _integer(1),
    "search_clients": _integer(1),
    "layout_iterations": _integer(1),
    # the layout sweep's single-document indexing (seed 003's realtime indexing): clients, and seconds per layout (0
    # leaves it out)
    "single_doc_clients": _integer(1, 256),
    "single_doc_seconds": _integer(0, 86400),
    # the network (Toxiproxy): RTT sweep, cross-cluster search, faults
    "toxiproxy_url": _http_url,
    "network_proxy": _string,
    "rtt_ms": _list_of(_integer(0, 60000), "round-trip times in ms (0 to 60000)"),
    "rtt_variants": _names(tuple(VARIANTS)),
    "rtt_transports": _names(TRANSPORTS),
    "rtt_iterations": _integer(1),
    "ccs_alias": _string,
    "ccs_proxy": _string,
    "ccs_proxy_address": _host_port_or_empty,
    "ccs_transports": _names(TRANSPORTS),
    "ccs_minimize_roundtrips": _list_of(_boolean, "true/false"),
    # seed 001's point: its round-trip times, its remote asked directly beside CCS, its schedule (1 warm-up)
    "ccs_shards": _integer(1, 1024),
    "ccs_rtt_ms": _list_of(_integer(0, 60000), "round-trip times in ms (0 to 60000)"),
    "ccs_variants": _names(tuple(VARIANTS)),
    "ccs_direct": _names_or_none(CCS_DIRECT_ROUTES),
    "ccs_far_alias": _string,
    "ccs_far_proxy": _string,
    "ccs_warmup_iterations": _integer(0),
    "ccs_iterations": _integer(1),
    "faults": _names(tuple(FAULTS)),
    "fault_request_timeout": _positive_number,
    # load: a target rate and clients for the study's coverages, the load steps and redline, the live challenge
    "target_throughput": _positive_number_or_none,
    "include_target_throughput": _boolean,
    "coverage_clients": _integer(1),
    "load_variants": _names(tuple(VARIANTS)),
    "load_transports": _names(TRANSPORTS),
    "load_steps": _list_of(_integer(1, 10000), "percents of the calibrated rate (1 to 10000)"),
    "load_clients": _integer(1),
    "load_iterations": _integer(1),
    "load_calibration_iterations": _integer(1),
    # several load-driver hosts: how long a host waits for the others to take a calibration (runners/load.py)
    "load_share_timeout": _integer(1),
    "redline_latency_ms": _positive_number,
    "live_variant": _one_of(*VARIANTS),
    "live_transport": _one_of(*TRANSPORTS),
    "live_target_throughput": _positive_number,
    "live_iterations": _integer(1),
    # what it costs: _source modes (stored last, so that the index ends as the other challenges create it), the
    # size-0 coverages and a fetch per mode; aggregation memory per cell (request breaker floor, GC activity)
    "source_modes": _names(SOURCE_MODES),
    "source_variants": _names(tuple(VARIANTS)),
    "source_transports": _names(TRANSPORTS),
    "source_force_merge": _boolean,
    "fetch_size": _integer(1, FETCH_TRUTH_ROWS),  # the ground truth's top rows per node (within max_result_window)
    "fetch_kinds": _names(FETCH_KINDS),
    "fetch_transports": _names(FETCH_TRANSPORTS),
    # source-large (seed 004 at its scale): large_docs documents of large_doc_mb each in an index of their own, and a
    # fetch of the first large_fetch_size of them per _source mode and response format
    "large_doc_mb": _document_mb,
    "large_docs": _integer(1),
    "large_fetch_size": _integer(1, MAX_RESULT_WINDOW),  # at most large_docs: checked with the fetch's operation
    "large_iterations": _integer(1),
    "large_warmup_iterations": _integer(0),
    "memory_variants": _names(tuple(VARIANTS)),
    "memory_transports": _names(TRANSPORTS),
    "memory_hdr_digits": _list_of(_integer(0, MAX_HDR_DIGITS), f"HDR digits (0 to {MAX_HDR_DIGITS})"),
    "memory_tdigest_compression": _list_of(_integer(1, 100000), "t-digest compressions " "(1 to 100000)"),
    # above this many digits the HDR sweep runs over serial only: msearch and terms hold up to 90 histograms at once,
    # which at 5 digits is more than a 1 GB heap holds, and no breaker sees them (runners/memory.py)
    "memory_parallel_hdr_digits_max": _integer(0, MAX_HDR_DIGITS),
    "memory_attempts": _integer(1, 100),
    "memory_resolution": _resolution,
    "memory_iterations": _integer(1),
    # the bisection lowers a cluster-wide limit: refused while other clients search, unless the user accepts it
    "memory_shared_cluster": _boolean,
    # the coverage-width sweep: a corpus set per width (corpora-gen/generate --widths), equal rows per epoch by default
    # (the same documents to aggregate at every width, so what changes is the width's own cost); per-node grows the
    # corpus with the width
    "widths": _list_of(_integer(1, MAX_NODES), f"node counts (1 to {MAX_NODES})"),
    "width_rows": _one_of("per-epoch", "per-node"),
    "width_rows_per_epoch": _integer(1),
    "width_rows_per_node": _integer(1),
    "width_epochs": _integer(1),
    "width_variants": _names(tuple(VARIANTS)),
    "width_transports": _names(TRANSPORTS),
    # _msearch's max_concurrent_searches per msearch cell; 0 leaves it to Elasticsearch (its default depends on the
    # data nodes and the search pool: the report names it)
    "width_max_concurrent_searches": _list_of(_integer(0, 1024), "max_concurrent_searches (0: Elasticsearch's default)"),
    # serial sends a request per node: above this width it is not run (the report extrapolates from the widest run)
    "width_serial_max_nodes": _integer(0),
    # an HDR variant over terms holds 3 histograms per node in one response, which no breaker sees: at 3000 nodes a
    # 1 GB node died of OutOfMemoryError (C_hdr, 3 digits); above this width that cell is not run
    "width_hdr_terms_max_nodes": _integer(0),
    "width_iterations": _integer(1),
}


def _defaults():
    """track.json's declared defaults as values (its expressions over the vocabulary evaluated as Jinja would)."""
    environment = jinja2.Environment()
    declared = {
        name: environment.compile_expression(default)(vocabulary=VOCABULARY_MODULE) if isinstance(default, Expression) else default
        for name, default in declared_defaults().items()
    }
    unruled, undeclared = declared.keys() - RULES.keys(), RULES.keys() - declared.keys()
    if unruled or undeclared:  # a parameter nobody checks, or a rule of no parameter: the track and this file disagree
        raise RuntimeError(
            f"track.json declares parameters without a rule here: {sorted(unruled)}; rules without a declaration: {sorted(undeclared)}"
        )
    return declared


DEFAULTS = _defaults()
PARAMETERS = {name: (DEFAULTS[name], rule) for name, rule in RULES.items()}  # name -> (default, check)


def width_rows_per_epoch(user_params, width):
    """Rows per epoch of the width set at `width` nodes, as the track parameters ask (width_rows)."""
    if value(user_params, "width_rows") == "per-node":
        return width * value(user_params, "width_rows_per_node")
    return value(user_params, "width_rows_per_epoch")


def check(user_params):
    """Every user-given track parameter against its rule; raises ParameterError naming each bad one."""
    problems = []
    for name, value in sorted((user_params or {}).items()):
        if name not in PARAMETERS:
            continue  # Rally itself rejects unknown parameters ("Unused track parameters")
        try:
            PARAMETERS[name][1](value)
        except ParameterError as e:
            problems.append(f"track parameter {name} must be {e}, got {value!r}")
    if problems:
        raise ParameterError("; ".join(problems))


def value(user_params, name):
    """The effective value of a parameter (the user's, else the default)."""
    return (user_params or {}).get(name, PARAMETERS[name][0])


def check_operation_value(operation_param, value, track_param):
    """An operation parameter that a track parameter sets, checked with that track parameter's rule."""
    try:
        PARAMETERS[track_param][1](value)
    except ParameterError as e:
        raise ValueError(f"{operation_param} must be {e}, got {value!r} (track parameter {track_param})") from None


def accepted(name):
    """What a parameter accepts, in the words its check uses to refuse a value."""
    try:
        RULES[name](object())
    except ParameterError as e:
        return str(e)
    raise AssertionError(f"the rule of {name} accepted an object()")


def main():
    """`make params`: every track parameter in track.json's order, its default and what it accepts."""
    for name, (default, _) in PARAMETERS.items():
        print(f"{name} = {json.dumps(default)}\n    {accepted(name)}")


if __name__ == "__main__":
    main()
