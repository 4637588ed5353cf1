"""The Elasticsearch privileges a challenge needs, from what its operations ask of the cluster, and the check that
asks the cluster for them before anything changes.

NEEDS is the one table: what each operation type sends, as Elasticsearch 8's privilege names (cluster privileges,
index privileges on the task's index, and on the restore-notes index for an operation that changes cluster
settings). The track processor sums a challenge's needs into its check-privileges task, the first task of every
challenge; the track README's privilege table is the same sum (tests/runners/processor_test.py keeps them equal).
"""

import logging
from dataclasses import dataclass

import elasticsearch

from runners import restore
from runners.index_checks import SEARCH_POOL_KEY
from runners.results import error_reason

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Need:
    why: str
    cluster: tuple = ()
    index: tuple = ()  # on the index the task works on
    notes: tuple = ()  # on runners.restore.NOTES_INDEX


SETTINGS_CHANGE = ("create_index", "read", "write")  # the notes an operation writes before it changes a cluster setting
CCS = Need(
    "searches the remote index, registered for its operation (cluster settings) and probed", ("manage", "monitor"), (), SETTINGS_CHANGE
)

# Rally's own requests in every race: its version check (GET /) and its cluster telemetry (node stats and info)
RALLY = Need("Rally's version check and cluster telemetry (GET /, node info and stats)", ("monitor",))

NEEDS = {
    # Rally's own operations, as this track uses them
    "create-index": Need("creates the index", index=("create_index",)),
    "delete-index": Need(
        "deletes the index it is about to create; Rally's runner lifts the transient cluster setting "
        "action.destructive_requires_name around the delete and puts it back",
        ("manage",),
        ("delete_index", "view_index_metadata"),
    ),
    "cluster-health": Need("waits for the index's health", ("monitor",)),
    "refresh": Need("refreshes the index", index=("maintenance",)),
    "raw-request": Need("changes index settings (ingest changes: refresh interval, translog)", index=("manage",)),
    # this track's operations
    "check-privileges": Need("asks the cluster which privileges the user has"),
    "search-pool": Need("reads the nodes' search thread pool and processors", ("monitor",)),
    "ingest-setup": Need(
        "deletes and creates the index, waits for its health, reads its stats and settings",
        ("monitor",),
        ("delete_index", "create_index", "monitor", "view_index_metadata"),
    ),
    "ingest-epochs": Need(
        "deletes and creates the index, waits for its health, indexes the corpus; at each epoch's end refreshes and "
        "reads index stats; counts the documents",
        ("monitor",),
        ("delete_index", "create_index", "view_index_metadata", "index", "monitor", "maintenance", "read"),
    ),
    "epoch-bulk": Need("indexes the corpus", index=("index",)),
    "ingest-cost-epoch": Need("reads index stats", index=("monitor",)),
    "verify-doc-count": Need("counts the index's documents", index=("read",)),
    "verify-corpus": Need(
        "reads the index's mapping, settings and counts, and the notes an aborted race left",
        index=("read", "view_index_metadata"),
        notes=("read",),
    ),
    "coverage": Need("searches the index", index=("read",)),
    "fetch-coverage": Need("searches the index", index=("read",)),
    "profile-breakdown": Need("searches the index with profile on", index=("read",)),
    "source-storage": Need(
        "reads store stats and disk usage, force-merges, marks the mapping",
        index=("monitor", "view_index_metadata", "maintenance", "manage"),
    ),
    "check-quiet-cluster": Need("reads node stats", ("monitor",)),
    "breaker-floor": Need(
        "bisects the request breaker's limit, a persistent cluster setting", ("manage", "monitor"), ("read",), SETTINGS_CHANGE
    ),
    "check-layouts": Need("reads the nodes", ("monitor",)),
    "layout-stats": Need("reads shard-level index stats", ("monitor",), ("monitor",)),
    "single-doc": Need("indexes one document per request into the layout's single-document index", index=("index",)),
    "single-doc-setup": Need(
        "deletes the layout's single-document index by name if it exists, creates it and waits for its health",
        ("monitor",),
        ("delete_index", "create_index"),
    ),
    "single-doc-count": Need(
        "refreshes, counts and deletes the layout's single-document index", index=("maintenance", "read", "delete_index")
    ),
    "share-calibration": Need(
        "hands a load calibration to the other load-driver hosts through an index of the race's own, deleted when "
        "every client has it (several load-driver hosts only)",
        index=("create_index", "manage", "read", "write", "delete_index"),
    ),
    "set-rtt": Need("probes the target cluster (GET /)", ("monitor",)),
    "clear-toxics": Need("talks to Toxiproxy only"),
    "large-source-create-index": Need(
        "reads the nodes' http.max_content_length, creates the index of the large documents", ("monitor",), ("create_index",)
    ),
    "large-source-index": Need("indexes the large documents", index=("index",)),
    "large-source-verify": Need("counts the large documents, reads the index's mapping", index=("read", "view_index_metadata")),
    "large-source-fetch": Need("searches the index of the large documents", index=("read",)),
}


