"""The privileges each challenge needs (runners/privileges.py) and the check that asks the cluster for them, with a
stub client (seconds; through the secured stand-in in tests/test_secured.py)."""

import asyncio
import re
from pathlib import Path

import pytest

from conftest import rendered_challenges, rendered_tasks
from runners import privileges
from runners.restore import NOTES_INDEX
from stub_client import StubClient

TRACK_README = Path(__file__).resolve().parents[2] / "tracks" / "cluster-metrics" / "README.md"
CORPUS_INDEX = "cluster-metrics"


def challenge_needs(challenge):
    """What the track processor hands the challenge's check-privileges task, on the rendered challenge."""
    tasks = [
        (t["operation"]["operation-type"], t["operation"], t["operation"].get("index") or CORPUS_INDEX)
        for t in rendered_tasks(challenge)
        if t["operation"].get("cluster") in (None, "default")
    ]
    return privileges.needs(tasks)


def test_every_operation_of_every_challenge_has_its_privileges_declared():
    for name, challenge in rendered_challenges().items():
        assert challenge_needs(challenge)["cluster"], name  # raises KeyError naming an operation without an entry


def test_a_challenge_that_changes_cluster_settings_needs_manage_and_its_notes_index():
    needs = challenge_needs(rendered_challenges()["aggregation-memory"])
    assert needs["cluster"] == ["manage", "monitor"]
    assert needs["index"][NOTES_INDEX] == ["create_index", "read", "write"]
    assert "breaker-floor" in needs["needed-by"]["cluster:manage"]
    ccs = challenge_needs(rendered_challenges()["ccs-roundtrips"])
    assert "manage" in ccs["cluster"] and any("cross-cluster search" in t for t in ccs["needed-by"]["cluster:manage"])


def test_a_query_challenge_needs_only_to_read():
    needs = challenge_needs(rendered_challenges()["production-comparison"])
    assert needs["cluster"] == ["monitor"] and needs["index"] == {CORPUS_INDEX: ["read", "view_index_metadata"]}


def readme_table():
    """{challenge: (cluster privileges, corpus index privileges, notes index privileges)} from the track README."""
    text = TRACK_README.read_text()
    section = text[text.index("## Privileges") :]
    rows = {}
    for line in section.splitlines()[1:]:
        if line.startswith("## "):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 4:
            rows[cells[0].strip("`")] = tuple(sorted(re.findall(r"`([a-z_]+)`", c)) for c in cells[1:])
    return rows


def test_the_readme_table_is_what_each_challenge_asks_for():
    expected = {}
    for name, challenge in rendered_challenges().items():
        needs = challenge_needs(challenge)
        expected[name] = (needs["cluster"], needs["index"].get(CORPUS_INDEX, []), needs["index"].get(NOTES_INDEX, []))
    assert readme_table() == {name: tuple(sorted(x) for x in row) for name, row in expected.items()}


PARAMS = {
    "challenge": "aggregation-memory",
    "cluster": ["manage", "monitor"],
    "index": {CORPUS_INDEX: ["read"], NOTES_INDEX: ["create_index", "read", "write"]},
    "needed-by": {
        "cluster:manage": ["breaker-floor"],
        "cluster:monitor": ["rally"],
        f"index:{NOTES_INDEX}:write": ["breaker-floor"],
    },
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
