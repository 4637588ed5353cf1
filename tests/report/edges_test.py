"""Every report section on a real race of `full` (5 x 100,000 rows, recorded by this track), and on the same race
as a race can also come out valid or failed: took 0 everywhere (whole milliseconds on a small index, as a test-mode
race answers), every cell failed, one cell whose every request failed, no records at all. A report is a figure or a
named reason, never a traceback; a failed cell is never a baseline, speedup or winner."""

import json
import shutil
from pathlib import Path

import pytest

from report.__main__ import single_report
from report.shared import races
from report.studies import ingest
from report.studies.coverage_answer import NO_SHARE
from runners.contracts import records
from tests.race_shapes import every_cell_failed, every_ingest_failed, fail, no_records, took_zero

FIXTURE = Path(__file__).parents[1] / "fixtures" / "full-race" / ".rally" / "benchmarks" / "races"
(RACE_DIR,) = FIXTURE.iterdir()
RECORDS = records.RECORD_DIR


def one_cell_failed_whole(race_dir):
    """coverage-D_td-serial (the production baseline): every request failed, so no coverage recorded a wall or took."""
    fail(race_dir, lambda task: task == "coverage-D_td-serial")
    path = race_dir / RECORDS / "validation.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    path.write_text(
        "".join(
            json.dumps(line if line["task"] != "coverage-D_td-serial" else {**line, "failed-checks": line["checks"], "took": None}) + "\n"
            for line in lines
        )
    )


@pytest.mark.parametrize(
    "shape",
    [None, took_zero, every_cell_failed, one_cell_failed_whole, every_ingest_failed, no_records],
    ids=lambda shape: shape.__name__ if shape else "as-raced",
)
def test_every_section_builds_on_a_real_race_in_every_shape(tmp_path, shape):
    race_dir = tmp_path / RACE_DIR.name
    shutil.copytree(RACE_DIR, race_dir)
    if shape:
        shape(race_dir)
    race = races.load(race_dir)
    single_report(race, tmp_path / "reports")
    text = (tmp_path / "reports" / race.race_id / "report.md").read_text()
    assert "Traceback" not in text and "## Ingest per epoch" in text if shape is not no_records else "## " in text
    if shape is took_zero:
        # a share of a production took of 0 ms is no share, said once under the table
        assert NO_SHARE in text and text.count("the production query's median took is 0 ms") == 1
    if shape in (every_cell_failed, one_cell_failed_whole):
        assert "FAILED" in text
    if shape is every_ingest_failed:
        assert "FAILED: failed samples in ingest" in text


def test_the_ingest_tables_read_the_ingest_tasks_own_record():
    """One ingest task over every epoch: each epoch's wall, docs/s and its split come from the rows the task recorded
    at each boundary (the bulks' windows and service times), not from Rally's task durations."""
    race = races.load(RACE_DIR)
    rows, (header, body) = ingest.ingest_rows(race), ingest.ingest_time_table(race)
    for row, recorded, split in zip(rows, ingest.ingest_of(race)["epochs"], body):
        assert row["wall_s"] == recorded["wall-s"] and row["docs_per_s"] == pytest.approx(recorded["docs"] / recorded["wall-s"])
        split = dict(zip(header, split))
        assert split["wall (s)"] == recorded["wall-s"] and split["Elasticsearch: took (s)"] == recorded["bulk-took-ms"] / 1000
        assert split["load driver: runner (s)"] == pytest.approx(recorded["processing-s"] - recorded["service-s"])
        assert split["load driver: between requests (s)"] == pytest.approx(recorded["wall-s"] - recorded["processing-s"])
