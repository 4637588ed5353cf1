"""The trend on levels adjusted for the host (report/history/host.py adjusts, analysis.py): real slowdowns planted on
the real host-study histories (tests/fixtures/host-study-races.tar.xz, tests/report/host_history_test.py), judged on
the levels as measured and on the levels adjusted for the host's load, side by side.

`python -m tests.report.host_adjusted_test` prints the whole table (docs/host-load.md carries it); the tests assert
the rows a user meets."""

import sys

import pytest

from report import HOST_NAMED
from report.history import host as history_host
from report.history import trend
from tests.report import host_history_test as study
from tests.report import planted_history_test as planted

CELLS = ("coverage-D_td-serial", "coverage-D_td-msearch", "coverage-D_hdr-msearch", "coverage-D_hdr-terms")
HISTORIES = {"one start": study.ORDER, "three starts": study.THREE_STARTS}


def judged(tmp_path, history, factor, newest, adjusting):
    """(exit status, {cell: the row of its slower change at the first planted race, or None}, printed) of the nightly
    trend over `history` with its newest races' walls multiplied by factor, adjusting for the host or not."""
    root = study.home(tmp_path, keep=HISTORIES[history])
    first = planted.plant(root, factor, newest)[0] if newest else None
    saved = history_host.ADJUST_SHARE
    history_host.ADJUST_SHARE = saved if adjusting else 2.0  # 2: never adjusted, the levels as measured
    try:
        status, printed = planted.nightly(tmp_path)
    finally:
        history_host.ADJUST_SHARE = saved
    rows = study.changes_of(tmp_path)
    named = {
        cell: next((r for r in rows if r[0].strip("| ") == cell and first and r[1][:8] == first and r[6] == "slower"), None)
        for cell in CELLS
    }
    return status, named, printed


def test_a_planted_slowdown_after_the_loaded_stretch_is_named_on_adjusted_levels_where_measured_ones_miss_it(tmp_path):
    """History 1 (one start, a busy loop on races 3-5): as measured, the spread the loaded races leave hides a 1.5x
    slowdown of the newest 2 races; adjusted for the host it is named at its first race on the two parallel cells
    (whose fits explain 98% of the variance), and the nightly alerts."""
    status, named, printed = judged(tmp_path / "measured", "one start", 1.5, 2, adjusting=False)
    assert status == 0 and not any(named.values()), printed
    status, named, printed = judged(tmp_path / "adjusted", "one start", 1.5, 2, adjusting=True)
    assert status == trend.ALERT_EXIT, printed
    assert {cell for cell, row in named.items() if row} == {"coverage-D_td-msearch", "coverage-D_hdr-msearch"}, named
    assert all("on levels adjusted for the host" in row[2] for row in named.values() if row), named


def test_the_unplanted_histories_alert_on_nothing_adjusted_or_not(tmp_path):
    for history in HISTORIES:
        for adjusting in (False, True):
            status, _, printed = judged(tmp_path / f"{history}-{adjusting}".replace(" ", "-"), history, 1.0, 0, adjusting)
            assert status == 0 and "ALERT:" not in printed.replace(HOST_NAMED, ""), (history, adjusting, printed)


if __name__ == "__main__":
    header = ["history", "newest slowed", "factor", "measured: cells named", "alert", "adjusted: cells named", "alert"]
    cases = [(history, n) for history in HISTORIES for n in (2, 3, 4)]

    def judge(folder, case, factor, adjusting):
        status, named, _ = judged(folder, case[0], factor, case[1], adjusting)
        return status, sum(1 for row in named.values() if row)

    planted.planted_table(header, cases, judge, [float(f) for f in sys.argv[1].split(",")] if len(sys.argv) > 1 else (1.2, 1.5, 2.0))


pytestmark = pytest.mark.filterwarnings("ignore")
