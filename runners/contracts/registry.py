"""What a runner module declares about each operation type it implements, in its own OPERATIONS table beside its
runners: the runner, what it asks of the cluster (its privilege need), its parameter source and its load-time
validation. runners/operations.py collects every module's table; Rally's registration, the track processor and the
privilege check read the collection. A new operation type is one entry in its module, nothing else."""

from dataclasses import dataclass
from typing import Callable, Optional


@dataclass(frozen=True)
class Need:
    """What an operation sends, as Elasticsearch's privilege names: cluster privileges, index privileges on the task's
    index, and on the restore-notes index (runners/shared/restore.py) for an operation that changes cluster settings."""

    why: str
    cluster: tuple = ()
    index: tuple = ()  # on the index the task works on
    notes: tuple = ()  # on runners.shared.restore.NOTES_INDEX


SETTINGS_CHANGE = ("create_index", "read", "write")  # the notes an operation writes before it changes a cluster setting


@dataclass(frozen=True)
class Operation:
    runner: type
    need: Need
    param_source: Optional[type] = None
    # (operation params, clients, RaceContext) -> None; raises ValueError naming the problem
    validate: Optional[Callable] = None
    # False: of the race context it reads only the record folder, so it needs no corpus of its own
    reads_corpus: bool = True
