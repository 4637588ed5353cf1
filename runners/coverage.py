"""The 30-node coverage: one epoch, every node, over three transports, each answer checked against ground truth."""

import functools
import json
import logging
import os

from runners import queries
from runners.context import CONTEXT_KEY
from runners.validation import (CoverageErrors, PercentileErrors, check_node_response, check_terms_response)

LOG = logging.getLogger(__name__)


def load_truth(context):
    """The ground truth section the race's corpus matches, parsed once per file version in this process."""
    path = context["ground-truth"]
    return _parsed_truth(path, os.path.getmtime(path))["epochs"][context["truth-section"]]


@functools.lru_cache(maxsize=2)
def _parsed_truth(path, mtime):  # mtime in the key: a regenerated corpus is read again
    with open(path) as f:
        return json.load(f)


class CoverageParamSource:
    """Builds every epoch's request bodies once (serial: one per node; msearch: the NDJSON bytes; terms: one body)
    and cycles through the epochs, one coverage per call.

    Operation parameters: variant, transport (required); epochs (default: all generated), nodes (default: all),
    percents ([0, 50, 90, 100]), hdr-digits (3), request-timeout (seconds, 120)."""

    def __init__(self, track, params, **kwargs):
        context = params[CONTEXT_KEY]
        self.variant, self.transport = params["variant"], params["transport"]
        queries.validate_variant(self.variant)
        queries.validate_transport(self.transport)
        self.index = context["index"]
        self.epochs = list(params.get("epochs") or context["epochs"])
        self.nodes = list(params.get("nodes") or context["nodes"])
        self.percents = list(params.get("percents", queries.DEFAULT_PERCENTS))
        self.request_timeout = params.get("request-timeout", 120)
        hdr_digits = params.get("hdr-digits", 3)
        truth = load_truth(context)
        self._per_epoch = {}
        for epoch in self.epochs:
            searches = [queries.node_search(self.variant, epoch, n, self.percents, hdr_digits) for n in self.nodes]
            self._per_epoch[epoch] = {
                "expected": {n: truth[str(epoch)][n] for n in self.nodes},
                "searches": searches if self.transport == "serial" else None,
                "msearch-body": queries.msearch_body(self.index, searches) if self.transport == "msearch" else None,
                "terms-body": (queries.terms_search(self.variant, epoch, len(self.nodes), self.percents, hdr_digits)
                               if self.transport == "terms" else None),
            }
        self._next = 0
        self.infinite = True

    def partition(self, partition_index, total_partitions):
        return self

    def params(self):
        epoch = self.epochs[self._next % len(self.epochs)]
        self._next += 1
        return {"variant": self.variant, "transport": self.transport, "index": self.index, "epoch": epoch,
                "nodes": self.nodes, "percents": self.percents, "request-timeout": self.request_timeout,
                **self._per_epoch[epoch]}


class Coverage:
    """One 30-node coverage of one epoch.

    Measures: service_time is the wall time of the whole coverage (first request sent to last response read):
    30 serial _search calls, one _msearch with 30 sub-searches, or one _search with a terms bucket per node.
    Returns weight 1, unit "coverages"; meta: server-side `took` summed over the coverage's responses, the number
    of HTTP requests, and the percentile error against the exact ground truth.
    Every response is validated (errors, shard failures, timed_out, hit counts, sums, percentile bound); any
    mismatch makes the sample fail with a description naming epoch, node and field."""

    async def __call__(self, es, params):
        transport, epoch, nodes = params["transport"], params["epoch"], params["nodes"]
        client = es.options(request_timeout=params["request-timeout"])
        errors, pct_errors = CoverageErrors(), PercentileErrors()
        took = 0
        if transport == "serial":
            requests = len(nodes)
            for node, body in zip(nodes, params["searches"]):
                response = (await client.perform_request("POST", f"/{params['index']}/_search",
                                                         params={"request_cache": "false"}, body=body)).body
                took += response.get("took", 0)
                check_node_response(response, node, epoch, params["expected"][node], params["variant"],
                                    params["percents"], errors, pct_errors)
        elif transport == "msearch":
            requests = 1
            response = (await client.perform_request("POST", "/_msearch", body=params["msearch-body"],
                                                     headers={"content-type": "application/x-ndjson"})).body
            responses = response.get("responses", [])
            if len(responses) != len(nodes):
                errors.add(f"epoch {epoch}: _msearch returned {len(responses)} responses for {len(nodes)} searches")
            for node, sub in zip(nodes, responses):
                took += sub.get("took", 0)
                check_node_response(sub, node, epoch, params["expected"][node], params["variant"],
                                    params["percents"], errors, pct_errors)
        else:
            requests = 1
            response = (await client.perform_request("POST", f"/{params['index']}/_search",
                                                     params={"request_cache": "false"}, body=params["terms-body"])).body
            took = response.get("took", 0)
            check_terms_response(response, nodes, epoch, params["expected"], params["variant"], params["percents"],
                                 errors, pct_errors)
        result = {"weight": 1, "unit": "coverages", "success": not errors, "took": took, "requests": requests,
                  "epoch": epoch, **pct_errors.as_meta()}
        if errors:
            result["error-type"] = "cluster-metrics-validation"
            result["error-description"] = f"{params['variant']}/{transport}: {errors.description()}"
            LOG.warning("coverage failed validation: %s", result["error-description"])
        return result

    def __repr__(self):
        return "coverage"
