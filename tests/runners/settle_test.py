"""The settling before the first timed cell (runners/studies/settle.py): its rule on passes recorded by real races,
and its runner with a stub client and a scripted clock: it stops when the passes stop getting faster, at its time
limit otherwise, records every pass, and fails its sample on a failed pass."""

import asyncio
import json
from types import SimpleNamespace

import elasticsearch
import pytest

from runners.contracts import parameters, records
from runners.contracts.context import CONTEXT_KEY
from runners.studies import settle, warm_up
from tests.runners.coverage_test import answers
from tests.runners.stub_client import StubClient
from tests.runners.warm_up_test import cell, task

# the seconds of each pass over production-comparison's 4 cells, as races recorded them (validation.jsonl, 8.17.2,
# full scale, 2 cores, 2026-11-28): the first race on a node restarted on its ingested index (7a1c6526), a first race
# with 40 warm-up passes (6ef4acb3, its first 25), and the third race on a node (8e75c501)
FIRST_RACE = [3.40, 2.20, 1.92, 1.75, 1.63, 1.72, 1.71, 1.49, 1.76, 1.62, 1.72, 1.77, 1.55, 1.64, 1.53, 1.49, 1.48, 1.36, 1.40, 1.25]
LONG_FIRST_RACE = [2.65, 1.87, 1.48, 1.85, 1.62, 1.36, 1.45, 1.08, 1.31, 1.18, 1.38, 1.20, 1.33, 1.27, 1.47, 1.29, 1.29, 0.98]
THIRD_RACE = [1.51, 1.53, 1.28, 1.34, 1.27, 1.25, 1.57, 1.28, 1.40, 1.39, 1.43, 1.59, 1.15, 1.43, 1.35, 1.40, 1.62, 1.54]


def first_settled(seconds, window=5, tolerance=0.05):
    return next((n for n in range(1, len(seconds) + 1) if settle.settled(seconds[:n], window, tolerance)), None)


def test_the_rule_waits_out_a_new_jvms_ramp_and_lets_a_settled_node_go_after_two_windows():
    assert first_settled(THIRD_RACE) == 10  # the fewest passes the rule reads: two windows
    assert first_settled(LONG_FIRST_RACE) == 15  # not while the passes fall (1.85 -> 1.31 -> 1.20 a window)
    assert first_settled(FIRST_RACE) == 11
    assert settle.pace_ratio(LONG_FIRST_RACE[:10], 5) == pytest.approx(1.31 / 1.85)
    assert settle.pace_ratio(LONG_FIRST_RACE[:9], 5) is None


def test_the_rule_is_one_sided_a_pace_still_falling_is_not_settled_a_slower_one_is():
    falling = [2.0 * 0.98**n for n in range(60)]  # 2% faster a pass: 10% a window, beyond 5%
    assert first_settled(falling) is None
    assert first_settled([2.0 * 0.995**n for n in range(60)]) == 10  # 2.5% a window: within 5%
    assert first_settled([1.0 * 1.03**n for n in range(20)]) == 10  # getting slower: nothing left to settle
    assert first_settled(falling, tolerance=0.2) == 10


def scripted(monkeypatch, durations, cpu=None, searches=None):
    """settle.Settle with each pass taking the next scripted seconds on a fake clock (the pass itself a stub); node
    stats read as one node's CPU ms and query phases since it started, from `cpu` and `searches` in turn (None when
    either runs out: unreadable)."""
    clock = SimpleNamespace(now=0.0)
    monkeypatch.setattr(settle.time, "perf_counter", lambda: clock.now)
    script = list(durations)

    class Pass:
        async def __call__(self, es, params):
            clock.now += script.pop(0)
            return {"weight": 1, "unit": "coverages", "success": True}

    monkeypatch.setattr(settle.warm_up, "WarmUpPass", Pass)
    monkeypatch.setattr(settle, "_node_stats", _stats(cpu, searches))
    return script


