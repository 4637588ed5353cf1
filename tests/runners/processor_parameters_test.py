"""The track processor's checks of the track parameters, on the real track file read by Rally's own TrackFileReader
(tests/runners/track_load.py): each parameter's rule and message, at load, before the cluster is touched; the
defaults as track.json declares them; each parameter ruled by one module. The same checks inside a real race:
tests/test_bad_input.py."""

import json
import re
import subprocess
import sys

import pytest
from esrally import exceptions
from esrally.track import loader

from runners.contracts import cells, parameters, track_files
from tests.conftest import REPO, TRACK_DIR, rendered_tasks
from tests.runners.track_load import WIDTH_PARAMS, load


@pytest.mark.parametrize(
    "track_params,message",
    [
        ({"iterations": "x"}, "track parameter iterations must be an integer of at least 1, got 'x'"),
        ({"warmup_iterations": -1}, "track parameter warmup_iterations must be an integer of at least 0, got -1"),
        ({"hdr_digits": 9}, "track parameter hdr_digits must be an integer from 0 to 5, got 9"),
        ({"variants": ["E"]}, "track parameter variants must be a non-empty list"),
        ({"transports": "grpc"}, "track parameter transports must be a non-empty list"),
        ({"percents": [50, 101]}, "track parameter percents must be a non-empty list of numbers from 0 to 100"),
        ({"request_timeout": "slow"}, "track parameter request_timeout must be a positive number, got 'slow'"),
        ({"verify_corpus_checksums": "yes"}, "track parameter verify_corpus_checksums must be true or false"),
        ({"epochs": True}, "track parameter epochs must be an integer of at least 1, got True"),
        ({"bulk_size": 0}, "track parameter bulk_size must be an integer of at least 1, got 0"),
        ({"tuned_translog_durability": "never"}, "track parameter tuned_translog_durability must be one of"),
        ({"coverage_assertions": [{"property": "hits"}]}, "track parameter coverage_assertions must be a list of Rally"),
        ({"epochs": 7}, "The generated corpus has no epoch 6"),
        ({"layouts": ["2S1R", "3X"]}, "track parameter layouts must be a non-empty list (or comma-separated string) of layouts"),
        ({"search_clients": 0}, "track parameter search_clients must be an integer of at least 1, got 0"),
        (
            {"source_modes": ["zip"]},
            "track parameter source_modes must be a non-empty list (or comma-separated string) " "of stored, synthetic, disabled",
        ),
        ({"fetch_size": 0}, "track parameter fetch_size must be an integer from 1 to 1000, got 0"),
        ({"fetch_size": 1001}, "track parameter fetch_size must be an integer from 1 to 1000, got 1001"),
        ({"fetch_transports": ["terms"]}, "track parameter fetch_transports must be a non-empty list"),
        ({"memory_hdr_digits": [3, 6]}, "track parameter memory_hdr_digits must be a non-empty list of HDR digits (0 to 5)"),
        (
            {"memory_tdigest_compression": [0]},
            "track parameter memory_tdigest_compression must be a non-empty list of " "t-digest compressions",
        ),
        ({"memory_resolution": 1.5}, "track parameter memory_resolution must be a number from 0.001 to 1 (exclusive)"),
        ({"memory_resolution": 1e-6}, "track parameter memory_resolution must be a number from 0.001 to 1 (exclusive)"),
        ({"memory_attempts": "3"}, "track parameter memory_attempts must be an integer from 1 to 100, got '3'"),
        ({"source_force_merge": "no"}, "track parameter source_force_merge must be true or false"),
        ({"schedule": "shuffled"}, "track parameter schedule must be one of 'blocked', 'interleaved', got 'shuffled'"),
        ({"schedule_seed": -1}, "track parameter schedule_seed must be an integer of at least 0, got -1"),
    ],
)
def test_bad_parameters_are_named_before_the_cluster_is_touched(corpus_root, track_params, message):
    with pytest.raises(exceptions.SystemSetupError, match=re.escape(message)):
        load(corpus_root, track_params)


