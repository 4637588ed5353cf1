"""The track folder as Rally reads it: templates that read like rally-tracks, tags on every task, operation names that
agree with their runners. Unit tests (no node): the track is rendered by Rally's own template code."""

import json
import re

import pytest

from runners.contracts import parameters
from runners.contracts.queries import INGEST_CHANGE_BASELINE
from runners.operations import OPERATIONS
from runners.shared import interleave
from runners.studies import warm_up
from tests.conftest import (
    REPO,
    STANDARD_SHAPE,
    TRACK_DIR,
    challenge_alone_track,
    challenges_raced_by_their_own_module,
    default_challenge,
    rendered_challenges,
    rendered_tasks,
    rendered_track,
)


def test_the_track_folder_holds_everything_rally_reads():
    for name in ("track.json", "track.py", "index.json", "vocabulary.j2", "README.md"):
        assert (TRACK_DIR / name).is_file(), name
    assert '{{ rally.collect(parts="challenges/*.json") }}' in (TRACK_DIR / "track.json").read_text()
    challenges = {c["name"] for c in rendered_track()["challenges"]}
    assert {p.stem for p in (TRACK_DIR / "challenges").glob("*.json")} == challenges


def test_each_challenge_renders_from_the_folder_that_holds_it_alone_as_in_the_whole_track(tmp_path):
    """The suite races each challenge from a track folder holding it alone beside the default challenge
    (tests/conftest.py, challenge_alone_track): what Rally renders of the challenge there is what it renders of it in
    the whole track, so a challenge that leaned on another's file (a set in one, read in the next) fails here."""

    from esrally.track import loader

    whole = rendered_challenges()
    for name in whole:
        folder = challenge_alone_track(name, root=tmp_path)
        assert folder != TRACK_DIR and (folder / "track.py").resolve() == TRACK_DIR / "track.py", name
        alone = {c["name"]: c for c in json.loads(loader.render_template_from_file(str(folder / "track.json"), {}))["challenges"]}
        assert sorted(alone) == sorted({name, default_challenge()}), (name, sorted(alone))
        assert alone[name] == whole[name], name
        assert (folder.parents[1] / "runners").resolve() == REPO / "runners"


def test_templates_read_like_rally_tracks():
    track = (TRACK_DIR / "track.json").read_text()
    # one macro only, the count that renders a bad value's placeholder: a task is written in its challenge file
    assert re.findall(r"\{% macro (\w+)", track) == ["count"], "tasks are written in the challenge files, not built by macros"
    long = [(n, len(line)) for n, line in enumerate(track.splitlines(), 1) if len(line) > 140]
    assert not long, f"track.json lines over 140 characters: {long}"
    for path in (TRACK_DIR / "challenges").glob("*.json"):
        long = [(n, len(line)) for n, line in enumerate(path.read_text().splitlines(), 1) if len(line) > 160]
        assert not long, f"{path.name} lines over 160 characters: {long}"
    for challenge in rendered_track()["challenges"]:
        assert len(challenge["description"].split()) <= 25, challenge["name"]


JINJA_COMMENT = re.compile(r"\{#.*?#\}", re.S)
INCLUDE = re.compile(r'\{%-?\s*include\s+"([^"]+)"')
WRITTEN_TYPE = re.compile(r'"operation-type":\s*"([a-z-]+)"')


def written_operation_types(path):
    """The operation types a template file writes out, outside Jinja comments, with those of the files it includes."""
    text = JINJA_COMMENT.sub("", path.read_text())
    types = set(WRITTEN_TYPE.findall(text))
    for included in INCLUDE.findall(text):
        types |= written_operation_types(TRACK_DIR / included)
    return types


@pytest.mark.parametrize("params", [{}, {"schedule": "blocked", "epochs": 2, "ccs_direct": ["far"], "widths": [30, 5000]}])
def test_every_challenge_file_writes_out_the_operation_types_it_runs(params):
    """A challenge file read alone (with the tasks/ files it includes) names every operation type Rally runs for it, as
    rally-tracks' challenge files do: no task is built by code elsewhere. Each timed task states its clients, warm-up
    and iterations (or time period) in the file too, rendered."""
    for name, challenge in rendered_challenges(params).items():
        rendered = {t["operation"]["operation-type"] for t in rendered_tasks(challenge)}
        written = written_operation_types(TRACK_DIR / "challenges" / f"{name}.json")
        assert rendered <= written, f"{name}.json runs {sorted(rendered - written)} without writing them out"
        for task in rendered_tasks(challenge):
            if "query" in task.get("tags", []):
                missing = [
                    k
                    for k in ("clients", "warmup-iterations", "iterations")
                    if k not in task and k.replace("iterations", "time-period") not in task
                ]
                assert not missing, (
                    f"{name}.json: its timed task {task['operation']['name']} (tag query) writes no {', '.join(missing)}: write out "
                    f'"clients", "warmup-iterations" and "iterations" (or "warmup-time-period" and "time-period") on every timed task'
                )


