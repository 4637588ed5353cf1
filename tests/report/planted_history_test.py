"""The trend on real races (tests/fixtures/history-races.tar.xz, full scale, 8.17.2, one 1 GB node on 2 cores, packed
by tests/fixtures/pack_history.py; docs/history.md, "A real slowdown"), as a team's nightly job runs it:

- plan:loaded-history: one node start, ingest-baseline, then 6 races of production-comparison, the last 3 while a busy
  loop held one of the machine's two cores (nothing in the cluster's facts changes); then a second node start, 3 races
  without the load;
- plan:quiet-start: one node start, 8 races, nothing else on the machine; steps planted here on its newest races by
  multiplying their walls, as a slower cluster would have measured them.
"""

import contextlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from report import catalog
from report.history import trend
from runners.contracts import records

ARCHIVE = Path(__file__).resolve().parents[1] / "fixtures" / "history-races.tar.xz"
QUIET, LOADED = "quiet-start", "loaded-history"
FIRST_LOADED = "c8976d90"  # the first race with the busy loop (plan:loaded-history)
START_1 = ["75247e20", "e6671579", "2d4a0cc8", FIRST_LOADED, "0596690b", "91b221ef"]  # its first node start, in race order


def home(tmp_path, plan=None, keep=None, facts=True, archive=ARCHIVE, without=()):
    """A Rally home holding the archive's races of `plan` (all: None), only those in `keep` if given; facts=False
    takes each race's cluster facts away (a race from before they were recorded: each its own node start), and each
    record named in `without` goes too."""
    root = tmp_path / ".rally" / "benchmarks" / "races"
    root.mkdir(parents=True)
    with tarfile.open(archive) as tar:
        tar.extractall(root)
    gone = set(without) | (set() if facts else {records.CLUSTER_FACTS})
    for folder in list(root.iterdir()):
        data = json.loads((folder / "race.json").read_text())
        if (plan and data["user-tags"].get("plan") != plan) or (keep and folder.name[:8] not in keep):
            for path in sorted(folder.rglob("*"), reverse=True):
                path.rmdir() if path.is_dir() else path.unlink()
            folder.rmdir()
            continue
        for name in gone:
            (folder / records.RECORD_DIR / name).unlink()
    return root


def plant(root, factor, newest):
    """The newest races' measured walls, every cell, multiplied by factor."""
    folders = sorted(root.iterdir(), key=lambda f: json.loads((f / "race.json").read_text())["race-timestamp"])
    for folder in folders[-newest:]:
        path = folder / records.RECORD_DIR / records.VALIDATION
        lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        for line in lines:
            if line.get("measured"):
                line["wall-ms"] *= factor
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return [f.name[:8] for f in folders[-newest:]]


