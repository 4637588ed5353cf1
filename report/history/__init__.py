"""A team's history (make trend): every cell's race medians over the races a team keeps, the changes in them found and
judged with the node start as the unit, and what changed in the cluster with each.

Layers: races (which races of a source, report/shared/races.py: a Rally home or a metrics store, and why one is left
out), series (like with like: one series a challenge, corpus, parameters and cluster shape; a point per race and cell
of each figure the studies declare, report/catalog.py hands them), changes (change points and their verdicts; drift:
which runs of them are a drift; starts: the node start, the unit), analysis (a typed result per series and cell,
before any text), trend (renders it: the report, its chart and the console line; `python -m report trend`), arms
(versions judged with the node start as the unit) and versions (renders them: `python -m report versions`). No module
here imports a study.
"""
