"""What the studies' report modules share, importing no study: what a section and a chart are and a table's markdown
(sections), a race's cells as the coverage record and Rally's metrics give them (readers), the intervals and verdicts
(uncertainty), and the one home of Rally's internals that differ between its versions (rally_compat)."""
