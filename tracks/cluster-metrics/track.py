"""Thin plugin entry point: puts the repository root on sys.path and registers the top-level runners package."""

import os
import sys

_REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
if _REPO_ROOT not in sys.path:
    sys.path.insert(0, _REPO_ROOT)

from runners import register  # noqa: E402,F401
