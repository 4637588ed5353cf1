"""The trend on a real history whose races recorded their settling (tests/fixtures/settle-study-races.tar.xz, packed by
tests/fixtures/pack_history.py --settle-study; docs/history.md): two node starts of 8.17.2 at full scale, 1 GB heap, 2
cores, 2026-12-02, 5 and 4 races of production-comparison, every race plain, each settling before its timed cells.

Real slowdowns planted on the newest races (their measured walls multiplied on every cell), judged with the settle
record and without it (the same races as a team had them before the record): with it, a node start's first race
counts, so a step from a start's third race has two races before it.

`python -m tests.report.settle_history_test` prints the whole table (docs/history.md carries it)."""

import sys
from pathlib import Path

import pytest

from report.history import trend
from runners.studies.settle import SETTLE
from tests.report import host_history_test as study
from tests.report import planted_history_test as planted

ARCHIVE = Path(__file__).resolve().parents[1] / "fixtures" / "settle-study-races.tar.xz"
START_1 = "a20be6eb 64cc9a82 7e7f132c 0d9e54c3 08bed329".split()
START_2 = "28978ac6 e734b631 624ea0a6 51a99f49".split()
SHAPES = {  # name: (the races read, the newest slowed)
    "one start, from its 3rd race": (START_1, 3),
    "one start, from its 4th race": (START_1, 2),
    "two starts, from the 2nd's 3rd race": (START_1 + START_2, 2),
    "two starts, from the 2nd's 2nd race": (START_1 + START_2, 3),
}


def judged(tmp_path, shape, factor, settle=True):
    """(exit status, cells named slower at the first slowed race, printed) of the nightly trend over the shape's races,
    their newest walls multiplied by factor; settle=False: the races without their settle record."""
    keep, newest = SHAPES[shape]
    root = planted.home(tmp_path, keep=keep, archive=ARCHIVE, without=() if settle else (SETTLE,))
    first = planted.plant(root, factor, newest)[0] if factor != 1.0 else None
    status, printed = planted.nightly(tmp_path)
    rows = study.changes_of(tmp_path)
    named = {row[0].strip("| ") for row in rows if first and row[1][:8] == first and row[6] == "slower"}
    return status, named, printed


def test_a_slowdown_from_a_settled_starts_third_race_is_named_and_alerts(tmp_path):
    """The shape issue 85 found unnamed: two plain races, then slower ones, in one node start. With the settle record
    the first race counts and the step is named at its first race; without it, one race is left before the step and
    the start's short side (starts.short_sides) names it there too (before short sides: nothing named, exit 0)."""
    status, named, printed = judged(tmp_path / "settled", "one start, from its 3rd race", 1.5)
    assert status == trend.ALERT_EXIT and named, printed
    status, named, printed = judged(tmp_path / "unrecorded", "one start, from its 3rd race", 1.5, settle=False)
    assert status == trend.ALERT_EXIT and named, printed


@pytest.mark.parametrize("keep", [START_1, START_1 + START_2], ids=["one start", "two starts"])
def test_the_plain_history_alerts_on_nothing(tmp_path, keep):
    root = planted.home(tmp_path, keep=keep, archive=ARCHIVE)
    assert root.is_dir()
    status, printed = planted.nightly(tmp_path)
    assert status == 0 and "ALERT:" not in printed, printed


if __name__ == "__main__":
    header = ["shape", "factor", "without the settle record: cells named", "alert", "with it: cells named", "alert"]
    factors = [float(f) for f in sys.argv[1].split(",")] if len(sys.argv) > 1 else (1.2, 1.5, 2.0)

    def judge(folder, shape, factor, settle):
        status, named, _ = judged(folder, shape, factor, settle)
        return status, len(named)

    planted.planted_table(header, SHAPES, judge, factors)


pytestmark = pytest.mark.filterwarnings("ignore")
