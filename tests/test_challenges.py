"""The one-node challenges in real `esrally race --test-mode` runs on the session's node: each raced once
(SharedRaces), and every test reads that race for what its challenge exists for. The challenges of other
clusters race in tests/test_layouts.py, test_ccs.py and test_network.py; live in test_load.py (coverage-load's rate step
outside test mode too); production-comparison from another track repository in test_track_repository.py.

`full` is one of the few races `make test` runs (mark smoke): the ingest, the study's cells, and the report."""

import functools
import json
import math
import os
import subprocess
import sys

import pytest

from report.shared import races
from report.studies import ingest_changes
from report.studies import widths as report_widths
from runners.contracts import corpus, records
from runners.contracts.parameters import DEFAULTS
from runners.contracts.queries import INGEST_CHANGE_BASELINE, INGEST_CHANGES
from runners.contracts.took_files import bulk_lines
from runners.operations import OPERATIONS
from runners.studies import settle as settling
from runners.studies.index_checks import shape_differences
from runners.studies.memory import BREAKER_SETTING
from runners.studies.profile import read_calls
from runners.studies.search_pool import SEARCH_POOL
from tests.conftest import (
    PYTHON,
    REPO,
    STANDARD_SHAPE,
    TEST_MODE_PASSES,
    VERSION_TIER,
    assert_clean,
    assert_refused_before_any_timed_task,
    challenges_raced_by_their_own_module,
    doc_count,
    ensure_test_index,
    http,
    keep_pristine,
    rendered_challenges,
    rendered_tasks,
    run_race,
)

# the parameters of each challenge's race here: fewer cells of the longest ones (their defaults run at full scale;
# the README says what ran), and values that prove a parameter took effect (other bulk sizes and clients)
PARAMS = {
    "full": {"variants": ["D_hdr"]},
    # D_hdr at 3 and 4 digits, 4 above memory_parallel_hdr_digits_max so over serial only; D_td at compression 100 and
    # 200. Not 5 digits: over serial on a 1 GB 9.5.3 node it reaches the parent breaker now and then (CI, 2026-11-27:
    # "real usage 1000.5mb"), a failed cell the track rightly reports, not a test that can pass every time. The version
    # tier: 3 digits alone (every request kind; the serial-only digits are the track's rule, not the version's)
    "aggregation-memory": {
        "memory_variants": ["D_hdr"],
        "memory_hdr_digits": [3] if VERSION_TIER else [3, 4],
        "memory_parallel_hdr_digits_max": 3,
        "memory_tdigest_compression": [100, 200],
    },
    "source-cost": {"source_variants": ["D_td"]},
    "ingest-tuned": {"tuned_bulk_size": 250, "tuned_clients": 2},
    "ingest-changes": {"tuned_bulk_size": 250, "tuned_clients": 2},
    # one cell's calibration, share and step (the rate a step reaches is test_load.py's, outside test mode)
    "coverage-load": {"load_variants": ["D_td"], "load_transports": ["msearch"], "load_steps": [50]},
    # two widths: one below Rally's 1,000 test-mode rows, one above them (its test-mode file has a row per node), and
    # above width_serial_max_nodes; the production variants, msearch at the default and at 1 concurrent search. The
    # version tier: the wide one alone
    "coverage-width": {"widths": [1500] if VERSION_TIER else [30, 1500], "width_rows_per_epoch": 3000, "width_variants": ["D_td", "D_hdr"]},
}
# Rally's task filter by tag rides on one race: query-decomposition without its check (test_tags_select_the_tasks_that_run
# has the include filter)
ARGS = {"query-decomposition": ["--exclude-tasks=tag:check"]}


def tasks(challenge):
    return list(rendered_tasks(rendered_challenges(PARAMS.get(challenge, {}))[challenge]))


def ours(challenge):
    """The challenge's tasks of our runners (Rally leaves its own admin operations such as refresh out of race.json)."""
    return [t["operation"]["name"] for t in tasks(challenge) if t["operation"]["operation-type"] in OPERATIONS]


def ingests(challenge):
    """The challenge ingests a corpus (one task per ingest, or live's bulk per epoch beside its queries), as its
    default rendering says (its race's parameters change how much, not whether: one render, where the tests are
    collected)."""
    return any(
        t["operation"]["operation-type"] in ("ingest-epochs", "epoch-bulk") for t in rendered_tasks(rendered_challenges()[challenge])
    )


