"""Shapes a valid race can also come out in, made on a copy of a real race's folder (race.json and the track's records
beside it): took 0 everywhere (whole milliseconds on a small index, as a test-mode race answers), every cell or every
task failed, every ingest failed, no records at all. A report of any of them is figures or named reasons, never a
traceback (tests/report/edges_test.py, tests/report/full_scale_test.py)."""

import json
import shutil

from runners.contracts import records

TOOK_KEYS = {"took", "took-sum", "took-ms", "bulk-took-ms"}  # every took the track records, in ms


def _zero_tooks(value):
    if isinstance(value, dict):
        return {k: 0 if k in TOOK_KEYS and isinstance(v, (int, float)) else _zero_tooks(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_zero_tooks(v) for v in value]
    return value


def took_zero(race_dir):
    """Every took the records hold is 0: the JSON records, the JSON-lines records and each bulk's took file
    (runners/studies/ingest.py took_line: the took first)."""
    for path in sorted((race_dir / records.RECORD_DIR).rglob("*")):
        if path.suffix == ".json":
            path.write_text(json.dumps(_zero_tooks(json.loads(path.read_text()))))
        elif path.suffix == ".jsonl":
            lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
            path.write_text("".join(json.dumps(_zero_tooks(line)) + "\n" for line in lines))
        elif path.suffix == ".txt" and records.TOOK_DIR in path.relative_to(race_dir).parts:
            path.write_text("".join(" ".join(["0", *line.split()[1:]]) + "\n" for line in path.read_text().splitlines() if line.strip()))


def fail(race_dir, tasks):
    """Every task `tasks(name)` selects has error rate 1 in race.json: each of its samples failed."""
    path = race_dir / "race.json"
    data = json.loads(path.read_text())
    for op in data["results"]["op_metrics"]:
        if tasks(op["task"]):
            op["error_rate"] = 1.0
    path.write_text(json.dumps(data))


def every_cell_failed(race_dir):
    fail(race_dir, lambda task: task.startswith("coverage-"))


def every_task_failed(race_dir):
    fail(race_dir, lambda task: True)


def every_ingest_failed(race_dir):
    fail(race_dir, lambda task: task == "ingest" or task.endswith("-ingest"))


def no_records(race_dir):
    shutil.rmtree(race_dir / records.RECORD_DIR, ignore_errors=True)


def stopped_midway(race_dir):
    """The node died a third of the way through the coverages (tests/test_faults.py does it to a real node): Rally ran
    every remaining sample, each failing fast, then its end-of-race telemetry failed on the dead node and it wrote
    race.json without results; the track's records hold the coverages that passed before and every failed one after,
    with its cause."""
    path = race_dir / "race.json"
    data = json.loads(path.read_text())
    data.pop("results", None)
    path.write_text(json.dumps(data))
    validation = race_dir / records.RECORD_DIR / records.VALIDATION
    if not validation.is_file():
        return
    lines = [json.loads(line) for line in validation.read_text().splitlines() if line.strip()]
    kept = len(lines) // 3
    failed = [
        {
            "task": line["task"],
            "measured": line.get("measured"),
            "window": None,
            records.ERROR: f"{line['task']}: connection failed: refused",
        }
        for line in lines[kept:]
    ]
    validation.write_text("".join(json.dumps(line, sort_keys=True) + "\n" for line in lines[:kept] + failed))


# what only an answer says: a speed-up, a saving, a winner (report/outcome.py: a race that did not finish has none)
ANSWER_WORDS = ("faster", "fastest", "speed-up", "saving", "saves", "overtakes", "## The answer")


def assert_no_answer(text, challenge):
    """The report of a race that did not finish says so in its first lines and offers no speed-up, saving or winner
    anywhere."""
    head = "\n".join(text.splitlines()[:12])
    assert "DID NOT FINISH" in head, f"{challenge}: the first lines do not say the race did not finish:\n{head}"
    offered = [word for word in ANSWER_WORDS if word in text.replace("no speed-up, saving or fastest configuration", "")]
    assert not offered, f"{challenge}: a race that did not finish offers {offered}"
