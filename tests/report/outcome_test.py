"""The report's first lines on the settling (report/outcome.py settle_lines): a node that settled gets one plain line, a
node that had not settled at the time limit is named in bold with what to do, a settling cut short says so, and a race
without the settling's record (settle: false, an older race) gets no line."""

import json
from pathlib import Path

from report import outcome
from report.shared import races
from runners.studies import settle


def race_with(*lines):
    texts = {settle.SETTLE: "".join(json.dumps(line) + "\n" for line in lines)} if lines else {}
    return races.Race("r1", Path("."), {}, record_texts=texts)


def line(**kwargs):
    return {
        "task": "settle",
        "passes": [2.0, 1.5, 1.4, 1.4],
        "seconds": 6.4,
        "pace-ratio": 0.98,
        "window": 2,
        "tolerance": 0.05,
        "time-limit": 300,
        "stopped-by": settle.SETTLED,
        "settled": True,
        "process-cpu-ms": [None] * 4,
        **kwargs,
    }


def test_a_settled_node_gets_one_plain_line():
    (text, blank) = outcome.settle_lines(race_with(line()))
    assert text.startswith("The node settled before the timed cells: 4 passes over them in 6 s") and "0.98x, within 5%" in text
    assert blank == "" and "**" not in text


def test_a_node_not_settled_at_the_time_limit_is_named_in_bold_with_the_fix():
    (text, _) = outcome.settle_lines(
        race_with(line(settled=False, **{"stopped-by": settle.TIME_LIMIT, "pace-ratio": 0.91, "seconds": 301.2}))
    )
    assert text.startswith("**The node had NOT settled before the timed cells:** after 4 passes in 301 s")
    assert "0.91x, beyond 5%" in text and "settle_time_limit" in text


def test_a_settling_cut_short_by_a_failed_pass_says_so_and_a_race_without_the_record_says_nothing():
    (text, _) = outcome.settle_lines(race_with(line(settled=False, **{"stopped-by": settle.FAILED_PASS, "pace-ratio": None})))
    assert text.startswith("**The settling stopped at a failed pass** (pass 4, task settle)")
    assert outcome.settle_lines(race_with()) == []


def test_the_searches_a_node_had_served_are_said_beside_its_floor_and_a_node_short_of_them_is_named():
    served = {"node-searches": 10_000, "served-searches": [4_000, 7_000, 10_100], "jvm-uptime-s": 171.0, "paced": True}
    (text, _) = outcome.settle_lines(race_with(line(**served)))
    assert "10,100 query phases served since the node started, against settle_node_searches 10,000" in text
    assert "a node up 171 s when it began" in text
    short = {**served, "served-searches": [400, 700, 900], "settled": False, "stopped-by": settle.TIME_LIMIT}
    (text, _) = outcome.settle_lines(race_with(line(**short)))
    assert text.startswith("**The node had NOT settled") and "had not yet served the searches its compiler needs" in text
    assert "900 query phases" in text and "still getting faster" not in text
    (text, _) = outcome.settle_lines(race_with(line(**{**served, "served-searches": [None]})))
    assert "could not be read (_nodes/stats), so the pace alone decided" in text


def test_a_first_race_after_bulk_requests_in_the_nodes_process_is_said_and_a_later_race_is_not():
    first = {settle.BULK_REQUESTS_KEY: 5_000, settle.SEARCHES_BEFORE_KEY: 31, "node-searches": 10_000}
    (text, _) = outcome.settle_lines(race_with(line(**first)))
    assert "The node had served 5,000 bulk requests since it started (an ingest in its process) and 31 query phases" in text
    assert "this is its first race since it started" in text and "serial t-digest" in text and "What it goes with" in text
    assert "**" not in text
    # the next race on that node: its first race's settling brought it past the floor before this one began
    (text, _) = outcome.settle_lines(race_with(line(**{**first, settle.SEARCHES_BEFORE_KEY: 10_012})))
    assert "bulk" not in text
    for none in (0, None):  # no bulk request in the process (a node restarted on its index), or an older record
        (text, _) = outcome.settle_lines(race_with(line(**{**first, settle.BULK_REQUESTS_KEY: none})))
        assert "bulk" not in text
    # without a floor a first race cannot be told from a later one: said; and beside a node that had not settled
    (text, _) = outcome.settle_lines(race_with(line(**{**first, "node-searches": 0, settle.SEARCHES_BEFORE_KEY: 50_000})))
    assert "5,000 bulk requests" in text and "this may be its first race" in text
    late = {**first, "settled": False, "stopped-by": settle.TIME_LIMIT, settle.SEARCHES_BEFORE_KEY: None}
    (text, _) = outcome.settle_lines(race_with(line(**late)))
    assert text.startswith("**The node had NOT settled") and "an unknown number of query phases" in text
