"""The report's profile sections (report/studies/profile.py) on fixture races: the real --test-mode profile-breakdown race of
tests/fixtures/races, copied into tmp_path with the calls its runner records (runners/studies/profile.py) written beside it."""

import json
import random
import shutil
import statistics
from pathlib import Path

import pytest

from report.__main__ import main as report_main
from report.shared import races
from report.shared.uncertainty import median_interval
from report.studies import profile
from runners.contracts import records

HOME = Path(__file__).parents[1] / "fixtures" / "races"
PROFILE = "23248411"  # profile-breakdown in --test-mode, raced before the runner recorded its calls
FULL = "b8b9bc99"
TASK = "profile-D_td"
FIELDS = ("cpu", "mem", "net")


def parts(filter_nanos, pct_nanos, sum_nanos, build_nanos):
    """An ON call's profile parts as the runner records them."""
    recorded = {"query (filter)": {"nanos": filter_nanos}}
    for field in FIELDS:
        recorded[f"{field}_pct (TDigestPercentilesAggregator)"] = {"nanos": pct_nanos, "build-nanos": build_nanos}
        recorded[f"{field}_sum (SumAggregator)"] = {"nanos": sum_nanos, "build-nanos": build_nanos}
    return recorded


def call(iteration, profiled, took, wall, measured=True, success=True, **profile_parts):  # parameters: a profile line's fields
    line = {
        "task": TASK,
        "variant": "D_td",
        "epoch": 1,
        "node": "N001",
        "iteration": iteration,
        "measured": measured,
        "profile": profiled,
        "position": 1 + (profiled == (iteration % 2 == 0)),
        "took-ms": took,
        "wall-ms": wall,
        "decode-ms": 0.2,
        "success": success,
        "error": None if success else "epoch 1 node N001 mem_sum: 2 != expected 1",
    }
    if profiled:
        line["parts"] = parts(**(profile_parts or {"filter_nanos": 7e6, "pct_nanos": 9e6, "sum_nanos": 2e6, "build_nanos": 1e6}))
    return line


def pairs(off_tooks, on_tooks, warmups=0, first=1):
    """Calls of consecutive iterations: warm-ups (far slower: they must not count) then the measured pairs."""
    lines = []
    for i in range(warmups):
        lines += [call(first + i, False, 500, 510, measured=False), call(first + i, True, 900, 910, measured=False)]
    for i, (off, on) in enumerate(zip(off_tooks, on_tooks), first + warmups):
        lines += [call(i, False, off, off + 4.5), call(i, True, on, on + 6.0)]
    return lines


def fixture_race(tmp_path, calls, race_id="feed0000-0000-0000-0000-000000000000", error_rate=0.0):
    """The fixture profile race under another id, with these recorded calls and the task's error rate."""
    src = next((HOME / ".rally/benchmarks/races").glob(f"{PROFILE}*"))
    dst = tmp_path / ".rally" / "benchmarks" / "races" / race_id
    shutil.copytree(src, dst)
    data = json.loads((dst / "race.json").read_text())
    data["race-id"] = race_id
    for op in data["results"]["op_metrics"]:
        if op["task"] == TASK:
            op["error_rate"] = error_rate
    (dst / "race.json").write_text(json.dumps(data))
    if calls:
        (dst / records.RECORD_DIR / records.PROFILE_CALLS).write_text("".join(json.dumps(c) + "\n" for c in calls))
    return races.Files(rally_home=tmp_path).race(race_id[:8])


def rows(table):
    header, body = table
    return {row[0]: dict(zip(header, row)) for row in body}


def samples(n, seed):
    rng = random.Random(seed)
    off = [rng.randint(38, 46) for _ in range(n)]
    return off, [round(t * rng.uniform(1.6, 2.0)) for t in off]


def test_the_overhead_is_read_from_the_measured_pairs(tmp_path):
    off, on = samples(20, seed=5)
    calls = pairs(off, on, warmups=5)
    calls.append(call(99, False, 1, 2, success=False))  # a wrong answer: no sample
    race = fixture_race(tmp_path, calls)
    table = rows(profile.overhead_table(race))
    took_on, took_off, overhead = table["took, profile ON (server)"], table["took, profile OFF (server)"], table["overhead (ON / OFF - 1)"]
    for row, values in ((took_on, on), (took_off, off)):
        interval = median_interval(values)
        assert (
            row["n"] == 20
            and row["median (ms)"] == statistics.median(values)
            and row["mean (ms)"] == pytest.approx(statistics.fmean(values))
        )
        assert row["95% interval"] == f"[{interval.low:.1f}, {interval.high:.1f}]"
    assert took_on["seed (mean, ms)"] == 74.8 and took_off["seed (mean, ms)"] == 40.8
    ratios = [b / a - 1 for a, b in zip(off, on)]
    interval = median_interval(ratios)
    assert overhead["median (ms)"] == f"{100 * statistics.median(ratios):+.0f}%" and overhead["n"] == 20
    assert overhead["95% interval"] == f"[{100 * interval.low:+.0f}%, {100 * interval.high:+.0f}%]"
    assert overhead["mean (ms)"] == f"{100 * (statistics.fmean(on) / statistics.fmean(off) - 1):+.0f}%"
    assert overhead["seed (mean, ms)"] == "+83%"
    assert "Too few samples" not in profile.overhead_note(race)


