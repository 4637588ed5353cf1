"""Request bodies of the 30-node coverage, built once from composable pieces.

The seed's query: size 0, a bool filter of term node + term epoch, and the variant's metric aggregations.
"""

import json

import jinja2

from runners.contracts.track_files import declared_defaults, track_dir

FIELDS = ("cpu", "mem", "net")

VOCABULARY = track_dir() / "vocabulary.j2"
VOCABULARY_MODULE = jinja2.Environment().from_string(VOCABULARY.read_text()).module  # also what track.json's defaults refer to


def _vocabulary():
    """Variants (name -> aggregation pieces), transports, the layout sweep's layouts, the _source modes and the fetch
    kinds, from the file track.json imports too."""
    module = VOCABULARY_MODULE
    return (
        {name: tuple(pieces) for name, pieces in module.variants.items()},
        tuple(module.transports),
        tuple(module.layouts),
        tuple(module.source_modes),
        tuple(module.fetch_kinds),
    )


VARIANTS, TRANSPORTS, LAYOUTS, SOURCE_MODES, FETCH_KINDS = _vocabulary()
SOURCE_MODE_SETTING = VOCABULARY_MODULE.source_mode_setting
DEFAULT_COMPRESSION = VOCABULARY_MODULE.default_compression  # Elasticsearch's default t-digest compression
# ingest-changes: each seed change -> the track parameters it ingests with; the baseline's name
INGEST_CHANGES = {name: tuple(tuned) for name, tuned in VOCABULARY_MODULE.ingest_changes.items()}
INGEST_CHANGE_BASELINE = VOCABULARY_MODULE.ingest_change_baseline
CCS_DIRECT_ROUTES = tuple(VOCABULARY_MODULE.ccs_direct_routes)
FETCH_TRANSPORTS = ("serial", "msearch")  # top_hits in a terms bucket stops at index.max_inner_result_window (100)
# source-large: its index, what its fetch asks of each hit's _source, the response formats (runners/studies/large_source.py)
LARGE_SOURCE_INDEX = VOCABULARY_MODULE.large_source_index
LARGE_SOURCE_MODES = tuple(VOCABULARY_MODULE.large_source_modes)
LARGE_SOURCE_FORMATS = tuple(VOCABULARY_MODULE.large_source_formats)
FETCH_SORT_FIELD = "cpu"  # a fetch coverage returns each node's busiest samples: sorted by cpu, descending
DOC_FIELDS = ("epoch", "node", "task", "cpu", "mem", "net")  # index.json's properties


def rtt_samples(rtt_ms, iterations):
    """Measured samples per point of the RTT sweep and the CCS comparison (the rule track.json applies)."""
    return int(str(VOCABULARY_MODULE.rtt_samples(rtt_ms, iterations)))


_DECLARED = declared_defaults()
DEFAULT_PERCENTS = tuple(_DECLARED["percents"])  # the track parameter percents' default
# the track parameter hdr_digits' default (Elasticsearch's default number_of_significant_value_digits too)
DEFAULT_HDR_DIGITS = _DECLARED["hdr_digits"]
# Elasticsearch counts hits exactly up to this many without track_total_hits, then answers "gte" this value
HIT_COUNT_THRESHOLD = 10_000
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
    """ "tdigest", "hdr", or None for a variant without percentiles."""
    return next((piece for piece in VARIANTS[variant] if piece in ("tdigest", "hdr")), None)


def json_bytes(body):
    """A request body serialized once, ahead of the timed window, as the seed's client (Python's json.dumps with its
    default separators, through requests) sent it."""
    return json.dumps(body).encode()


def metric_aggs(variant, percents=DEFAULT_PERCENTS, hdr_digits=DEFAULT_HDR_DIGITS, compression=None):
    """The variant's aggregations: <field>_sum and/or <field>_pct for cpu, mem and net. compression: t-digest's
    (None: Elasticsearch's default, left out of the request as the seed sends it)."""
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
                elif compression is not None:
                    percentiles["tdigest"] = {"compression": compression}
                aggs[f"{field}_pct"] = {"percentiles": percentiles}
    return aggs


def _search(filters, aggs, exact_hits=False):
    """The seed's body, key for key: size 0, the filter, the aggregations. exact_hits (track parameter
    track_total_hits) adds "track_total_hits": true, which the seed's body does not have: exact counts above
    HIT_COUNT_THRESHOLD (~33k per node and epoch); without it the answer says "at least 10,000"."""
    body = {"size": 0, **({"track_total_hits": True} if exact_hits else {}), "query": {"bool": {"filter": filters}}}
    if aggs:
        body["aggs"] = aggs
    return body


def _node_filters(epoch, node):
    return [{"term": {"node": node}}, {"term": {"epoch": epoch}}]


def node_search(  # parameters: the search, then the aggregations' options, each a keyword with the seed's default
    variant, epoch, node, percents=DEFAULT_PERCENTS, hdr_digits=DEFAULT_HDR_DIGITS, compression=None, exact_hits=False
):
    """One node's search for one epoch, as the seed sends it."""
    return _search(_node_filters(epoch, node), metric_aggs(variant, percents, hdr_digits, compression), exact_hits)


def terms_search(  # parameters: the search, then the aggregations' options, each a keyword with the seed's default
    variant, epoch, node_count, percents=DEFAULT_PERCENTS, hdr_digits=DEFAULT_HDR_DIGITS, compression=None, exact_hits=False
):
    """The whole coverage in one search: the epoch filter, a terms bucket per node holding the variant's aggs."""
    per_node = {"terms": {"field": "node", "size": node_count}}
    aggs = metric_aggs(variant, percents, hdr_digits, compression)
    if aggs:
        per_node["aggs"] = aggs
    return _search([{"term": {"epoch": epoch}}], {TERMS_AGG: per_node}, exact_hits)


def validate_fetch_kind(kind):
    if kind not in FETCH_KINDS:
        raise ValueError(f"unknown fetch kind {kind!r}: use one of {', '.join(FETCH_KINDS)}")


def fetch_search(epoch, node, size, kind):
    """One node's N busiest samples of one epoch (sorted by cpu, descending), each hit with its _source or with every
    field's doc values."""
    validate_fetch_kind(kind)
    body = {
        "size": size,
        "track_total_hits": True,
        "query": {"bool": {"filter": _node_filters(epoch, node)}},
        "sort": [{FETCH_SORT_FIELD: "desc"}],
    }
    if kind == "source":
        body["_source"] = True
    else:
        body.update({"_source": False, "docvalue_fields": list(DOC_FIELDS)})
    return body


def msearch_body(index, searches):
    """NDJSON of one _msearch: the request cache is switched off in each header (the URL parameter is refused)."""
    header = json.dumps({"index": index, "request_cache": False})
    lines = []
    for body in searches:
        lines += [header, json.dumps(body)]
    return ("\n".join(lines) + "\n").encode()
