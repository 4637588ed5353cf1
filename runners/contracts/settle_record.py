"""The settle record's vocabulary: runners/studies/settle.py writes a line per settling task, the report reads it
(report/outcome.py, report/history/races.py)."""

SETTLE = "settle.jsonl"  # the record: a line per settling task (what it ran, how long, whether it settled)
WINDOW_KEY = "window"  # the rule's window (passes): an operation parameter, and a key of each line
NODE_SEARCHES_KEY = "node-searches"  # the query phases each searching node must have served since it started
BULK_REQUESTS_KEY = "bulk-requests-served"  # the _bulk requests the nodes served before the settling ...
SEARCHES_BEFORE_KEY = "served-searches-before"  # ... and query phases (the fewest of a searching node): a first race?
SETTLED, TIME_LIMIT, FAILED_PASS = "settled", "time limit", "a failed pass"  # what stopped the settling, as recorded