def _stats(cpu, searches):
    cpu, searches = iter(cpu or []), iter(searches or [])

    async def read(es):
        c, q = next(cpu, None), next(searches, 0)
        return None if c is None else {"n1": (c, q, 42_000)}

    return read


def params_for(context, tmp_path, window=2, tolerance=0.05, limit=60, floor=0):
    here = context.__class__(**dict(context.as_param(), record_dir=str(tmp_path)))
    return {
        "name": "settle",
        "cells": [],
        "window": window,
        "tolerance": tolerance,
        "time-limit": limit,
        "node-searches": floor,
        CONTEXT_KEY: here.as_param(),
    }


def record(tmp_path):
    return [json.loads(line) for line in (tmp_path / settle.SETTLE).read_text().splitlines()]


def test_it_stops_when_the_passes_stop_getting_faster_and_records_each(monkeypatch, context, tmp_path):
    left = scripted(monkeypatch, [3.0, 2.0, 1.5, 1.2, 1.0, 1.0, 1.01, 0.99, 9, 9], cpu=[100, 1100, 1900])
    result = asyncio.run(settle.Settle()(None, params_for(context, tmp_path)))
    assert result["success"] is True and result["weight"] == 8 and left == [9, 9]
    (line,) = record(tmp_path)
    assert line["passes"] == [3.0, 2.0, 1.5, 1.2, 1.0, 1.0, 1.01, 0.99] and line["settled"] is True
    assert line["stopped-by"] == settle.SETTLED and line["pace-ratio"] == pytest.approx(1.0)
    assert line["seconds"] == pytest.approx(11.7) and line["process-cpu-ms"][:2] == [1000, 800]
    assert line["process-cpu-ms"][2:] == [None] * 6  # node stats unreadable: the pace alone
    assert json.loads(result[records.META_KEY])[-1]["append"] == settle.SETTLE  # travels to a metrics store


def test_a_node_still_getting_faster_at_the_time_limit_is_recorded_as_not_settled(monkeypatch, context, tmp_path):
    scripted(monkeypatch, [2.0 * 0.9**n for n in range(40)])
    result = asyncio.run(settle.Settle()(None, params_for(context, tmp_path, limit=10)))
    (line,) = record(tmp_path)
    assert result["success"] is True and line["settled"] is False and line["stopped-by"] == settle.TIME_LIMIT
    assert line["seconds"] >= 10 and line["pace-ratio"] < 0.95


def test_a_pass_longer_than_the_time_limit_still_gives_the_two_passes_a_pace_needs(monkeypatch, context, tmp_path):
    left = scripted(monkeypatch, [5.0, 4.0, 3.0])
    asyncio.run(settle.Settle()(None, params_for(context, tmp_path, window=1, limit=1)))
    (line,) = record(tmp_path)
    assert line["passes"] == [5.0, 4.0] and left == [3.0] and line["stopped-by"] == settle.TIME_LIMIT


def test_in_test_mode_a_pass_longer_than_the_time_limit_is_the_only_one(monkeypatch, context, tmp_path):
    left = scripted(monkeypatch, [5.0, 4.0, 3.0])
    params = params_for(context, tmp_path, window=1, limit=1)
    params[settle.FEWEST_PASSES_KEY] = settle.TEST_MODE_FEWEST_PASSES
    asyncio.run(settle.Settle()(None, params))
    (line,) = record(tmp_path)
    assert line["passes"] == [5.0] and left == [4.0, 3.0] and line["stopped-by"] == settle.TIME_LIMIT
    assert line["pace-ratio"] is None and line[settle.FEWEST_PASSES_KEY] == 1


