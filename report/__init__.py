"""Reports of this track's races: make report, make compare, make accuracy, make validation-proof.

Layers, each importing only those below it (pyproject.toml's import-linter contracts, make lint): this top (the
commands run as `python -m report[.<name>]`, and what assembles a report from many studies: __main__, catalog,
outcome, ...); studies (a module per study, each declaring its sections, charts and trend figures, and the modules that
serve one study only) beside history (make trend and the versions study, handed the studies' figures), neither
importing the other; shared (what every layer shares, which imports no study: races, store, cluster, readers, sections, figures,
charts, uncertainty, rally_compat).
"""


class ReportError(Exception):
    """Something the user can fix (no such race, no corpus, no cluster); the command line prints it and exits 1."""


# the exit status of a command that found a slower change (python -m report trend --fail-on slower, a team's night):
# distinct from 1 (a report error, a failed night) and 2 (bad arguments)
ALERT_EXIT = 3
# the line the trend prints for a slower step that is the load driver's host's, not Elasticsearch's (no alert, exit 0)
HOST_NAMED = "NOT AN ALERT, the host's: "
