"""Ingest: an index set up afresh, then every epoch bulk-loaded in one Rally task that records each response's `took`
and, at each epoch's boundary, the epoch's cost from /_stats; the document count checked at the end.

Rally charges every task about 5 s of wall time outside test mode (a worker looks every 5 s whether its task has
finished, and every task ends at a join point of all workers), so the bookkeeping between two epochs (refresh,
/_stats snapshot, the per-epoch record) runs inside the ingest task, outside the timed window of its bulk requests
(scope.untimed), and the epochs' boundaries are kept by the clients themselves (IngestEpochs)."""

import asyncio
import copy
import logging
import os
import re
import time

import elasticsearch
from esrally.client.context import RequestContextHolder
from esrally.driver import runner as rally_runner

from runners.contracts import parameters, records, rules
from runners.contracts.context import RaceContext
from runners.contracts.queries import INGEST_CHANGES
from runners.contracts.registry import Need, Operation
from runners.contracts.took_files import bulk_tooks, epoch_timing, filed_marker, took_file, took_line
from runners.shared import results, wire
from runners.shared.bulk_sources import CREATE_PARAMS_KEY, RECORD_KEY, EpochBulkParamSource, IngestEpochsParamSource
from runners.shared.hosts import HOSTS_KEY
from runners.shared.index_body import FreshIndexBodyParamSource
from runners.studies.scope import untimed

LOG = logging.getLogger(__name__)
STATS_METRICS = "indexing,refresh,merge,flush"
# the index settings an ingest may change (ingest-tuned, ingest-changes): recorded as they are when it starts, so that
# the record says what it ran with
INGEST_SETTINGS = ("index.refresh_interval", "index.translog.durability")


def _mark_filed(params, epoch, client):
    path = os.path.join(params["record-dir"], filed_marker(params[RECORD_KEY], epoch, client))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    open(path, "w").close()


_BULK_HEAD = re.compile(rb'\{"errors":(false|true),"took":(\d+)')  # how Elasticsearch opens a bulk answer


class _BulkIndex(rally_runner.BulkIndex):
    """Rally's bulk runner, but an answer that opens with `{"errors":false,"took":N` is read from that head: Rally's
    own reading (ijson over the first 64 KB of the answer, its buffer) cost 2.8 ms of a 25 ms bulk of 1,000
    documents on this machine, between one bulk and the next (report/client_cost.py). Any other answer, with errors
    or of another shape, goes to Rally's reading unchanged (its failed documents, 429s and error description)."""

    def simple_stats(self, bulk_size, unit, response, params):
        response.seek(0)
        head = _BULK_HEAD.match(response.read(64))
        if head is None or head.group(1) == b"true":
            return super().simple_stats(bulk_size, unit, response, params)
        count = bulk_size if unit == "docs" else None
        return rally_runner.BulkStats(success_count=count, error_count=0, took=int(head.group(2)), request_status=response.meta.status)


class EpochBulk:
    """Rally's bulk runner, unchanged in what it sends and measures; additionally appends the response's `took`
    (server-side handler time) to the race record, so per-epoch took sums reach the user without a metrics store.
    Its answer asks for no compression (runners/shared/wire.py) and a clean answer is read from its head (_BulkIndex).

    Sent without client retries (the client's default retries 429, 502-504 and connection errors): a bulk retried
    after a reset that Elasticsearch had already applied duplicates its documents, and a 429 retried away hides the
    rejection. A failed bulk is a failed sample (Rally's mapping of the error); verify-doc-count then tells the loss,
    and the report marks the ingest FAILED."""

    def __init__(self):
        self._bulk = _BulkIndex()

    async def __call__(self, es, params):
        client = _OperationsNotBody(es.options(max_retries=0, retry_on_status=(), retry_on_timeout=False, headers=wire.IDENTITY))
        started = time.time()
        result = await self._bulk(client, params)
        ended, window = time.time(), RequestContextHolder.request_context.get({})
        if params.get("record-dir") and result.get("took") is not None:
            service = window["request_end"] - window["request_start"] if {"request_start", "request_end"} <= window.keys() else None
            name = took_file(params[RECORD_KEY], params["epoch"], params.get("client", 0))
            result.update(records.append_line(params["record-dir"], name, took_line(result["took"], started, ended, service)))
        return result

    def __repr__(self):
        return "epoch-bulk"


