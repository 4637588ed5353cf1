"""What bounds an _msearch's concurrency on the cluster: its search pool and allocated processors, recorded for the
reports of every study whose cells use _msearch (the search-pool task, or verify-corpus with search-pool: true)."""

from runners.contracts import records
from runners.contracts.context import RaceContext
from runners.contracts.records import SEARCH_POOL  # noqa: E402,F401 (this study's record)
from runners.contracts.registry import Need, Operation


def search_pool_size(allocated_processors):
    """Elasticsearch's default size of the search thread pool (ThreadPool.searchThreadPoolSize)."""
    return allocated_processors * 3 // 2 + 1


def default_max_concurrent_searches(allocated_processors, data_nodes):
    """_msearch's max_concurrent_searches when the request leaves it out (TransportMultiSearchAction
    .defaultMaxConcurrentSearches, Elasticsearch 8): data nodes x the default search pool size of the coordinating
    node's allocated processors, capped at 10 per node, at least 1."""
    return max(1, data_nodes * min(search_pool_size(allocated_processors), 10))


class SearchPool:
    """Records what bounds the sweep's parallelism (untimed): the data nodes, each node's allocated processors and
    search pool (size and queue, as configured), and the default max_concurrent_searches an _msearch gets from the
    node that coordinates it (the first node answering). Writes <race>/cluster-metrics/search-pool.json; returns 1
    op with the same as sample meta."""

    async def __call__(self, es, params):
        info = (await es.perform_request("GET", "/_nodes/os,thread_pool")).body
        nodes = [
            {
                "name": node["name"],
                "data": any(role.startswith("data") for role in node.get("roles", [])),
                "allocated-processors": node["os"]["allocated_processors"],
                "search-pool-size": node["thread_pool"]["search"]["size"],
                "search-queue-size": node["thread_pool"]["search"].get("queue_size"),
            }
            for node in info["nodes"].values()
        ]
        data_nodes = sum(1 for n in nodes if n["data"])
        coordinating = nodes[0]["allocated-processors"] if nodes else 1
        pool = {
            "nodes": nodes,
            "data-nodes": data_nodes,
            "default-max-concurrent-searches": default_max_concurrent_searches(coordinating, data_nodes),
        }
        written = records.write(RaceContext.of(params).record_dir, SEARCH_POOL, pool)
        return {"weight": 1, "unit": "ops", "success": True, "data-nodes": data_nodes, **written}

    def __repr__(self):
        return "search-pool"


OPERATIONS = {
    "search-pool": Operation(SearchPool, Need("reads the nodes' search thread pool and processors", ("monitor",)), reads_corpus=False),
}
