"""Coverage under load: a schedule at a fraction of the rate one client achieved earlier in the same race.

Rally fixes a task's target-throughput when the track loads, before anything is measured. The load challenge wants
its steps as fractions of the rate a single client reaches for that cell on this cluster, so each cell starts with a
calibration task (one client, back to back) whose coverages record their own duration; each step task then runs at
fraction x (1 / median calibration coverage) coverages per second, spread over its clients. Because every step has a schedule, Rally's latency includes the time a coverage waited behind the previous
ones (service time does not). Arrivals are a Poisson process (exponential gaps, as in Rally's own "poisson" schedule):
independent dashboard users, and no lock-step of the clients (a deterministic schedule starts every client at the
same instant, so at any rate all of them would always collide).
"""

import asyncio
import itertools
import json
import os
import random
import statistics
import time
import uuid
from pathlib import Path

import elasticsearch

from runners.contracts import records, rules
from runners.contracts.context import RaceContext
from runners.contracts.queries import TRANSPORTS, VARIANTS
from runners.contracts.registry import Need, Operation
from runners.shared import results
from runners.shared.hosts import HOSTS_KEY, this_host
from runners.shared.restore import JSON, SMALL_INDEX_SETTINGS, body_of

SCHEDULER = "cluster-metrics-relative-rate"
SHARE_PREFIX = "cluster-metrics-calibration-"  # + race id: the index through which a calibration reaches other hosts
SHARE_TIMEOUT_S = 120  # default of share-calibration's share-timeout: how long a host waits for the others
_INSTANCES = itertools.count()  # each client's scheduler draws its own arrival sequence
_UNSENT_STEPS = {}  # step task -> its record's sample meta, until the step's first sample in this process carries it


def calibration_record(task_name):
    return os.path.join(records.RATE_DIR, f"{task_name}.txt")


def record_duration(params, seconds):
    """Called by the coverage runner for a calibration task: one line per measured coverage; returns its sample meta."""
    return records.append_line(RaceContext.of(params).record_dir, calibration_record(params["name"]), f"{seconds:.6f}")


def step_meta(task_name):
    """The sample meta of a step's record, for the step's first sample in this process (the scheduler, which made it,
    returns no meta of its own); else nothing."""
    return _UNSENT_STEPS.pop(task_name, {})


def calibration_seconds(record_dir, task_name):
    """The calibration's coverage seconds as this host holds them, None when it holds none."""
    path = os.path.join(record_dir, calibration_record(task_name))
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        return [float(line) for line in f if line.strip()] or None


def calibrated_rate(record_dir, task_name):
    """Coverages per second of one client, back to back: 1 / the median coverage of the calibration task."""
    seconds = calibration_seconds(record_dir, task_name)
    return 1.0 / statistics.median(seconds) if seconds else None


def share_index(race_id, calibration):
    """The index through which one cell's calibration reaches the other hosts (lower case, as index names must be)."""
    return f"{SHARE_PREFIX}{race_id}-{calibration}".lower()


def share_alias(index):
    """The share index's alias. Every write goes through it with require_alias: a late one after the index is gone
    fails, where a write to the index itself would create it again and leave it behind."""
    return f"{index}-shared"


