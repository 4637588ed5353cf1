"""Request bodies of the 30-node coverage, built once from composable pieces.

The seed's query: size 0, a bool filter of term node + term epoch, and the variant's metric aggregations.
"""

import json
from pathlib import Path

import jinja2

FIELDS = ("cpu", "mem", "net")
VOCABULARY = Path(__file__).resolve().parents[1] / "tracks" / "cluster-metrics" / "vocabulary.j2"


_MODULE = jinja2.Environment().from_string(VOCABULARY.read_text()).module


def _vocabulary():
    """Variants (name -> aggregation pieces), transports and the layout sweep's layouts, from the file track.json
    imports too."""
    module = _MODULE
    return ({name: tuple(pieces) for name, pieces in module.variants.items()}, tuple(module.transports),
            tuple(module.layouts))


VARIANTS, TRANSPORTS, LAYOUTS = _vocabulary()


def rtt_samples(rtt_ms, iterations):
    """Measured samples per point of the RTT sweep and the CCS comparison (the rule track.json applies)."""
    return int(str(_MODULE.rtt_samples(rtt_ms, iterations)))
DEFAULT_PERCENTS = (0, 50, 90, 100)
DEFAULT_HDR_DIGITS = 3  # Elasticsearch's default number_of_significant_value_digits
TERMS_AGG = "per_node"


def validate_variant(variant):
    if variant not in VARIANTS:
        raise ValueError(f"unknown coverage variant {variant!r}: use one of {', '.join(VARIANTS)}")


def validate_transport(transport):
    if transport not in TRANSPORTS:
        raise ValueError(f"unknown coverage transport {transport!r}: use one of {', '.join(TRANSPORTS)}")


def has_sums(variant):
    return "sum" in VARIANTS[variant]


def percentile_algorithm(variant):
    """"tdigest", "hdr", or None for a variant without percentiles."""
    return next((piece for piece in VARIANTS[variant] if piece in ("tdigest", "hdr")), None)


def json_bytes(body):
    """A request body serialized once, ahead of the timed window."""
    return json.dumps(body, separators=(",", ":")).encode()


def metric_aggs(variant, percents=DEFAULT_PERCENTS, hdr_digits=DEFAULT_HDR_DIGITS):
    """The variant's aggregations: <field>_sum and/or <field>_pct for cpu, mem and net."""
    validate_variant(variant)
    aggs = {}
    for piece in VARIANTS[variant]:
        for field in FIELDS:
            if piece == "sum":
                aggs[f"{field}_sum"] = {"sum": {"field": field}}
            else:
                percentiles = {"field": field, "percents": list(percents)}
                if piece == "hdr":
                    percentiles["hdr"] = {"number_of_significant_value_digits": hdr_digits}
                aggs[f"{field}_pct"] = {"percentiles": percentiles}
    return aggs


def _search(filters, aggs):
    # track_total_hits: exact hit counts (~33k per node and epoch, above the default 10,000 cap) for validation;
    # the aggregations visit every matching document anyway, so counting them costs next to nothing
    body = {"size": 0, "track_total_hits": True, "query": {"bool": {"filter": filters}}}
    if aggs:
        body["aggs"] = aggs
    return body


def node_search(variant, epoch, node, percents=DEFAULT_PERCENTS, hdr_digits=DEFAULT_HDR_DIGITS):
    """One node's search for one epoch, as the seed sends it."""
    return _search([{"term": {"node": node}}, {"term": {"epoch": epoch}}], metric_aggs(variant, percents, hdr_digits))


def terms_search(variant, epoch, node_count, percents=DEFAULT_PERCENTS, hdr_digits=DEFAULT_HDR_DIGITS):
    """The whole coverage in one search: the epoch filter, a terms bucket per node holding the variant's aggs."""
    per_node = {"terms": {"field": "node", "size": node_count}}
    aggs = metric_aggs(variant, percents, hdr_digits)
    if aggs:
        per_node["aggs"] = aggs
    return _search([{"term": {"epoch": epoch}}], {TERMS_AGG: per_node})


def msearch_body(index, searches):
    """NDJSON of one _msearch: the request cache is switched off in each header (the URL parameter is refused)."""
    header = json.dumps({"index": index, "request_cache": False})
    lines = []
    for body in searches:
        lines += [header, json.dumps(body)]
    return ("\n".join(lines) + "\n").encode()
