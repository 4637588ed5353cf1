#!/usr/bin/env python3
"""Races by node start (make versions): the entry point of localnode.node_starts, whose docstring
(`node_starts.py --help`) describes the plan. Stdlib only."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the localnode package beside this script (python -I too)
from localnode.node_starts import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main())
