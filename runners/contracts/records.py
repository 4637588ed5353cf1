"""A race's own record folder beside race.json: what race.json cannot hold (per-epoch ingest cost, profile shares).

Rally keeps only task-level aggregates in race.json when no Elasticsearch metrics store is configured, and drops
sample meta-data. Runners therefore write their measurements here as small JSON files; `make report` reads them.

Each write also returns the operation as sample meta-data (META_KEY), which runners add to what they return: Rally
keeps it on the sample in an Elasticsearch metrics store, and `replay` rebuilds the folder from there, so a report
from the store needs no load driver's disk (with several load-driver hosts, each holds only its own clients' files).
"""

import json
import os

TRACK_NAME = "cluster-metrics"  # the track's folder; from a track repository Rally names it by path, tracks/<name>
RECORD_DIR = "cluster-metrics"  # inside Rally's race folder, beside race.json
INGEST = "ingest.json"  # per-epoch ingest cost
PROFILE = "profile.json"  # profile-breakdown shares
PROFILE_CALLS = "profile-calls.jsonl"  # profile-breakdown: each call, profile ON and OFF, warm-ups too (runners/studies/profile.py)
TOOK_DIR = "bulk-took"  # each bulk response's took and wall-clock window, one file per epoch and client
RATE_DIR = "coverage-rate"  # each calibration coverage's seconds, one file per calibration task (coverage-load)
LOAD_STEPS = "load-steps.jsonl"  # coverage-load: each step's calibrated and target rate
MEMORY = "aggregation-memory.jsonl"  # aggregation-memory: each cell's request breaker floor and GC activity
CLUSTER_FACTS = "cluster-facts.json"  # the nodes and settings the race ran on (runners/shared/cluster_facts.py), at its first task
CELLS = "cells.json"  # what each task measures (runners/contracts/cells.py), written by the first task, check-privileges
VALIDATION = "validation.jsonl"  # each coverage's validation counts, worst percentile error and wall-clock window, warm-ups too
ERROR = "error"  # in a validation line: why that coverage failed (no answer, an error answer, a wrong one); absent when it passed
LARGE_SOURCE_DOCUMENTS = "large-source-documents.json"  # source-large: what made its documents, each one's sha256 and size
SEARCH_POOL = "search-pool.json"  # the search pool and _msearch's default concurrency (runners/studies/search_pool.py)
HOST_KEY = "load-driver-host"  # sample meta: the name of the host whose client ran the sample (runners/shared/hosts.py)
# how a report names the host of a sample without HOST_KEY: a request that raised, whose meta Rally builds itself
UNNAMED = "(not named: a failed request)"
HOST_LOAD = "host-load.jsonl"  # how busy the load driver's host was, an interval a line (runners/shared/host_load.py)
LARGE_SOURCE_FETCHES = "large-source-fetches.jsonl"  # source-large: each fetch's took, wall, bytes and checks, warm-ups too


def source_record(mode):
    """source-cost: the index's storage in one _source mode (runners/studies/storage.py writes it from the task's mode)."""
    return f"source-{mode}.json"


def ingest_record(prefix=""):
    """The per-epoch ingest cost of the ingest whose task names start with prefix (runners/studies/ingest.py name_records):
    the challenge's one ingest ("") -> ingest.json; "source-stored-" -> ingest-source-stored.json,
    "change-clients-" -> ingest-change-clients.json, "width-300-" -> ingest-width-300.json."""
    return f"ingest-{prefix.removesuffix('-')}.json" if prefix else INGEST


def ingest_prefix(task):
    """The prefix of an ingest's task names, from its ingest task's name as the track names it (<prefix>ingest, or
    <prefix>ingest-setup where the epochs are tasks of their own): "layout-2S1R-ingest" -> "layout-2S1R-"."""
    return task[: task.rindex("ingest")]


def legacy_layout_ingest_record(layout):
    """A layout's ingest record as races before ingest_record named it: ingest-2S1R.json (now ingest-layout-2S1R.json),
    read by the report for those races."""
    return f"ingest-{layout}.json"


META_KEY = "cluster-metrics-record"  # sample meta: the sample's record operations, a JSON list as text (Rally maps strings as keyword)


def is_our_track(track_name):
    return track_name == TRACK_NAME or str(track_name).endswith("/" + TRACK_NAME)


def read(record_dir, name, default=None):
    path = os.path.join(record_dir, name)
    if not os.path.isfile(path):
        return default
    with open(path) as f:
        return json.load(f)


def replace_text(record_dir, name, text):
    """The file's whole content at once (a reader never sees half of it; a write of the same file from another
    process replaces it whole too); no sample meta."""
    path = os.path.join(record_dir, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def write(record_dir, name, data):
    replace_text(record_dir, name, json.dumps(data, indent=2, sort_keys=True))
    return _meta({"write": name, "data": data})


def append_line(record_dir, name, line):
    """O_APPEND writes of one short line: safe from several client processes at once."""
    path = os.path.join(record_dir, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a") as f:
        f.write(line + "\n")
    return _meta({"append": name, "line": line})


def appended(name, lines):
    """The sample meta of lines another process appended already (the host-load sampler): replay appends them."""
    return {META_KEY: json.dumps([{"append": name, "line": line} for line in lines], sort_keys=True)} if lines else {}


def _meta(operation):
    return {META_KEY: json.dumps([operation], sort_keys=True)}


def add(meta, record_meta):
    """A sample's meta with the operations of record_meta (what write or append_line returned, or {}) added to those
    it carries already: a coverage may append its validation counts, a calibration duration and a step's record."""
    if record_meta:
        meta[META_KEY] = json.dumps(json.loads(meta.get(META_KEY, "[]")) + json.loads(record_meta[META_KEY]), sort_keys=True)
    return meta


def _operations(carried):
    return carried if isinstance(carried, list) else [carried]  # races stored by commit 9a68ac7 carry one, not a list


def replay(record_dir, texts):
    """Rebuilds a race's record folder from the META_KEY texts of its samples, given in sample order."""
    for operation in (operation for text in texts for operation in _operations(json.loads(text))):
        name = operation.get("write") or operation.get("append")
        if not name or os.path.isabs(name) or ".." in name.split(os.sep):
            raise ValueError(f"a record operation outside the race's record folder: {json.dumps(operation)[:200]}")
        if "write" in operation:
            write(record_dir, operation["write"], operation["data"])
        else:
            append_line(record_dir, operation["append"], operation["line"])
