"""The interleaved schedule: the turn order, its hand-out by the track processor, and coverages taking turns through
the counter file (stub client; the real race is in tests/test_track_repository.py, production-comparison)."""

import asyncio
import multiprocessing
import re
import time
from types import SimpleNamespace

import pytest

from runners.contracts.context import CONTEXT_KEY
from runners.shared import interleave
from runners.studies.coverage import Coverage
from tests.runners.coverage_test import answers, source
from tests.runners.stub_client import StubClient

CELLS = ["coverage-A-serial", "coverage-B-msearch", "coverage-D_td-terms"]


def test_every_pass_holds_every_cell_once_in_a_seeded_order():
    turns = interleave.order(CELLS, 4, seed=7)
    passes = [turns[i : i + 3] for i in range(0, 12, 3)]
    assert all(sorted(p) == sorted(CELLS) for p in passes)
    assert len({tuple(p) for p in passes}) > 1  # shuffled, not one order repeated
    assert turns == interleave.order(CELLS, 4, seed=7) and turns != interleave.order(CELLS, 4, seed=8)
    assert interleave.positions(turns, CELLS[0]) == [i for i, n in enumerate(turns) if n == CELLS[0]]


def task(name, clients=1, warmup=1, iterations=2, group="study"):
    params = {"name": name, **({interleave.GROUP_KEY: group} if group else {})}
    return SimpleNamespace(
        name=name,
        clients=clients,
        warmup_iterations=warmup,
        iterations=iterations,
        time_period=None,
        operation=SimpleNamespace(params=params),
    )


def test_the_processor_hands_every_cell_of_a_group_the_same_order():
    tasks = [task(n) for n in CELLS] + [task("verify-corpus", group=None)]
    interleave.assign(tasks, 1, ["localhost"])
    orders = [t.operation.params.get(interleave.ORDER_KEY) for t in tasks]
    assert orders[0] == orders[1] == orders[2] == interleave.order(sorted(CELLS), 3, 1) and orders[3] is None