class _OperationsNotBody:
    """The client as Rally's bulk runner sees it, but its bulk(body=...) goes out as bulk(operations=...), the same
    request. elasticsearch-py 8.6 deprecates `body` there, and before each warning it walks the call stack with
    inspect.stack(), which reads source files: several ms of load-driver CPU per bulk request, counted in Rally's
    processing time of every bulk (found with Rally's --enable-driver-profiling; docs/ingest.md,
    "Where per-epoch ingest cost goes")."""

    def __init__(self, client):
        self._client = client

    def bulk(self, body=None, **kwargs):
        return self._client.bulk(operations=body, **kwargs)

    def __getattr__(self, name):
        return getattr(self._client, name)


def stats_snapshot(stats):
    """The cumulative /_stats counters an epoch's cost is the difference of."""
    total = stats["_all"]["total"]
    return {
        "index-ms": total["indexing"]["index_time_in_millis"],
        "index-docs": stats["_all"]["primaries"]["indexing"]["index_total"],  # documents, not copies
        "refresh-ms": total["refresh"]["total_time_in_millis"],
        "merge-ms": total["merges"]["total_time_in_millis"],
        "merged-bytes": total["merges"]["total_size_in_bytes"],
        "flush-ms": total["flush"]["total_time_in_millis"],
    }


def epoch_cost(epoch, previous, snapshot, tooks):
    """One epoch's row: the /_stats deltas between two snapshots and the sum and count of its bulk `took`s."""
    return {
        "epoch": epoch,
        "docs": snapshot["index-docs"] - previous["index-docs"],
        "bulk-requests": len(tooks),
        "bulk-took-ms": sum(tooks),
        "index-ms": snapshot["index-ms"] - previous["index-ms"],
        "refresh-ms": snapshot["refresh-ms"] - previous["refresh-ms"],
        "merge-ms": snapshot["merge-ms"] - previous["merge-ms"],
        "flush-ms": snapshot["flush-ms"] - previous["flush-ms"],
        "merged-mb": (snapshot["merged-bytes"] - previous["merged-bytes"]) / 2**20,
    }


async def _snapshot(es, context):
    return stats_snapshot((await es.perform_request("GET", f"/{context.index}/_stats/{STATS_METRICS}")).body)


async def _ingest_settings(es, context):
    """INGEST_SETTINGS of the index as they are now, Elasticsearch's default where unset, as a user spells them
    (Elasticsearch's defaults list the durability as "REQUEST", a value set by a user as given: "async")."""
    params = {"flat_settings": "true", "include_defaults": "true"}
    index = next(iter((await es.perform_request("GET", f"/{context.index}/_settings", params=params)).body.values()))
    values = {key: index.get("settings", {}).get(key, index.get("defaults", {}).get(key)) for key in INGEST_SETTINGS}
    return {key: value.lower() if isinstance(value, str) else value for key, value in values.items()}


class IngestCostEpoch:
    """Measures one epoch's ingest cost (after its bulk and refresh): /_stats deltas (indexing, refresh, merge,
    flush time, merged MB) since the previous snapshot, and the sum and count of the epoch's bulk `took`.

    Writes the epoch's row to <race>/cluster-metrics/<record> (its ingest's record: name_records);
    returns 1 op and the row as sample meta.
    The epoch's wall time is not here: Rally's task transitions would inflate it. It is the duration of the task
    bulk-epoch-N in race.json."""

    async def __call__(self, es, params):
        context, epoch = RaceContext.of(params), params["epoch"]
        snapshot = await _snapshot(es, context)
        name = params[RECORD_KEY]
        record = records.read(context.record_dir, name, {})
        if "snapshot" not in record:
            return results.failed(
                f"epoch {epoch}: no starting /_stats snapshot (the ingest's set-up, ingest-setup, must run before the first bulk)"
            )
        row = epoch_cost(epoch, record["snapshot"], snapshot, bulk_tooks(context.record_dir, name, epoch))
        record["epochs"] = [r for r in record["epochs"] if r["epoch"] != epoch] + [row]
        record["snapshot"] = snapshot
        LOG.info("cluster-metrics ingest epoch %s: %s", epoch, row)
        return {"weight": 1, "unit": "ops", "success": True, **row, **records.write(context.record_dir, name, record)}

    def __repr__(self):
        return "ingest-cost-epoch"