class ShareCalibration:
    """share-calibration (after each coverage-load calibration, with the step's clients: Rally puts the first half of
    a race's clients on the first load-driver host, the rest on the next): the calibration on every host that runs
    step clients. One client ran the calibration, on one host; each step's scheduler reads it from its own host's
    record folder (RelativeRateScheduler), and Rally gives hosts no way to talk. So with several hosts the calibration
    travels through the target cluster: a client that holds it creates a small index of this race and cell
    (share_index, one document: the seconds), every client without it copies it to its host, every client acknowledges,
    and the creator deletes the index once all have, or in a finally when anything else happens (only a worker process
    that dies without running it, kill -9, leaves the index). With one host nothing is sent. Measures nothing; returns
    one sample per client naming the host its calibration came from. A calibration that does not arrive, or a client
    that never takes it, within share-timeout ends the race (ShareError, naming the hosts): a host is gone, and the
    steps could not run on it."""

    async def __call__(self, es, params):
        es.on_request_start()  # Rally times an operation by its client requests, and on one host this one sends none
        try:
            return await self._share(es, params)
        finally:
            es.on_request_end()

    async def _share(self, es, params):
        context = RaceContext.of(params)
        task, host = params["rate-of"], this_host()
        if params.get(HOSTS_KEY, 1) <= 1:  # one host: the calibration ran here, or nowhere
            if calibration_seconds(context.record_dir, task) is None:
                return results.failed(
                    f"{task}: no calibration on load-driver host {host} (the calibration task must run, and succeed, first)"
                )
            return {"weight": 1, "unit": "ops", "success": True, "calibration-from": host}
        share = Share(es, Path(context.record_dir).parent.name, task)
        timeout = params.get("share-timeout", SHARE_TIMEOUT_S)
        deadline = time.monotonic() + timeout
        created = False
        try:
            seconds = calibration_seconds(context.record_dir, task)
            if seconds is not None:
                created = await share.create()
            if created:
                await share.put(task, {"seconds": seconds, "host": host})
                source = host
            else:
                found = await share.wait_for(deadline)
                if found is None:
                    raise ShareError(
                        f"{task}: the calibration did not reach load-driver host {host} within {timeout} s: is the "
                        f"host that ran it (the first of --load-driver-hosts) still up, its esrallyd running? (it shares "
                        f"it through index {share.index}; track parameter load_share_timeout)"
                    )
                if seconds is None:
                    _store_locally(context.record_dir, task, found["seconds"])
                source = found["host"]
            await share.put(f"ack-{uuid.uuid4().hex}", {"ack-of": task, "host": host})  # its own id: a retried PUT counts once
            if created:
                acks = await share.acks(params["clients"], deadline)
                if sum(acks.values()) < params["clients"]:
                    took = ", ".join(f"{name} ({n})" for name, n in sorted(acks.items()))
                    raise ShareError(
                        f"{task}: {sum(acks.values())} of {params['clients']} clients took the calibration within {timeout} s, "
                        f"on {took}: the others' load-driver host is gone or its esrallyd stopped (track parameter "
                        "load_share_timeout)"
                    )
            return {"weight": 1, "unit": "ops", "success": True, "calibration-from": source}
        finally:
            if created:
                await share.delete()

    def __repr__(self):
        return "share-calibration"


# a shard that is not yet started answers 503, a busy node 429: the document is not there yet, asked again
_NOT_YET = (404, 429, 503)


class Share:
    """One cell's share index on the target cluster, as ShareCalibration uses it."""

    def __init__(self, es, race_id, calibration):
        self.es, self.calibration = es, calibration
        self.index = share_index(race_id, calibration)
        self.alias = share_alias(self.index)

    async def create(self):
        """True when this client made the index (with its alias, in one request); False when another had."""
        body = {"settings": SMALL_INDEX_SETTINGS, "aliases": {self.alias: {}}}
        try:
            await self.es.perform_request("PUT", f"/{self.index}", body=body, headers=JSON)
            return True
        except elasticsearch.BadRequestError as e:
            if "resource_already_exists_exception" in str(e.body):
                return False
            raise

    async def put(self, doc_id, body):
        await self.es.perform_request(
            "PUT", f"/{self.alias}/_doc/{doc_id}", params={"refresh": "true", "require_alias": "true"}, body=body, headers=JSON
        )

    async def wait_for(self, deadline):
        """The calibration's document, once it is there; None at the deadline."""
        while time.monotonic() < deadline:
            try:
                return body_of(await self.es.perform_request("GET", f"/{self.alias}/_doc/{self.calibration}", headers=JSON))["_source"]
            except elasticsearch.ApiError as e:
                if e.status_code not in _NOT_YET:
                    raise
            await asyncio.sleep(0.2)
        return None

    async def acks(self, clients, deadline):
        """{host: its clients that acknowledged the calibration}, once all clients have or at the deadline."""
        body = {
            "size": 0,
            "query": {"term": {"ack-of.keyword": self.calibration}},
            "aggs": {"host": {"terms": {"field": "host.keyword", "size": 1000}}},
        }
        while True:
            answer = body_of(await self.es.perform_request("POST", f"/{self.alias}/_search", body=body, headers=JSON))
            acks = {bucket["key"]: bucket["doc_count"] for bucket in answer["aggregations"]["host"]["buckets"]}
            if sum(acks.values()) >= clients or time.monotonic() >= deadline:
                return acks
            await asyncio.sleep(0.2)

    async def delete(self):
        try:
            await self.es.perform_request("DELETE", f"/{self.index}", headers=JSON)
        except elasticsearch.NotFoundError:
            pass


def _store_locally(record_dir, task, seconds):
    """The calibration in this host's record folder, as its calibration task would have written it (whole, at once:
    this host's other clients may write the same file). Not a record operation: the store holds it already, from the
    calibration's own samples."""
    records.replace_text(record_dir, calibration_record(task), "".join(f"{s:.6f}\n" for s in seconds))


def validate_share(params, clients, context):
    """Load time: it names the calibration it shares, and its clients are the task's (the creator waits for each)."""
    if not isinstance(params.get("rate-of"), str) or not params["rate-of"]:
        raise ValueError("rate-of must name the calibration task of the cell")
    if params.get("clients") != clients:
        raise ValueError(f"its clients parameter ({params.get('clients')!r}) must be the task's clients ({clients})")


