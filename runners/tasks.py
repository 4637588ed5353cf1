"""Task names the track, the runners and the report share. track.json spells the same patterns (a test renders the
track and checks them against these); the same name in every challenge lets `esrally compare` line races up."""

VERIFY_DOC_COUNT = "verify-doc-count"  # nothing lost: after every ingest, the index holds the corpus's count
# an ingest's one task (runners/ingest.py): the index set up afresh, every epoch bulk-loaded, each epoch's cost
# recorded, the document count checked; a prefix names whose ingest (ingest_change_task_name, layout_task_name, ...)
INGEST = "ingest"


def bulk_task_name(epoch):
    """The bulk load of one epoch in a task of its own (the live challenge; every ingest in races before the ingest
    became one task): its duration in race.json is the epoch's wall time."""
    return f"bulk-epoch-{epoch}"


def layout_task_name(layout, name):
    """A task of one layout of the layout sweep: layout_task_name("2S1R", bulk_task_name(1))."""
    return f"layout-{layout}-{name}"


def ingest_change_task_name(change, name):
    """A task of one ingest of ingest-changes (the baseline or a seed change):
    ingest_change_task_name("clients", bulk_task_name(1)) == "change-clients-bulk-epoch-1"."""
    return f"change-{change}-{name}"


def source_task_name(mode, name):
    """A task of one _source mode of source-cost: source_task_name("stored", coverage_task_name("D_td", "msearch"))."""
    return f"source-{mode}-{name}"


def width_task_name(width, name):
    """A task of one width of the coverage-width sweep: width_task_name(300, coverage_task_name("D_td", "terms"))."""
    return f"width-{width}-{name}"