def needs(tasks):
    """What a race of these tasks asks of the target cluster, Rally's own requests included: {"cluster": [privileges],
    "index": {index name: [privileges]}, "needed-by": {privilege key: [operation types]}}. Each task is an (operation
    type, parameters, index name) triple; an operation with a remote registration (runners/scope.py) also needs what
    cross-cluster search changes on the target cluster."""
    from runners.scope import REMOTE_KEY

    cluster, index, needed_by = set(), {}, {}

    def add(key, operation_type):
        needed_by.setdefault(key, [])
        if operation_type not in needed_by[key]:
            needed_by[key].append(operation_type)

    for operation_type, need, index_name in [("rally", RALLY, None), *_with_needs(tasks, REMOTE_KEY)]:
        for privilege in need.cluster:
            cluster.add(privilege)
            add(cluster_key(privilege), operation_type)
        for name, privileges in ((index_name, need.index), (restore.NOTES_INDEX, need.notes)):
            for privilege in privileges if name else ():
                index.setdefault(name, set()).add(privilege)
                add(index_key(name, privilege), operation_type)
    return {
        "cluster": sorted(cluster),
        "index": {name: sorted(privileges) for name, privileges in sorted(index.items())},
        "needed-by": needed_by,
    }


# an ingest that changed index settings for its bulks (ingest-tuned, ingest changes) unsets them after its last epoch
RESTORE_SETTINGS = Need("unsets the index settings it changed for its bulks", index=("manage",))


def _with_needs(tasks, remote_key):
    for operation_type, params, index_name in tasks:
        if operation_type not in NEEDS:
            raise KeyError(f"operation type {operation_type!r} has no entry in runners/privileges.py NEEDS")
        # a search of <remote>:<index> needs its index privileges on the remote cluster, not on this one
        yield operation_type, NEEDS[operation_type], None if params.get("remote") else index_name
        if params.get("restore-settings"):
            yield operation_type, RESTORE_SETTINGS, index_name
        if params.get(SEARCH_POOL_KEY):  # verify-corpus, then the search pool in the same task
            yield operation_type, NEEDS["search-pool"], index_name
        if params.get(remote_key):
            yield f"{operation_type} (cross-cluster search)", CCS, None


def cluster_key(privilege):
    return f"cluster:{privilege}"


def index_key(index, privilege):
    return f"index:{index}:{privilege}"


class PrivilegeError(Exception):
    """The user's identity lacks a privilege the challenge needs, or its credentials are refused; raised by the first
    task, before anything changes, so the message can say that nothing did."""


class CheckPrivileges:
    """Asks the target cluster (POST /_security/user/_has_privileges: any authenticated user may ask about itself)
    whether the user Rally connects as holds every privilege the challenge needs (operation parameters "cluster",
    "index" and "challenge", set by the track processor from NEEDS). A missing one ends the race, naming each
    privilege, what needs it and the challenge; nothing has changed at that point. A 401 is named as bad
    credentials. A cluster without security (the endpoint is not there) allows everything. Untimed; returns 1 op with
    the user and whether security is on."""

    async def __call__(self, es, params):
        challenge, wanted = params["challenge"], {"cluster": params["cluster"], "index": params["index"]}
        body = {"cluster": wanted["cluster"], "index": [{"names": [name], "privileges": p} for name, p in wanted["index"].items()]}
        try:
            answer = restore.body_of(await es.perform_request("POST", "/_security/user/_has_privileges", body=body, headers=restore.JSON))
        except elasticsearch.AuthenticationException as e:
            raise PrivilegeError(
                f"Challenge [{challenge}]: the cluster refused the credentials Rally sent (HTTP 401: {error_reason(e)}): bad credentials. "
                "Correct basic_auth_user and basic_auth_password, or api_key, in --client-options. Nothing was changed on the cluster"
            ) from None
        except elasticsearch.ApiError as e:
            if not security_off(e):
                raise PrivilegeError(
                    f"Challenge [{challenge}]: the cluster did not say which privileges the user has (HTTP {e.status_code}: "
                    f"{error_reason(e)}). Nothing was changed on the cluster"
                ) from None
            LOG.info("cluster-metrics: no privilege check on this cluster (%s %s)", e.status_code, error_reason(e))
            return {"weight": 1, "unit": "ops", "success": True, "security": False}
        needed_by = params.get("needed-by", {})
        missing = [
            f"cluster privilege {p} ({_why(needed_by.get(cluster_key(p)))})" for p, held in answer.get("cluster", {}).items() if not held
        ]
        for name, held in answer.get("index", {}).items():
            missing += [f"index privilege {p} on {name} ({_why(needed_by.get(index_key(name, p)))})" for p, has in held.items() if not has]
        if missing:
            raise PrivilegeError(
                f"Challenge [{challenge}] needs privileges that user [{answer.get('username')}] lacks on the target cluster: "
                f"{'; '.join(missing)}. Nothing was changed on the cluster: the race stopped at its first task, "
                "check-privileges. Grant them to the user's role (the track README's privilege table lists each challenge's), "
                "or race a challenge that needs only what the role has"
            )
        return {"weight": 1, "unit": "ops", "success": True, "security": True, "user": answer.get("username")}

    def __repr__(self):
        return "check-privileges"


def security_off(error):
    """The answer of a cluster without security to a security API: no handler (no security module, as the local
    node built without x-pack), or security disabled. Everything else (a 429, a 5xx, an unknown privilege) is not."""
    reason = error_reason(error).lower()
    no_handler = error.status_code in (400, 404, 405) and "no handler found" in reason
    return no_handler or "security is not enabled" in reason or "security must be explicitly enabled" in reason


def _why(operation_types):
    """What needs a privilege, from NEEDS: "breaker-floor: bisects the request breaker's limit ..."."""
    reasons = []
    for operation_type in operation_types or ():
        base = operation_type.split(" ")[0]
        need = RALLY if base == "rally" else CCS if operation_type != base else NEEDS.get(base)
        reasons.append(f"{operation_type}: {need.why}" if need else operation_type)
    return "; ".join(reasons) or "needed by the challenge"
