"""A race's measured samples per task, one interface whatever its source gave: each sample's time (its coverage
records, or Rally's service times in a metrics store), or, for a history read from a store by aggregation, each task's
sample count, failures and order statistics in place of the samples. A race holds one (report/shared/races.py, set when
it is loaded); readers ask it, never which form it holds."""

import json
from dataclasses import dataclass

from report.shared import uncertainty

FROM_RECORDS = "each coverage's wall time in the track's records"
FROM_STORE = "Rally's service time of each sample in the metrics store"


@dataclass(frozen=True)
class Samples:
    # task -> each measured sample's time (ms), None for a task with a failed sample; None: not known sample by sample
    times: dict | None = None
    # task -> (n, failed, {rank: value}): a store aggregation's order statistics (uncertainty.interval_ranks), in place
    # of `times`
    statistics: dict | None = None
    source: str = FROM_RECORDS  # where the times came from, as a report's note says it

    @property
    def individual(self):
        """Whether each sample's time is known (intervals and verdicts between races need them)."""
        return self.times is not None

    def of(self, task):
        """The task's samples' times, or None: a failed task, one not measured, or no times known."""
        return (self.times or {}).get(task)

    def items(self):
        """(task, its times or None when it failed) of every task with samples known one by one."""
        return (self.times or {}).items()

    def has(self, task):
        """Whether the race measured the task (its samples, or a count of them)."""
        if self.statistics is not None:
            return bool(self.statistics.get(task, (0,))[0])
        return task in (self.times or {})

    def failed(self, task):
        """Whether a measured sample of the task failed (the task has no figure)."""
        if self.statistics is not None:
            n, failed, _ = self.statistics.get(task, (0, 0, {}))
            return bool(n and failed)
        return self.has(task) and self.times[task] is None

    def values(self, task):
        """The values known of the task's samples: each sample's time, or its order statistics' values; None when it
        failed or was not measured."""
        if self.statistics is not None:
            return None if not self.has(task) or self.failed(task) else list(self.statistics[task][2].values())
        return self.of(task)

    def median_interval(self, task):
        """The task's median with its 95% order-statistic interval (uncertainty.MedianInterval), from its samples or
        from their order statistics; only for a task whose values() are some."""
        if self.statistics is not None:
            n, _, at = self.statistics[task]
            return uncertainty.median_interval_of(n, at)
        return uncertainty.median_interval(self.times[task])

    def fingerprint(self):
        """The samples as text, or None when there are none: two races with the same are one race under two ids."""
        found = self.times or self.statistics
        return json.dumps(found, sort_keys=True, default=str) if found else None
