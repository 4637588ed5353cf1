"""The track folder's files, seen from this package, and the parameters track.json declares (stdlib only: the
Toxiproxy launcher reads its proxies' names here before the virtualenv exists).

track.json is the one home of every track parameter's default, at its top, where Rally users look for them:
`{% set p_<name> = (<name> | default(<expression>)) %}`. A literal default is read here as JSON; an expression over
the vocabulary (`vocabulary.transports`) is returned as its text, for runners/contracts/parameters.py to evaluate with Jinja.
"""

import functools
import json
import re
from pathlib import Path

from runners.contracts.records import TRACK_NAME

DECLARATION = re.compile(r"\{% set p_(\w+) = \((\w+) \| default\((.+?)\)\) %\}")
LITERALS = {"none": "null"}  # Jinja's spelling -> JSON's (true and false are spelled alike)


def track_dir():
    """The track folder: tracks/cluster-metrics in this repository, or beside runners/ in a team's track repository
    that holds the two side by side (track.py finds runners/ the same way)."""
    root = Path(__file__).resolve().parents[2]  # runners/contracts/ -> the folder holding runners/
    candidates = (root / TRACK_NAME, root / "tracks" / TRACK_NAME)
    found = next((c for c in candidates if (c / "track.json").is_file()), None)
    if found is None:
        raise FileNotFoundError(f"no {TRACK_NAME} track folder at {' or '.join(map(str, candidates))}: keep runners/ beside it")
    return found


class Expression(str):
    """A default that is a Jinja expression over the vocabulary, not a literal."""


def declared_defaults(track_json=None):
    """{parameter: default} in track.json's order (or of the text given): literals as Python values, other defaults as
    Expression. track.json itself is read and parsed once per process (parameters, queries and toxiproxy all ask)."""
    return dict(_parse(track_json) if track_json is not None else _track_json_defaults())


@functools.lru_cache(maxsize=1)
def _track_json_defaults():
    return _parse((track_dir() / "track.json").read_text())


def _parse(text):
    defaults = {}
    for internal, name, expression in DECLARATION.findall(text):
        if internal != name:
            raise ValueError(f"track.json declares p_{internal} from {name}: a parameter's variable is p_ and its own name")
        try:
            defaults[name] = json.loads(LITERALS.get(expression, expression))
        except json.JSONDecodeError:
            defaults[name] = Expression(expression)
    return defaults


def rendered_tasks(challenge):
    """A rendered challenge's tasks (track.json rendered as Rally renders it), those inside a parallel element
    included, in schedule order."""
    for element in challenge["schedule"]:
        yield from element["parallel"]["tasks"] if "parallel" in element else [element]
