"""The report's load-driver hosts section (a race on several hosts, read from the metrics store): what each host's
clients ran, per task, and for coverage-load's steps each host's share of the target rate and the rate it reached."""

from runners.contracts import records
from runners.contracts.records import UNNAMED

HOSTS_NOTE = (
    "Rally puts a race's clients on its load-driver hosts in order: the first ceil(clients / hosts) on the first host "
    "(--load-driver-hosts), the next on the second, and a task's clients are the first of those, so a one-client task "
    "runs on the first host. Counts are the samples in the metrics store, each naming the host that ran it (the "
    "track's runners add it; Rally adds the client id; a request that raised carries Rally's meta only, counted as "
    f"'{UNNAMED}'); 'measured' leaves the warm-ups out. A step's target per host "
    "is the step's target x the host's share of its clients (every client's arrivals have the same mean); 'achieved' "
    "is the host's measured coverages over the step's duration, and the steps' rows for all hosts sum them."
)


def host_names(race):
    """The hosts that named themselves in the race's samples."""
    return sorted({host for by_host in race.hosts.values() for host in by_host} - {UNNAMED})


def _step_rates(race, task, by_host):
    """{host: (target /s, achieved /s)} of a coverage-load step, and the sum over hosts; None for another task."""
    record, op = load_steps(race).get(task), race.op_metrics().get(task)
    if not record or not op or not op.get("duration"):
        return None
    seconds = op["duration"] / 1000
    rates = {host: (record["target_per_s"] * len(c["clients"]) / record["clients"], c["measured"] / seconds) for host, c in by_host.items()}
    return rates, (sum(t for t, _ in rates.values()), sum(a for _, a in rates.values()))


def hosts_table(race):
    """One row per task and host that ran it; None for a race on one host or without a metrics store."""
    if len(host_names(race)) < 2:
        return None
    header = ["task", "host", "clients", "samples", "measured", "target /s", "achieved /s"]
    order = list(race.op_metrics()) + sorted(set(race.hosts) - set(race.op_metrics()))
    body = []
    for task in (t for t in order if t in race.hosts):
        by_host = race.hosts[task]
        rates = _step_rates(race, task, by_host)
        for host in sorted(by_host):
            c = by_host[host]
            target, achieved = rates[0][host] if rates else (None, None)
            clients = f"{len(c['clients'])} ({', '.join(map(str, c['clients']))})"
            body.append([task, host, clients, c["samples"], c["measured"], target, achieved])
        if rates:
            body.append([task, "all hosts", sum(len(c["clients"]) for c in by_host.values()), None, None, *rates[1]])
    return header, body


def load_steps(race):
    """{coverage-load step task: its calibrated and target rate} (records.LOAD_STEPS; each client's scheduler writes the
    same record, the last one wins)."""
    return {r["task"]: r for r in race.record(records.LOAD_STEPS, [])}