def validate_bulk(params, clients, context):
    """Load-time check of an epoch bulk: a positive bulk size (track parameters bulk_size, tuned_bulk_size)."""
    parameters.check_operation_value("bulk-size", params.get("bulk-size"), params.get("bulk-size-parameter", "bulk_size"))
    if str(params.get("epoch")) not in context.epoch_docs:
        raise ValueError(f"epoch {params.get('epoch')} is not among this race's corpora")


def _bulk_problem(epoch, reason):
    return f"epoch {epoch}: {reason}"


INGEST_KEY = "cluster-metrics-ingest"  # the index mapping's _meta key naming the ingest that created the index


def ingest_mark(context, record):
    """What names one ingest of one race (the race folder's name is the race id, the record names the ingest): the
    clients of the ingest task tell their index from one an earlier ingest left under the same name by it."""
    return f"{os.path.basename(os.path.dirname(context.record_dir))}/{record}"


async def set_up_index(es, params, context, mark=None):
    """The ingest's index deleted (if it exists) and created afresh (params "indices": runners/shared/index_body.py's, the
    track's index body with the task's settings; mark, if given, in its mapping's _meta), its health awaited
    ("wait-for-status"), then the race's ingest record ("record") started: the /_stats snapshot each epoch's cost is a
    difference from, and the index settings the ingest runs with (INGEST_SETTINGS). Returns (problem or None, record
    meta)."""
    problem = await recreate_indices(es, params, mark)
    if problem:
        return problem, {}
    record = {"epochs": [], "snapshot": await _snapshot(es, context), "index-settings": await _ingest_settings(es, context)}
    return None, records.write(context.record_dir, params[RECORD_KEY], record)


async def recreate_indices(es, params, mark=None):
    """Each index of params "indices" (runners/shared/index_body.py's: name and body) deleted by name if it exists, created
    afresh (mark, if given, in its mapping's _meta) and its health awaited ("wait-for-status", at most 60 s). By name:
    no cluster privilege is needed to lift action.destructive_requires_name, as Rally's delete-index does. Returns why
    an index did not get healthy, or None."""
    for name, body in params["indices"]:
        if mark:
            body = copy.deepcopy(body or {})
            body.setdefault("mappings", {}).setdefault("_meta", {})[INGEST_KEY] = mark
        await es.perform_request("DELETE", f"/{name}", params={"ignore_unavailable": "true"})
        await es.perform_request("PUT", f"/{name}", body=body, params=params.get(CREATE_PARAMS_KEY, params.get("request-params")) or None)
        wanted = params["wait-for-status"]
        health = (await es.perform_request("GET", f"/_cluster/health/{name}", params={"wait_for_status": wanted, "timeout": "60s"})).body
        if health.get("timed_out"):
            return f"index {name} did not reach {wanted} health within 60 s (it is {health.get('status')})"
    return None


class IngestSetup:
    """The index set up for an ingest whose epochs come later, each in a task of its own (the live challenge):
    set_up_index. Untimed bookkeeping: returns 1 op."""

    async def __call__(self, es, params):
        problem, meta = await set_up_index(es, params, RaceContext.of(params))
        return results.failed(problem) if problem else {"weight": 1, "unit": "ops", "success": True, **meta}

    def __repr__(self):
        return "ingest-setup"


