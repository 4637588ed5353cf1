"""Reports of this track's races: make report, make compare, make accuracy, make validation-proof."""


class ReportError(Exception):
    """Something the user can fix (no such race, no corpus, no cluster); the command line prints it and exits 1."""
