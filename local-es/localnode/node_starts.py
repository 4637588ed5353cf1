"""Races by node start (make versions): for each arm named, several node starts alternated across the arms
(A B C A B C ...); each start a local node started afresh, the corpus ingested (ingest-baseline), then RUNS races of the
challenge. An arm is a version, or LABEL=VERSION: a second arm of one version (8.17.2-aa=8.17.2), the A/A check that
two labels of one version are judged "no difference". Every race carries Rally user tags naming the plan, the version,
the arm and the node start (node-starts:<plan>, es:<version>, arm:<label>, node-start:<n>), so that
`make trend USER_TAG=node-starts:<plan>` reads them back as one history and `python -m report versions` judges the arms.

    python3 local-es/node_starts.py --plan NAME [--versions 8.17.2,8.19.21,9.5.3,8.17.2-aa=8.17.2] [--starts 3]
        [--runs 4] [--challenge production-comparison] [--http-port 9200] [--race-args=--test-mode] [--make make]

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

ROOT = Path(__file__).resolve().parents[2]  # the repository: its Makefile, its reports/
RACE_ID = re.compile(r"Race id is \[([0-9a-f-]+)\]")
TAGS = ("node-starts", "es", "arm", "node-start")  # the user tags of every race here: plan, version, arm, start
ARM_TAG = "arm"
ARM = re.compile(r"(?:([A-Za-z0-9_.-]+)=)?([0-9]+\.[0-9]+\.[0-9]+)")


def arms(text):
    """[(label, version)] of --versions: each entry a version, or LABEL=VERSION (the label unique)."""
    found = []
    for entry in (e.strip() for e in text.split(",") if e.strip()):
        match = ARM.fullmatch(entry)
        if not match:
            raise ValueError(f"--versions entry {entry!r}: give a version (9.5.3) or LABEL=VERSION (8.17.2-aa=8.17.2)")
        label, version = match.group(1) or match.group(2), match.group(2)
        if any(label == known for known, _ in found):
            raise ValueError(f"--versions names the arm {label!r} twice: give the second a label of its own ({label}-aa={version})")
        found.append((label, version))
    if not found:
        raise ValueError("--versions names no version")
    return found


def plan_order(arm_list, starts):
    """[(label, version, start number)], the arms alternated: A1 B1 C1 A2 B2 C2 ..."""
    return [(label, version, start) for start in range(1, starts + 1) for label, version in arm_list]


def progress(step, steps, label, start, finished_here, seconds_here):
    """Where a plan is: its step of all, and the time left at the pace of the starts this run has finished."""
    left = "time left known after this step"
    if finished_here:
        minutes = round(seconds_here / finished_here * (steps - step + 1) / 60)
        left = f"about {minutes // 60} h {minutes % 60:02d} min left" if minutes >= 60 else f"about {minutes} min left"
    return f"node-starts: step {step} of {steps}: {label} node start {start}; {left}"


def tags(plan, label, version, start):
    return ",".join(f"{key}:{value}" for key, value in zip(TAGS, (plan, version, label, start)))


def _make(args, *words):
    """One make run, its output shown and kept; (exit status, race id or None)."""
    command = [args.make, "--no-print-directory", "-C", str(ROOT), *words]
    print("$ " + " ".join(command), flush=True)
    run = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sys.stdout.write(run.stdout)
    found = RACE_ID.findall(run.stdout)
    return run.returncode, (found[-1] if found else None)


def run_start(args, label, version, start):
    """One node start: the node stopped and started afresh on the version, the ingest, then args.runs races."""
    port = f"PORT={args.http_port}"
    status, _ = _make(args, "es-stop", port)
    if status:
        raise SystemExit(f"node-starts: could not stop the node on port {args.http_port}")
    race_args = " ".join([*args.race_args.split(), f"--user-tag={tags(args.plan, label, version, start)}"])
    common = [port, f"ES_VERSION={version}", f"RACE_ARGS={race_args}"]
    if args.track_params:
        common.append(f"TRACK_PARAMS={args.track_params}")
    status, ingest = _make(args, "race", "CHALLENGE=ingest-baseline", *common)
    if status or not ingest:
        raise SystemExit(f"node-starts: the ingest of {label} start {start} failed; run the same command again to retry")
    races = []
    for run in range(1, args.runs + 1):
        print(f"node-starts: {label} node start {start}: race {run} of {args.runs} of {args.challenge}", flush=True)
        status, race = _make(args, "race", f"CHALLENGE={args.challenge}", *common)
        if status or not race:
            raise SystemExit(f"node-starts: race {run} of {label} start {start} failed; run the same command again to retry")
        races.append(race)
    return {
        "version": label,  # the arm (state files before arms had labels hold the version here)
        "es": version,
        "start": start,
        "ingest": ingest,
        "races": races,
        "ended": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--plan", required=True, help="the plan's name: its tag and its state folder")
    parser.add_argument(
        "--versions",
        default="8.17.2,8.19.21,9.5.3,8.17.2-aa=8.17.2",
        help="comma-separated arms: a version of local-es/esnode.py, or LABEL=VERSION",
    )
    parser.add_argument("--starts", type=int, default=3, help="node starts per version")
    parser.add_argument("--runs", type=int, default=4, help="races of the challenge per node start")
    parser.add_argument("--challenge", default="production-comparison")
    parser.add_argument("--track-params", default="")
    parser.add_argument("--race-args", default="", help="more arguments of each esrally race (make's RACE_ARGS), e.g. --test-mode")
    parser.add_argument("--http-port", type=int, default=9200)
    parser.add_argument("--make", default=os.environ.get("MAKE", "make"))
    parser.add_argument("--out", default=str(ROOT / "reports"))
    args = parser.parse_args(argv)
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", args.plan):
        parser.error(f"--plan {args.plan!r}: letters, digits, '.', '_' and '-' only (it becomes a tag and a folder name)")
    if args.starts < 1 or args.runs < 1:
        parser.error("--starts and --runs take 1 or more")
    if "--user-tag" in args.race_args:
        parser.error(f"--race-args {args.race_args!r} gives --user-tag: the plan tags each race itself (node-starts, es, arm, node-start)")
    try:
        arm_list = arms(args.versions)
    except ValueError as e:
        parser.error(str(e))
    versions = [v.strip() for v in args.versions.split(",") if v.strip()]
    state_path = Path(args.out) / f"node-starts-{args.plan}" / "state.json"
    state_path.parent.mkdir(parents=True, exist_ok=True)
    design = {
        "versions": versions,
        "starts": args.starts,
        "runs": args.runs,
        "challenge": args.challenge,
        "track-params": args.track_params,
    }
    if args.race_args:  # a plan begun in test mode is not resumed at full scale (state files before it have no key)
        design["race-args"] = args.race_args
    state = json.loads(state_path.read_text()) if state_path.is_file() else {"design": design, "done": []}
    if state["design"] != design:
        parser.error(f"plan {args.plan} was begun as {state['design']}; give the same options, or another --plan")
    order = plan_order(arm_list, args.starts)
    to_run = [step for step in order if not any(d["version"] == step[0] and d["start"] == step[2] for d in state["done"])]
    began = time.monotonic()
    for ran, (label, version, start) in enumerate(to_run):
        step = order.index((label, version, start)) + 1
        print(progress(step, len(order), label, start, ran, time.monotonic() - began), flush=True)
        state["done"].append(run_start(args, label, version, start))
        state_path.write_text(json.dumps(state, indent=2))
    print(f"node-starts {args.plan}: {len(state['done'])} node starts done; state in {state_path}")
    print(
        f"its verdicts: python -m report versions --user-tag node-starts:{args.plan}; its history: make trend USER_TAG=node-starts:{args.plan}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
