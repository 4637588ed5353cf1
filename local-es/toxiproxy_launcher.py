#!/usr/bin/env python3
"""Local Toxiproxy (make toxiproxy, proxy-start, proxy-stop, ...): the entry point of localnode.toxiproxy_launcher,
whose docstring (`toxiproxy_launcher.py --help`) describes the commands. Stdlib only, like esnode.py."""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# the localnode package beside this script, and the repository, whose runners/shared/toxiproxy.py is the client
sys.path[:0] = [str(HERE), str(HERE.parent)]
from localnode.toxiproxy_launcher import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
