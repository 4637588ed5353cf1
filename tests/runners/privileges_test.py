"""The privileges operations need (runners/studies/privileges.py) and the check that asks the cluster for them, with a stub
client (seconds; each challenge's sum through the track processor in processor_challenges_test.py, the check through the secured
stand-in in tests/test_secured.py)."""

import asyncio

import pytest

from runners import listings
from runners.contracts import cells, records
from runners.contracts.context import CONTEXT_KEY, RaceContext
from runners.operations import OPERATIONS
from runners.shared.restore import NOTES_INDEX
from runners.studies import privileges, scope
from tests.runners.stub_client import StubClient

CORPUS_INDEX = "cluster-metrics"


def test_a_challenges_needs_are_the_sum_of_its_operations_and_rallys_own():
    needs = privileges.needs([("verify-corpus", {}, CORPUS_INDEX), ("breaker-floor", {}, CORPUS_INDEX)], OPERATIONS)
    assert needs["cluster"] == ["manage", "monitor"]  # monitor: Rally's own version check and telemetry
    assert needs["index"] == {CORPUS_INDEX: ["read", "view_index_metadata"], NOTES_INDEX: ["create_index", "read", "write"]}
    assert needs["needed-by"]["cluster:monitor"] == ["rally", "breaker-floor"]
    assert needs["why"]["breaker-floor"].startswith("bisects the request breaker's limit") and set(needs["why"]) == {
        "rally",
        "verify-corpus",
        "breaker-floor",
    }


def test_a_search_of_a_remote_index_needs_its_index_privileges_there_and_cross_cluster_search_here():
    params = {"remote": "metrics-remote", scope.REMOTE_KEY: {"alias": "metrics-remote"}}
    needs = privileges.needs([("coverage", params, CORPUS_INDEX)], OPERATIONS)
    assert CORPUS_INDEX not in needs["index"] and "manage" in needs["cluster"]
    assert needs["needed-by"]["cluster:manage"] == ["coverage (cross-cluster search)"]


def test_an_operation_without_an_entry_is_named():
    with pytest.raises(KeyError, match="operation type 'new-operation' declares no need"):
        privileges.needs([("new-operation", {}, CORPUS_INDEX)], OPERATIONS)


PARAMS = {
    "challenge": "aggregation-memory",
    "cluster": ["manage", "monitor"],
    "index": {CORPUS_INDEX: ["read"], NOTES_INDEX: ["create_index", "read", "write"]},
    "needed-by": {
        "cluster:manage": ["breaker-floor"],
        "cluster:monitor": ["rally"],
        f"index:{NOTES_INDEX}:write": ["breaker-floor"],
    },
    "why": {"breaker-floor": "bisects the request breaker's limit, a persistent cluster setting", "rally": "Rally's version check"},
}


def answer(manage=True, notes_write=True):
    return {
        "username": "restricted",
        "has_all_requested": manage and notes_write,
        "cluster": {"manage": manage, "monitor": True},
        "index": {CORPUS_INDEX: {"read": True}, NOTES_INDEX: {"create_index": True, "read": True, "write": notes_write}},
        "application": {},
    }


def test_the_check_asks_for_exactly_the_challenges_privileges_and_passes_when_all_are_held():
    client = StubClient([(200, answer())])
    result = asyncio.run(privileges.CheckPrivileges()(client, dict(PARAMS)))
    assert result["success"] and result["security"] and result["user"] == "restricted"
    sent = client.sent[0]
    assert (sent["method"], sent["path"]) == ("POST", "/_security/user/_has_privileges")
    assert sent["body"] == {
        "cluster": ["manage", "monitor"],
        "index": [
            {"names": [CORPUS_INDEX], "privileges": ["read"]},
            {"names": [NOTES_INDEX], "privileges": ["create_index", "read", "write"]},
        ],
    }


@pytest.mark.parametrize("status, body", [(200, answer()), (400, {"error": {"reason": "no handler found for uri"}})])
def test_the_check_records_the_challenges_cells_first_in_its_files_and_its_sample(tmp_path, status, body):
    """The race's cells (runners/contracts/cells.py) are written by its first task, with or without security, and ride on its
    sample's meta, so that a report from a metrics store has them too."""
    recorded = {"coverage-D_td-serial-rtt-50ms": {"variant": "D_td", "transport": "serial", "rtt-ms": 50}}
    context = RaceContext.records_only(str(tmp_path)).as_param()
    params = {**PARAMS, cells.CELLS_KEY: recorded, CONTEXT_KEY: context}
    result = asyncio.run(privileges.CheckPrivileges()(StubClient([(status, body), *NODE_ANSWERS]), params))
    assert result["success"] and records.read(str(tmp_path), records.CELLS) == recorded
    rebuilt = tmp_path / "rebuilt"
    records.replay(str(rebuilt), [result[records.META_KEY]])
    assert records.read(str(rebuilt), records.CELLS) == recorded
    assert records.read(str(rebuilt), records.CLUSTER_FACTS) == records.read(str(tmp_path), records.CLUSTER_FACTS)