def test_test_mode_settles_in_one_pass_windows_without_a_floor_within_its_bound():
    def settling(limit):
        return SimpleNamespace(
            operation=SimpleNamespace(type=settle.SETTLE_TYPE, params={"window": 5, "time-limit": limit, "node-searches": 10_000})
        )

    tasks = [settling(300), settling(0.5), SimpleNamespace(operation=SimpleNamespace(type="coverage", params={"time-limit": 300}))]
    settle.for_test_mode(tasks)
    assert [t.operation.params for t in tasks[:2]] == [
        {"window": 1, "time-limit": settle.TEST_MODE_TIME_LIMIT, "node-searches": settle.NO_FLOOR, "fewest-passes": 1},
        {"window": 1, "time-limit": 0.5, "node-searches": settle.NO_FLOOR, "fewest-passes": 1},
    ]
    assert tasks[2].operation.params == {"time-limit": 300}


def test_a_paced_node_goes_on_until_it_has_served_the_floor_of_searches_since_it_started(monkeypatch, context, tmp_path):
    # a node just started: the pace settles at pass 4, its count of query phases reaches 1,000 at pass 7
    searches = [100, 250, 400, 550, 700, 850, 1000, 1150, 1300]
    left = scripted(monkeypatch, [1.0] * 12, cpu=[0] * 12, searches=searches)
    result = asyncio.run(settle.Settle()(None, params_for(context, tmp_path, floor=1000)))
    (line,) = record(tmp_path)
    assert result["weight"] == 6 and len(left) == 6 and line["settled"] is True
    assert line["served-searches"] == [250, 400, 550, 700, 850, 1000] and line["served-searches"][3] < 1000
    assert line[settle.NODE_SEARCHES_KEY] == 1000
    assert line["jvm-uptime-s"] == 42.0 and line["paced"] is True and line["warmed"] is True
    assert line[settle.SEARCHES_BEFORE_KEY] == 100 and line[settle.BULK_REQUESTS_KEY] is None  # no client: unread


def test_a_node_that_served_its_searches_before_stops_at_the_pace(monkeypatch, context, tmp_path):
    scripted(monkeypatch, [1.0] * 12, cpu=[0] * 12, searches=[50_000 + 90 * n for n in range(12)])
    result = asyncio.run(settle.Settle()(None, params_for(context, tmp_path, floor=10_000)))
    assert result["weight"] == 4  # two windows of 2: the fewest the rule reads


def test_a_node_short_of_its_searches_at_the_time_limit_is_not_settled_and_says_why(monkeypatch, context, tmp_path):
    scripted(monkeypatch, [1.0] * 40, cpu=[0] * 40, searches=[10 * n for n in range(40)])
    asyncio.run(settle.Settle()(None, params_for(context, tmp_path, limit=10, floor=10_000)))
    (line,) = record(tmp_path)
    assert line["settled"] is False and line["stopped-by"] == settle.TIME_LIMIT
    assert line["paced"] is True and line["warmed"] is False and line["served-searches"][-1] == 100


def test_searches_count_only_on_the_nodes_that_served_the_settling():
    first = {"a": (0, 5_000, 1), "b": (0, 7, 1), "c": (0, 100, 1)}
    now = {"a": (9, 5_090, 1), "b": (9, 7, 1), "c": (9, 190, 1), "d": (9, 50, 1)}  # b holds no shard; d started since
    assert settle.searching_nodes(first, now) == ["a", "c"] and settle.node_searches(first, now) == 190
    assert settle.node_searches(first, None) is None and settle.node_searches(first, first) is None
    assert settle.process_cpu_ms(first, now) == 27 and settle.process_cpu_ms(None, now) is None
    assert settle.warmed(None, 10_000) and settle.warmed(5, 0) and not settle.warmed(9_999, 10_000)


