"""Races in Rally's Elasticsearch metrics store (rally.ini, [reporting] datastore.type = elasticsearch): the race
document (rally-races-*, what race.json holds on the load driver's disk) and every task's service-time samples
(rally-metrics-*), which the in-memory store drops at the end of a race.

`make metrics-store` writes a Rally configuration of its own (CONFIG_NAME, beside the user's rally.ini, which it
never touches) that points at a local node; `esrally --configuration-name=CONFIG_NAME` races into it, as Rally's own
integration tests do with theirs. A team's store is the same [reporting] section in their own rally.ini.
"""

import configparser
import json
from pathlib import Path

from elastic_transport import TransportError
from elasticsearch import ApiError
from esrally import config as rally_config

from report import ReportError
from report.shared.cluster import Cluster, Fixes, unusable
from runners.contracts import records

CONFIG_NAME = "cluster-metrics-store"
SERVICE_TIME = "service_time"
PAGE = 10_000


def config_path(rally_home=None, config_name=None):
    """The Rally configuration file: rally.ini, or rally-<name>.ini for esrally --configuration-name=<name>, where Rally
    looks for it ($RALLY_HOME or the home directory), or in `rally_home`."""
    return Path(_RallyConfigFile(config_name, rally_home).location)


def write_named_config(rally_home, name, values, added=None):
    """Rally's own default configuration file as the configuration `name` of a Rally home (esrally
    --configuration-name=name), with these keys' values; added: {key: lines} put after that key's line."""
    template = Path(rally_config.__file__).parent / "resources" / "rally.ini"
    lines = []
    for line in template.read_text().splitlines():
        key = line.split("=")[0].strip()
        lines.append(f"{key} = {values[key]}" if key in values else line)
        lines.extend((added or {}).get(key, []))
    path = config_path(rally_home, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def write_config(rally_home, host, port, name=CONFIG_NAME):
    """A Rally configuration (Rally's own default file, its [reporting] section pointed at the store): rally-NAME.ini,
    or rally.ini for name None (a team's own, as tests/test_nightly.py writes it)."""
    values = {"datastore.type": "elasticsearch", "datastore.host": host, "datastore.port": str(port), "datastore.secure": "False"}
    added = [
        "datastore.number_of_replicas = 0",  # one copy of each index: the store is a single node
        # monthly indices, as Rally 2.13 writes them: Rally's master defaults to data streams with an ILM policy,
        # which the local node (no x-pack) refuses ("no handler found for uri [/_ilm/policy/...]"); 2.13 ignores it
        "datastore.use_data_streams = false",
    ]
    return write_named_config(rally_home, name, values, {"datastore.password": added})


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


class _RallyConfigFile(rally_config.ConfigFile):
    """Rally's configuration file, found as Rally finds it ($RALLY_HOME or the home directory), or in `rally_home`."""

    def __init__(self, config_name=None, rally_home=None, **kwargs):
        super().__init__(config_name, **kwargs)
        self.rally_home = rally_home

    @property
    def config_dir(self):
        return str(Path(self.rally_home) / ".rally") if self.rally_home else super().config_dir


def store_fixes(config=None):
    """Where a store's user fixes each failure: the [reporting] section of the configuration `config`."""
    where = f"the [reporting] section of {config or 'the Rally configuration that names it'}"
    return Fixes(
        unreachable="cannot read Rally's metrics store",
        start="start the local one with make metrics-store",
        address=f"datastore.host/datastore.port in {where}",
        settings=where,
        ca=(
            f"give the CA that signed the store's certificate as datastore.ssl.certificate_authorities in {where}, "
            "or datastore.ssl.verification_mode = none to skip verification"
        ),
        plain=f"if it speaks plain HTTP, set datastore.secure = False in {where}",
        https=f"if it speaks HTTPS, set datastore.secure = True (and datastore.ssl.certificate_authorities) in {where}",
        credentials=(
            f"correct datastore.user/datastore.password or datastore.api_key in {where}, "
            "or RALLY_REPORTING_DATASTORE_USER/_PASSWORD/_API_KEY"
        ),
    )


def _unreadable(path, error):
    """Why Rally cannot read the configuration, in words that quote none of its values (a password may be one)."""
    if isinstance(error, (configparser.InterpolationError, ValueError, KeyError)):
        why = "a value holding % or $ is written %% or $$ there"
    elif isinstance(error, configparser.DuplicateOptionError):
        why = f"{error.option} is given twice in [{error.section}]"
    else:
        why = type(error).__name__ + (f" at line {error.lineno}" if getattr(error, "lineno", None) else "")
    return ReportError(f"Rally cannot read {path}: {why}")


def resolve(rally_home=None, config_name=None):
    """(hosts, client options, configuration file) of the metrics store a Rally configuration names, as Rally's metrics
    store resolves them (its own code: [reporting] datastore.*, RALLY_REPORTING_DATASTORE_*), or None when it keeps
    results in memory. No request is made (no cluster version probe)."""
    from esrally import exceptions, metrics
    from esrally.client import factory

    cfg = rally_config.Config(config_name=config_name, config_file_class=_RallyConfigFile, rally_home=rally_home)
    path = config_path(rally_home, config_name)
    if not path.is_file():
        if config_name:
            raise ReportError(f"no Rally configuration {path}: make metrics-store writes it")
        return None
    try:
        cfg.load_config()
    except (configparser.Error, ValueError, KeyError) as e:
        raise _unreadable(path, e) from None
    if cfg.opts("reporting", "datastore.type", default_value="in-memory", mandatory=False) != "elasticsearch":
        return None
    cfg.add(rally_config.Scope.applicationOverride, "reporting", "datastore.probe.cluster_version", False)
    resolved = []

    def recording(hosts, client_options, **kwargs):
        resolved.append((hosts, dict(client_options), path))
        return factory.EsClientFactory(hosts, client_options, **kwargs)

    try:
        metrics.EsClientFactory(cfg, client_factory=recording)
    except (ValueError, KeyError, TypeError, OSError, exceptions.RallyError) as e:
        raise unusable(e, store_fixes(path), resolved[0][1] if resolved else None) from None
    return resolved[0]


class Store:
    """One metrics store, reached with the live-cluster tools' client; `config` is the file that names it."""

    def __init__(self, cluster, config=None):
        self.cluster, self.config = cluster, config
        self.address = cluster.url

    @classmethod
    def local(cls, host, port):
        """The local node make metrics-store starts (plain HTTP, no credentials, as its configuration says)."""
        return cls(Cluster.of([{"host": host, "port": port}], {}, store_fixes()))

    @classmethod
    def from_config(cls, rally_home=None, config_name=None):
        """The store a Rally configuration names, reached as Rally reaches it (see `resolve`), or None when it keeps
        results in memory (and on the local disk)."""
        resolved = resolve(rally_home, config_name)
        if resolved is None:
            return None
        hosts, client_options, path = resolved
        return cls(Cluster.of(hosts, client_options, store_fixes(path)), path)

    def prepare_local_node(self):
        """Makes a local node (local-es/) able to hold Rally's metrics: see local_metrics_template."""
        self._request("PUT", "/_index_template/rally-metrics", local_metrics_template())

    def _search(self, index, body):
        return self._request("POST", f"/{index}/_search", body)

    def _request(self, method, path, body):
        try:
            return self.cluster.send(method, path, body)
        except (ApiError, TransportError) as e:
            message = self.cluster.failure(e)
            if message is None:
                raise
            raise ReportError(message) from None

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
        # by id: a search sees the document as of the last refresh, and Rally writes a race's document at its start
        # and again with its results at its end, unrefreshed; a GET is real-time, the results there at once
        return self._request("GET", f"/{found[0]['_index']}/_doc/{found[0]['_id']}", None)["_source"]

    def race_documents(self, limit=10_000):
        """Every race document (rally-races-*), oldest first: what `esrally list races` selects from."""
        answer = self._search("rally-races-*", {"size": limit, "sort": [{"race-timestamp": "asc"}]})
        return [hit["_source"] for hit in answer["hits"]["hits"]]

    def records_beside_coverages(self, race_ids):
        """{race id: [record operation texts]} of the races' samples other than their coverages' (whose validation
        lines are the bulk of a race's records and which a history reads as order statistics instead), in sample order:
        the cells, the cluster facts, the ingest's records."""
        query = {
            "bool": {
                "filter": [
                    {"terms": {"race-id": list(race_ids)}},
                    {"term": {"name": SERVICE_TIME}},
                    {"exists": {"field": f"meta.{records.META_KEY}"}},
                ],
                "must_not": [{"prefix": {"task": "coverage-"}}],
            }
        }
        key = f"meta.{records.META_KEY}"
        body = {
            "query": query,
            "size": PAGE,
            "_source": ["race-id", key],
            "sort": [{"@timestamp": "asc"}, {"relative-time": "asc"}, {"_doc": "asc"}],
        }
        found = {race_id: [] for race_id in race_ids}
        for doc in self._all_hits(body):
            found[doc["race-id"]].append(doc["meta"][records.META_KEY])
        return found

    def order_statistics(self, race_ids, ranks_of):
        """{race id: {task: (n, failed, {rank: value})}}: each task's measured samples counted, whether one failed, and
        the values at the 0-based ranks ranks_of(n) names, as percentiles at 100 rank / (n - 1) (exact order statistics
        of the stored values for the few samples a cell has: Elasticsearch's digest keeps them all), read with two
        aggregations, not sample by sample."""
        query = {
            "bool": {
                "filter": [{"terms": {"race-id": list(race_ids)}}, {"term": {"name": SERVICE_TIME}}, {"term": {"sample-type": "normal"}}]
            }
        }
        counts = {"failed": {"filter": {"term": {"meta.success": False}}}}
        buckets = self._per_race_task(query, counts)
        sizes = {n for tasks in buckets.values() for n, _, _ in tasks.values()}
        percents = sorted({100 * rank / (n - 1) if n > 1 else 50.0 for n in sizes for rank in ranks_of(n)})
        values = self._per_race_task(query, {"at": {"percentiles": {"field": "value", "percents": percents or [50.0], "keyed": False}}})
        found = {}
        for race_id, tasks in buckets.items():
            for task, (n, failed, _) in tasks.items():
                by_percent = {round(v["key"], 9): v["value"] for v in values[race_id][task][2]["at"]["values"]}
                at = {rank: by_percent[round(100 * rank / (n - 1) if n > 1 else 50.0, 9)] for rank in ranks_of(n)}
                found.setdefault(race_id, {})[task] = (n, failed, at)
        return found

    def _per_race_task(self, query, aggs):
        """{race id: {task: (doc count, failed count, the bucket)}} of one aggregation over race-id and task."""
        body = {
            "size": 0,
            "query": query,
            "aggs": {
                "race": {
                    "terms": {"field": "race-id", "size": 10_000},
                    "aggs": {"task": {"terms": {"field": "task", "size": 10_000}, "aggs": aggs}},
                }
            },
        }
        answer = self._search("rally-metrics-*", body)["aggregations"]
        return {
            race["key"]: {
                task["key"]: (task["doc_count"], (task.get("failed") or {}).get("doc_count", 0), task) for task in race["task"]["buckets"]
            }
            for race in answer["race"]["buckets"]
        }

    def record_operations(self, race_id):
        """The track's record operations (runners/contracts/records.py META_KEY) that the race's samples carry, warm-up ones too,
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

    def host_samples(self, race_id):
        """{task: {host: {"clients": [client ids], "samples": n, "measured": n}}}: what each load-driver host's clients
        ran, from the host every sample of this track's runners names (runners/shared/hosts.py) and the client id Rally adds;
        warm-up samples are counted in "samples", not in "measured"."""
        query = {"bool": {"filter": [{"term": {"race-id": race_id}}, {"term": {"name": SERVICE_TIME}}]}}
        host_field = f"meta.{records.HOST_KEY}"
        per_host = {
            "clients": {"terms": {"field": "meta.client_id", "size": 10_000}},
            "measured": {"filter": {"term": {"sample-type": "normal"}}},
        }
        aggs = {
            "task": {
                "terms": {"field": "task", "size": 10_000},
                "aggs": {"host": {"terms": {"field": host_field, "size": 1000, "missing": records.UNNAMED}, "aggs": per_host}},
            }
        }
        answer = self._search("rally-metrics-*", {"size": 0, "query": query, "aggs": aggs})["aggregations"]
        return {
            task["key"]: {
                host["key"]: {
                    "clients": sorted(c["key"] for c in host["clients"]["buckets"]),
                    "samples": host["doc_count"],
                    "measured": host["measured"]["doc_count"],
                }
                for host in task["host"]["buckets"]
            }
            for task in answer["task"]["buckets"]
        }

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
    Store.local(args.host, args.port).prepare_local_node()
    path = write_config(args.rally_home, args.host, args.port)
    print(f"Rally's metrics store: http://{args.host}:{args.port}; Rally configuration: {path}")
    print(f"race, report and compare into it: make race METRICS_STORE=yes (esrally --configuration-name={CONFIG_NAME})")


if __name__ == "__main__":
    try:
        main()
    except ReportError as e:
        raise SystemExit(str(e))
