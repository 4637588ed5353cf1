"""Thin plugin entry point: registers the runners package (runners/__init__.py).

Rally puts the track folder's parent on sys.path, so runners/ is found beside the track folder, as in a team's track
repository that holds the two side by side (docs/team-setup.md, "The track folder on its own"); in this repository the track
folder is tracks/cluster-metrics and runners/ is two levels up, added here.
"""

import os
import sys

_TRACK_DIR = os.path.dirname(os.path.abspath(__file__))
_PARENT = os.path.dirname(_TRACK_DIR)
_REPO_ROOT = os.path.dirname(_PARENT)
if not os.path.isdir(os.path.join(_PARENT, "runners")) and os.path.isdir(os.path.join(_REPO_ROOT, "runners")):
    if _REPO_ROOT not in sys.path:
        sys.path.insert(0, _REPO_ROOT)

try:
    from runners import register  # noqa: E402,F401
except ImportError as e:
    raise ImportError(
        f"The cluster-metrics track needs its runners package: copy runners/ beside the track folder, into {_PARENT} "
        f"(or into ~/.rally/libs). {e}"
    ) from e
