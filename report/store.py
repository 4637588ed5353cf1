"""Races in Rally's Elasticsearch metrics store (rally.ini, [reporting] datastore.type = elasticsearch): the race
document (rally-races-*, what race.json holds on the load driver's disk) and every task's service-time samples
(rally-metrics-*), which the in-memory store drops at the end of a race.

`make metrics-store` writes a Rally configuration of its own (CONFIG_NAME, beside the user's rally.ini, which it
never touches) that points at a local node; `esrally --configuration-name=CONFIG_NAME` races into it, as Rally's own
integration tests do with theirs. A team's store is the same [reporting] section in their own rally.ini.
"""

import base64
import configparser
import json
import urllib.error
from pathlib import Path

from report import ReportError
from report.cluster import Cluster
from runners import records
from runners.corpus import rally_home as default_rally_home

CONFIG_NAME = "cluster-metrics-store"
SERVICE_TIME = "service_time"
PAGE = 10_000


def config_path(rally_home=None, config_name=None):
    """The Rally configuration file: rally.ini, or rally-<name>.ini for esrally --configuration-name=<name>."""
    return Path(rally_home or default_rally_home()) / ".rally" / (f"rally-{config_name}.ini" if config_name else "rally.ini")


def write_config(rally_home, host, port):
    """A Rally configuration (Rally's own default file, its [reporting] section pointed at the store)."""
    from esrally import config as rally_config

    template = Path(rally_config.__file__).parent / "resources" / "rally.ini"
    values = {"datastore.type": "elasticsearch", "datastore.host": host, "datastore.port": str(port), "datastore.secure": "False"}
    lines = []
    for line in template.read_text().splitlines():
        key = line.split("=")[0].strip()
        lines.append(f"{key} = {values[key]}" if key in values else line)
        if key == "datastore.password":
            lines.append("datastore.number_of_replicas = 0")  # one copy of each index: the store is a single node
    path = config_path(rally_home, CONFIG_NAME)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def local_metrics_template():
    """Rally's own rally-metrics index template, for the local node (local-es/), which has no x-pack and so no
    `wildcard` field (Rally maps error-description as one): that field becomes a keyword. Installed before the first
    race, it stays: Rally keeps an existing template that differs (rally.ini datastore.overwrite_existing_templates
    defaults to false). A store with the full distribution needs none of this."""
    from esrally import metrics

    template = json.loads((Path(metrics.__file__).parent / "resources" / "metrics-template.json").read_text())

    def without_wildcards(properties):
        for name, mapping in properties.items():
            if mapping.get("type") == "wildcard":
                properties[name] = {"type": "keyword", "ignore_above": 8191}
            without_wildcards(mapping.get("properties", {}))

    without_wildcards(template["template"]["mappings"]["properties"])
    template["template"]["settings"]["index"]["number_of_replicas"] = 0
    return template


