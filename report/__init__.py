"""Reports of this track's races: make report, make compare, make accuracy, make validation-proof.

Layers, each importing only those below it: this top (the commands run as `python -m report[.<name>]`, and what
assembles a report from many studies: __main__, races, outcome, charts, store, cluster, ...), studies (a module per
study, each declaring its SECTIONS, and the modules that serve one study only), shared (what the studies share, which
imports no study: tables, uncertainty, rally_compat); history (make trend) sits beside the top and imports from every layer.
"""


class ReportError(Exception):
    """Something the user can fix (no such race, no corpus, no cluster); the command line prints it and exits 1."""
