#!/usr/bin/env python3
"""Local Elasticsearch launcher (make es-start, es-stop, es-status, es-wipe, es-versions): the entry point of
localnode.cli, whose docstring (`esnode.py --help`) describes the commands, the versions, the ports and the layout.
Stdlib only, so it runs before the project's virtualenv exists."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the localnode package beside this script (python -I too)
from localnode.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
