"""Coverage under load in real races: a step runs at the rate its calibration set, and the live challenge queries
the latest complete epoch while the next one is ingested."""

import json

import pytest

from runners.contracts import records
from runners.contracts.took_files import bulk_lines, read_took_line
from runners.studies import load
from tests.conftest import assert_clean, corpus_configuration, doc_count, run_race

# a fifth of the calibrated rate: back to back the step would run 5x faster, beyond the factor of 3 the test allows,
# and it lasts as long as 100 calibration coverages (a tenth: 200, up to 25 s when the calibration ran cold)
STEP_PERCENT = 20
CALIBRATION, STEP = "coverage-D_td-msearch-load-calibration", f"coverage-D_td-msearch-load-{STEP_PERCENT}pct"  # as the race names them
LOAD_PARAMS = {
    "epochs": 1,
    "load_variants": ["D_td"],
    "load_transports": ["msearch"],
    "load_steps": [STEP_PERCENT],
    "load_clients": 1,
    "load_iterations": 20,
    "load_calibration_iterations": 5,
    "settle": False,  # the step's rate is under test, not the node: outside test mode a settling is passes to its floor
}


def test_a_step_reaches_its_fraction_of_the_calibrated_rate(shared_races, tmp_path):
    """coverage-load outside test mode (which caps iterations), one cell, one step at 20%. With a corpus of one
    1,000-row epoch, in a data directory of its own (a Rally configuration of its own in the suite's Rally home): a
    file that small is its own test-mode file, so the fast test-mode ingest (Rally outside test mode takes up to 5 s
    between tasks) holds what the race outside test mode queries. (The suite's index is another corpus then: the next
    test that needs it clones it back.) The version tier races coverage-load in test mode (test_challenges.py): a
    step's rate is Rally's schedule and ours, not the node's."""
    own = corpus_configuration(shared_races.home, "load-1k", tmp_path, "--epochs", "1", "--rows-per-epoch", "1000")
    assert_clean(run_race(shared_races.home, "ingest-baseline", "--track-params=epochs:1", own))
    # without the check tasks (a node without security; the calibration checks every answer): Rally's 5 s wake-ups fewer
    race = run_race(
        shared_races.home,
        "coverage-load",
        f"--track-params={json.dumps(LOAD_PARAMS)}",
        "--exclude-tasks=tag:check",
        own,
        test_mode=False,
    )
    assert_clean(race, [CALIBRATION, STEP])
    assert "check-privileges" not in race.error_rates()
    record = load.read_steps(str(race.record_dir()))[STEP]
    calibrated = load.calibrated_rate(str(race.record_dir()), CALIBRATION)
    assert record["target_per_s"] == pytest.approx(calibrated * STEP_PERCENT / 100) and record["clients"] == 1
    op = race.op_metrics()[STEP]
    # the rate reached: 20 coverages at a fifth of the one-client rate span about 20 Poisson gaps of mean 1 / target;
    # outside a factor of 3 either way with a chance below 1e-4, where back to back they would run about 5x faster
    reached = LOAD_PARAMS["load_iterations"] / (op["duration"] / 1000)
    assert record["target_per_s"] / 3 <= reached <= record["target_per_s"] * 3, (reached, record)
    assert doc_count() == 1000


LIVE_TASKS = [
    "live-bulk-epoch-4-alone",
    "live-coverage-alone",
    "live-bulk-epoch-5-with-queries",
    "live-coverage-with-ingest",
    "live-coverage-last-epoch-after-refresh",
    "verify-doc-count",
]


# bulks of 10 documents: a test-mode epoch (1,000 documents) in one bulk is over in a few ms, before the coverage beside
# it has started (seen: a 22 ms bulk, the first coverage 7 ms after it); in 100 bulks it lasts long enough to overlap
LIVE_PARAMS = {"bulk_size": 10}


@pytest.mark.versions("live")
def test_live_queries_the_complete_epoch_while_the_next_one_is_ingested(shared_races):
    race = shared_races.race("live", f"--track-params={json.dumps(LIVE_PARAMS)}")
    assert_clean(race, LIVE_TASKS)
    assert doc_count() == 5000  # nothing lost
    validated = [json.loads(line) for line in (race.record_dir() / records.VALIDATION).read_text().splitlines()]
    during = [v for v in validated if v["task"] == "live-coverage-with-ingest"]
    assert during and all(v["failed-checks"] == 0 and v["checks"] > 0 for v in during), during
    # the coverage ran during the bulk: its timed windows and the epoch's bulk windows overlap (wall clock)
    bulks = [read_took_line(line)[1] for lines in bulk_lines(str(race.record_dir()), records.INGEST, 5).values() for line in lines]
    bulk_start, bulk_end = min(w[0] for w in bulks), max(w[1] for w in bulks)
    assert any(v["window"][0] < bulk_end and v["window"][1] > bulk_start for v in during), (bulks, [v["window"] for v in during])
    # and the epoch being ingested was queried only once complete: the coverage after the refresh validated it
    after = [v for v in validated if v["task"] == "live-coverage-last-epoch-after-refresh"]
    assert after and all(v["failed-checks"] == 0 for v in after)