def nightly(tmp_path):
    """(exit status, what it printed) of `python -m report trend --fail-on slower` over the home."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = trend.main(["--rally-home", str(tmp_path), "--out", str(tmp_path / "out"), "--fail-on", "slower"], catalog.TREND_FIGURES)
    return status, out.getvalue()


def planted_table(header, cases, judge, factors=(1.2, 1.5, 2.0)):
    """Prints a markdown table of planted slowdowns: per case and factor, judge(folder, case, factor, arm) -> (exit
    status, cells named) for each of the two arms (False, True), as cells named and whether the nightly alerted (the
    study modules' `python -m` table for docs/)."""
    import tempfile

    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    with tempfile.TemporaryDirectory() as tmp:
        for n, (case, factor) in enumerate((c, f) for c in cases for f in factors):
            row = [*(case if isinstance(case, tuple) else (case,)), factor]
            for arm in (False, True):
                status, named = judge(Path(tmp) / f"{n}-{arm}", case, factor, arm)
                row += [named, "alert" if status == trend.ALERT_EXIT else "-"]
            print("| " + " | ".join(str(v) for v in row) + " |")


def alerts(printed):
    return [line for line in printed.splitlines() if line.startswith("ALERT: ")]


def test_a_neighbours_load_on_a_running_node_is_named_at_its_first_race_and_alerts(tmp_path):
    """The morning after the third loaded race: t-digest over _msearch (283 and 306 ms, then 567, 450 and 460 ms) is
    named slower from the first loaded race, on a running node, nothing recorded changed, and the job exits 3."""
    home(tmp_path, LOADED, keep=START_1)
    status, printed = nightly(tmp_path)
    assert status == trend.ALERT_EXIT
    (alert,) = alerts(printed)
    assert alert.startswith("ALERT: coverage-D_td-msearch 1.66x") and f"from race {FIRST_LOADED}" in alert
    assert "nothing recorded changed; same node start" in alert
    report = next((tmp_path / "out").glob("trend-*/report.md")).read_text()
    assert "step on a running node (its races the unit)" in report


QUIET_START = "5b2235be ba084c84 63b5a4f3 f1266200 d6fb2942 fa399e3f 7ce3b842 9714c4b4".split()  # plan:quiet-start


def test_one_loaded_race_is_not_yet_a_change_and_two_are_beside_another_start(tmp_path):
    """A change needs two races after it (bar.LEAST_SIDE): the morning after the first loaded race nothing is named.
    After the second, the start alone (4 races that count, no settle record) is too short for its search, which weighs
    its short side too (starts.short_sides: the price of naming a step after a start's second race, measured by make
    trend-eval); read with another node start's races, whose spread the search learns, it is named where it began."""
    home(tmp_path / "one", LOADED, keep=START_1[:4])
    status, printed = nightly(tmp_path / "one")
    assert status == 0 and not alerts(printed) and "trend: 0 change(s)" in printed
    home(tmp_path / "two", keep=START_1[:5] + QUIET_START)
    status, printed = nightly(tmp_path / "two")
    assert f"coverage-D_td-msearch 1.71x slower from race {FIRST_LOADED}" in printed, printed


def test_a_node_start_without_the_load_after_it_ends_the_alert(tmp_path):
    """The second node start's 3 races (no load): the change stays named where it began, and the newest races are not
    called slower: exit 0."""
    home(tmp_path, LOADED)
    status, printed = nightly(tmp_path)
    assert status == 0 and not alerts(printed)
    assert f"coverage-D_td-msearch 1.66x slower from race {FIRST_LOADED}" in printed


def test_a_quiet_node_start_is_never_called_slower(tmp_path):
    home(tmp_path, QUIET)
    status, printed = nightly(tmp_path)
    assert status == 0 and not alerts(printed) and "slower" not in printed.split("report:")[0]


@pytest.mark.parametrize("factor, newest", [(1.5, 3), (1.2, 5), (2.0, 4)])
def test_a_step_planted_on_a_quiet_running_node_is_named_where_it_begins(tmp_path, factor, newest):
    """On the quiet node start, the newest races' walls x1.5 (3 races), x1.2 (5 races), x2 (4 races): every cell but
    at most one named slower from the first planted race, and the job exits 3."""
    planted = plant(home(tmp_path, QUIET), factor, newest)
    status, printed = nightly(tmp_path)
    named = [line for line in alerts(printed) if f"from race {planted[0]}" in line]
    assert status == trend.ALERT_EXIT and len(named) >= 3, printed


@pytest.mark.parametrize("factor, newest", [(1.5, 3), (2.0, 4)])
def test_a_step_planted_on_races_without_facts_is_named(tmp_path, factor, newest):
    """All 17 races with their cluster facts taken away (each race its own node start, as a history from before the
    facts were recorded): the newest races' walls x1.5 (3) or x2 (4), named slower from the first planted race in two
    cells at least (the two steady ones: serial t-digest, HDR terms), exit 3."""
    planted = plant(home(tmp_path, facts=False), factor, newest)
    status, printed = nightly(tmp_path)
    named = {line.split()[1] for line in alerts(printed) if f"from race {planted[0]}" in line}
    assert status == trend.ALERT_EXIT and {"coverage-D_td-serial", "coverage-D_hdr-terms"} <= named, printed