class RelativeRateScheduler:
    """Rally scheduler (non-simple: it reads the task itself): Poisson arrivals at rate-fraction x the rate the task
    named by rate-of measured, divided over the task's clients (their sum is a Poisson process at the full rate). Registered as SCHEDULER; a step task says
    "schedule": "cluster-metrics-relative-rate" and carries rate-of and rate-fraction in its operation."""

    def __init__(self, task):
        params = task.operation.params
        context = RaceContext.of(params)
        base = calibrated_rate(context.record_dir, params["rate-of"])
        if base is None:
            raise LoadError(
                f"task {task.name}: no calibration of {params['rate-of']} in this race (the calibration "
                "task must run, and succeed, before the steps)"
            )
        self.rate = base * params["rate-fraction"]
        self.mean_wait = task.clients / self.rate
        self.random = random.Random(f"{task.name}/{os.getpid()}/{next(_INSTANCES)}")
        step = {
            "task": task.name,
            "calibrated_per_s": base,
            "fraction": params["rate-fraction"],
            "target_per_s": self.rate,
            "clients": task.clients,
        }
        _UNSENT_STEPS[task.name] = records.append_line(context.record_dir, records.LOAD_STEPS, json.dumps(step, sort_keys=True))

    def before_request(self, now):
        pass

    def after_request(self, now, weight, unit, request_meta_data):
        pass

    def next(self, current):
        return current + self.random.expovariate(1 / self.mean_wait)

    def __str__(self):
        return f"relative rate: {self.rate:.3f} coverages/s"


class LoadError(Exception):
    pass


class ShareError(Exception):
    """A calibration that did not reach every host that runs step clients: a host is gone, and Rally itself would
    notice only when thespian's convention times it out (about 22 minutes). Raised, so that Rally ends the race."""


def read_steps(record_dir):
    """{step task: its record} (each client's scheduler writes the same record; the last one wins)."""
    path = os.path.join(record_dir, records.LOAD_STEPS)
    if not os.path.isfile(path):
        return {}
    with open(path) as f:
        return {r["task"]: r for r in map(json.loads, filter(str.strip, f))}


def validate_step(params):
    """Load time: a step names its calibration task and a positive fraction of its rate."""
    fraction = params.get("rate-fraction")
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or fraction <= 0:
        raise ValueError(f"rate-fraction must be a positive number, got {fraction!r} (track parameter load_steps)")
    if not isinstance(params.get("rate-of"), str) or not params["rate-of"]:
        raise ValueError("rate-of must name the calibration task of the cell")


# load: a target rate and clients for the study's coverages, the load steps and redline, the live challenge
PARAMETER_RULES = {
    "target_throughput": rules.positive_number_or_none,
    "include_target_throughput": rules.boolean,
    "coverage_clients": rules.integer(1),
    "load_variants": rules.names(tuple(VARIANTS)),
    "load_transports": rules.names(TRANSPORTS),
    "load_steps": rules.list_of(rules.integer(1, 10000), "percents of the calibrated rate (1 to 10000)"),
    "load_clients": rules.integer(1),
    "load_iterations": rules.integer(1),
    "load_calibration_iterations": rules.integer(1),
    # several load-driver hosts: how long a host waits for the others to take a calibration
    "load_share_timeout": rules.integer(1),
    "redline_latency_ms": rules.positive_number,
    "live_variant": rules.one_of(*VARIANTS),
    "live_transport": rules.one_of(*TRANSPORTS),
    "live_target_throughput": rules.positive_number,
    "live_iterations": rules.integer(1),
}


def set_load_driver_hosts(tasks, race_id, hosts):
    """At load, with several load-driver hosts: a share-calibration task learns how many, and works through a small
    index of the race's own (ShareCalibration), which its privileges name; an ingest-epochs task learns it too (its
    recorder then does not wait for the other hosts' clients' took files, which are filed on their hosts)."""
    count = len(set(hosts or ["localhost"]))
    for task in tasks:
        if task.operation.type == "share-calibration" and count > 1:
            task.operation.params.update({HOSTS_KEY: count, "index": share_index(race_id, task.operation.params["rate-of"])})
        elif task.operation.type == "ingest-epochs" and count > 1:
            task.operation.params[HOSTS_KEY] = count


OPERATIONS = {
    # coverage-load on several load-driver hosts: the calibration reaches every host that runs step clients
    "share-calibration": Operation(
        ShareCalibration,
        Need(
            "hands a load calibration to the other load-driver hosts through an index of the race's own, deleted when "
            "every client has it (several load-driver hosts only)",
            index=("create_index", "manage", "read", "write", "delete_index"),
        ),
        validate=validate_share,
        reads_corpus=False,
    ),
}
