"""A race's records as a study's report reads them (report/shared/races.py Race.record): the same from its folder and from a
metrics store's form of it (the records its samples carried, replayed)."""

import json
import shutil
from pathlib import Path

from report.shared import races
from runners.contracts import records

FIXTURE = next((Path(__file__).parents[1] / "fixtures" / "full-race" / ".rally/benchmarks/races").iterdir())


class StoreForm:
    """What races.Stored asks of Rally's metrics store, answered from a race's document and its samples' meta."""

    address = "a store's form of the race"

    def __init__(self, data, metas):
        self.data, self.metas = data, metas

    def race(self, race_id, track=None):
        return self.data

    def record_operations(self, race_id):
        return self.metas

    def service_times(self, race_id):
        return {}

    def host_samples(self, race_id):
        return {}


def test_a_record_reads_the_same_from_the_race_folder_and_from_a_stores_form(tmp_path):
    race_dir = tmp_path / "race"
    shutil.copytree(FIXTURE, race_dir)
    folder = str(race_dir / records.RECORD_DIR)
    shutil.rmtree(folder)
    metas = [
        records.write(folder, "study-figures.json", {"figure": 42, "unit": "ms"})[records.META_KEY],
        records.append_line(folder, "study-calls.jsonl", json.dumps({"call": 1}))[records.META_KEY],
        records.append_line(folder, "study-calls.jsonl", json.dumps({"call": 2}))[records.META_KEY],
    ]
    data = json.loads((race_dir / "race.json").read_text())
    for race in (races.load(race_dir), races.Stored(StoreForm(data, metas)).race()):
        assert race.record("study-figures.json") == {"figure": 42, "unit": "ms"}
        assert race.record("study-calls.jsonl") == [{"call": 1}, {"call": 2}]
        assert race.record("absent.json") is None and race.record("absent.jsonl", []) == []