def generate_width_sets(rally_home, params):
    """The sweep's corpus sets, beside the suite's corpus, as a user makes them (corpora-gen/generate --widths)."""
    widths = ",".join(map(str, params["widths"]))
    env = dict(os.environ, RALLY_HOME=str(rally_home))
    command = [sys.executable, str(REPO / "corpora-gen" / "generate"), "--widths", widths, "--epochs", "1"]
    result = subprocess.run([*command, "--rows-per-epoch", str(params["width_rows_per_epoch"])], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr


def challenge_race(shared_races, challenge):
    """The session's race of a one-node challenge: a query challenge finds the suite's corpus ingested first, an
    ingest challenge's index is kept as the pristine copy when none is kept yet."""
    params = PARAMS.get(challenge, {})

    before_settings = {}

    def before():
        before_settings["persistent"] = http("GET", "/_cluster/settings?flat_settings=true")[1]["persistent"]
        if challenge == "coverage-width":
            generate_width_sets(shared_races.home, params)
        if not ingests(challenge):
            ensure_test_index(shared_races)

    def after(race):
        # what the race left on the cluster, read before any other test changes it
        race.left = {
            "docs": doc_count(),
            "index-settings": http("GET", "/cluster-metrics/_settings?flat_settings=true")[1].get("cluster-metrics", {}).get("settings"),
            "persistent": http("GET", "/_cluster/settings?flat_settings=true")[1]["persistent"],
            "persistent-before": before_settings["persistent"],
        }
        if challenge == "source-cost" and not VERSION_TIER:  # a query challenge refuses the index source-cost leaves
            # (the version tier's race of source-cost has no test that reads it)
            race.left["next-race"] = run_race(shared_races.home, "production-comparison")
        if ingests(challenge):
            keep_pristine(shared_races.home)

    extra = [f"--track-params={json.dumps(params)}"] if params else []
    return shared_races.race(challenge, *extra, *ARGS.get(challenge, []), before=before, after=after)


def raced_within(challenge):
    """The one-node challenge whose race holds every task of this challenge's race, as the two are raced here (a
    strict superset: ingest-baseline's two in full's), or None. The version tier races that one alone, the 8.17.2
    tier both: the newer version sees each of these tasks, as a task, once."""
    return next((other for other in one_node_challenges() if _task_keys(challenge) < _task_keys(other)), None)


@functools.cache
def _task_keys(challenge):
    """The challenge's tasks as raced here, each as its JSON: raced_within compares every pair once at collection."""
    return frozenset(json.dumps(t, sort_keys=True) for t in tasks(challenge))


def version_marks(challenge):
    """versions(challenge) where the version tier races it; raced_within(<other>) where another race holds its tasks."""
    within = raced_within(challenge)
    return [pytest.mark.raced_within(within)] if within else [pytest.mark.versions(challenge)]


def one_node_challenges():
    """The track's own challenge list, but those a study's own module races: the ingests first (a query challenge
    then finds the suite's index ingested), each raced on the session's node as challenge_race sets it up."""
    own = challenges_raced_by_their_own_module()
    listed = [c for c in rendered_challenges() if c not in own and c not in ARGS]
    return sorted(listed, key=lambda c: (not ingests(c), c != "full"))


@pytest.mark.parametrize(
    "challenge",
    [pytest.param(c, marks=[*version_marks(c), *([pytest.mark.smoke] if c == "full" else [])]) for c in one_node_challenges()],
)
def test_the_challenge_runs_clean_with_every_task_reported(shared_races, challenge):
    assert_clean(challenge_race(shared_races, challenge), ours(challenge))


@pytest.mark.versions("query-decomposition")
def test_exclude_by_tag_runs_every_task_but_the_excluded(shared_races):
    """--exclude-tasks=tag:check: every task of query-decomposition ran but the check, which Rally never started."""
    race = challenge_race(shared_races, "query-decomposition")
    kept = [n for n, t in zip(ours("query-decomposition"), tasks("query-decomposition")) if "check" not in t["tags"]]
    assert len(kept) == len(tasks("query-decomposition")) - 2  # check-privileges, verify-corpus (and the search pool)
    assert_clean(race, kept)
    assert sorted(race.error_rates()) == sorted(kept)


def test_tags_select_the_tasks_that_run(shared_races):
    """--include-tasks by tag: the queries of full on the ingested index, without its ingest."""
    params = {"variants": ["D_hdr"]}
    selected = [t["operation"]["name"] for t in rendered_tasks(rendered_challenges(params)["full"]) if {"check", "query"} & set(t["tags"])]
    race = shared_races.race(
        "full",
        "--include-tasks=tag:check,tag:query",
        f"--track-params={json.dumps(params)}",
        before=lambda: ensure_test_index(shared_races),
    )
    assert_clean(race, selected)
    assert sorted(race.error_rates()) == sorted(selected)  # every task Rally reports; no bulk, no create-index
    assert doc_count() == 5000  # the index as it was


# ---------------------------------------------------------------- what each challenge exists for


def ingest_rows(race, record=records.INGEST):
    return json.loads((race.record_dir() / record).read_text())["epochs"]


@pytest.mark.smoke
def test_full_ingests_every_epoch_and_validates_every_cell(shared_races):
    race = challenge_race(shared_races, "full")
    assert_clean(race)
    rows = ingest_rows(race)
    assert [r["epoch"] for r in rows] == [1, 2, 3, 4, 5] and race.left["docs"] == 5000  # nothing lost
    # 1,000 test-mode documents an epoch in one bulk of bulk_size 1,000, each with the node's indexing time (its
    # /_stats counter). The bulk's took is not tested for > 0: a fast bulk's took reads 0 or about 200 ms on this node
    # (seen in these races: index-ms 162 with took 200, and took 0), a coarse clock, not a measurement of 0.
    assert all(r["docs"] == 1000 and r["bulk-requests"] == 1 and r["index-ms"] > 0 for r in rows), rows
    validated = [json.loads(line) for line in (race.record_dir() / records.VALIDATION).read_text().splitlines()]
    cells = [n for n in ours("full") if n.startswith("coverage-")]
    assert {v["task"] for v in validated} >= set(cells)
    # every coverage checked each node's answer (30 nodes, several checks each) and found nothing wrong
    assert all(v["checks"] >= 30 and v["failed-checks"] == 0 for v in validated if v["task"] in cells), validated
    # each cell's warm-up, then its measured coverage, with the server's took within the client's wall (took is whole
    # milliseconds, truncated per search: at most one more per request)
    for cell in cells:
        lines = [v for v in validated if v["task"] == cell]
        assert [v["measured"] for v in lines] == [False, True], (cell, lines)
        for v in lines:
            requests = 30 if cell.endswith("-serial") else 1
            assert v["wall-ms"] > 0 and 0 <= v["took"] <= v["wall-ms"] + requests and v["took-sum"] >= 0, (cell, v)
            assert v["took-sum"] == v["took"] or cell.endswith("-msearch"), v
    # the node settled first: passes over every cell (one-pass windows in test mode, one pass at least), recorded
    (settled,) = [json.loads(line) for line in (race.record_dir() / settling.SETTLE).read_text().splitlines()]
    assert settled["task"] == "settle" and settled["window"] == 1 and len(settled["passes"]) >= 1, settled
    assert settled[settling.FEWEST_PASSES_KEY] == settling.TEST_MODE_FEWEST_PASSES, settled
    assert settled["stopped-by"] in (settling.SETTLED, settling.TIME_LIMIT) and 0 < sum(settled["passes"]) <= settled["seconds"]
    assert all(cpu is None or cpu >= 0 for cpu in settled["process-cpu-ms"]), settled
    # the node's own count of searches since it started, read between passes (test mode sets no floor: 0), growing
    served = settled["served-searches"]
    assert settled[settling.NODE_SEARCHES_KEY] == 0 and len(served) == len(settled["passes"]) and settled["jvm-uptime-s"] > 0, settled
    assert all(isinstance(n, int) and n > 0 for n in served) and served == sorted(set(served)), settled
    # the node served this race's own ingest in its process (5 epochs, a bulk each, and the ingest changes' bulks)
    assert settled[settling.BULK_REQUESTS_KEY] >= 5, settled
    warmed = [v for v in validated if v["task"].startswith("settle/")]
    assert {v["task"] for v in warmed} == {f"settle/{cell}" for cell in cells}
    assert len(warmed) == len(settled["passes"]) * len(cells) and not any(v["measured"] or v["failed-checks"] for v in warmed)


@pytest.mark.smoke
def test_full_race_gives_the_report(shared_races, tmp_path):
    race = challenge_race(shared_races, "full")
    assert_clean(race)
    command = [PYTHON, "-m", "report", "--race", race.race["race-id"], "--rally-home", str(race.home), "--out", str(tmp_path)]
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    (path,) = tmp_path.rglob("report.md")
    report = path.read_text()
    for cell in ("D_hdr", "serial", "msearch", "terms"):
        assert cell in report
    failed_rows = [line for line in report.splitlines() if line.startswith("|") and "FAILED" in line]
    assert not failed_rows and "## Ingest changes" in report, failed_rows  # the notes may name the word
    # took travels from the race's own records to the report: each cell's took beside its wall, the seed's beside both
    took = report.split("## Server took against client wall")[1].split("\n## ")[0]
    row = next(line for line in took.splitlines() if line.startswith("| D_hdr | serial |"))  # full's test variant
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2].endswith("(n=1)") and float(cells[3]) >= 0 and cells[5].endswith("(n=1)") and cells[6] == "712", row
    assert took.count("has no interval") == 1  # said once, under the table
    # how the node settled, in the report's first lines (before the first section)
    first = report.split("\n## ")[0]
    assert "The node settled before the timed cells" in first or "The node had NOT settled" in first, first
    assert "bulk requests since it started (an ingest in its process)" in first, first


