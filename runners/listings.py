"""`make params` and `make privileges`: the track's parameters (each one's default and what it accepts, the rules of
runners/contracts/parameters.py and of each study module) and every challenge's privileges on one load-driver host
(runners/studies/privileges.py), before any race.

    python -m runners.listings params
    python -m runners.listings privileges [--track-params PARAMS]     (PARAMS as Rally's --track-params takes them)
"""

import argparse
import json

from runners.contracts import parameters
from runners.operations import OPERATIONS  # imports every study module: their rules handed to the contracts
from runners.studies import privileges


def params():
    """Every track parameter in track.json's order, its default and what it accepts."""
    for name, default in parameters.DEFAULTS.items():
        print(f"{name} = {json.dumps(default)}\n    {parameters.accepted(name)}")


def privileges_table(argv):
    """Every challenge's privileges (a table), the track parameters as Rally's --track-params takes them."""
    from esrally.utils import opts

    parser = argparse.ArgumentParser(prog="python -m runners.listings privileges", description=privileges_table.__doc__)
    parser.add_argument("--track-params", default="", help="k:v,k:v, JSON, or a .json file, as esrally race --track-params")
    args = parser.parse_args(argv)
    track_params = opts.to_dict(args.track_params) if args.track_params else {}
    unknown = sorted(set(track_params) - set(parameters.DEFAULTS))
    if unknown:
        parser.error(f"this track has no parameter {', '.join(unknown)} (make params lists them). Correct TRACK_PARAMS.")
    try:
        parameters.check(track_params)  # a bad value named, as a race names it, not a template error
    except parameters.ParameterError as e:
        parser.error(f"{e}. Correct it in TRACK_PARAMS.")
    print(privileges.table(track_params, OPERATIONS))


def main(argv):
    if argv[:1] == ["params"]:
        return params()
    if argv[:1] == ["privileges"]:
        return privileges_table(argv[1:])
    raise SystemExit(__doc__)


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
