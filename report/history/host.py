"""The load driver's host in a history (report/shared/host_load.py): where a race met a busy host, what a change says
of it, and whether a step is the host's rather than Elasticsearch's (docs/host-load.md)."""

from report.shared import host_load


def busy(point):
    """Whether the point's race met a busy host over its timed cells (a race without the record did not say so)."""
    return bool(point.facts.host and point.facts.host.busy)


def either_busy(a, b):
    return bool((a and a.busy) or (b and b.busy))


def what_changed(a, b):
    """How the host differs between the race before a change and the first after it (HostLoad or None), plainly: busy
    after a quiet race, quiet again after a busy one; said only when either is busy or the later is not recorded."""
    if b is None:
        return [host_load.NOT_RECORDED]
    was = lambda name, fmt: "not recorded" if a is None else fmt.format(getattr(a, name))  # noqa: E731
    if b.busy:
        parts = []
        if b.foreign >= host_load.FOREIGN_BUSY:
            parts.append(f"other processes took {b.foreign:.0f}% of a core during the cells (was {was('foreign', '{:.0f}%')})")
        if b.steal >= host_load.STEAL_BUSY:
            parts.append(f"steal {b.steal:.1f}% during the cells (was {was('steal', '{:.1f}%')})")
        return ["host busy: " + ", ".join(parts)]
    if a is not None and a.busy:
        return [
            f"host quiet again: other processes {b.foreign:.0f}% of a core, steal {b.steal:.1f}% (was {a.foreign:.0f}%, {a.steal:.1f}%)"
        ]
    return []


def named(last_before, after):
    """Whether every race after a step met a busy host and the race before it did not: the step is the host's, not
    Elasticsearch's (the trend names it and does not alert on it)."""
    return bool(after) and all(busy(p) for p in after) and not busy(last_before)


def resting_on_busy(after):
    """What a step's verdict rests on, where some of the races after it met a busy host (said, never dropped)."""
    count = sum(1 for p in after if busy(p))
    return [f"{count} of the {len(after)} race(s) after it met a busy host"] if count else []
