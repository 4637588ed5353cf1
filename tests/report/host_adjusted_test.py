"""The trend on levels adjusted for the host (report/history/host.py adjusts, analysis.py): real slowdowns planted on
the real host-study histories (tests/fixtures/host-study-races.tar.xz, tests/report/host_history_test.py), judged on
the levels as measured and on the levels adjusted for the host's load, side by side.

`python -m tests.report.host_adjusted_test` prints the whole table (docs/host-load.md carries it); the tests assert
the rows a user meets."""

import contextlib
import io
import sys
from pathlib import Path

import pytest

from report import HOST_NAMED, catalog
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
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = trend.main(
                ["--rally-home", str(tmp_path), "--out", str(tmp_path / "out"), "--fail-on", "slower"], catalog.TREND_FIGURES
            )
    finally:
        history_host.ADJUST_SHARE = saved
    rows = study.changes_of(tmp_path)
    named = {
        cell: next((r for r in rows if r[0].strip("| ") == cell and first and r[1][:8] == first and r[6] == "slower"), None)
        for cell in CELLS
    }
    return status, named, out.getvalue()


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


def table(tmp, factors=(1.2, 1.5, 2.0), newest=(2, 3, 4)):
    """Rows: history, newest races slowed, factor, then per judgement (measured, adjusted) the cells named at the
    first slowed race (of 4) and whether the nightly alerted."""
    rows = []
    for history in HISTORIES:
        for n in newest:
            for factor in factors:
                row = [history, n, factor]
                for adjusting in (False, True):
                    case = Path(tmp) / f"{history}-{n}-{factor}-{adjusting}".replace(" ", "-")
                    status, named, _ = judged(case, history, factor, n, adjusting)
                    row += [sum(1 for r in named.values() if r), "alert" if status == trend.ALERT_EXIT else "-"]
                rows.append(row)
    return rows


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        print("| history | newest slowed | factor | measured: cells named | alert | adjusted: cells named | alert |")
        print("|---|---|---|---|---|---|---|")
        for row in table(tmp, *(() if len(sys.argv) < 2 else ([float(f) for f in sys.argv[1].split(",")],))):
            print("| " + " | ".join(str(v) for v in row) + " |")


pytestmark = pytest.mark.filterwarnings("ignore")