def test_ingest_baseline_records_each_epoch_and_counts_every_document(shared_races):
    race = challenge_race(shared_races, "ingest-baseline")
    rows = ingest_rows(race)
    assert [e["epoch"] for e in rows] == [1, 2, 3, 4, 5]
    assert all(e["docs"] == 1000 and e["bulk-requests"] == 1 and e["index-ms"] > 0 for e in rows), rows  # took: see full
    # one task: the index set up, every epoch, the count (Rally's 5 s per task outside test mode)
    assert sorted(race.error_rates()) == ["check-privileges", "ingest"] and race.error_rates()["ingest"] == 0
    assert json.loads((race.record_dir() / records.INGEST).read_text())["count"] == {"actual": 5000, "expected": 5000}


def test_ingest_tuned_ran_its_bulk_size_with_its_clients_and_put_the_settings_back(shared_races):
    params = PARAMS["ingest-tuned"]
    race = challenge_race(shared_races, "ingest-tuned")
    rows = ingest_rows(race)
    assert [r["docs"] for r in rows] == [1000] * 5 and race.left["docs"] == 5000
    clients = params["tuned_clients"]
    bulks = math.ceil(1000 / clients / params["tuned_bulk_size"])  # each client's slice of an epoch's test-mode file
    for row in rows:
        files = bulk_lines(str(race.record_dir()), records.INGEST, row["epoch"])
        # each client's own took file: each client owns its slice of the epoch (runners/studies/ingest.py), in bulks of the size
        assert sorted(files) == [f"epoch-{row['epoch']}-client-{c}.txt" for c in range(clients)], files
        assert all(len(lines) == bulks for lines in files.values()) and row["bulk-requests"] == clients * bulks, files
    settings = race.left["index-settings"]  # the ingest settings put back as they were (unset)
    assert "index.refresh_interval" not in settings and settings.get("index.translog.durability", "request") == "request"


