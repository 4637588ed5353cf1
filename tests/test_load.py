"""Coverage under load in real races: the steps follow the rate the calibration measured, and the live challenge
queries the latest complete epoch while the next one is ingested."""

import json

import pytest
from test_rally_track import assert_clean, doc_count, race_dir

from conftest import generate, run_race
from runners import load, records
from runners.tasks import load_calibration_task_name, load_step_task_name

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("es_node")]


def test_a_step_runs_at_its_fraction_of_the_calibrated_rate(rally_home, small_corpus, tmp_path):
    """Outside test mode (which caps iterations), one cell, one step at 10%. In a Rally home of its own, with a corpus
    of one 1,000-row epoch: a file that small is its own test-mode file, so the fast test-mode ingest (Rally outside
    test mode takes up to 5 s between tasks) holds what the race outside test mode queries."""
    home = tmp_path / "rally"
    home.mkdir()
    generate(home, "--epochs", "1", "--rows-per-epoch", "1000")
    assert_clean(run_race(home, "ingest-baseline", "--track-params=epochs:1"))
    params = {
        "epochs": 1,
        "load_variants": ["D_td"],
        "load_transports": ["msearch"],
        "load_steps": [10],
        "load_clients": 1,
        "load_iterations": 20,
        "load_calibration_iterations": 5,
    }
    race = run_race(home, "coverage-load", f"--track-params={json.dumps(params)}", test_mode=False)
    step = load_step_task_name("D_td", "msearch", 10)
    assert_clean(race, [load_calibration_task_name("D_td", "msearch"), step])
    record = load.read_steps(str(race_dir(home, race) / records.RECORD_DIR))[step]
    calibrated = load.calibrated_rate(str(race_dir(home, race) / records.RECORD_DIR), load_calibration_task_name("D_td", "msearch"))
    assert record["target_per_s"] == pytest.approx(calibrated / 10) and record["clients"] == 1
    op = next(o for o in race.race["results"]["op_metrics"] if o["task"] == step)
    # a schedule, not back to back: 20 coverages at a tenth of the one-client rate span 19 Poisson gaps of mean
    # 1 / target (below 4 / target with a chance of 1e-7), where back to back they would take about 2 / target
    assert op["duration"] / 1000 >= 4 / record["target_per_s"], (op["duration"], record)
    assert doc_count() == 1000
    # the node's index now holds this home's 1,000 rows: the live test next ingests the suite's corpus again, and every
    # query test that needs it checks first (ensure_test_mode_ingest)


def test_live_queries_the_complete_epoch_while_the_next_one_is_ingested(rally_home, small_corpus):
    race = run_race(rally_home, "live")
    assert_clean(
        race,
        [
            "live-bulk-epoch-4-alone",
            "live-coverage-alone",
            "live-bulk-epoch-5-with-queries",
            "live-coverage-with-ingest",
            "live-coverage-last-epoch-after-refresh",
            "verify-doc-count",
        ],
    )
    assert doc_count() == 5000
