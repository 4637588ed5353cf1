"""A race of the suite as a test reads it (Race: its exit, output, race.json, Rally's and Thespian's logs, records),
and what every test asserts of one: clean (assert_clean), reported from its files and the suite's store alike
(assert_reported), or refused before any timed task (assert_refused_before_any_timed_task)."""

import re

from runners.contracts import records


class Race:
    def __init__(self, returncode, output, race, log="", home=None):
        self.returncode, self.output, self.race, self.log, self.home = returncode, output, race, log, home
        self.left = {}  # what the race left on the cluster, when a test reads it right after (SharedRaces' after)
        self.actors_log, self.oom_kills = "", None  # thespian's log of the race, the OOM killer's kills meanwhile
        self.in_suite_store = False  # raced into the suite's metrics store too (TEST_METRICS_STORE)

    def failures(self):
        """The failed samples' descriptions our runners logged during this race (Rally's log, WARNING and above)."""
        return [
            line
            for line in self.log.splitlines()
            if "cluster-metrics" in line or "runners." in line
            if " WARNING " in line or " ERROR " in line
        ]

    def explained(self, tail=3000):
        """What an assertion on this race prints: the command's output tail, every ERROR record of Rally's log with the
        traceback under it, and what Thespian logged of its actors' exits and signals (a worker that "exited
        prematurely" is explained only there: the output says no more)."""
        errors, keep = [], False
        for line in self.log.splitlines():
            if re.match(r"\d{4}-\d\d-\d\d ", line):
                keep = " ERROR " in line
            if keep:
                errors.append(line)
        actors = [
            line
            for line in self.actors_log.splitlines()
            if not re.search(r" p\d+ I ", line) or re.search(r"exit|signal|died|dead", line, re.IGNORECASE)
        ]
        return (
            self.output[-tail:]
            + ("\nRally's log, its errors:\n" + "\n".join(errors[-200:]) if errors else "")
            + ("\nThespian's log (exits, signals, warnings):\n" + "\n".join(actors[-100:]) if actors else "")
            + (f"\nOOM kills during the race: {self.oom_kills}" if self.oom_kills else "")
        )

    def error_rates(self):
        """Per task; empty for a race that ended before it measured anything (its race.json has no results)."""
        return {op["task"]: op["error_rate"] for op in self.race.get("results", {}).get("op_metrics", [])}

    def op_metrics(self):
        return {op["task"]: op for op in self.race["results"]["op_metrics"]}

    def folder(self):
        """The race's folder in its Rally home (race.json, and the track's records under records.RECORD_DIR)."""
        return self.home / ".rally" / "benchmarks" / "races" / self.race["race-id"]

    def record_dir(self):
        return self.folder() / records.RECORD_DIR


def _size(path):
    return path.stat().st_size if path.exists() else 0


def _appended(path, start):
    """What a log file gained since it was start bytes long (all of it if it was rotated meanwhile)."""
    if not path.exists():
        return ""
    with path.open("rb") as f:
        f.seek(start if path.stat().st_size >= start else 0)
        return f.read().decode("utf-8", "replace")


def assert_clean(race, expected_tasks=()):
    """The race succeeded, every task it reports has error rate 0, and each expected task is among them."""
    assert race.returncode == 0, race.explained()
    rates = race.error_rates()
    assert rates, race.explained()
    failed = {task: rate for task, rate in rates.items() if rate != 0}
    assert not failed, f"error rates {failed}; failures logged: {race.failures()[-20:]}"
    missing = [task for task in expected_tasks if task not in rates]
    assert not missing, f"tasks not reported: {missing}"
    assert_reported(race)


def assert_reported(race):
    """A race that succeeded gives its report (python -m report's single report, read from the race's files), whatever
    its challenge: every clean race of the suite, so that no challenge's race breaks a table unseen. A race raced into
    the suite's metrics store gives it from the store alone as well, its folder moved away meanwhile, and the two
    reports say the same: the same lines, where only the numbers may differ (the store's samples are Rally's service
    times, the files' the track's own walls) and each names its source."""
    import difflib
    import tempfile

    from report.__main__ import single_report
    from report.shared import host_load, races, store
    from tests.conftest import SUITE_STORE_PORT  # the suite's configuration

    host_cells = {}

    def report(loaded, out):
        text = single_report(loaded, out)[0].read_text()
        assert f"challenge `{race.race['challenge']}`" in text, text[:500]
        # the host record reaches the store with the samples that carry it: the seconds after a race's last sample
        # stay on the load driver's disk (runners/shared/host_load.py), so the store's cells are some of the files'
        host_cells[loaded.source] = [row[0] for row in (host_load.table(loaded) or (None, []))[1]]
        text = re.sub(r"(## The load driver's host during the timed cells\n\n)(.*?)(\n## )", r"\1<host>\3", text, flags=re.S)
        text = re.sub(r"\*\*WARNING host busy.*\n\n", "", text)  # the line and the blank one after it
        return re.sub(
            r"\d[\d,.]*", "#", text.replace(f"read from {loaded.source}", "read from <source>").replace(loaded.samples.source, "<samples>")
        )

    with tempfile.TemporaryDirectory() as out:
        from_files = report(races.load(race.folder()), out)
        if not race.in_suite_store:
            return
        away = race.folder().rename(race.folder().with_name(race.folder().name + ".away"))
        try:
            from_store = report(races.Stored(store.Store.local("127.0.0.1", SUITE_STORE_PORT)).race(race.race["race-id"]), out)
        finally:
            away.rename(race.folder())
    files_cells, store_cells = host_cells.values()
    assert set(store_cells) <= set(files_cells), host_cells
    differing = "\n".join(difflib.unified_diff(from_files.splitlines(), from_store.splitlines(), "files", "store", n=1, lineterm=""))
    assert not differing, differing[:6000]


def assert_refused_before_any_timed_task(race, *phrases):
    """A bad input: the race failed, its output says each phrase, and no coverage was timed."""
    assert race.returncode != 0, race.explained()
    missing = [phrase for phrase in phrases if phrase not in race.output]
    assert not missing, f"not said: {missing}; output: {race.explained()}"
    assert race.race is None or not any(task.startswith("coverage-") for task in race.error_rates())