# a node's answers to the facts' three GETs (_nodes/jvm,os, _nodes/stats/jvm, _cluster/settings), as 8.17.2 gives them
NODE_ANSWERS = [
    (
        200,
        {
            "nodes": {
                "n1": {
                    "name": "node-1",
                    "version": "8.17.2",
                    "build_hash": "747663ddda3421467150de0e4301e8d4bc636b0c",
                    "roles": ["master", "data"],
                    "jvm": {
                        "vm_vendor": "Debian",
                        "version": "17.0.13",
                        "start_time_in_millis": 1_700_000_000_000,
                        "mem": {"heap_max_in_bytes": 1 << 30},
                    },
                    "os": {"allocated_processors": 2},
                }
            }
        },
    ),
    (200, {"nodes": {"n1": {"jvm": {"uptime_in_millis": 95_000}}}}),
    (200, {"persistent": {"search.max_buckets": "70000"}, "transient": {}}),
]


def test_the_check_records_what_the_race_ran_on_after_the_privileges_passed(tmp_path):
    """After the check (so that a missing monitor is named by it): each node's version, build, JVM, heap, processors,
    start time and uptime, and the cluster's explicit settings, which a history reads to say what changed."""
    params = {**PARAMS, CONTEXT_KEY: RaceContext.records_only(str(tmp_path)).as_param()}
    client = StubClient([(200, answer()), *NODE_ANSWERS])
    asyncio.run(privileges.CheckPrivileges()(client, params))
    assert [r["path"] for r in client.sent] == [
        "/_security/user/_has_privileges",
        "/_nodes/jvm,os",
        "/_nodes/stats/jvm",
        "/_cluster/settings",
    ]
    facts = records.read(str(tmp_path), records.CLUSTER_FACTS)
    assert facts["nodes"]["n1"] == {
        "name": "node-1",
        "version": "8.17.2",
        "build-hash": "747663ddda3421467150de0e4301e8d4bc636b0c",
        "jvm": "Debian 17.0.13",
        "heap-max-bytes": 1 << 30,
        "start-time-ms": 1_700_000_000_000,
        "uptime-ms": 95_000,
        "allocated-processors": 2,
        "roles": ["data", "master"],
    }
    assert facts["settings"] == {"persistent": {"search.max_buckets": "70000"}, "transient": {}}
    assert privileges.OPERATIONS["check-privileges"].need.cluster == ("monitor",)


def test_a_missing_privilege_is_named_with_what_needs_it_and_nothing_else_is_sent():
    client = StubClient([(200, answer(manage=False, notes_write=False))])
    with pytest.raises(privileges.PrivilegeError) as refused:
        asyncio.run(privileges.CheckPrivileges()(client, dict(PARAMS)))
    message = str(refused.value)
    assert "Challenge [aggregation-memory]" in message and "user [restricted]" in message
    assert "cluster privilege manage (breaker-floor: bisects the request breaker's limit" in message
    assert f"index privilege write on {NOTES_INDEX} (breaker-floor" in message
    assert "monitor" not in message.split("lacks")[1].split("Nothing")[0]  # only what is missing
    assert "Nothing was changed on the cluster" in message and len(client.sent) == 1


def test_bad_credentials_are_named_as_such():
    body = {
        "error": {
            "type": "security_exception",
            "reason": "unable to authenticate user [elastic] for REST request [/_security/user/_has_privileges]",
        },
        "status": 401,
    }
    with pytest.raises(privileges.PrivilegeError, match="bad credentials.*basic_auth_user.*api_key"):
        asyncio.run(privileges.CheckPrivileges()(StubClient([(401, body)]), dict(PARAMS)))


def test_a_cluster_without_security_allows_everything():
    body = {"error": "no handler found for uri [/_security/user/_has_privileges] and method [POST]"}
    result = asyncio.run(privileges.CheckPrivileges()(StubClient([(400, body)]), dict(PARAMS)))
    assert result["success"] and result["security"] is False


@pytest.mark.parametrize(
    "status,body",
    [
        (429, {"error": {"type": "es_rejected_execution_exception", "reason": "rejected"}}),
        (500, {"error": {"type": "x", "reason": "boom"}}),
    ],
)
def test_a_check_that_gets_no_answer_is_no_pass(status, body):
    with pytest.raises(privileges.PrivilegeError, match=f"did not say which privileges the user has \\(HTTP {status}"):
        asyncio.run(privileges.CheckPrivileges()(StubClient([(status, body)]), dict(PARAMS)))


@pytest.mark.parametrize(
    "given, named", [("widths:abc", "track parameter widths must be a non-empty list"), ("bulk_sise:500", "no parameter bulk_sise")]
)
def test_make_privileges_names_a_bad_track_parameter_before_rendering(given, named, capsys):
    with pytest.raises(SystemExit):
        listings.privileges_table(["--track-params", given])
    assert named in capsys.readouterr().err
