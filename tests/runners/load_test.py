"""The load schedule: a calibration task records its coverages, each step runs at a fraction of that rate."""

import asyncio
import json
from types import SimpleNamespace

import pytest

from runners.contracts import records
from runners.contracts.context import CONTEXT_KEY
from runners.studies import load
from runners.studies.coverage import Coverage, validate_coverage
from tests.runners.coverage_test import answers, source
from tests.runners.stub_client import StubClient


def step_task(context, fraction, clients=4, rate_of="coverage-D_td-msearch-load-calibration"):
    params = {CONTEXT_KEY: context.as_param(), "rate-of": rate_of, "rate-fraction": fraction}
    return SimpleNamespace(name="coverage-D_td-msearch-load-50pct", clients=clients, operation=SimpleNamespace(params=params))


def test_a_calibration_coverage_records_its_duration_and_a_step_runs_at_its_fraction(context, tmp_path):
    context = context.__class__(**{**context.__dict__, "record_dir": str(tmp_path)})
    params = source(context, "msearch", name="coverage-D_td-msearch-load-calibration", **{"record-rate": True, "warmups": 0})
    for _ in range(3):
        p = params.params()
        result = asyncio.run(Coverage()(StubClient(answers(context, "msearch", p["epoch"])), p))
        assert result["success"]
    rate = load.calibrated_rate(str(tmp_path), "coverage-D_td-msearch-load-calibration")
    assert rate > 0
    scheduler = load.RelativeRateScheduler(step_task(context, 0.5, clients=4))
    assert scheduler.rate == pytest.approx(rate * 0.5)
    # 4 clients share the rate: each waits 4 / rate on average between its own coverages, at random (Poisson)
    # (exponential gaps: the mean of n has a relative standard error 1/sqrt(n), 0.7% at 20,000; 5% is 7 of them)
    gaps = []
    t = 0.0
    for _ in range(20000):
        nxt = scheduler.next(t)
        gaps.append(nxt - t)
        t = nxt
    assert sum(gaps) / len(gaps) == pytest.approx(4 / (rate * 0.5), rel=0.05) and min(gaps) > 0
    first = [load.RelativeRateScheduler(step_task(context, 0.5)).next(0.0) for _ in range(3)]
    assert len(set(first)) == 3  # each client draws its own arrivals: no lock-step
    recorded = load.read_steps(str(tmp_path))["coverage-D_td-msearch-load-50pct"]
    assert recorded["target_per_s"] == pytest.approx(rate * 0.5) and recorded["clients"] == 4


def test_a_calibration_records_only_its_measured_coverages(context, tmp_path):
    """The task's 2 warmup coverages are not calibration samples: 5 coverages record 3 durations."""
    context = context.__class__(**{**context.__dict__, "record_dir": str(tmp_path)})
    params = source(context, "msearch", name="cal", **{"record-rate": True, "warmups": 2})
    for _ in range(5):
        p = params.params()
        assert asyncio.run(Coverage()(StubClient(answers(context, "msearch", p["epoch"])), p))["success"]
    lines = (tmp_path / load.calibration_record("cal")).read_text().splitlines()
    assert len(lines) == 3


def test_a_wrong_answer_is_not_a_calibration_sample(context, tmp_path):
    context = context.__class__(**{**context.__dict__, "record_dir": str(tmp_path)})
    wrong = answers(context, "msearch")
    wrong[0][1]["responses"][0]["hits"]["total"]["value"] += 1
    params = source(context, "msearch", name="cal", **{"record-rate": True}).params()
    assert asyncio.run(Coverage()(StubClient(wrong), params))["success"] is False
    assert load.calibrated_rate(str(tmp_path), "cal") is None


def test_a_step_without_its_calibration_is_refused(context, tmp_path):
    context = context.__class__(**{**context.__dict__, "record_dir": str(tmp_path)})
    with pytest.raises(load.LoadError, match="no calibration of coverage-D_td-msearch-load-calibration"):
        load.RelativeRateScheduler(step_task(context, 0.5))


@pytest.mark.parametrize("fraction", [0, -1, "half", True])
def test_bad_fractions_are_named_at_load(context, fraction):
    with pytest.raises(ValueError, match="rate-fraction must be a positive number"):
        validate_coverage({"variant": "D_td", "transport": "msearch", "rate-of": "x", "rate-fraction": fraction}, 1, context)