def test_ingest_changes_ingests_the_corpus_once_per_change_with_its_settings_and_leaves_the_standard_index(shared_races):
    params = PARAMS["ingest-changes"]
    race = challenge_race(shared_races, "ingest-changes")
    assert_clean(race)

    def value(name):
        return params.get(name, DEFAULTS[name])

    for ingest in [INGEST_CHANGE_BASELINE, *value("ingest_changes")]:
        tuned = INGEST_CHANGES.get(ingest, ())
        record = json.loads((race.record_dir() / f"ingest-change-{ingest}.json").read_text())
        # every epoch's test-mode documents into its own fresh index, and the index's count checked against the corpus's
        assert [e["docs"] for e in record["epochs"]] == [1000] * 5, ingest
        assert race.error_rates()[f"change-{ingest}-ingest"] == 0 and record["count"]["actual"] == 5000, ingest
        size = value("tuned_bulk_size" if "tuned_bulk_size" in tuned else "bulk_size")
        clients = value("tuned_clients" if "tuned_clients" in tuned else "bulk_clients")
        for row in record["epochs"]:
            files = bulk_lines(str(race.record_dir()), f"ingest-change-{ingest}.json", row["epoch"])
            # every client sent bulks (each client's own took file): Rally gives each client its share of the epoch's
            # 1,000 documents, sent in bulks of the bulk size
            assert sorted(files) == [f"epoch-{row['epoch']}-client-{c}.txt" for c in range(clients)], (ingest, files)
            expected = clients * math.ceil(1000 / clients / size)
            assert sum(len(lines) for lines in files.values()) == row["bulk-requests"] == expected, (ingest, files)
        # the index settings it ingested with, read before its first bulk: the change's, else Elasticsearch's defaults
        assert record["index-settings"] == {
            "index.refresh_interval": value("tuned_refresh_interval") if "tuned_refresh_interval" in tuned else "1s",
            "index.translog.durability": value("tuned_translog_durability") if "tuned_translog_durability" in tuned else "request",
        }, ingest
    # the index the last ingest left: the whole corpus (verify-corpus passed in the race), its ingest settings unset
    settings = race.left["index-settings"]
    assert race.left["docs"] == 5000 and race.error_rates()["verify-corpus"] == 0
    assert "index.refresh_interval" not in settings and "index.translog.durability" not in settings, settings
    assert not shape_differences({}, settings, STANDARD_SHAPE), settings
    # and the report gives every change a saving against the baseline
    header, body = ingest_changes.changes_table(races.load(race.folder()))
    savings = [row[header.index("saving, mean (% of wall)")] for row in body[1:]]
    assert len(savings) == len(value("ingest_changes")) and all(s.endswith("%") for s in savings), body


