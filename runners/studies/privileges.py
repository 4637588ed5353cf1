"""The Elasticsearch privileges a challenge needs, from what its operations ask of the cluster, and the check that
asks the cluster for them before anything changes.

Each operation type's need is declared beside its runner (its module's OPERATIONS table, runners/contracts/registry.py); this
module adds those of Rally's own operations the track uses and of Rally itself. The track processor sums a
challenge's needs into its check-privileges task, the first task of every challenge (challenge_needs); `make
privileges` prints the same sum for every challenge, before any race (table, runners/listings.py). Both are handed the
operation table (runners/operations.py), which sits above the studies.
"""

import argparse
import json
import logging

import elasticsearch

from runners.contracts import cells, corpus, records
from runners.contracts.context import CONTEXT_KEY, DEFAULT_CLUSTER, RaceContext
from runners.contracts.errors import error_reason
from runners.contracts.registry import SETTINGS_CHANGE, Need, Operation
from runners.shared import cluster_facts, restore
from runners.studies import load
from runners.studies.index_checks import SEARCH_POOL_KEY

LOG = logging.getLogger(__name__)


CCS = Need(
    "searches the remote index, registered for its operation (cluster settings) and probed", ("manage", "monitor"), (), SETTINGS_CHANGE
)

# Rally's own requests in every race: its version check (GET /) and its cluster telemetry (node stats and info)
RALLY = Need("Rally's version check and cluster telemetry (GET /, node info and stats)", ("monitor",))

# Rally's own operations, as this track uses them
RALLY_OPERATIONS = {
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
}


def needs_of(operation_type, declared):
    """The need of one operation type: Rally's own, or the one its module declares (declared: runners.operations
    .OPERATIONS, handed in by the track processor); None for an unknown type."""
    operation = declared.get(operation_type)
    return operation.need if operation else RALLY_OPERATIONS.get(operation_type)


def needs(tasks, declared):
    """What a race of these tasks asks of the target cluster, Rally's own requests included: {"cluster": [privileges],
    "index": {index name: [privileges]}, "needed-by": {privilege key: [operation types]}, "why": {operation type: what
    it sends}}. Each task is an (operation type, parameters, index name) triple; declared: the operation table
    (runners.operations.OPERATIONS); an operation with a remote registration (runners/studies/scope.py) also needs what
    cross-cluster search changes on the target cluster."""
    from runners.studies.scope import REMOTE_KEY

    cluster, index, needed_by, why = set(), {}, {}, {}

    def add(key, operation_type):
        needed_by.setdefault(key, [])
        if operation_type not in needed_by[key]:
            needed_by[key].append(operation_type)

    for operation_type, need, index_name in [("rally", RALLY, None), *_with_needs(tasks, declared, REMOTE_KEY)]:
        why.setdefault(operation_type, need.why)
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
        "why": {operation_type: text for operation_type, text in why.items() if any(operation_type in by for by in needed_by.values())},
    }


# an ingest that changed index settings for its bulks (ingest-tuned, ingest changes) unsets them after its last epoch
RESTORE_SETTINGS = Need("unsets the index settings it changed for its bulks", index=("manage",))


def challenge_needs(tasks, index_of, declared):
    """needs() of a challenge's tasks, given as (operation type, parameters) pairs: those that reach the target cluster
    (another cluster's, a remote's by its alias, are not the target's), each on its index (index_of(parameters)); a
    calibration share reads and writes through its index's alias too, and only with several load-driver hosts (on one,
    the calibration stays on it and nothing is shared through the cluster)."""
    targeted = [
        (kind, params, index_of(params))
        for kind, params in tasks
        if params.get("cluster") in (None, DEFAULT_CLUSTER)
        if not (kind == "share-calibration" and load.HOSTS_KEY not in params)
    ]
    targeted += [(kind, params, load.share_alias(index)) for kind, params, index in targeted if kind == "share-calibration"]
    return needs(targeted, declared)