class IngestEpochs:
    """An ingest in one task: the index set up afresh, every epoch bulk-loaded, each epoch's cost recorded at its end,
    and the document count checked. Each bulk request is timed as Rally's bulk runner times it (the task's service
    time, throughput and error rate), with the response's `took` and the bulk's window in the race record; everything
    else runs outside the timed window (scope.untimed), before a bulk or after the last.

    The clients keep the ingest's order through the cluster alone (any number of clients, on any load-driver host):
    - client 0, the recorder, sets the index up before its first bulk (set_up_index, the index marked with
      ingest_mark); every other client waits before its first bulk until the index carries that mark and has indexed
      a document (the recorder's first bulk: the record is started);
    - before its first bulk of each later epoch, the recorder waits until the primaries have indexed every document
      of the epochs before (every client's bulks of them are in), refreshes, and records the epoch before (/_stats
      deltas, bulk tooks, wall: runners.studies.ingest.epoch_cost, epoch_timing); every other client waits until the recorder's
      first bulk of the epoch is indexed (the count past the epochs before), so no document of an epoch is in the
      snapshot of the epoch before;
    - after its last bulk, the recorder waits for every document, records the last epoch, unsets the settings the
      ingest changed for its bulks ("restore-settings"), refreshes, and checks that the index holds exactly the
      ingest's documents (the record keeps the count).

    Bulks are sent without client retries (the client's default retries 429, 502-504 and connection errors): a bulk
    retried after a reset that Elasticsearch had already applied duplicates its documents, and a 429 retried away
    hides the rejection. A failed bulk is a failed sample; a wait that does not end within request-timeout seconds (a
    client's bulk failed: its documents never arrive) or a count that differs fails the sample that waited, naming
    what it saw, and later waits of that client do not block again."""

    POLL_S = 0.01

    def __init__(self):
        self._bulk = EpochBulk()
        self._abandoned = set()  # (record-dir, record, client): a wait timed out, later waits do not block again

    async def __call__(self, es, params):
        context = RaceContext.of(params)
        epoch, epochs, client = params["epoch"], params["epochs"], params["client"]
        problems, meta = [], {}
        if params["first-of-epoch"]:
            step = self._start if epoch == epochs[0] else self._before_epoch
            problem, record_meta = await untimed(step, es, params, context)
            problems.append(problem)
            records.add(meta, record_meta)
        try:
            result = await self._bulk(es, params)  # no client retries, its took filed (EpochBulk)
        finally:  # a failed bulk too: the client's epoch marked filed, the last epoch recorded and the count checked
            if params.get("last-of-epoch"):
                _mark_filed(params, epoch, client)
            if params["last"] and client == 0:
                problem, record_meta = await untimed(self._finish, es, params, context)
                problems.append(problem)
                records.add(meta, record_meta)
        problems = [p for p in problems if p]
        if problems and result.get("success", True):
            result = {**result, **results.failed("; ".join(problems), unit="docs")}
        return records.add(result, meta)

    def _through(self, params, epoch):
        """Documents of the ingest's epochs up to and including epoch."""
        epochs = params["epochs"]
        return sum(params["epoch-docs"][str(e)] for e in epochs[: epochs.index(epoch) + 1])

    async def _indexed(self, es, context, mark=None):
        """The primaries' indexed documents; with mark, None unless the index exists and carries it."""
        if mark is not None:
            try:
                mappings = next(iter((await es.perform_request("GET", f"/{context.index}/_mapping")).body.values()))["mappings"]
            except elasticsearch.NotFoundError:
                return None
            if mappings.get("_meta", {}).get(INGEST_KEY) != mark:
                return None
        stats = (await es.perform_request("GET", f"/{context.index}/_stats/indexing")).body
        # a new index whose shards have not started yet has no primaries' stats: nothing indexed
        return stats["_all"]["primaries"].get("indexing", {}).get("index_total", 0)

    def _deadline(self, params):
        """(this client's wait key, when its wait ends): request-timeout from now, or now once a wait of this client
        has timed out (its later waits do not block again)."""
        abandoned = (params["record-dir"], params[RECORD_KEY], params["client"])
        timeout = 0 if abandoned in self._abandoned else params.get("request-timeout", parameters.DEFAULTS["request_timeout"])
        return abandoned, time.monotonic() + timeout

    async def _wait(self, es, params, context, done, what, mark=None):
        """Polls the primaries' indexed count until done(count); None, or what it saw when request-timeout ran out."""
        abandoned, deadline = self._deadline(params)
        while True:
            count = await self._indexed(es, context, mark)
            if count is not None and done(count):
                return None
            if time.monotonic() >= deadline:
                self._abandoned.add(abandoned)
                seen = "the index was not yet this ingest's" if count is None else f"the index's primaries had indexed {count} documents"
                return f"{what}: {seen} when the wait ended"
            await asyncio.sleep(self.POLL_S)

    async def _start(self, es, params, context):
        mark = ingest_mark(context, params[RECORD_KEY])
        if params["client"] == 0:
            return await set_up_index(es, params, context, mark)
        what = _bulk_problem(params["epoch"], "waiting for the recorder to set the index up")
        return await self._wait(es, params, context, lambda n: n > 0, what, mark), {}

    async def _before_epoch(self, es, params, context):
        epochs, epoch = params["epochs"], params["epoch"]
        previous = epochs[epochs.index(epoch) - 1]
        through = self._through(params, previous)
        if params["client"] != 0:
            what = _bulk_problem(epoch, f"waiting for the recorder to finish epoch {previous}")
            return await self._wait(es, params, context, lambda n: n > through, what), {}
        what = _bulk_problem(previous, f"waiting for all {through} documents of epochs up to it")
        problem = await self._wait(es, params, context, lambda n: n >= through, what)
        return await self._record_epoch(es, params, context, previous, problem)

    async def _await_took_files(self, params, context, epoch):
        """None once every client has filed its tooks of the epoch (its marker, filed_marker), or what was missing when
        request-timeout ran out. A client's documents are indexed, and seen by the recorder's wait for the count,
        before its bulk's answer reaches it and it files the took: without this wait the recorder could sum an epoch's
        tooks one bulk short (a test-mode ingest-changes race did, 2026-11-27). With several load-driver hosts the
        other hosts' clients file theirs there, so it does not wait: the report recounts the epochs from the metrics
        store (recount_bulk_tooks)."""
        if params.get(HOSTS_KEY, 1) > 1:
            return None
        abandoned, deadline = self._deadline(params)
        markers = [os.path.join(context.record_dir, filed_marker(params[RECORD_KEY], epoch, c)) for c in range(params["clients"])]
        while True:
            missing = [c for c, path in enumerate(markers) if not os.path.exists(path)]
            if not missing:
                for path in markers:  # they coordinate the race only: the record keeps the tooks
                    os.remove(path)
                return None
            if time.monotonic() >= deadline:
                self._abandoned.add(abandoned)
                return _bulk_problem(epoch, f"clients {missing} had not filed the tooks of their bulks when the wait ended")
            await asyncio.sleep(self.POLL_S)

    async def _record_epoch(self, es, params, context, epoch, problem=None):
        """(the problems so far and the took files', or None; the record's meta): the epoch's row once its took files
        are complete."""
        problem = "; ".join(filter(None, [problem, await self._await_took_files(params, context, epoch)])) or None
        await es.perform_request("POST", f"/{context.index}/_refresh")
        snapshot = await _snapshot(es, context)
        record = records.read(context.record_dir, params[RECORD_KEY], {})
        if "snapshot" not in record:
            raise RuntimeError(f"epoch {epoch}: no starting /_stats snapshot in {params['record']} (the index set-up did not run)")
        row = epoch_cost(epoch, record["snapshot"], snapshot, bulk_tooks(context.record_dir, params[RECORD_KEY], epoch))
        row.update(epoch_timing(context.record_dir, params[RECORD_KEY], epoch))
        record["epochs"] = [r for r in record["epochs"] if r["epoch"] != epoch] + [row]
        record["snapshot"] = snapshot
        LOG.info("cluster-metrics ingest epoch %s: %s", epoch, row)
        return problem, records.write(context.record_dir, params[RECORD_KEY], record)

    async def _finish(self, es, params, context):
        epoch = params["epochs"][-1]
        expected = self._through(params, epoch)
        what = _bulk_problem(epoch, f"waiting for all {expected} documents of the ingest")
        problem = await self._wait(es, params, context, lambda n: n >= expected, what)
        problem, meta = await self._record_epoch(es, params, context, epoch, problem)
        if params.get("restore-settings"):
            await es.perform_request("PUT", f"/{context.index}/_settings", body=params["restore-settings"])
        actual = await self._settled_count(es, params, context, expected)
        record = records.read(context.record_dir, params[RECORD_KEY])
        record["count"] = {"actual": actual, "expected": expected}
        records.add(meta, records.write(context.record_dir, params[RECORD_KEY], record))
        if actual != expected:
            problem = "; ".join(
                filter(None, [problem, f"index {context.index} holds {actual} documents, the ingested corpus has {expected}"])
            )
        return problem, meta

    async def _settled_count(self, es, params, context, expected):
        """The index's document count once every copy holds what its primary indexed: the wait before it counted the
        primaries, but a replica answers _count too and applies a bulk's documents just after its primary (another
        client's last bulk can still be on its way to a replica: 2S1R on 9.5.3 counted 1,979 of 2,000 once). A count
        below expected is read again, after a refresh, until it matches or request-timeout runs out (then it stands,
        a loss); a count above expected (a duplicate) stands at once."""
        _, deadline = self._deadline(params)
        while True:
            await es.perform_request("POST", f"/{context.index}/_refresh")
            actual = (await es.perform_request("GET", f"/{context.index}/_count")).body["count"]
            if actual >= expected or time.monotonic() >= deadline:
                return actual
            await asyncio.sleep(self.POLL_S)

    def __repr__(self):
        return "ingest-epochs"


