"""What each cell of a race measures, recorded by the race: {task name: cell}, where a cell is the task's variant and
transport and the condition its challenge measures it under ({"rtt-ms": 50}, {"fault": "reset", "phase": "healed"}).

A challenge gives a task its condition beside its name (the operation parameter CELL_KEY, "cell": {...} in its
challenge file); the track processor collects the selected challenge's cells at load (of_tasks) and hands them to the
challenge's first task, check-privileges, which writes them to the race's records (records.CELLS) and as sample
meta. The report joins race.json's tasks to them, so that no task name is composed twice; a race without the record
(from before it, or with check-privileges left out) gets the same from its track rendered with its parameters.
"""

import json

CELL_KEY = "cell"  # a task's operation parameter: its condition, beyond its variant and transport
CELLS_KEY = "cells"  # check-privileges' operation parameter: the challenge's cells, to record
DIMENSIONS = ("variant", "transport")  # a cell's own operation parameters


def of_tasks(tasks):
    """{task name: cell} of (task name, operation parameters) pairs: every task that names a cell. A mapping: the
    record keeps its keys sorted (records.write), so its order is not the schedule's."""
    return {name: cell_of(params) for name, params in tasks if CELL_KEY in params}


def cell_of(params):
    return {**{key: params[key] for key in DIMENSIONS if key in params}, **params[CELL_KEY]}


def index(cells):
    """{cell as a key: task name} for task_of: a cell's key is its JSON with sorted keys."""
    return {key(cell): task for task, cell in cells.items()}


def key(cell):
    return json.dumps(cell, sort_keys=True)
