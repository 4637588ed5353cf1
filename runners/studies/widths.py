"""coverage-width: the sweep's parameters and the rows of each width's corpus set (corpora-gen/generate --widths; the
track processor binds each width's tasks to its set, the coverages are runners/studies/coverage.py's)."""

from runners.contracts import parameters, rules
from runners.contracts.corpus import MAX_NODES
from runners.contracts.queries import TRANSPORTS, VARIANTS

WIDTH_KEY = "corpus-width"  # a task's operation parameter: it works on that width's corpus set (the track processor binds it)

# a corpus set per width, equal rows per epoch by default (the same documents to aggregate at every width, so what
# changes is the width's own cost); per-node grows the corpus with the width
PARAMETER_RULES = {
    "widths": rules.list_of(rules.integer(1, MAX_NODES), f"node counts (1 to {MAX_NODES})"),
    "width_rows": rules.one_of("per-epoch", "per-node"),
    "width_rows_per_epoch": rules.integer(1),
    "width_rows_per_node": rules.integer(1),
    "width_epochs": rules.integer(1),
    "width_variants": rules.names(tuple(VARIANTS)),
    "width_transports": rules.names(TRANSPORTS),
    # _msearch's max_concurrent_searches per msearch cell; 0 leaves it to Elasticsearch (its default depends on the
    # data nodes and the search pool: the report names it)
    "width_max_concurrent_searches": rules.list_of(rules.integer(0, 1024), "max_concurrent_searches (0: Elasticsearch's default)"),
    # serial sends a request per node: above this width it is not run (the report extrapolates from the widest run)
    "width_serial_max_nodes": rules.integer(0),
    # an HDR variant over terms holds 3 histograms per node in one response, which no breaker sees: at 3000 nodes a
    # 1 GB node died of OutOfMemoryError (C_hdr, 3 digits); above this width that cell is not run
    "width_hdr_terms_max_nodes": rules.integer(0),
    "width_iterations": rules.integer(1),
}


def rows_per_epoch(user_params, width):
    """Rows per epoch of the width set at `width` nodes, as the track parameters ask (width_rows)."""
    if parameters.value(user_params, "width_rows") == "per-node":
        return width * parameters.value(user_params, "width_rows_per_node")
    return parameters.value(user_params, "width_rows_per_epoch")
