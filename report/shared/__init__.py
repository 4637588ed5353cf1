"""What the studies' report modules share, importing no study: what a section is, cells and formatting (tables), the
intervals and verdicts (uncertainty), and the one home of Rally's internals that differ between its versions
(rally_compat)."""