def test_the_single_call_phases_are_derived_as_the_seed_derived_them(tmp_path):
    off, on = samples(16, seed=7)
    filter_nanos, pct_nanos, sum_nanos, build_nanos = 6e6, 8e6, 2e6, 0.5e6
    calls = []
    for i, (a, b) in enumerate(zip(off, on), 1):
        calls += [
            call(i, False, a, a + 5.25),
            call(i, True, b, b + 7, filter_nanos=filter_nanos, pct_nanos=pct_nanos, sum_nanos=sum_nanos, build_nanos=build_nanos),
        ]
    race = fixture_race(tmp_path, calls)
    table = rows(profile.phases_table(race))
    took_off = statistics.median(off)
    assert table["wall, profile OFF (client, median)"]["est. ms"] == statistics.median([a + 5.25 for a in off])
    assert table["took, profile OFF (server, median)"]["est. ms"] == took_off
    network = table["Network + HTTP (client): wall - took"]
    assert network["est. ms"] == pytest.approx(5.25) and network["seed est. ms"] == 5 and network["seed share"] == "11.0%"
    took_on_nanos = sum(on) * 1e6
    shares = {
        "Filter / postings intersection": len(on) * filter_nanos / took_on_nanos,
        "3x percentiles collect": len(on) * 3 * (pct_nanos - build_nanos) / took_on_nanos,  # collecting, not building
        "3x sum collect": len(on) * 3 * (sum_nanos - build_nanos) / took_on_nanos,
    }
    shares["Build / reduce / serialize (not attributed)"] = 1 - sum(shares.values())
    for label, share in shares.items():
        assert table[label]["share"] == f"{100 * share:.1f}%", label
        assert table[label]["est. ms"] == pytest.approx(share * took_off), label
    assert table["3x percentiles collect"]["seed est. ms"] == 22 and table["3x percentiles collect"]["seed share"] == "54.0%"
    assert "Too few samples" not in profile.phases_note(race)


def test_profiled_parts_beyond_took_leave_no_rest(tmp_path):
    """Concurrent slices: the profile adds their times up past took, and no rest is made up by subtraction."""
    calls = []
    for i in range(1, 9):
        calls += [call(i, False, 40, 45), call(i, True, 10, 12, filter_nanos=5e6, pct_nanos=4e6, sum_nanos=1e6, build_nanos=0)]
    race = fixture_race(tmp_path, calls)
    assert rows(profile.phases_table(race))["Build / reduce / serialize (not attributed)"]["share"] == "-"
    assert "the rest cannot be derived by subtraction" in profile.phases_note(race)


def test_too_few_samples_give_figures_without_an_interval_and_say_so_once(tmp_path):
    race = fixture_race(tmp_path, pairs([40, 42, 41], [70, 80, 75], warmups=1))
    table = rows(profile.overhead_table(race))
    assert table["took, profile OFF (server)"]["n"] == 3 and table["took, profile OFF (server)"]["median (ms)"] == 41
    assert all(row["95% interval"] == "-" for row in table.values())
    for note in (profile.overhead_note(race), profile.phases_note(race)):
        assert note.count("Too few samples") == 1 and "3 measured ON and 3 OFF calls" in note
    assert rows(profile.phases_table(race))["took, profile OFF (server, median)"]["est. ms"] == 41


def test_a_race_without_recorded_calls_says_so_and_one_without_a_profile_has_no_section(tmp_path):
    old = races.Files(rally_home=HOME).race(PROFILE)  # profile.json, but raced before the calls were recorded
    for build in (profile.overhead_table, profile.phases_table):
        assert "recorded no profile ON / OFF calls" in build(old)
        assert build(races.Files(rally_home=HOME).race(FULL)) is None


def test_a_failed_task_is_marked_and_gives_no_overhead(tmp_path):
    off, on = samples(20, seed=3)
    race = fixture_race(tmp_path, pairs(off, on), error_rate=0.2)
    for build in (profile.overhead_table, profile.phases_table):
        text = build(race)
        assert isinstance(text, str) and f"{TASK} FAILED (20% errors)" in text and "no figure is read from it" in text
    # every call failed before an answer: nothing recorded, and the task's error rate still says why
    assert "FAILED (100% errors)" in profile.overhead_table(
        fixture_race(tmp_path, [], race_id="feed0001-0000-0000-0000-000000000000", error_rate=1.0)
    )


def test_the_report_shows_both_tables_with_their_notes(tmp_path):
    off, on = samples(15, seed=11)
    fixture_race(tmp_path, pairs(off, on, warmups=2))
    assert report_main(["--race", "feed0000", "--rally-home", str(tmp_path), "--out", str(tmp_path / "out")]) == 0
    text = next((tmp_path / "out").glob("*/report.md")).read_text()
    for title in ("## Profile breakdown", "## Profile overhead", "## Single-call phases (as the seed derived them)"):
        assert text.count(title) == 1, title
    assert "Those ratios are only relative" in text
    assert "as the seed combined the absolute total of profile OFF with the ratios of profile ON" in text
    assert "| overhead (ON / OFF - 1) |" in text and "| +83% |" in text


def test_the_profile_shares_sum_to_one():
    race = races.Files(rally_home=HOME).race(PROFILE)
    header, body = profile.shares_table(race)
    assert sum(p["share"] for p in race.record(records.PROFILE)["parts"].values()) == pytest.approx(1.0)
    assert any("TDigestPercentilesAggregator" in row[0] for row in body)
    # the collector's time contains the aggregations' collect time: counting it too would double-count
    assert "collector" not in race.record(records.PROFILE)["parts"] and "query (filter)" in race.record(records.PROFILE)["parts"]