def test_a_failed_pass_fails_the_sample_naming_it_and_stops(context, tmp_path):
    here = context.__class__(**dict(context.as_param(), record_dir=str(tmp_path)))
    cells = [cell(here, "coverage-D_td-msearch", "msearch")]
    node_stats = (
        200,
        {
            "nodes": {
                "n1": {
                    "process": {"cpu": {"total_in_millis": 5000}},
                    "indices": {"search": {"query_total": 9}},
                    "jvm": {"uptime_in_millis": 1},
                }
            }
        },
    )
    # pass 1: epoch 1's coverage; pass 2: epoch 2's, refused
    usage = (200, {"nodes": {"n1": {"rest_actions": {settle.BULK_ACTION: 5_000}}}})  # the ingest's bulks, in this process
    good = [node_stats, usage, *answers(here, "msearch", 1), node_stats]
    client = StubClient([*good, elasticsearch.ConnectionError("Connection refused"), node_stats])
    operation = task("settle", "settle", warms=[c.name for c in cells], window=3, tolerance=0.05, **{"time-limit": 60})
    operation.operation.params[CONTEXT_KEY] = here.as_param()
    warm_up.bind([*cells, operation])
    params = settle.SettleParamSource(None, {**operation.operation.params, "name": "settle"}).params()
    result = asyncio.run(settle.Settle()(client, params))
    assert result["success"] is False and result["weight"] == 1 and client.answers == []
    assert result["error-description"].startswith(
        "settling pass 2 failed: 1 of 1 warm-up coverages failed; the first: D_td/msearch: epoch 2"
    )
    (line,) = record(tmp_path)
    assert line["stopped-by"] == settle.FAILED_PASS and line["settled"] is False and len(line["passes"]) == 2
    assert line["process-cpu-ms"] == [0, 0] and line[settle.BULK_REQUESTS_KEY] == 5_000
    assert client.sent[1]["path"] == settle.NODE_USAGE_PATH
    lines = [json.loads(x) for x in (tmp_path / records.VALIDATION).read_text().splitlines()]
    assert [x["task"] for x in lines] == ["settle/coverage-D_td-msearch"] * 2 and not any(x["measured"] for x in lines)


def test_a_pass_is_one_coverage_a_cell_each_cells_epochs_in_turn():
    params = {"name": "settle", "cells": [["a1", "a2", "a3"], ["b1"]], "window": 5}
    assert [settle.one_epoch(params, n)["cells"] for n in range(4)] == [
        [["a1"], ["b1"]],
        [["a2"], ["b1"]],
        [["a3"], ["b1"]],
        [["a1"], ["b1"]],
    ]
    assert params["cells"] == [["a1", "a2", "a3"], ["b1"]]  # the task's own parameters are left as they were


@pytest.mark.parametrize(
    "key, value, expected",
    [
        ("window", 0, "window must be an integer of at least 1"),
        ("tolerance", 1.5, "tolerance must be a number between 0 and 1"),
        ("time-limit", "5m", "time-limit must be a positive number"),
        ("fewest-passes", 0, "fewest-passes must be an integer of at least 1"),
    ],
)
def test_a_settling_tasks_own_values_are_checked_naming_them(context, key, value, expected):
    params = {"warms": ["coverage-D_td-msearch"], "window": 5, "tolerance": 0.05, "time-limit": 300, key: value}
    with pytest.raises(ValueError, match=expected):
        settle.validate_settle(params, 1, context)


@pytest.mark.parametrize(
    "name, value, expected",
    [
        ("settle_tolerance", 0, "between 0 and 1"),
        ("settle_window", 2.5, "an integer of at least 1"),
        ("settle", "yes", "true or false"),
        ("settle_time_limit", -1, "a positive number"),
    ],
)
def test_the_settling_track_parameters_are_checked_before_the_race(name, value, expected):
    with pytest.raises(parameters.ParameterError, match=f"{name}.*{expected}"):
        parameters.check({name: value})


def test_the_bulk_requests_served_are_summed_over_the_nodes_and_none_where_usage_cannot_be_read():
    def read(*answers):
        return asyncio.run(settle._bulk_requests(StubClient(list(answers))))

    # filter_path leaves out a node that served no bulk request, and answers {} when none did
    assert read((200, {"nodes": {"a": {"rest_actions": {"bulk_action": 5_000}}, "c": {"rest_actions": {"bulk_action": 7}}}})) == 5_007
    assert read((200, {})) == 0
    assert read((403, {"error": "no monitor privilege"})) is None
    assert read(elasticsearch.ConnectionError("Connection refused")) is None
