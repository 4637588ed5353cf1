"""As a team shares the track: Rally's track repositories (rally.ini names a git repository, Rally's tracks folder
holds its clone; offline, as is). The track folder alone, with runners/ beside it, races from a repository of a
team's own; this repository, shared whole, loads its track by path; the card's top-level challenges/ is the track's."""

import configparser
import json
import os
import shutil
import subprocess

import pytest

from runners.contracts import records
from runners.contracts.parameters import DEFAULTS
from runners.shared import interleave
from tests.conftest import REPO, TRACK_DIR, assert_clean, ensure_test_index, rendered_challenges, rendered_tasks, run_rally


def use_track_repository(rally_home, name, source):
    """Rally's tracks folder holds a clone of the repository `source` that rally.ini names `name`."""
    ini_path = rally_home / ".rally" / "rally.ini"
    if not ini_path.is_file():  # any Rally command writes it
        run_rally(rally_home, "list", "races", "--offline")
    clone = rally_home / ".rally" / "benchmarks" / "tracks" / name
    if clone.exists():
        shutil.rmtree(clone)
    subprocess.run(["git", "clone", "-q", str(source), str(clone)], check=True)
    ini = configparser.ConfigParser(interpolation=None)
    ini.read(ini_path)
    if not ini.has_section("tracks"):
        ini.add_section("tracks")
    ini.set("tracks", f"{name}.url", str(source))
    with open(ini_path, "w") as f:
        ini.write(f)
    return clone


PASSING_ASSERTIONS = {
    "coverage_assertions": [
        {"property": "failed-checks", "condition": "==", "value": 0},
        {"property": "hits", "condition": "==", "value": 1000},
    ]
}
PARAMS = {"schedule": "interleaved", **PASSING_ASSERTIONS}


@pytest.mark.versions("production-comparison")
def test_the_track_folder_alone_races_from_a_teams_repository(shared_races, tmp_path):
    """The track folder copied alone into a team's git track repository, with runners/ beside it (README: the track
    folder on its own), races production-comparison: nothing of this repository's layout is needed. The same race
    carries Rally assertions that hold (tests/test_faults.py has a failing one) and the interleaved schedule, whose
    cells must have run in the order of their turns."""
    ensure_test_index(shared_races)
    repository = tmp_path / "team-tracks"
    shutil.copytree(TRACK_DIR, repository / "cluster-metrics", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "runners", repository / "runners", ignore=shutil.ignore_patterns("__pycache__"))
    git = ["git", "-C", str(repository), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "the cluster-metrics track"], check=True)
    use_track_repository(shared_races.home, "alone", repository)
    race = shared_races.race(
        "production-comparison",
        "--track-repository=alone",
        "--track-revision=main",
        "--enable-assertions",
        f"--track-params={json.dumps(PARAMS)}",
        track=["--track=cluster-metrics"],
    )
    assert_clean(race, ["verify-corpus", "coverage-D_td-serial", "coverage-D_hdr-terms"])
    assert race.race["track"] == "cluster-metrics"  # a repository names its tracks by path
    tasks = list(rendered_tasks(rendered_challenges(PARAMS)["production-comparison"]))
    cells = sorted(t["operation"]["name"] for t in tasks if interleave.GROUP_KEY in t["operation"])
    ran = [json.loads(line)["task"] for line in (race.record_dir() / records.VALIDATION).read_text().splitlines()]
    assert len(cells) == 4  # production-comparison's cells
    assert [name for name in ran if name in cells] == interleave.order(cells, 2, DEFAULTS["schedule_seed"])


@pytest.mark.slow  # an esrally process on a clone
@pytest.mark.rally_process
def test_this_repository_shared_whole_names_its_track_by_path(tmp_path):
    """rally.ini names this repository; Rally loads tracks/cluster-metrics from its clone (esrally info: the track's
    load, every challenge, no cluster). The clone holds what is committed: the working tree is laid over it, so that
    uncommitted work is what gets tested."""
    home = tmp_path / "home"
    home.mkdir()
    clone = use_track_repository(home, "team", REPO)
    for folder in ("tracks", "runners"):
        shutil.rmtree(clone / folder)
        shutil.copytree(REPO / folder, clone / folder, ignore=shutil.ignore_patterns("__pycache__"))
    result = run_rally(home, "info", "--track-repository=team", "--track-revision=main", "--track=tracks/cluster-metrics", "--offline")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "tracks/cluster-metrics" in result.stdout
    for challenge in rendered_challenges():
        assert challenge in result.stdout


def test_the_top_level_challenges_folder_is_the_tracks_own():
    """The card's layout has challenges/ at the top level: a link to the track folder's challenges/, the one home of
    the challenge files, which the track folder keeps so that Rally reads it on its own (docs/repository.md)."""
    top = REPO / "challenges"
    assert top.is_symlink() and os.readlink(top) == os.path.join("tracks", "cluster-metrics", "challenges")
    assert top.resolve() == (TRACK_DIR / "challenges").resolve()
    assert sorted(p.name for p in top.glob("*.json")) == sorted(p.name for p in (TRACK_DIR / "challenges").glob("*.json"))
    assert sorted(p.name for p in top.glob("*.json"))  # not empty