@pytest.mark.parametrize(
    "track_params,message",
    [
        ({"profile_node": "N999"}, "Task [profile-D_td]: node 'N999' is not in the generated corpus"),
        ({"profile_epoch": 4, "epochs": 3}, "Task [profile-D_td]: epoch 4 is not ingested by this race"),
    ],
)
def test_bad_operation_values_of_the_selected_challenge_are_named(corpus_root, track_params, message):
    with pytest.raises(exceptions.SystemSetupError, match=re.escape(message)):
        load(corpus_root, track_params, challenge="profile-breakdown")
    with pytest.raises(exceptions.SystemSetupError, match=re.escape(message)):
        load(corpus_root, track_params, challenge="full")  # full ends with the profile
    assert load(corpus_root, track_params, challenge="query-decomposition")  # another challenge does not use them


def test_track_json_declarations_are_read_as_rally_renders_them():
    """Each default is read from track.json's one declaration: literals as JSON, vocabulary expressions as Jinja, and
    a declaration whose variable is not p_<its name> is refused."""
    text = """{% set p_epochs = (epochs | default(5)) %}
{% set p_target_throughput = (target_throughput | default(none)) %}
{% set p_tuned_refresh_interval = (tuned_refresh_interval | default("-1")) %}
{% set p_transports = (transports | default(vocabulary.transports)) %}"""
    declared = track_files.declared_defaults(text)
    assert declared == {"epochs": 5, "target_throughput": None, "tuned_refresh_interval": "-1", "transports": "vocabulary.transports"}
    assert isinstance(declared["transports"], track_files.Expression) and not isinstance(
        declared["tuned_refresh_interval"], track_files.Expression
    )
    with pytest.raises(ValueError, match="p_epoch from epochs"):
        track_files.declared_defaults("{% set p_epoch = (epochs | default(5)) %}")
    # the track as Rally renders it with no parameters uses the defaults read here: the epochs' corpora, the transports' cells
    rendered = json.loads(loader.render_template_from_file(str(TRACK_DIR / "track.json"), {}))
    assert len(rendered["corpora"]) == parameters.DEFAULTS["epochs"]
    full = next(c for c in rendered["challenges"] if c["name"] == "full")
    coverages = [t["operation"] for t in rendered_tasks(full) if t["operation"]["operation-type"] == "coverage"]
    study = [{"variant": v, "transport": t} for v in parameters.DEFAULTS["variants"] for t in parameters.DEFAULTS["transports"]]
    assert [cells.cell_of(operation) for operation in coverages] == study


@pytest.mark.parametrize(
    "params,message",
    [
        ({"rtt_ms": [0, -5]}, "track parameter rtt_ms must be a non-empty list of round-trip times"),
        ({"rtt_ms": 50}, "track parameter rtt_ms must be a non-empty list"),
        ({"ccs_proxy_address": "localhost"}, "track parameter ccs_proxy_address must be host:port"),
        ({"ccs_minimize_roundtrips": ["yes"]}, "track parameter ccs_minimize_roundtrips must be a non-empty list of true/false"),
        ({"faults": ["flood"]}, "track parameter faults must be a non-empty list"),
        ({"toxiproxy_url": "127.0.0.1:8474"}, "track parameter toxiproxy_url must be an http URL with a port"),
    ],
)
def test_bad_network_parameters_are_named_at_load(corpus_root, params, message):
    with pytest.raises(exceptions.SystemSetupError, match=message):
        load(corpus_root, params, challenge="rtt-sweep")


@pytest.mark.parametrize(
    "challenge,track_params,message",
    [
        ("query-decomposition", {"hdr_digits": 5}, "task coverage-C_hdr-msearch runs HDR with 5 digits over msearch"),
        ("coverage-load", {"hdr_digits": 5, "load_transports": ["terms"]}, "runs HDR with 5 digits over terms"),
        ("aggregation-memory", {"hdr_digits": 5}, "above memory_parallel_hdr_digits_max (4)"),
        ("live", {"epochs": 1}, "Challenge [live]: needs at least 2 epochs, this race has 1 (track parameter epochs)"),
        (
            "query-decomposition",
            {"schedule": "interleaved", "coverage_clients": 2},
            "schedule interleaved runs one coverage at a time, at its own pace: it takes no coverage_clients",
        ),
        ("production-comparison", {"schedule": "interleaved", "target_throughput": 2}, "it takes no coverage_clients or target_throughput"),
    ],
)
def test_challenge_wide_rules_are_named_at_load(corpus_root, challenge, track_params, message):
    with pytest.raises(exceptions.SystemSetupError, match=re.escape(message)):
        load(corpus_root, track_params, challenge=challenge)


