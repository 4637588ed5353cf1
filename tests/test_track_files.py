"""The track folder as Rally reads it: templates that read like rally-tracks, tags on every task, operation names that
agree with their runners. Unit tests (no node): the track is rendered by Rally's own template code."""

import pytest

from conftest import REPO, rendered_tasks, rendered_track
from runners.operations import OPERATIONS
from runners.tasks import KIND_TAGS, STUDY_TAGS

TRACK = REPO / "tracks" / "cluster-metrics"


def test_the_track_folder_holds_everything_rally_reads():
    for name in ("track.json", "track.py", "index.json", "schedule.j2", "vocabulary.j2", "README.md"):
        assert (TRACK / name).is_file(), name
    assert '{{ rally.collect(parts="challenges/*.json") }}' in (TRACK / "track.json").read_text()
    challenges = {c["name"] for c in rendered_track()["challenges"]}
    assert {p.stem for p in (TRACK / "challenges").glob("*.json")} == challenges


def test_templates_read_like_rally_tracks():
    track = (TRACK / "track.json").read_text()
    assert "{% macro" not in track, "schedule macros live in schedule.j2"
    long = [(n, len(line)) for n, line in enumerate(track.splitlines(), 1) if len(line) > 140]
    assert not long, f"track.json lines over 140 characters: {long}"
    for path in (TRACK / "challenges").glob("*.json"):
        long = [(n, len(line)) for n, line in enumerate(path.read_text().splitlines(), 1) if len(line) > 160]
        assert not long, f"{path.name} lines over 160 characters: {long}"
    for challenge in rendered_track()["challenges"]:
        assert len(challenge["description"].split()) <= 25, challenge["name"]


@pytest.mark.parametrize("params", [{}, {"epochs": 2, "layouts": "1S0R,2S1R", "rtt_ms": [0, 50]}])
def test_every_task_is_tagged_with_one_kind_and_at_most_one_study(params):
    for challenge in rendered_track(params)["challenges"]:
        for task in rendered_tasks(challenge):
            tags = task.get("tags", [])
            kinds, studies = [t for t in tags if t in KIND_TAGS], [t for t in tags if t in STUDY_TAGS]
            assert set(tags) <= set(KIND_TAGS) | set(STUDY_TAGS), (challenge["name"], task["operation"]["name"], tags)
            assert len(kinds) <= 1 and len(studies) <= 1 and tags, (challenge["name"], task["operation"]["name"], tags)
            # a study's challenge tags all of its tasks with that study
            if challenge["name"] in ("rtt-sweep", "ccs-roundtrips", "network-faults"):
                assert studies == ["network"], task["operation"]["name"]
            if challenge["name"] in ("full", "query-decomposition", "ingest-baseline"):
                assert not studies and kinds, task["operation"]["name"]


def test_operation_types_and_runner_names_agree():
    for name, operation in OPERATIONS.items():
        assert repr(operation.runner()) == name
    types = {t["operation"]["operation-type"] for c in rendered_track()["challenges"] for t in rendered_tasks(c)}
    rallys_own = {"delete-index", "create-index", "cluster-health", "refresh", "raw-request"}
    assert types <= set(OPERATIONS) | rallys_own, types - set(OPERATIONS) - rallys_own
    # where a task is the one instance of its operation, the two share the name
    names = {t["operation"]["name"] for c in rendered_track()["challenges"] for t in rendered_tasks(c)}
    for single in ("ingest-cost-start", "verify-doc-count", "verify-corpus", "check-layouts", "register-remote", "remove-remote"):
        assert single in names