def test_profile_breakdown_reads_each_aggregations_share(shared_races):
    race = challenge_race(shared_races, "profile-breakdown")
    profile = json.loads((race.record_dir() / records.PROFILE).read_text())
    parts = profile["parts"]
    # D_td: the filter and six aggregations (three percentiles, three sums), each with time of its own
    assert "query (filter)" in parts and len(parts) == 7, sorted(parts)
    assert sorted(name.split()[0] for name in parts if "TDigestPercentiles" in name) == ["cpu_pct", "mem_pct", "net_pct"], sorted(parts)
    assert sorted(name.split()[0] for name in parts if "SumAggregator" in name) == ["cpu_sum", "mem_sum", "net_sum"], sorted(parts)
    assert all(part["nanos"] > 0 and 0 < part["share"] < 1 for part in parts.values()), parts
    assert sum(part["share"] for part in parts.values()) == pytest.approx(1.0)
    assert profile["took_ms"] > 0 and profile["node"] == DEFAULTS["profile_node"]
    # every call of the pairs recorded: the warm-up pairs, then the measured ones, each pair one OFF and one ON call
    calls = read_calls(race.record_dir())
    measured = [c for c in calls if c["measured"] is True]
    warmups = [c for c in calls if c["measured"] is False]
    assert len(measured) + len(warmups) == len(calls) and measured and warmups, calls
    for group in (measured, warmups):
        assert sorted(c["profile"] for c in group) == [False, True] * (len(group) // 2) and len(group) % 2 == 0, group
    assert max(c["iteration"] for c in warmups) < min(c["iteration"] for c in measured)
    assert profile["calls"] == len(measured) // 2
    for c in calls:
        assert c["task"] == "profile-D_td" and c["success"] and c["error"] is None, c
        # took is Elasticsearch's, floored to the ms: a warm search of the test corpus's ~33 documents may say 0 without
        # profiling; it lies inside the client's wall, which holds the request alone
        assert isinstance(c["took-ms"], int) and 0 <= c["took-ms"] <= c["wall-ms"] and c["wall-ms"] > 0, c
        assert c["took-ms"] > 0 or not c["profile"], c
        assert set(c.get("parts", {})) == (set(parts) if c["profile"] else set()), c
    assert race.error_rates()["profile-D_td"] == 0


def test_source_cost_measures_each_mode_in_that_mode_and_the_next_race_refuses_its_index(shared_races):
    race = challenge_race(shared_races, "source-cost")
    for mode in DEFAULTS["source_modes"]:
        storage = json.loads((race.record_dir() / records.source_record(mode)).read_text())
        assert storage["source-mode"] == mode and storage["merged"] == {
            "store_bytes": storage["merged"]["store_bytes"],
            "segments": 1,
            "docs": 5000,
        }
        source_bytes = storage["disk-usage"]["fields"].get("_source", {}).get("total", 0)
        assert (source_bytes > 0) is (mode == "stored"), (mode, source_bytes)
        ingest = json.loads((race.record_dir() / f"ingest-source-{mode}.json").read_text())
        assert [e["docs"] for e in ingest["epochs"]] == [1000] * 5
    assert race.left["index-settings"].get("index.mapping.source.mode") == "stored"
    # source-cost leaves its force-merged index, and says so: a query challenge refuses to time it (the bad input
    # "an index in another shape", raced right after, while the index is in that shape)
    after = race.left["next-race"]
    assert_refused_before_any_timed_task(after, "not in the shape this challenge measures", "source-cost: force-merged to one segment")
    assert "ingest-baseline" in after.output


def test_aggregation_memory_finds_each_floor_and_puts_the_breaker_back(shared_races):
    race = challenge_race(shared_races, "aggregation-memory")
    # the breaker's limit as it was before the race (unset, or a value a user set)
    assert race.left["persistent"].get(BREAKER_SETTING) == race.left["persistent-before"].get(BREAKER_SETTING)
    rows = [json.loads(line) for line in (race.record_dir() / records.MEMORY).read_text().splitlines()]
    # every breaker floor (as the race's cells record names them, a mapping), once each, in schedule order
    floors = {task for task, cell in races.load(race.folder()).cells.items() if cell.get("measure") == "breaker-floor"}
    assert floors and [r["task"] for r in rows] == [task for task in ours("aggregation-memory") if task in floors]
    assert all(
        r["below-bytes"] < r["floor-bytes"]
        and (r["below-bytes"] == 0 or r["floor-bytes"] <= r["below-bytes"] * (1 + DEFAULTS["memory_resolution"]))
        for r in rows
    )
    # the warm-up pass ran every timed cell over each of its epochs, each a warm-up, before the first cell was measured
    recorded = [json.loads(line) for line in (race.record_dir() / records.VALIDATION).read_text().splitlines()]
    # the settling first (its passes, one coverage a cell), then the warm-up pass
    settled = [v["task"] for v in recorded if v["task"].startswith("settle/")]
    assert settled and [v["task"] for v in recorded[: len(settled)]] == settled and not any(v["measured"] for v in recorded[: len(settled)])
    order = recorded[len(settled) :]
    timed = {
        t["operation"]["name"]: t["operation"]["epochs"]
        for t in tasks("aggregation-memory")
        if t["operation"]["name"].startswith("memory-")
    }
    assert timed and all(len(epochs) > 1 for epochs in timed.values())
    passed = [v["task"] for v in order if v["task"].startswith("warm-up-pass/")]
    assert passed == [f"warm-up-pass/{task}" for task, epochs in timed.items() for _ in epochs] * TEST_MODE_PASSES
    assert all(v["measured"] is False for v in order[: len(passed)])
    assert [v["task"] for v in order[: len(passed)]] == passed  # before any cell's own coverage


def test_coverage_width_ingests_queries_and_deletes_each_width(shared_races):
    params = PARAMS["coverage-width"]
    race = challenge_race(shared_races, "coverage-width")
    folder = race.record_dir()
    for width in params["widths"]:
        name = corpus.width_set(width, params["width_rows_per_epoch"])
        ingest = json.loads((folder / f"ingest-width-{width}.json").read_text())
        assert [e["docs"] for e in ingest["epochs"]] == [corpus.test_mode_rows(width)]
        assert http("GET", f"/{name}/_count")[0] == 404
    pool = json.loads((folder / SEARCH_POOL).read_text())
    assert pool["data-nodes"] == 1 and pool["default-max-concurrent-searches"] >= 1
    cells = [n for n in ours("coverage-width") if n.startswith("width-") and "-coverage-" in n]
    # serial only at 30 nodes (width_serial_max_nodes 300), D_hdr over terms too (width_hdr_terms_max_nodes 1000)
    assert len(cells) == 2 * 4 + 2 * 3 - 1 and "width-1500-coverage-D_hdr-terms" not in cells
    # each cell measured, and warmed by its width's warm-up passes (a coverage of its one test-mode epoch each) before
    # its first measured coverage
    validated = [json.loads(line) for line in (folder / records.VALIDATION).read_text().splitlines()]
    warmed = {cell: f"width-{cell.split('-')[1]}-warm-up-pass/{cell}" for cell in cells}
    settled = {f"settle/{cell}" for cell in cells if cell.startswith(f"width-{params['widths'][0]}-")}  # before the first width only
    assert {v["task"] for v in validated} == set(cells) | set(warmed.values()) | settled
    order = [v["task"] for v in validated]
    assert all(order.count(warmed[cell]) == TEST_MODE_PASSES and order.index(warmed[cell]) < order.index(cell) for cell in cells), order
    assert all(v["measured"] is False for v in validated if "/" in v["task"])
    header, body = report_widths.width_table(races.load(race.folder()))
    assert [row[:2] for row in body] == [["D_td", 30], ["D_td", 1500], ["D_hdr", 30], ["D_hdr", 1500]]