def test_hdr_5_digits_pass_over_serial_and_with_a_raised_limit(corpus_root):
    load(corpus_root, {"hdr_digits": 5, "transports": ["serial"]}, challenge="query-decomposition")
    load(corpus_root, {"hdr_digits": 5, "memory_parallel_hdr_digits_max": 5}, challenge="query-decomposition")


@pytest.mark.parametrize(
    "track_params,message",
    [
        ({"widths": [30, 0]}, "track parameter widths must be a non-empty list of node counts"),
        ({"width_rows": "per-shard"}, "track parameter width_rows must be one of 'per-epoch', 'per-node'"),
        ({"width_max_concurrent_searches": [0, -1]}, "width_max_concurrent_searches must be a non-empty list"),
        ({"width_serial_max_nodes": "all"}, "width_serial_max_nodes must be an integer"),
    ],
)
def test_bad_width_parameters_are_named(width_root, track_params, message):
    with pytest.raises(exceptions.SystemSetupError, match=re.escape(message)):
        load(width_root, dict(WIDTH_PARAMS, **track_params), challenge="coverage-width")


def test_every_default_passes_its_own_rule_and_make_params_names_what_each_accepts():
    for name, default in parameters.DEFAULTS.items():
        parameters.all_rules()[name](default)  # a default the processor would refuse: track.json and the rule disagree
    listed = subprocess.run(
        [sys.executable, "-m", "runners.listings", "params"], capture_output=True, text=True, cwd=REPO, check=True
    ).stdout
    assert (
        "epochs = 5\n    an integer of at least 1\n" in listed
        and "schedule = \"interleaved\"\n    one of 'blocked', 'interleaved'" in listed
    )
    assert listed.count("\n    ") == len(parameters.DEFAULTS)


def test_each_parameter_is_ruled_by_one_module_and_every_rule_names_a_declared_parameter():
    """The rules are collected from the study modules (runners/contracts/parameters.py all_rules): each study's parameters by its
    own module; a parameter ruled twice, ruled nowhere, or a rule of no declared parameter is refused, named."""
    from runners.studies import layouts, memory, network, widths

    ruled = parameters.all_rules()
    assert ruled.keys() == parameters.DEFAULTS.keys()
    assert ruled["memory_resolution"] is memory.PARAMETER_RULES["memory_resolution"] and "rtt_ms" in network.PARAMETER_RULES
    assert "layouts" in layouts.PARAMETER_RULES and "widths" in widths.PARAMETER_RULES and "epochs" in parameters.PARAMETER_RULES
    from runners import studies

    ruling = {name for name, _ in studies.tables("PARAMETER_RULES")}
    assert ruling >= {"ingest", "layouts", "load", "memory", "network", "profile", "widths"}
    tables = [("parameters", parameters.PARAMETER_RULES), ("network", network.PARAMETER_RULES)]
    with pytest.raises(RuntimeError, match="'rtt_ms' is ruled by runners/studies/network.py and runners/studies/memory.py"):
        parameters.collect(tables + [("memory", {"rtt_ms": memory.resolution})], set(parameters.DEFAULTS))
    with pytest.raises(RuntimeError, match=r"without a rule: \['memory_attempts'"):
        parameters.collect(tables, set(parameters.PARAMETER_RULES) | set(network.PARAMETER_RULES) | {"memory_attempts"})
    with pytest.raises(RuntimeError, match=r"rules without a declaration: \['rtt_ms'"):
        parameters.collect(tables, set(parameters.PARAMETER_RULES) | set(network.PARAMETER_RULES) - {"rtt_ms"})
