"""The trend on a real nightly history that switches version and back (tests/fixtures/nightly-switch-races.tar.xz,
packed by tests/fixtures/pack_history.py --nightly-switch; docs/history.md): production-comparison at full scale on one
1 GB node, 2 cores, 2026-12-02, each race on a node started afresh (make node-starts, one race a start: ingest-baseline,
then the race): 4 nights on 8.17.2, 4 on 9.5.3, 3 on 8.17.2 again. Its own differences are real: 9.5.3's t-digest
cells 15-25% slower, its HDR _msearch 12% faster. Slowdowns are planted on the newest 2 to 6 races by multiplying their
walls (planted_history_test.plant), as a slower cluster would have measured them.

`python -m tests.report.nightly_switch_test` prints the table docs/history.md gives."""

import tempfile
from pathlib import Path

import pytest

from report.history import trend
from tests.report import planted_history_test as planted

ARCHIVE = Path(__file__).resolve().parents[1] / "fixtures" / "nightly-switch-races.tar.xz"
ORDER = "421b72c7 a2dc5d1a f3b54c46 d5a2bd37 4d362069 bc3a780e c0625b05 ddc0582d dc3f7024 265ca340 18ec9cab".split()
CELLS = 4  # production-comparison's cells the trend follows


def judged(tmp_path, slowed=0, factor=1.0):
    """(exit status, alert lines, {cell: [(race, verdict)]} of the changes named) of the nightly job over the history,
    its newest `slowed` races `factor` times slower."""
    root = planted.home(tmp_path, archive=ARCHIVE)
    if slowed:
        planted.plant(root, factor, slowed)
    status, printed = planted.nightly(tmp_path)
    report = next((tmp_path / "out").glob("trend-*/report.md")).read_text()
    table = report.split("## Changes, newest first", 1)[1].split("\n\n")[1]
    named = {}
    for row in table.splitlines()[2:] if table.startswith("|") else []:
        cells = row.split(" | ")
        named.setdefault(cells[0].strip("| "), []).append((cells[1][:8], cells[6]))
    return status, planted.alerts(printed), named


def test_the_history_as_raced_alerts_on_nothing(tmp_path):
    """Unslowed: 9.5.3's HDR _msearch is faster and 8.17.2's slower again, steps at the switches; the newest races
    against 8.17.2's own earlier run are within the noise, so nothing alerts."""
    status, alerts, named = judged(tmp_path)
    assert status == 0 and not alerts, alerts
    assert named == {"coverage-D_hdr-msearch": [(ORDER[8], "slower"), (ORDER[4], "faster")]}


@pytest.mark.parametrize("slowed, factor", [(2, 2.0), (6, 1.5)])
def test_a_slowdown_of_the_newest_races_is_named_where_it_began_and_alerts(tmp_path, slowed, factor):
    """The newest 2 (on 8.17.2, after the switch back) or 6 (from 9.5.3's second night on) slowed: named at the first
    slowed race in 3 cells of 4 at least, and the job exits 3 with an alert per cell that names the first slowed race."""
    status, alerts, named = judged(tmp_path, slowed, factor)
    first = ORDER[-slowed]
    at_first = [cell for cell, changes in named.items() if (first, "slower") in changes]
    assert status == trend.ALERT_EXIT and len(at_first) >= 3, named
    assert len(alerts) == CELLS and sum(f"from race {first}" in line for line in alerts) >= 3, alerts


@pytest.mark.parametrize("slowed, factor", [(6, 1.5), (4, 2.0)])
def test_every_morning_from_the_second_slowed_race_on_the_slowdown_stays_named_and_alerts(tmp_path, slowed, factor):
    """A change named once stays named: the history read each morning, from the second slowed race to the newest, the
    slowdown planted on the races raced so far; every morning exits 3, and at least 2 of the alerts name the first
    slowed race (from the third morning on, 3)."""
    start = len(ORDER) - slowed
    for morning in range(start + 2, len(ORDER) + 1):
        home = tmp_path / str(morning)
        planted.plant(planted.home(home, archive=ARCHIVE, keep=ORDER[:morning]), factor, morning - start)
        status, printed = planted.nightly(home)
        alerts = planted.alerts(printed)
        from_first = sum(f"from race {ORDER[start]}" in line for line in alerts)
        assert status == trend.ALERT_EXIT and from_first >= (2 if morning == start + 2 else 3), (morning, alerts)


def table():
    print("| newest slowed | factor | cells named at the first slowed race | other changes | alerts | exit |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for n, (slowed, factor) in enumerate((s, f) for f in (1.5, 2.0) for s in (0, 2, 3, 4, 5, 6) if s or f == 1.5):
            status, alerts, named = judged(Path(tmp) / str(n), slowed, factor)
            first = ORDER[-slowed] if slowed else None
            at_first = sum((first, "slower") in changes for changes in named.values())
            other = sum(1 for changes in named.values() for race, _ in changes if race != first)
            print(f"| {slowed} | {factor if slowed else '-'} | {at_first} of {CELLS} | {other} | {len(alerts)} | {status} |")


if __name__ == "__main__":
    table()
