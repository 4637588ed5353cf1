#!/usr/bin/env python3
"""Load-driver hosts on one machine, in namespaces of their own: the entry point of localnode.load_driver_hosts,
whose docstring (`load_driver_hosts.py --help`) describes the commands. Stdlib only."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the localnode package beside this script (python -I too)
from localnode.load_driver_hosts import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
