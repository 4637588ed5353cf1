"""What the race ran on, recorded at its first task: each node's Elasticsearch version and build, JVM, heap, processors,
roles and start time, and the cluster's explicit settings. A history of races (report/history) reads it to say what
changed with a change in a cell: a version, a setting, a node started afresh. Rally's race.json keeps the version alone."""

import time

from runners.contracts import records

# the node facts a history compares from race to race (a fact that moves with every start, the pid, is not one of them)
NODE_FACTS = ("version", "build-hash", "jvm", "heap-max-bytes", "allocated-processors", "roles")


def _node(node, uptime_ms):
    jvm = node.get("jvm", {})
    return {
        "name": node.get("name"),
        "version": node.get("version"),
        "build-hash": node.get("build_hash"),
        "jvm": f"{jvm.get('vm_vendor', '?')} {jvm.get('version', '?')}",
        "heap-max-bytes": jvm.get("mem", {}).get("heap_max_in_bytes"),
        "start-time-ms": jvm.get("start_time_in_millis"),
        "uptime-ms": uptime_ms,
        "allocated-processors": node.get("os", {}).get("allocated_processors"),
        "roles": sorted(node.get("roles", [])),
    }


async def facts(es):
    """The cluster's facts now (three untimed GETs, cluster privilege monitor): {"recorded-at-ms", "nodes" (by node id,
    sorted), "settings" (persistent and transient, flat)}."""
    info = (await es.perform_request("GET", "/_nodes/jvm,os")).body["nodes"]
    stats = (await es.perform_request("GET", "/_nodes/stats/jvm")).body["nodes"]
    settings = (await es.perform_request("GET", "/_cluster/settings", params={"flat_settings": "true"})).body
    return {
        "recorded-at-ms": int(time.time() * 1000),
        "nodes": {
            node_id: _node(node, stats.get(node_id, {}).get("jvm", {}).get("uptime_in_millis")) for node_id, node in sorted(info.items())
        },
        "settings": {kind: dict(sorted((settings.get(kind) or {}).items())) for kind in ("persistent", "transient")},
    }


async def record(es, context):
    """Writes the facts and the corpus the race reads (its fingerprint: generator parameters, ground truth, full or
    test-mode files; {} for a challenge without one) to the race's records (records.CLUSTER_FACTS); returns the record
    meta for the sample."""
    return records.write(context.record_dir, records.CLUSTER_FACTS, {**await facts(es), "corpus": context.fingerprint})
