"""A layout's name (shards and replicas: "2S1R") and its record's: runners/studies/layouts.py writes a record per
layout, the report reads them (report/studies/layouts.py, layout_seed.py, single_doc.py)."""

import re

LAYOUT = re.compile(r"^(\d+)S(\d+)R$")


def parse_layout(name):
    """ "2S1R" -> (2 shards, 1 replica)."""
    match = LAYOUT.match(str(name))
    if not match or int(match.group(1)) < 1:
        raise ValueError(f"layout {name!r} is not <shards>S<replicas>R with at least 1 shard, e.g. 2S1R")
    return int(match.group(1)), int(match.group(2))


def record_name(layout):
    """The record of one layout's measurements."""
    return f"layout-{layout}.json"