def test_calibration_and_step_records_travel_as_sample_meta(context, tmp_path):
    """With a metrics store the report rebuilds the record folder from the samples' meta: the calibration's durations
    come with its coverages, the step's record (made by the scheduler, which returns nothing) with the step's first
    coverage in each process, and the rebuilt folder gives the same rate and step."""
    context = context.__class__(**{**context.__dict__, "record_dir": str(tmp_path / "host")})
    calibration = source(context, "msearch", name="coverage-D_td-msearch-load-calibration", **{"record-rate": True, "warmups": 0})
    samples = []
    for _ in range(3):
        p = calibration.params()
        samples.append(asyncio.run(Coverage()(StubClient(answers(context, "msearch", p["epoch"])), p)))
    load.RelativeRateScheduler(step_task(context, 0.5))
    step = source(context, "msearch", name="coverage-D_td-msearch-load-50pct")
    for _ in range(2):
        p = step.params()
        samples.append(asyncio.run(Coverage()(StubClient(answers(context, "msearch", p["epoch"])), p)))
    carried = [op["append"] for s in samples for op in json.loads(s.get(records.META_KEY, "[]"))]
    assert carried.count(records.LOAD_STEPS) == 1  # once, not with every coverage
    assert carried.count(records.VALIDATION) == 5 and carried.count(load.calibration_record(calibration.params()["name"])) == 3

    rebuilt = str(tmp_path / "rebuilt")
    records.replay(rebuilt, [s[records.META_KEY] for s in samples if records.META_KEY in s])
    name = "coverage-D_td-msearch-load-calibration"
    assert load.calibrated_rate(rebuilt, name) == load.calibrated_rate(context.record_dir, name) > 0
    assert load.read_steps(rebuilt) == load.read_steps(context.record_dir) != {}


class SharedCluster:
    """The part of a cluster the calibration share uses, shared by every client of every host: index creation with
    an alias, writes and reads through the alias (require_alias: a write after the index is gone fails, as
    Elasticsearch's does), a count of acknowledgements, and the index's deletion."""

    def __init__(self, unstarted=0):
        self.indices = {}  # index -> {"alias": name, "docs": {id: source}}
        self.created, self.deleted = 0, 0
        self.unstarted = unstarted  # reads of a new index's alias answered 503 (its shard not started yet)

    def client(self):
        return SharedClusterClient(self)

    def by_alias(self, alias):
        return next((docs for docs in self.indices.values() if docs["alias"] == alias), None)


class SharedClusterClient(StubClient):
    def __init__(self, cluster):
        super().__init__([])
        self.cluster = cluster

    async def perform_request(self, method, path, params=None, body=None, headers=None):
        self.sent.append({"method": method, "path": path, "params": params, "body": body})
        await asyncio.sleep(0)  # another client may run meanwhile, as on a real cluster
        parts = path.strip("/").split("/")
        if method == "PUT" and len(parts) == 1:
            if parts[0] in self.cluster.indices:
                self.answers = [(400, {"error": {"type": "resource_already_exists_exception"}})]
            else:
                self.cluster.indices[parts[0]] = {"alias": next(iter(body["aliases"])), "docs": {}}
                self.cluster.created += 1
                self.answers = [(200, {"acknowledged": True})]
        elif method == "DELETE":
            self.answers = [(200, {"acknowledged": True}) if self.cluster.indices.pop(parts[0], None) else (404, {"error": {}})]
            self.cluster.deleted += 1
        else:
            index = self.cluster.by_alias(parts[0])
            if index is None:
                assert (
                    method == "GET" or params.get("require_alias") == "true" or parts[1] == "_count"
                ), path  # writes only through the alias
                self.answers = [(404, {"error": {"type": "index_not_found_exception"}})]
            elif method == "GET" and self.cluster.unstarted:
                self.cluster.unstarted -= 1
                self.answers = [(503, {"error": {"type": "no_shard_available_action_exception"}})]
            elif method == "GET":
                doc = index["docs"].get(parts[2])
                self.answers = [(200, {"_source": doc}) if doc else (404, {"found": False})]
            elif parts[1] == "_search":
                task, hosts = body["query"]["term"]["ack-of.keyword"], {}
                for doc in index["docs"].values():
                    if doc.get("ack-of") == task:
                        hosts[doc["host"]] = hosts.get(doc["host"], 0) + 1
                buckets = [{"key": host, "doc_count": n} for host, n in hosts.items()]
                self.answers = [(200, {"aggregations": {"host": {"buckets": buckets}}})]
            else:
                doc_id = parts[2] if len(parts) > 2 else f"ack-{len(index['docs'])}"
                index["docs"][doc_id] = body
                self.answers = [(201, {"result": "created"})]
        return await super().perform_request(method, path, params, body, headers)


CALIBRATION = "coverage-D_td-msearch-load-calibration"
RACE_ID = "5f1c-race"


def host_context(context, tmp_path, host, seconds=None):
    """A load-driver host's view of the race: its own record folder of the race (its disk), with the calibration
    there when it ran it."""
    record_dir = tmp_path / host / RACE_ID / records.RECORD_DIR
    record_dir.mkdir(parents=True)
    if seconds:
        for s in seconds:
            records.append_line(str(record_dir), load.calibration_record(CALIBRATION), f"{s:.6f}")
    return context.__class__(**{**context.__dict__, "record_dir": str(record_dir)})


def share_params(context, clients, hosts=2, timeout=5):
    return {CONTEXT_KEY: context.as_param(), "rate-of": CALIBRATION, "clients": clients, load.HOSTS_KEY: hosts, "share-timeout": timeout}