@pytest.mark.parametrize(
    "tasks,hosts,message",
    [
        (
            [task(n) for n in CELLS],
            ["10.0.0.1", "10.0.0.2"],
            "this race has 2 (--load-driver-hosts=10.0.0.1,10.0.0.2); add --track-params=schedule:blocked",
        ),
        ([task(CELLS[0]), task(CELLS[1], iterations=3)], None, "the same iteration count"),
        ([task(CELLS[0]), task(CELLS[1], clients=2)], None, "every cell needs one client"),
    ],
)
def test_a_group_that_cannot_take_turns_is_refused(tasks, hosts, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        interleave.assign(tasks, 1, hosts)


def coverages_taking_turns(context, record_dir, names, passes, seed):
    """Every cell's coverages as Rally would run them, each cell its own client, all at once: the sequence in which
    they sent their requests."""
    turn_order = interleave.order(names, passes, seed)
    sent = []

    async def cell(name, transport):
        params_source = source(context, transport, name=name, **{interleave.GROUP_KEY: "g", interleave.ORDER_KEY: turn_order})
        for _ in range(passes):
            params = params_source.params()
            client = StubClient(answers(context, transport, params["epoch"]))
            client.on_send = lambda name=name: sent.append(name)
            result = await Coverage()(client, params)
            assert result["success"] is True, result.get("error-description")

    async def everything():
        await asyncio.gather(*(cell(n, t) for n, t in zip(names, ["serial", "msearch", "terms"])))

    asyncio.run(everything())
    return turn_order, sent


def test_coverages_send_in_the_turn_order(context, tmp_path, monkeypatch):
    monkeypatch.setattr(interleave, "NEXT_POLL_SECONDS", 0.0005)
    context = type(context)(**{**context.as_param(), "record_dir": str(tmp_path)})
    turn_order, sent = coverages_taking_turns(context, tmp_path, CELLS, 3, seed=5)
    requests = {"coverage-A-serial": 3, "coverage-B-msearch": 1, "coverage-D_td-terms": 1}
    assert sent == [n for n in turn_order for _ in range(requests[n])]
    assert (tmp_path / "turns-g.txt").read_text() == "9"


def test_a_turn_that_never_passes_fails_every_waiting_coverage(tmp_path):
    path = str(tmp_path / "turns-g.txt")
    started = time.monotonic()
    first = asyncio.run(interleave.wait_for_turn(path, 2, stall_seconds=0.2))
    assert "did not pass on within 0 s" in first and time.monotonic() - started >= 0.2
    started = time.monotonic()
    assert asyncio.run(interleave.wait_for_turn(path, 3, stall_seconds=60)) == first  # at once, not after 60 s
    assert time.monotonic() - started < 1


def _pass_turns(path, turns):
    for turn in turns:
        while asyncio.run(interleave.wait_for_turn(path, turn, 30)) is not None:
            raise AssertionError("stalled")
        with open(path + ".log", "a") as log:
            log.write(f"{turn}\n")
        interleave.pass_turn(path, turn)


def test_processes_take_turns_through_the_counter_file(tmp_path):
    """Rally's workers are processes: the even turns in one, the odd ones in another."""
    path = str(tmp_path / "turns-g.txt")
    workers = [multiprocessing.Process(target=_pass_turns, args=(path, range(k, 40, 2))) for k in (1, 0)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert [w.exitcode for w in workers] == [0, 0]
    assert (tmp_path / "turns-g.txt.log").read_text().split() == [str(i) for i in range(40)]


def lead(name="set-rtt-5ms", iterations=None, group="study"):
    t = task(name, warmup=None, iterations=iterations, group=group)
    t.operation.params[interleave.LEAD_KEY] = True
    return t


def test_a_lead_takes_the_first_turn_once_and_the_cells_follow_in_their_passes():
    tasks = [task(n) for n in CELLS] + [lead()]
    interleave.assign(tasks, 1, ["localhost"])
    order = tasks[0].operation.params[interleave.ORDER_KEY]
    assert order == ["set-rtt-5ms"] + interleave.order(sorted(CELLS), 3, 1)
    assert all(t.operation.params[interleave.ORDER_KEY] is order for t in tasks)


@pytest.mark.parametrize(
    "members,message",
    [([lead(), lead("set-rtt-again")], "at most one lead"), ([lead(iterations=2)], "which runs once")],
)
def test_a_lead_that_is_not_one_run_is_refused(members, message):
    with pytest.raises(ValueError, match=message):
        interleave.assign([task(n) for n in CELLS] + members, 1, None)


def test_the_lead_passes_the_first_turn_on_or_fails_the_cells_at_once(context, tmp_path):
    context = type(context)(**{**context.as_param(), "record_dir": str(tmp_path)})
    params = {
        "name": "set-rtt-5ms",
        interleave.GROUP_KEY: "g",
        interleave.ORDER_KEY: ["set-rtt-5ms", *CELLS],
        CONTEXT_KEY: context.as_param(),
    }
    path = interleave.turn_file(str(tmp_path), "g")

    async def set_up():
        return {"success": True}

    assert asyncio.run(interleave.as_lead(params, set_up)) == {"success": True}
    assert asyncio.run(interleave.wait_for_turn(path, 1, stall_seconds=0.2)) is None  # the first cell's turn came

    async def broken():
        raise RuntimeError("the probe did not cross the proxy")

    other = dict(params, **{interleave.GROUP_KEY: "h"})
    with pytest.raises(RuntimeError):
        asyncio.run(interleave.as_lead(other, broken))
    why = asyncio.run(interleave.wait_for_turn(interleave.turn_file(str(tmp_path), "h"), 1, stall_seconds=60))
    assert "set-rtt-5ms, which sets up the group's cells, failed: the probe did not cross the proxy" in why  # at once
    assert asyncio.run(interleave.as_lead({"name": "x"}, set_up)) == {"success": True}  # blocked: no turns