def validate_ingest(params, clients, context):
    """Load-time check of an ingest: a positive bulk size (track parameters bulk_size, tuned_bulk_size), epochs of this
    race's corpora, and at most as many clients as an epoch has documents (each client holds a slice of every epoch)."""
    parameters.check_operation_value("bulk-size", params.get("bulk-size"), params.get("bulk-size-parameter", "bulk_size"))
    for epoch in params.get("epochs") or []:
        if str(epoch) not in context.epoch_docs:
            raise ValueError(f"epoch {epoch} is not among this race's corpora")
        if context.epoch_docs[str(epoch)] < clients:
            raise ValueError(
                f"{clients} bulk clients for epoch {epoch}'s {context.epoch_docs[str(epoch)]} documents: give at most that many"
            )
    if not params.get("epochs"):
        raise ValueError("an ingest needs at least one epoch")


def name_records(challenge_tasks):
    """Sets each ingest task's record (RECORD_KEY), in schedule order: an ingest's per-epoch cost goes to the record
    its task name's prefix names (records.ingest_record: "source-stored-ingest" -> ingest-source-stored.json); an
    epoch's own bulk and cost tasks (epoch-bulk, ingest-cost-epoch) go to the record of the ingest set up before them.
    So the challenge spells a task's name once, and its record follows."""
    current = records.ingest_record()
    for task in challenge_tasks:
        kind = task.operation.type
        if kind in ("ingest-epochs", "ingest-setup"):
            current = records.ingest_record(records.ingest_prefix(task.name))
        if kind in ("ingest-epochs", "ingest-setup", "epoch-bulk", "ingest-cost-epoch"):
            task.operation.params[RECORD_KEY] = current


