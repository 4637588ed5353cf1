"""The warm-up pass of a blocked schedule with a stub client: the cells it names are handed to it as they run, each
runs once per epoch, recorded as a warm-up under the pass's name, and a coverage that fails fails the sample without
stopping the pass."""

import asyncio
import json
from types import SimpleNamespace

import elasticsearch
import pytest

from runners.contracts import records
from runners.contracts.context import CONTEXT_KEY
from runners.studies import warm_up
from runners.studies.coverage import WARMUPS_KEY
from tests.runners.coverage_test import PERCENTS, answers
from tests.runners.large_source_test import answer, encoded, params_of, sources  # noqa: F401 (sources: a fixture)
from tests.runners.stub_client import StubClient


def task(task_name, operation_type, **params):
    return SimpleNamespace(name=task_name, operation=SimpleNamespace(type=operation_type, params=params))


def cell(context, name, transport, **extra):
    return task(
        name,
        "coverage",
        **{
            CONTEXT_KEY: context.as_param(),
            "name": name,
            "variant": "D_td",
            "transport": transport,
            "percents": PERCENTS,
            WARMUPS_KEY: 2,
            "interleave": "study",
            **extra,
        },
    )


def bound_pass(context, *cells, warms=None):
    warm = task("warm-up-pass", "warm-up-pass", warms=warms or [c.name for c in cells])
    warm_up.bind([*cells, warm])
    return warm


def test_the_pass_is_handed_each_cell_as_it_runs_without_its_turns(context):
    serial, msearch = cell(context, "memory-D_td-serial", "serial"), cell(context, "memory-D_td-msearch", "msearch")
    warm = bound_pass(context, serial, msearch)
    cells = warm.operation.params[warm_up.CELLS_KEY]
    assert [c["name"] for c in cells] == ["warm-up-pass/memory-D_td-serial", "warm-up-pass/memory-D_td-msearch"]
    assert [c["transport"] for c in cells] == ["serial", "msearch"] and all("interleave" not in c for c in cells)
    assert serial.operation.params["name"] == "memory-D_td-serial"  # the cell's own task is left as it was


def test_a_pass_naming_no_coverage_task_of_the_challenge_is_refused(context):
    with pytest.raises(ValueError, match="warms 'memory-X-serial', which is no task of this challenge of a type it warms"):
        bound_pass(context, cell(context, "memory-D_td-serial", "serial"), warms=["memory-D_td-serial", "memory-X-serial"])
    with pytest.raises(ValueError, match="non-empty list"):
        warm_up.validate_warm_up_pass({"warms": []}, 1, context)


def run_pass(context, client, *cells):
    warm = bound_pass(context, *cells)
    params = warm_up.WarmUpPassParamSource(None, {**warm.operation.params, "name": warm.name}).params()
    return asyncio.run(warm_up.WarmUpPass()(client, params))


def test_each_cell_runs_once_per_epoch_recorded_as_a_warm_up(context, tmp_path):
    here = context.__class__(**dict(context.as_param(), record_dir=str(tmp_path)))
    assert here.epochs == (1, 2)
    client = StubClient(
        [*answers(here, "serial", 1), *answers(here, "serial", 2), *answers(here, "msearch", 1), *answers(here, "msearch", 2)]
    )
    result = run_pass(here, client, cell(here, "a", "serial"), cell(here, "b", "msearch"))
    assert result["success"] is True and result["weight"] == 4 and client.answers == []
    lines = [json.loads(line) for line in (tmp_path / records.VALIDATION).read_text().splitlines()]
    # each cell's epochs one after the other, none measured (the cells' own WARMUPS_KEY 2 counts their own coverages)
    assert [(line["task"], line["measured"]) for line in lines] == [("warm-up-pass/a", False)] * 2 + [("warm-up-pass/b", False)] * 2
    assert all(line["failed-checks"] == 0 for line in lines)
    assert len(json.loads(result[records.META_KEY])) == 4  # every line travels to a metrics store


def test_a_failed_coverage_fails_the_sample_naming_it_and_the_others_still_run(context, tmp_path):
    here = context.__class__(**dict(context.as_param(), record_dir=str(tmp_path)))
    answered = [*answers(here, "msearch", 2), *answers(here, "msearch", 1), *answers(here, "msearch", 2)]
    client = StubClient([elasticsearch.ConnectionError("Connection refused"), *answered])
    result = run_pass(here, client, cell(here, "a", "msearch"), cell(here, "b", "msearch"))
    assert result["success"] is False and result["weight"] == 3
    assert result["error-description"].startswith("1 of 4 warm-up coverages failed; the first: D_td/msearch")
    assert len(client.sent) == 4


def test_a_large_fetch_cell_is_warmed_by_one_fetch_recorded_as_a_warm_up(tmp_path, sources):
    """source-large's pass: each fetch cell once, as its own task sends it, its answer checked, recorded not measured
    under the pass's name (the report reads the cells' own lines only)."""
    cells = [task(f"large-fetch-{mode}-json", "large-source-fetch", **params_of(tmp_path, mode=mode)) for mode in ("returned", "excluded")]
    client = StubClient([(200, encoded(answer(mode, sources), "json")) for mode in ("returned", "excluded")])
    warm = bound_pass(None, *cells)
    params = warm_up.WarmUpPassParamSource(None, {**warm.operation.params, "name": warm.name}).params()
    result = asyncio.run(warm_up.WarmUpPass()(client, params))
    assert result["success"] is True and result["weight"] == 2 and client.answers == []
    lines = [json.loads(line) for line in (tmp_path / records.LARGE_SOURCE_FETCHES).read_text().splitlines()]
    assert [(line["task"], line["measured"], line["success"]) for line in lines] == [
        ("warm-up-pass/large-fetch-returned-json", False, True),
        ("warm-up-pass/large-fetch-excluded-json", False, True),
    ]


def test_test_mode_runs_each_warm_up_pass_once_and_leaves_other_tasks_alone():
    def task(kind):
        return SimpleNamespace(operation=SimpleNamespace(type=kind), warmup_iterations=1, iterations=1)

    passes, settling, cell = task(warm_up.WARM_UP_PASS_TYPE), task("settle"), task("coverage")
    warm_up.for_test_mode([passes, settling, cell])
    assert (passes.warmup_iterations, passes.iterations) == (0, warm_up.TEST_MODE_PASSES) == (0, 1)
    assert [(t.warmup_iterations, t.iterations) for t in (settling, cell)] == [(1, 1), (1, 1)]
