"""Task names the track, the runners and the report share. track.json spells the same patterns (a test renders the
track and checks them against these); the same name in every challenge lets `esrally compare` line races up."""


def coverage_task_name(variant, transport):
    """One (variant, transport) cell of the coverage."""
    return f"coverage-{variant}-{transport}"


def bulk_task_name(epoch):
    """The bulk load of one epoch: its duration in race.json is the epoch's wall time."""
    return f"bulk-epoch-{epoch}"


def layout_task_name(layout, name):
    """A task of one layout of the layout sweep: layout_task_name("2S1R", bulk_task_name(1))."""
    return f"layout-{layout}-{name}"
