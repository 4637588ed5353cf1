"""The ingest's took files, in the record folder under records.TOOK_DIR: a line per bulk (its took, its wall-clock
window, Rally's service time), a file per epoch and client, and a marker once a client has filed an epoch's last
bulk. runners/studies/ingest.py writes and sums them; the report recounts them in a folder rebuilt from a store."""

import glob
import os

from runners.contracts import records


def took_dir(record):
    """Each ingest record keeps its bulk tooks apart (the layout sweep ingests the same epochs once per layout)."""
    return os.path.join(records.TOOK_DIR, os.path.splitext(record)[0])


def took_file(record, epoch, client):
    """One file per epoch and client: each client appends its own bulks, and the clients that ran can be counted."""
    return os.path.join(took_dir(record), f"epoch-{epoch}-client-{client}.txt")


def filed_marker(record, epoch, client):
    """Written once a client has filed the took of its last bulk of an epoch (or that bulk failed): the recorder reads
    an epoch's took files only when every client's marker is there (IngestEpochs._await_took_files)."""
    return os.path.join(took_dir(record), f"epoch-{epoch}-client-{client}.filed")


def took_line(took, started, ended, service=None):
    """A bulk's line in its took file: the response's took (ms), the bulk's wall-clock window (s), then Rally's service
    time of the request (s, first request start to last response end), where the runner knows it."""
    return f"{took} {started:.3f} {ended:.3f}" + (f" {service:.6f}" if service is not None else "")


def read_took_line(line):
    """(took, window) of a took file's line; an older line holds the took alone (window None)."""
    fields = line.split()
    return int(fields[0]), [float(f) for f in fields[1:3]] or None


def epoch_timing(record_dir, record, epoch):
    """Where an epoch's bulk wall time went, from its took files (every client's): wall-s, from the first bulk's
    start to the last bulk's end; processing-s, the bulk calls' own windows added up; service-s, Rally's service
    times added up (None where a line has none). Empty where the epoch has no line with a window."""
    lines = [line.split() for lines in bulk_lines(record_dir, record, epoch).values() for line in lines]
    windows = [(float(f[1]), float(f[2])) for f in lines if len(f) >= 3]
    if not windows:
        return {}
    services = [float(f[3]) for f in lines if len(f) >= 4]
    return {
        "wall-s": max(end for _, end in windows) - min(start for start, _ in windows),
        "processing-s": sum(end - start for start, end in windows),
        "service-s": sum(services) if len(services) == len(lines) else None,
    }


def bulk_tooks(record_dir, record, epoch):
    """Every bulk `took` of one epoch that the record folder holds, from all clients."""
    return [read_took_line(line)[0] for lines in bulk_lines(record_dir, record, epoch).values() for line in lines]


def bulk_lines(record_dir, record, epoch):
    """Each took file's lines of one epoch, by file name (one file per client)."""
    found = {}
    for path in sorted(glob.glob(os.path.join(record_dir, took_dir(record), f"epoch-{epoch}-*.txt"))):
        with open(path) as f:
            found[os.path.basename(path)] = [line for line in f if line.strip()]
    return found


def recount_bulk_tooks(record_dir):
    """Each ingest record's per-epoch took sum and count, again from the took files: a folder rebuilt from a metrics
    store holds every load-driver host's tooks, where the epoch task counted only its own host's."""
    took_root = os.path.join(record_dir, records.TOOK_DIR)
    for stem in sorted(os.listdir(took_root)) if os.path.isdir(took_root) else []:
        name = stem + ".json"
        record = records.read(record_dir, name)
        if record:
            for row in record["epochs"]:
                tooks = bulk_tooks(record_dir, name, row["epoch"])
                row.update({"bulk-requests": len(tooks), "bulk-took-ms": sum(tooks)})
                if "wall-s" in row:
                    row.update(epoch_timing(record_dir, name, row["epoch"]))
            records.write(record_dir, name, record)