class Store:
    """One metrics store, reached with the live-cluster tools' client."""

    def __init__(self, host, port, secure=False, user=None, password=None):
        self.cluster = Cluster(f"{host}:{port}", scheme="https" if secure else "http")
        if user:
            self.cluster.headers["authorization"] = "Basic " + base64.b64encode(f"{user}:{password or ''}".encode()).decode()
        self.address = self.cluster.url

    @classmethod
    def from_config(cls, rally_home=None, config_name=None):
        """The store a Rally configuration names, or None when it keeps results in memory (and on the local disk)."""
        path = config_path(rally_home, config_name)
        if not path.is_file():
            if config_name:
                raise ReportError(f"no Rally configuration {path}: make metrics-store writes it")
            return None
        parser = configparser.ConfigParser(interpolation=None)
        parser.read(path)
        reporting = parser["reporting"] if parser.has_section("reporting") else {}
        if reporting.get("datastore.type", "in-memory") != "elasticsearch":
            return None
        return cls(
            reporting.get("datastore.host"),
            reporting.get("datastore.port"),
            reporting.get("datastore.secure", "False").lower() == "true",
            reporting.get("datastore.user") or None,
            reporting.get("datastore.password") or None,
        )

    def prepare_local_node(self):
        """Makes a local node (local-es/) able to hold Rally's metrics: see local_metrics_template."""
        self._request("PUT", "/_index_template/rally-metrics", local_metrics_template())

    def _search(self, index, body):
        return self._request("POST", f"/{index}/_search", body)

    def _request(self, method, path, body):
        try:
            return self.cluster.send(method, path, body)
        except urllib.error.URLError as e:
            raise ReportError(
                f"cannot read Rally's metrics store at {self.address} ({getattr(e, 'reason', e)}): start it with make "
                f"metrics-store, or correct the [reporting] section of the Rally configuration that names it"
            ) from e

    def race_count(self):
        """How many races the store holds (any answer proves it is reachable)."""
        return self._search("rally-races-*", {"size": 0, "query": {"match_all": {}}})["hits"]["total"]["value"]

    def race(self, race_id=None, track=None):
        """The race document with that id (a unique prefix is enough), or the newest race of `track`."""
        query = {"prefix": {"race-id": race_id}} if race_id else {"term": {"track": track}}
        found = self._search("rally-races-*", {"query": query, "size": 2, "sort": [{"race-timestamp": "desc"}]})["hits"]["hits"]
        if not found or (race_id and len(found) > 1):
            raise ReportError(
                f"{'no' if not found else 'more than one'} race matching {race_id or track!r} in the metrics store at "
                f"{self.address}; list them with: esrally list races --configuration-name=..."
            )
        return found[0]["_source"]

    def record_operations(self, race_id):
        """The track's record operations (runners/records.py META_KEY) that the race's samples carry, warm-up ones too,
        in sample order."""
        query = {"bool": {"filter": [{"term": {"race-id": race_id}}, {"term": {"name": SERVICE_TIME}}]}}
        key = f"meta.{records.META_KEY}"
        body = {"query": query, "size": PAGE, "_source": [key], "sort": [{"@timestamp": "asc"}, {"relative-time": "asc"}, {"_doc": "asc"}]}
        return [text for doc in self._all_hits(body) if (text := (doc.get("meta") or {}).get(records.META_KEY))]

    def _all_hits(self, body):
        """Every hit's _source of a sorted search of rally-metrics-*, page by page."""
        while True:
            hits = self._search("rally-metrics-*", body)["hits"]["hits"]
            yield from (hit["_source"] for hit in hits)
            if len(hits) < PAGE:
                return
            body = {**body, "search_after": hits[-1]["sort"]}

    def service_times(self, race_id):
        """{task: [service time in ms of each measured sample]}, in sample order; a task with a failed sample maps to
        None (a failed cell has no interval)."""
        query = {
            "bool": {"filter": [{"term": {"race-id": race_id}}, {"term": {"name": SERVICE_TIME}}, {"term": {"sample-type": "normal"}}]}
        }
        body = {
            "query": query,
            "size": PAGE,
            "_source": ["task", "value", "meta.success"],
            "sort": [{"relative-time": "asc"}, {"_doc": "asc"}],
        }
        samples, failed = {}, set()
        for doc in self._all_hits(body):
            samples.setdefault(doc["task"], []).append(doc["value"])
            if (doc.get("meta") or {}).get("success") is False:
                failed.add(doc["task"])
        return {task: (None if task in failed else values) for task, values in samples.items()}


def main(argv=None):
    """make metrics-store: the Rally configuration for a local store, and the store made ready for Rally's metrics;
    with --check (make race METRICS_STORE=yes), that the configuration exists and its store answers."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int)
    parser.add_argument("--check", action="store_true", help="only check the configuration and its store")
    parser.add_argument("--rally-home", default=None, help="default: $RALLY_HOME or your home")
    args = parser.parse_args(argv)
    if args.check:
        store = Store.from_config(args.rally_home, CONFIG_NAME)  # no file: names make metrics-store
        if store is None:
            raise ReportError(f"{config_path(args.rally_home, CONFIG_NAME)} keeps results in memory: run make metrics-store")
        store.race_count()  # unreachable: names make metrics-store
        return
    if args.port is None:
        parser.error("--port is needed")
    Store(args.host, args.port).prepare_local_node()
    path = write_config(args.rally_home, args.host, args.port)
    print(f"Rally's metrics store: http://{args.host}:{args.port}; Rally configuration: {path}")
    print(f"race, report and compare into it: make race METRICS_STORE=yes (esrally --configuration-name={CONFIG_NAME})")


if __name__ == "__main__":
    try:
        main()
    except ReportError as e:
        raise SystemExit(str(e))