# the ingests' parameters (runners/contracts/parameters.py collects each module's table); bulk size and clients of every ingest
PARAMETER_RULES = {
    "bulk_size": rules.integer(1),
    "bulk_clients": rules.integer(1),
    "tuned_bulk_size": rules.integer(1),
    "tuned_clients": rules.integer(1),
    "tuned_refresh_interval": rules.time_value,
    "tuned_translog_durability": rules.one_of("async", "request"),
    # ingest-changes: the seed's changes measured one at a time (each beside the baseline, in the vocabulary's order)
    "ingest_changes": rules.names(tuple(INGEST_CHANGES)),
}


OPERATIONS = {
    # an ingest in one task: the index set up afresh, every epoch with its per-epoch cost, the count checked
    "ingest-epochs": Operation(
        IngestEpochs,
        Need(
            "deletes and creates the index, waits for its health, indexes the corpus; at each epoch's end refreshes and "
            "reads index stats; counts the documents",
            ("monitor",),
            ("delete_index", "create_index", "view_index_metadata", "index", "monitor", "maintenance", "read"),
        ),
        IngestEpochsParamSource,
        validate_ingest,
    ),
    # the index set up alone, for epochs that come in tasks of their own (the live challenge)
    "ingest-setup": Operation(
        IngestSetup,
        Need(
            "deletes and creates the index, waits for its health, reads its stats and settings",
            ("monitor",),
            ("delete_index", "create_index", "monitor", "view_index_metadata"),
        ),
        FreshIndexBodyParamSource,
    ),
    # one epoch at a time (the live challenge: the last epoch bulk-loaded while queries run)
    "epoch-bulk": Operation(EpochBulk, Need("indexes the corpus", index=("index",)), EpochBulkParamSource, validate_bulk),
    "ingest-cost-epoch": Operation(IngestCostEpoch, Need("reads index stats", index=("monitor",))),
}
