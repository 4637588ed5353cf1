#!/usr/bin/env python3
"""Races by node start (make node-starts): for each version named, several node starts alternated across the versions
(A B A B ...); each start a local node started afresh, the corpus ingested (ingest-baseline), then RUNS races of the
challenge. Every race carries Rally user tags naming the plan, the version and the node start (node-starts:<plan>,
es:<version>, node-start:<n>), so that `make trend USER_TAG=node-starts:<plan>` reads them back as one history.

    python3 local-es/node_starts.py --plan NAME [--versions 8.17.2,9.5.3] [--starts 3] [--runs 4]
        [--challenge production-comparison] [--http-port 9200] [--make make]

Resumable: the plan's state (reports/node-starts-<plan>/state.json) lists each finished node start and its races;
run the same command again and it goes on at the first start not finished (a start cut short is raced again from
its node start: the unit is the node start, so no half of one is kept). Stdlib only; each race is `make race`, so
the node, the corpus and the checks are the ones a user's race has. It stops only the node it started on the port.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RACE_ID = re.compile(r"Race id is \[([0-9a-f-]+)\]")
TAGS = ("node-starts", "es", "node-start")  # the user tags of every race here: the plan, the version, the start


def plan_order(versions, starts):
    """[(version, start number)], the versions alternated: A1 B1 C1 A2 B2 C2 ..."""
    return [(version, start) for start in range(1, starts + 1) for version in versions]


def tags(plan, version, start):
    return ",".join(f"{key}:{value}" for key, value in zip(TAGS, (plan, version, start)))


def _make(args, *words):
    """One make run, its output shown and kept; (exit status, race id or None)."""
    command = [args.make, "--no-print-directory", "-C", str(ROOT), *words]
    print("$ " + " ".join(command), flush=True)
    run = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sys.stdout.write(run.stdout)
    found = RACE_ID.findall(run.stdout)
    return run.returncode, (found[-1] if found else None)


def run_start(args, version, start):
    """One node start: the node stopped and started afresh on the version, the ingest, then args.runs races."""
    port = f"PORT={args.http_port}"
    status, _ = _make(args, "es-stop", port)
    if status:
        raise SystemExit(f"node-starts: could not stop the node on port {args.http_port}")
    common = [port, f"ES_VERSION={version}", f"RACE_ARGS=--user-tag={tags(args.plan, version, start)}"]
    if args.track_params:
        common.append(f"TRACK_PARAMS={args.track_params}")
    status, ingest = _make(args, "race", "CHALLENGE=ingest-baseline", *common)
    if status or not ingest:
        raise SystemExit(f"node-starts: the ingest of {version} start {start} failed; run the same command again to retry")
    races = []
    for run in range(1, args.runs + 1):
        status, race = _make(args, "race", f"CHALLENGE={args.challenge}", *common)
        if status or not race:
            raise SystemExit(f"node-starts: race {run} of {version} start {start} failed; run the same command again to retry")
        races.append(race)
    return {
        "version": version,
        "start": start,
        "ingest": ingest,
        "races": races,
        "ended": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--plan", required=True, help="the plan's name: its tag and its state folder")
    parser.add_argument("--versions", default="8.17.2,9.5.3", help="comma-separated versions of local-es/esnode.py")
    parser.add_argument("--starts", type=int, default=3, help="node starts per version")
    parser.add_argument("--runs", type=int, default=4, help="races of the challenge per node start")
    parser.add_argument("--challenge", default="production-comparison")
    parser.add_argument("--track-params", default="")
    parser.add_argument("--http-port", type=int, default=9200)
    parser.add_argument("--make", default=os.environ.get("MAKE", "make"))
    parser.add_argument("--out", default=str(ROOT / "reports"))
    args = parser.parse_args(argv)
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", args.plan):
        parser.error(f"--plan {args.plan!r}: letters, digits, '.', '_' and '-' only (it becomes a tag and a folder name)")
    if args.starts < 1 or args.runs < 1:
        parser.error("--starts and --runs take 1 or more")
    versions = [v for v in args.versions.split(",") if v]
    state_path = Path(args.out) / f"node-starts-{args.plan}" / "state.json"
    state_path.parent.mkdir(parents=True, exist_ok=True)
    design = {
        "versions": versions,
        "starts": args.starts,
        "runs": args.runs,
        "challenge": args.challenge,
        "track-params": args.track_params,
    }
    state = json.loads(state_path.read_text()) if state_path.is_file() else {"design": design, "done": []}
    if state["design"] != design:
        parser.error(f"plan {args.plan} was begun as {state['design']}; give the same options, or another --plan")
    for version, start in plan_order(versions, args.starts):
        if any(d["version"] == version and d["start"] == start for d in state["done"]):
            continue
        state["done"].append(run_start(args, version, start))
        state_path.write_text(json.dumps(state, indent=2))
    print(f"node-starts {args.plan}: {len(state['done'])} node starts done; state in {state_path}")
    print(f"its history: make trend USER_TAG=node-starts:{args.plan}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