def _with_needs(tasks, declared, remote_key):
    for operation_type, params, index_name in tasks:
        need = needs_of(operation_type, declared)
        if need is None:
            raise KeyError(f"operation type {operation_type!r} declares no need: its module's OPERATIONS, or RALLY_OPERATIONS here")
        # a search of <remote>:<index> needs its index privileges on the remote cluster, not on this one
        yield operation_type, need, None if params.get("remote") else index_name
        if params.get("restore-settings"):
            yield operation_type, RESTORE_SETTINGS, index_name
        if params.get(SEARCH_POOL_KEY):  # verify-corpus, then the search pool in the same task
            yield operation_type, needs_of("search-pool", declared), index_name
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
    "index", "challenge", and what needs each privilege, set by the track processor from each operation's need). A missing one ends the race, naming each
    privilege, what needs it and the challenge; nothing has changed at that point. A 401 is named as bad
    credentials. A cluster without security (the endpoint is not there) allows everything. First, it records the
    challenge's cells (operation parameter "cells", set by the track processor: runners/contracts/cells.py). Untimed; returns 1
    op with the user and whether security is on, and the cells as record meta."""

    async def __call__(self, es, params):
        result = {"weight": 1, "unit": "ops", "success": True, **_record_cells(params)}
        checked = await self._check(es, params, result)
        if CONTEXT_KEY in params:  # after the check: a missing monitor privilege is named by it, not met here
            records.add(checked, await cluster_facts.record(es, RaceContext.of(params)))
        return checked

    async def _check(self, es, params, result):
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
            return {**result, "security": False}
        needed_by, why = params.get("needed-by", {}), params.get("why", {})
        missing = [
            f"cluster privilege {p} ({_why(needed_by.get(cluster_key(p)), why)})"
            for p, held in answer.get("cluster", {}).items()
            if not held
        ]
        for name, held in answer.get("index", {}).items():
            missing += [
                f"index privilege {p} on {name} ({_why(needed_by.get(index_key(name, p)), why)})" for p, has in held.items() if not has
            ]
        if missing:
            raise PrivilegeError(
                f"Challenge [{challenge}] needs privileges that user [{answer.get('username')}] lacks on the target cluster: "
                f"{'; '.join(missing)}. Nothing was changed on the cluster: the race stopped at its first task, "
                "check-privileges. Grant them to the user's role (make privileges lists each challenge's), "
                "or race a challenge that needs only what the role has"
            )
        return {**result, "security": True, "user": answer.get("username")}

    def __repr__(self):
        return "check-privileges"


def _record_cells(params):
    """The challenge's cells (runners/contracts/cells.py) written to the race's records, first, as the sample's record meta."""
    if cells.CELLS_KEY not in params or CONTEXT_KEY not in params:
        return {}
    return records.write(RaceContext.of(params).record_dir, records.CELLS, params[cells.CELLS_KEY])


def security_off(error):
    """The answer of a cluster without security to a security API: no handler (no security module, as the local
    node built without x-pack), or security disabled. Everything else (a 429, a 5xx, an unknown privilege) is not."""
    reason = error_reason(error).lower()
    no_handler = error.status_code in (400, 404, 405) and "no handler found" in reason
    return no_handler or "security is not enabled" in reason or "security must be explicitly enabled" in reason


def _why(operation_types, why):
    """What needs a privilege: "breaker-floor: bisects the request breaker's limit ..." (why: the track processor's
    {operation type: what it sends})."""
    reasons = [f"{t}: {why[t]}" if t in why else t for t in operation_types or ()]
    return "; ".join(reasons) or "needed by the challenge"


def hand_to_check(challenge_name, tasks, context, operations):
    """At load: hands the challenge's check-privileges task what the challenge asks of the target cluster
    (challenge_needs; the tasks of another cluster, a remote's by its alias, are not the target's) and the challenge's
    cells, which it records (runners/contracts/cells.py). context: the race's main corpus set, or the first width's;
    operations: the operation table (runners/operations.py)."""

    def index_of(params):  # Rally's operations name it; ours carry their corpus set's context (a width's, for one)
        own = RaceContext.of(params) if CONTEXT_KEY in params else context
        return params.get("index") or (own.index if own else None)

    needs = challenge_needs([(task.operation.type, task.operation.params) for task in tasks], index_of, operations)
    recorded = cells.of_tasks((task.name, task.operation.params) for task in tasks)
    for task in tasks:
        if task.operation.type == "check-privileges":
            task.operation.params.update(needs, challenge=challenge_name, **{cells.CELLS_KEY: recorded})


OPERATIONS = {
    "check-privileges": Operation(
        CheckPrivileges,
        Need("asks the cluster which privileges the user has; records the nodes' versions, JVMs and start times", ("monitor",)),
        reads_corpus=False,
    ),
}


def table(track_params, operations):
    """A markdown table of every challenge's privileges on one load-driver host, the track rendered with these
    parameters: its cluster privileges, those on the indices it works in (the corpus index, a width's, source-large's,
    a layout's single-document index: cluster-metrics*) and on the restore-notes index. operations: the operation table
    (runners/operations.py)."""
    from esrally.track import loader

    from runners.contracts import track_files
    from runners.studies import widths

    def index_of(params):  # as the processor binds them: a width's task works in its width's corpus set
        width = params.get(widths.WIDTH_KEY)
        return corpus.width_set(width, widths.rows_per_epoch(track_params, width)) if width else params.get("index") or corpus.INDEX

    rendered = json.loads(loader.render_template_from_file(str(track_files.track_dir() / "track.json"), track_params))
    names = lambda privileges: ", ".join(f"`{p}`" for p in sorted(privileges)) or "-"  # noqa: E731
    lines = [
        f"| challenge | cluster | index `{corpus.INDEX}*` | index `{restore.NOTES_INDEX}` |",
        "|---|---|---|---|",
    ]
    for challenge in sorted(rendered["challenges"], key=lambda c: c["name"]):
        tasks = [(task["operation"]["operation-type"], task["operation"]) for task in track_files.rendered_tasks(challenge)]
        found = challenge_needs(tasks, index_of, operations)
        indices = {p for name, privileges in found["index"].items() if name != restore.NOTES_INDEX for p in privileges}
        lines.append(
            f"| `{challenge['name']}` | {names(found['cluster'])} | {names(indices)} | {names(found['index'].get(restore.NOTES_INDEX, []))} |"
        )
    return "\n".join(lines)