async def share_all(cluster, calls):
    return await asyncio.gather(*(load.ShareCalibration()(cluster.client(), params) for params in calls))


def test_a_calibration_reaches_the_host_that_did_not_run_it_and_the_share_index_is_gone(context, tmp_path):
    measured = [0.05, 0.06, 0.04]
    ran_it, other = host_context(context, tmp_path, "ld-1", measured), host_context(context, tmp_path, "ld-2")
    cluster = SharedCluster()
    # Rally's split: clients 0 and 1 on the host that ran the calibration, 2 and 3 on the other
    calls = [share_params(ran_it, 4)] * 2 + [share_params(other, 4)] * 2
    results = asyncio.run(share_all(cluster, calls))
    assert all(r["success"] for r in results), results
    assert load.calibration_seconds(other.record_dir, CALIBRATION) == measured
    assert load.calibrated_rate(other.record_dir, CALIBRATION) == load.calibrated_rate(ran_it.record_dir, CALIBRATION)
    assert cluster.created == 1 and cluster.indices == {}  # one client made it, and it deleted it after all four took it


def test_a_share_index_whose_shard_has_not_started_is_asked_again(context, tmp_path):
    measured = [0.05, 0.07]
    ran_it, other = host_context(context, tmp_path, "ld-1", measured), host_context(context, tmp_path, "ld-2")
    cluster = SharedCluster(unstarted=3)
    results = asyncio.run(share_all(cluster, [share_params(ran_it, 2), share_params(other, 2)]))
    assert all(r["success"] for r in results) and cluster.unstarted == 0
    assert load.calibration_seconds(other.record_dir, CALIBRATION) == measured and cluster.indices == {}


def test_on_one_host_nothing_is_sent(context, tmp_path):
    ran_it = host_context(context, tmp_path, "ld-1", [0.05])
    client = SharedCluster().client()
    result = asyncio.run(load.ShareCalibration()(client, share_params(ran_it, 4, hosts=1)))
    # Rally takes a sample's service time from its client's request marks: no request, so the runner marks its own
    assert result["success"] and client.sent == [] and client.marks == ["start", "end"]


def test_a_host_without_the_calibration_on_one_host_is_a_failed_sample_naming_it(context, tmp_path):
    result = asyncio.run(
        load.ShareCalibration()(SharedCluster().client(), share_params(host_context(context, tmp_path, "ld-1"), 1, hosts=1))
    )
    assert not result["success"] and f"no calibration on load-driver host {load.this_host()}" in result["error-description"]


def test_a_client_that_never_takes_it_ends_the_race_naming_who_did_and_the_index_is_deleted(context, tmp_path):
    ran_it = host_context(context, tmp_path, "ld-1", [0.05])
    cluster = SharedCluster()
    with pytest.raises(load.ShareError) as refused:  # the second client (another host's) never came
        asyncio.run(share_all(cluster, [share_params(ran_it, 2, timeout=0.5)]))
    assert f"1 of 2 clients took the calibration within 0.5 s, on {load.this_host()} (1)" in str(refused.value)
    assert "load-driver host is gone or its esrallyd stopped" in str(refused.value)
    assert cluster.created == 1 and cluster.indices == {}


def test_a_calibration_that_never_comes_ends_the_race_naming_the_waiting_host(context, tmp_path):
    cluster = SharedCluster()
    with pytest.raises(load.ShareError, match=f"did not reach load-driver host {load.this_host()} within 0.5 s"):
        asyncio.run(share_all(cluster, [share_params(host_context(context, tmp_path, "ld-2"), 2, timeout=0.5)]))
    assert cluster.created == 0 and cluster.indices == {}
    assert load.calibration_seconds(str(tmp_path / "ld-2" / RACE_ID / records.RECORD_DIR), CALIBRATION) is None


def test_a_sharing_client_cancelled_mid_wait_deletes_the_index(context, tmp_path):
    """Rally cancels a task's clients when the race ends early (another host died): the index goes with them."""
    ran_it = host_context(context, tmp_path, "ld-1", [0.05])
    cluster = SharedCluster()

    async def cancelled():
        task = asyncio.ensure_future(load.ShareCalibration()(cluster.client(), share_params(ran_it, 2, timeout=60)))
        while not cluster.indices:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancelled())
    assert cluster.created == 1 and cluster.indices == {}


def test_a_share_task_must_name_its_calibration_and_the_tasks_clients(context):
    load.validate_share({"rate-of": CALIBRATION, "clients": 4}, 4, context)
    with pytest.raises(ValueError, match="rate-of must name the calibration task"):
        load.validate_share({"clients": 4}, 4, context)
    with pytest.raises(ValueError, match=r"its clients parameter \(2\) must be the task's clients \(4\)"):
        load.validate_share({"rate-of": CALIBRATION, "clients": 2}, 4, context)