def test_every_challenge_begins_with_the_privilege_check_and_has_its_row_in_the_track_readme():
    """The first task of every challenge asks the cluster for what the challenge needs before anything changes
    (check-privileges, which also records the race's cells and cluster facts); each challenge has its line in the track
    README's challenge table, with the command that runs it. Each failure names the fix."""
    readme = (TRACK_DIR / "README.md").read_text().split("## Challenges\n", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `([a-z0-9-]+)`", readme, re.M))
    for name, challenge in rendered_challenges({}).items():
        tasks = list(rendered_tasks(challenge))
        first = tasks[0]["operation"]["operation-type"] if tasks else None
        assert first == "check-privileges", (
            f"{name}.json: its first task is {first}; make it "
            '{"operation": {"name": "check-privileges", "operation-type": "check-privileges"}, "tags": ["check"]}, '
            "which names a missing privilege before anything changes on the cluster"
        )
        assert name in listed, (
            f"tracks/cluster-metrics/README.md's Challenges table has no line for {name}: add "
            f"| `{name}` | what it measures | `make race CHALLENGE={name}` |"
        )


LIST_PARAMETERS = [
    "variants", "transports", "layouts", "rtt_ms", "rtt_variants", "rtt_transports", "ccs_transports", "ccs_variants",
    "ccs_direct", "ccs_rtt_ms", "ccs_minimize_roundtrips", "faults", "load_variants", "load_transports", "load_steps",
    "source_modes", "source_variants", "source_transports", "fetch_kinds", "fetch_transports", "memory_variants",
    "memory_transports", "memory_hdr_digits", "memory_tdigest_compression", "widths", "width_variants", "width_transports",
    "width_max_concurrent_searches", "ingest_changes",
]  # fmt: skip


def test_a_list_parameter_of_any_value_renders_so_that_the_processor_can_name_it():
    """Rendering must not fail before the track processor checks the parameters (runners/contracts/parameters.py names a
    bad one): each list parameter empty (one at a time: an empty list can hide another's loop), and every one a stray
    string or a number, still renders valid JSON in every challenge."""
    for parameter in LIST_PARAMETERS:
        assert rendered_challenges({parameter: []}), parameter
    for value in ("x", 7):
        assert rendered_challenges(dict.fromkeys(LIST_PARAMETERS, value)), value


def test_a_scalar_parameter_of_any_value_renders_so_that_the_processor_can_name_it():
    """Every parameter that is not a list, given a text, a negative number, a fraction, none or an object (every one at
    once), still renders valid JSON in every challenge: the processor names a bad value, not Rally's TrackSyntaxError
    (a template writes an integer parameter through count(), runners/contracts/track_files.py's vocabulary)."""

    scalars = [name for name, default in parameters.DEFAULTS.items() if not isinstance(default, list)]
    for value in ("x", -1, 2.5, None, {"a": 1}):
        try:
            rendered_challenges(dict.fromkeys(scalars, value))
        except Exception as e:  # which parameter broke it, named with the fix
            broken = [name for name in scalars if not _renders({name: value})]
            raise AssertionError(
                f"track parameter(s) {', '.join(broken)} given {value!r} break the track's rendering ({e.__class__.__name__}: "
                f"{str(e)[:120]}), so Rally fails before the processor can name the bad value: write an integer parameter "
                "through count() ({{ count(p_name) }}) and any other through tojson ({{ p_name | tojson }})"
            ) from None


def _renders(params):
    try:
        return bool(rendered_challenges(params))
    except Exception:
        return False


def readme_tags():
    """The tag vocabulary as the track README's two tables define it: {kind tag: description}, {study tag: [its
    challenges]}."""
    section = (TRACK_DIR / "README.md").read_text().split("## Tags\n", 1)[1].split("\n## ", 1)[0]
    tables, header = {}, None
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| `"):
            tables[header][cells[0].strip("`")] = cells[1]
        elif line.startswith("| "):
            header = cells[0]
            tables[header] = {}
    kinds, studies = tables["what it does"], tables["study"]
    return kinds, {tag: re.findall(r"`([a-z-]+)`", text.split("(")[0]) for tag, text in studies.items()}


def test_the_readme_tag_tables_are_read_whole():
    kinds, studies = readme_tags()
    assert set(kinds) == {"setup", "ingest", "check", "query"}
    assert studies["network"] == ["rtt-sweep", "ccs-roundtrips", "network-faults"] and {"load", "costs"} <= set(studies)
    # every study tag names challenges of the track (a new study adds its row and nothing else)
    assert all(challenges and set(challenges) <= set(rendered_challenges()) for challenges in studies.values()), studies


@pytest.mark.parametrize("params", [{}, {"epochs": 2, "layouts": "1S0R,2S1R", "rtt_ms": [0, 50]}])
def test_every_task_is_tagged_with_one_kind_and_at_most_one_study(params):
    kinds, studies = readme_tags()
    study_of = {challenge: tag for tag, challenges in studies.items() for challenge in challenges}
    for challenge in rendered_track(params)["challenges"]:
        for task in rendered_tasks(challenge):
            tags, name = task.get("tags", []), (challenge["name"], task["operation"]["name"])
            assert tags and set(tags) <= set(kinds) | set(studies), (
                f"{name}: tags {tags}; a task's tags are one kind tag ({', '.join(kinds)}) and at most one study tag of the "
                "track README's tables (## Tags): a study tag of its own is a row in its study table, naming its challenges"
            )
            assert len([t for t in tags if t in kinds]) <= 1, f"{name}: tags {tags}: one kind tag ({', '.join(kinds)})"
            # a study's challenge tags all of its tasks with that study, and no other challenge's task has a study tag
            expected = [study_of[challenge["name"]]] if challenge["name"] in study_of else []
            assert [t for t in tags if t in studies] == expected, (name, tags)


def readme_parameter_rows(text=None):
    """{parameter: (the table's heading, its default as the row writes it)} of the track README's parameter tables
    (## Parameters, a table per concern; a row: | `name` | `default` | what it sets |, or two names and their two
    defaults, | `a` / `b` | `1` / `2` | ... |). A default the row does not write, or one of a pair missing, is None."""
    text = (TRACK_DIR / "README.md").read_text() if text is None else text
    section = text.split("## Parameters\n", 1)[1].split("\n## ", 1)[0]
    rows, heading = {}, None
    for line in section.splitlines():
        if line.startswith("### "):
            heading = line.removeprefix("### ").split(":")[0].split(" (")[0]
        elif line.startswith("| `"):
            cells = line.split("|")
            names, defaults = re.findall(r"`([a-z0-9_]+)`", cells[1]), re.findall(r"`([^`]+)`", cells[2])
            rows.update((name, (heading, defaults[i] if i < len(defaults) else None)) for i, name in enumerate(names))
    return rows


def test_every_track_parameter_has_a_row_in_the_track_readme():
    from runners.contracts.parameters import DEFAULTS

    rows = readme_parameter_rows()
    headings = sorted({heading for heading, _ in rows.values()})
    for name in DEFAULTS:
        assert name in rows, (
            f"track parameter {name} (track.json) has no row in tracks/cluster-metrics/README.md's parameter tables: add "
            f"| `{name}` | `{json.dumps(DEFAULTS[name])}` | what it sets | to the table of its concern (one of: {'; '.join(headings)})"
        )
    assert not set(rows) - set(
        DEFAULTS
    ), f"the track README has rows for parameters track.json does not declare: {sorted(set(rows) - set(DEFAULTS))}"


def readme_default_errors(text=None):
    """Each parameter row of the track README whose default is not the one track.json declares (as JSON, the way
    `make params` prints it; true is not 1, 5 is not 5.0), or that writes none, named with the default to write."""
    from runners.contracts.parameters import DEFAULTS

    errors = []
    for name, (heading, written) in readme_parameter_rows(text).items():
        declared = json.dumps(DEFAULTS[name]) if name in DEFAULTS else None
        try:
            shown = json.dumps(json.loads(written)) if written is not None else None
        except ValueError:
            shown = None
        if declared is not None and shown != declared:
            errors.append(f"{name} ({heading}): the README's default is {written!r}, track.json declares `{declared}`")
    return errors


def test_every_parameter_row_shows_the_default_track_json_declares():
    errors = readme_default_errors()
    assert not errors, "tracks/cluster-metrics/README.md's parameter tables: write each default as track.json declares it:\n" + (
        "\n".join(errors)
    )


def test_a_wrong_or_missing_default_in_the_track_readme_is_named():
    text = (TRACK_DIR / "README.md").read_text()
    for row, wrong, name in (
        ("| `bulk_size` | `1000` |", "| `bulk_size` | `1001` |", "bulk_size"),
        ("| `source_enabled` | `true` |", "| `source_enabled` | `1` |", "source_enabled"),  # 1 == True in Python, not here
        ("| `settle_tolerance` | `0.05` |", "| `settle_tolerance` | 0.05 |", "settle_tolerance"),  # not written as code
        ("| `tuned_refresh_interval` | `\"-1\"` |", "| `tuned_refresh_interval` | `-1` |", "tuned_refresh_interval"),
        ("| `live_variant` / `live_transport` | `\"D_td\"` / `\"msearch\"` |", "| `live_variant` / `live_transport` | `\"D_td\"` |",
         "live_transport"),  # one of a pair left out
        ("| `layouts` | `[\"1S0R\", ", "| `layouts` | `[\"1S1R\", ", "layouts"),
    ):  # fmt: skip
        assert row in text, row
        errors = readme_default_errors(text.replace(row, wrong, 1))
        assert [e.split(" ", 1)[0] for e in errors] == [name], (name, errors)


def test_the_track_readme_example_document_is_the_first_document_of_the_corpus():
    """The README's example document is the first line corpora-gen writes at its defaults (epoch 1), pretty-printed:
    the same fields, in the same order, with the same values."""
    import cmgen

    text = (TRACK_DIR / "README.md").read_text().split("## Example document\n", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"^```json\n(.*?)^```$", text, re.S | re.M)
    params = cmgen.Params()
    first = cmgen.format_rows(1, cmgen.epoch_columns(params, 1), 0, 1, params.nodes, params.tasks).decode()
    assert block == json.dumps(json.loads(first), indent=2) + "\n", f"the README's example document should be:\n{first}"


@pytest.mark.parametrize("params", [{}, {"epochs": 2, "layouts": "1S0R,2S1R", "rtt_ms": [0, 50]}])
def test_every_timed_query_task_names_its_cell(params):
    """The report finds a measured task by its cell (runners/contracts/cells.py): every task tagged query names one,
    but a warm-up pass or a settling, which measure nothing."""
    for challenge in rendered_track(params)["challenges"]:
        for task in rendered_tasks(challenge):
            operation = task["operation"]
            if "query" in task.get("tags", []) and operation["operation-type"] not in warm_up.PASS_TYPES:
                assert "cell" in operation, (
                    f"challenge {challenge['name']}, task {operation['name']}: a timed query task names its cell, "
                    f'"cell": {{...}} in its operation (its condition beside its variant and transport, e.g. {{"measure": "..."}}): '
                    "the report finds the task by it (runners/contracts/cells.py)"
                )


@pytest.mark.parametrize("schedule", ["interleaved", "blocked"])
def test_cells_that_take_turns_are_one_step_each_group(schedule):
    """schedule interleaved: the cells of each group (the study's, a round-trip time's, a _source mode's)
    are exactly one parallel step, so a group costs one of Rally's steps, not one per cell; blocked: none takes turns,
    a step per cell. Counted on the challenges that group cells."""
    for name, challenge in rendered_challenges({"schedule": schedule}).items():
        groups = {}
        for step in challenge["schedule"]:
            for task in step["parallel"]["tasks"] if "parallel" in step else [step]:
                if interleave.GROUP_KEY in task["operation"]:
                    groups.setdefault(task["operation"][interleave.GROUP_KEY], set()).add(id(step))
        assert all(len(steps) == 1 for steps in groups.values()), (name, groups)
        if schedule == "blocked":
            assert not groups, name
    interleaved, blocked = (rendered_challenges({"schedule": schedule}) for schedule in ("interleaved", "blocked"))
    for name in ("rtt-sweep", "source-cost", "query-decomposition"):
        assert len(interleaved[name]["schedule"]) < len(blocked[name]["schedule"]), name


def test_operation_types_and_runner_names_agree():
    for name, operation in OPERATIONS.items():
        assert repr(operation.runner()) == name, (
            f"the runner of operation type {name!r} ({operation.runner.__module__}.{operation.runner.__name__}) has the repr "
            f"{repr(operation.runner())!r}: give it def __repr__(self): return {name!r} (Rally registers a runner by that name)"
        )
    types = {t["operation"]["operation-type"] for c in rendered_track()["challenges"] for t in rendered_tasks(c)}
    rallys_own = {"delete-index", "create-index", "cluster-health", "refresh", "raw-request"}
    assert types <= set(OPERATIONS) | rallys_own, types - set(OPERATIONS) - rallys_own
    # where a task is the one instance of its operation, the two share the name
    names = {t["operation"]["name"] for c in rendered_track()["challenges"] for t in rendered_tasks(c)}
    for single in ("ingest", "verify-doc-count", "verify-corpus", "check-layouts", "check-privileges"):
        assert single in names


# the baseline, then the seed's changes as the vocabulary orders them: all of them together last
CHANGE_ORDER = (INGEST_CHANGE_BASELINE, "bulk-size", "clients", "refresh", "translog", "all")


def ingest_change_tasks(params):
    """ingest-changes rendered: {ingest: {task name without its prefix: task}} in schedule order, and every task."""
    tasks = list(rendered_tasks(rendered_challenges(params)["ingest-changes"]))
    found = {}
    for task in tasks:
        name = task["operation"]["name"]
        ingest = next((n for n in CHANGE_ORDER if name.startswith(f"change-{n}-")), None)
        if ingest:
            found.setdefault(ingest, {})[name.removeprefix(f"change-{ingest}-")] = task
    return found, tasks


def test_ingest_changes_ingests_the_baseline_then_each_change_alone_with_its_settings():
    params = {"bulk_size": 500, "tuned_bulk_size": 250, "tuned_clients": 2, "tuned_refresh_interval": "30s"}
    params["ingest_changes"] = ["all", "translog", "refresh", "clients", "bulk-size"]  # run in the vocabulary's order
    refresh, translog = {"index.refresh_interval": "30s"}, {"index.translog.durability": "async"}
    expected = {  # ingest: docs per bulk, clients, the index settings during its ingest; the baseline last
        "bulk-size": (250, 1, {}),
        "clients": (500, 2, {}),
        "refresh": (500, 1, refresh),
        "translog": (500, 1, translog),
        "all": (250, 2, {**refresh, **translog}),
        INGEST_CHANGE_BASELINE: (500, 1, {}),
    }
    found, tasks = ingest_change_tasks(params)
    names = [t["operation"]["name"] for t in tasks]
    assert len(names) == len(set(names)) and list(found) == list(expected)
    # the index the last ingest leaves is checked: the whole corpus, in the shape the query challenges measure
    assert names[-1] == "verify-corpus" and tasks[-1]["operation"]["shape"] == STANDARD_SHAPE
    for ingest, (size, clients, during) in expected.items():
        mine = found[ingest]
        assert list(mine) == ["ingest"], ingest  # a fresh index, every epoch and the count in one task
        bulk = mine["ingest"]
        assert bulk["operation"]["settings"] == {"index.number_of_shards": 1, "index.number_of_replicas": 0, **during}
        assert (bulk["operation"]["bulk-size"], bulk["clients"], bulk["operation"]["epochs"]) == (size, clients, [1, 2, 3, 4, 5]), ingest
        # what the change set is unset after its ingest (Elasticsearch's default); the ingest task counts the documents
        assert bulk["operation"]["restore-settings"] == dict.fromkeys(during), ingest


def test_ingest_changes_runs_the_baseline_and_only_the_changes_asked_for():
    found, _ = ingest_change_tasks({"ingest_changes": "translog"})
    assert list(found) == ["translog", INGEST_CHANGE_BASELINE]


def test_full_is_the_whole_seed_study_in_order():
    """full: each ingest change alone, the study's baseline ingest (the index the coverages then query), the
    decomposition's cells taking turns, the profile; every ingest counted."""
    names = [t["operation"]["name"] for t in rendered_tasks(rendered_challenges({})["full"])]
    changes = [n for n in names if n.startswith("change-") and n.endswith("-ingest")]
    assert changes == [f"change-{c}-ingest" for c in CHANGE_ORDER if c != INGEST_CHANGE_BASELINE]
    first_cell = names.index("coverage-A-serial")
    assert max(names.index(c) for c in changes) < names.index("ingest") < names.index("verify-corpus") < first_cell
    assert names[-1] == "profile-D_td"
    (check,) = [t["operation"] for t in rendered_tasks(rendered_challenges({})["full"]) if t["operation"]["name"] == "verify-corpus"]
    assert check["search-pool"] is True  # the search pool is recorded in the corpus check's task, not a task of its own
    # every ingest is one task (index set up, epochs, count): Rally charges about 5 s per task outside test mode
    assert sum(n.endswith("-ingest") or n == "ingest" for n in names) == len(changes) + 1 and len(names) == 28
    assert names[names.index("verify-corpus") + 1] == "settle"  # the node settled before the first timed cell


@pytest.mark.parametrize("target", ["ccs-roundtrips", "layout-sweep", "source-large"])
def test_the_makefile_targets_of_the_seeds_points_are_valid_shell(target):
    """What make would run, checked by bash without running it: a comma inside make's $(if ...) once cut a command
    of make ccs-roundtrips in two (only INGEST=yes, the default, showed it)."""
    import subprocess

    shown = subprocess.run(["make", "-n", target, "INGEST=yes", "TRACK_PARAMS=a:1,b:2"], capture_output=True, text=True, cwd=REPO)
    assert shown.returncode == 0, shown.stderr
    assert "esrally race" in shown.stdout
    parsed = subprocess.run(["bash", "-n"], input=shown.stdout, capture_output=True, text=True)
    assert parsed.returncode == 0, parsed.stderr + shown.stdout


def test_raced_within_names_the_race_that_holds_every_task_of_a_challenge():
    """raced_within: ingest-baseline's two tasks and profile-breakdown's three are, as raced, tasks of full's race (the
    version tier races full for them); ingest-tuned shares full's create-index but not its bulk (another bulk size and
    clients), so it is raced on its own, and nothing holds full."""
    from tests.test_challenges import raced_within, tasks

    assert raced_within("ingest-baseline") == "full" and raced_within("profile-breakdown") == "full"
    assert raced_within("ingest-tuned") is None and raced_within("full") is None
    shared = [t for t in tasks("ingest-tuned") if t in tasks("full")]
    assert len(shared) == 1 and len(tasks("ingest-tuned")) == 2, shared


class _Item:
    """What the version tier's selection reads of a collected test: its marks."""

    def __init__(self, *marks):
        self.marks, self.fixturenames = [m.mark for m in marks], ()

    def iter_markers(self, name):
        return [m for m in self.marks if m.name == name]

    def get_closest_marker(self, name):
        return next(iter(self.iter_markers(name)), None)


def test_the_version_tier_leaves_out_a_race_only_with_its_reason_and_stops_on_a_challenge_no_race_claims():
    """versions(<challenge>, left_out=<why>): the version tier deselects that race (pytest reports it deselected), and
    the challenge counts as claimed; a challenge that no race claims stops the tier before anything starts."""
    from tests import conftest

    deselected = []
    config = type("Config", (), {"getoption": lambda self, name: "versions", "hook": None})()
    config.hook = type("Hook", (), {"pytest_deselected": lambda self, items: deselected.extend(items)})()
    left_out = _Item(pytest.mark.versions("layout-sweep", left_out="four nodes"))
    claims = [_Item(pytest.mark.versions(c)) for c in rendered_challenges() if c != "layout-sweep"]
    items = [left_out, *claims]
    conftest.pytest_collection_modifyitems(config, items)
    assert items == claims and deselected == [left_out]
    with pytest.raises(pytest.UsageError, match="races ccs-roundtrips, nor"):
        conftest.pytest_collection_modifyitems(config, [left_out, *[i for i in claims if i.marks[0].args[0] != "ccs-roundtrips"]])
    with pytest.raises(pytest.UsageError, match="races layout-sweep, nor"):
        conftest.pytest_collection_modifyitems(config, list(claims))
    unexplained = _Item(pytest.mark.versions("layout-sweep", left_out=""))  # no reason: raced as any other
    items, deselected[:] = [unexplained, *claims], []
    conftest.pytest_collection_modifyitems(config, items)
    assert items == [unexplained, *claims] and not deselected


def test_every_challenge_of_the_track_is_raced_by_the_suite():
    """A challenge the suite races nowhere: test_challenges.py races each one that no study module marks as its own
    (versions("<challenge>")), so only a module that claims a challenge can leave it out, and the claim is its race."""
    from tests.test_challenges import ARGS, one_node_challenges

    own = challenges_raced_by_their_own_module()
    generic = set(one_node_challenges())
    assert set(own) <= set(rendered_challenges()), "a module claims a challenge the track no longer has"
    assert generic and not generic & set(own) and "full" in generic and one_node_challenges()[0] == "full"
    assert {"rtt-sweep", "ccs-roundtrips", "layout-sweep"} <= set(own)  # the proxies', the remote's, the three nodes'
    assert set(ARGS) <= set(rendered_challenges()) - set(own)
