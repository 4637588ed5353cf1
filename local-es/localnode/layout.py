"""A cluster's nodes and their config: coordinating-only nodes first (on the HTTP port itself), then the data nodes,
each with its ports, folder, roles and, when pinned, its core; each node's elasticsearch.yml and log4j2.properties."""

import os
from pathlib import Path

from localnode.shared import CLUSTER_NAME, DEFAULT_VERSION, LauncherError, version_root

LOG4J2 = """status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = ${sys:es.logs.base_path}${sys:file.separator}${sys:es.logs.cluster_name}.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d{ISO8601}][%-5p][%-25c{1.}] [%node_name]%marker %m%n
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
"""
MAX_COORDINATING = 3
COORDINATING_ROLES = []  # node.roles of a coordinating-only node: no master, no data, no ingest
PINNED_PROCESSORS = 1  # node.processors of a pinned data node: its thread pools sized for its one core


def check_size(nodes, coordinating):
    """The data node and coordinating node counts start takes."""
    if nodes < 1 or nodes > 9:
        raise LauncherError(f"NODES={nodes} is not valid: use 1 to 9.")
    if coordinating < 0 or coordinating > MAX_COORDINATING:
        raise LauncherError(f"--coordinating {coordinating} is not valid: use 0 to {MAX_COORDINATING} (make: COORDINATING=yes or no).")


def shape(version, nodes, coordinating, pinned):
    """How start and the state file name a cluster's make-up."""
    text = f"Elasticsearch {version}, {nodes} data node(s)"
    if coordinating:
        text += f" behind {coordinating} coordinating-only node(s)"
    return text + (", data nodes pinned to cores" if pinned else "")


def cluster_dir(nodes, http_port, coordinating=0, version=DEFAULT_VERSION):
    """A cluster's folder: its own per version, data node count and coordinating nodes (a coordinating-only node
    refuses a data folder that holds shards, so the two layouts never share one)."""
    name = f"cluster-{nodes}-coord{coordinating}-{http_port}" if coordinating else f"cluster-{nodes}-{http_port}"
    return version_root(version) / name


def allowed_cores():
    """The cores this process may run on (its affinity: a container's or taskset's limit, not the host's count)."""
    return sorted(os.sched_getaffinity(0))


def node_layout(nodes, http_port, transport_port, coordinating=0, cores=None, version=DEFAULT_VERSION):
    """Every node of the cluster: coordinating-only nodes first (they take the HTTP port itself, where the race's
    requests go), then the data nodes; with cores (pinned: allowed_cores(), unpinned: None) each data node's core
    (node-i: the i-th of `cores`, modulo their count) and processors. roles None: Elasticsearch's default roles
    (master-eligible data node)."""
    folder = cluster_dir(nodes, http_port, coordinating, version)
    layout = []
    for j in range(coordinating):
        name = f"coord-{j + 1}"
        layout.append({"name": name, "dir": str(folder / name), "roles": list(COORDINATING_ROLES), "cpu": None, "processors": None})
    for i in range(nodes):
        name = f"node-{i + 1}"
        cpu = cores[i % len(cores)] if cores is not None else None
        layout.append(
            {
                "name": name,
                "dir": str(folder / name),
                "roles": None,
                "cpu": cpu,
                "processors": PINNED_PROCESSORS if cores is not None else None,
            }
        )
    for k, node in enumerate(layout):
        node.update(http_port=http_port + k, transport_port=transport_port + k)
    return layout


def is_coordinating(node):
    return node.get("roles") == COORDINATING_ROLES


def describe_node(node):
    """How status and start name a node: its role and, when pinned, its core and processors."""
    role = "coordinating only" if is_coordinating(node) else "data"
    pinned = f", core {node['cpu']}, node.processors {node['processors']}" if node.get("cpu") is not None else ""
    return f"{role}{pinned}"


def write_node_config(node, layout, also_bind=None):
    node_dir = Path(node["dir"])
    for sub in ("config", "data", "logs", "tmp"):
        (node_dir / sub).mkdir(parents=True, exist_ok=True)
    settings = [
        f"cluster.name: {CLUSTER_NAME}",
        f"node.name: {node['name']}",
        "network.host: 127.0.0.1",
        f"http.port: {node['http_port']}",
        f"transport.port: {node['transport_port']}",
        f"path.data: {node_dir / 'data'}",
        f"path.logs: {node_dir / 'logs'}",
        # a shared benchmark host's disk fill level must not turn the cluster red mid-race
        "cluster.routing.allocation.disk.threshold_enabled: false",
    ]
    if also_bind:
        # HTTP only; the node still publishes and talks transport on loopback
        settings += [f'http.bind_host: ["127.0.0.1", "{also_bind}"]', "http.publish_host: 127.0.0.1"]
    if node.get("roles") is not None:
        settings.append(f"node.roles: [{', '.join(node['roles'])}]")
    if node.get("processors"):
        settings.append(f"node.processors: {node['processors']}")
    if len(layout) == 1:
        settings.append("discovery.type: single-node")
    else:
        # the master-eligible nodes (the data nodes) bootstrap the cluster; a coordinating node only joins it
        masters = [n for n in layout if not is_coordinating(n)]
        seeds = ", ".join(f'"127.0.0.1:{n["transport_port"]}"' for n in masters)
        names = ", ".join(f'"{n["name"]}"' for n in masters)
        settings += [f"discovery.seed_hosts: [{seeds}]", f"cluster.initial_master_nodes: [{names}]"]
    (node_dir / "config" / "elasticsearch.yml").write_text("\n".join(settings) + "\n")
    (node_dir / "config" / "log4j2.properties").write_text(LOG4J2)
