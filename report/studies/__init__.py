"""The report by study: a module per study, each declaring what it adds to the reports (`SECTIONS` and an `ANSWER`,
`CHARTS`, `TREND_FIGURES`: report/shared/sections.py, report/shared/figures.py), which report/catalog.py collects from
every module of this package (a new study joins the reports by a new module here), and the modules that serve one
study only (layout_seed: the seed's figures for layouts and single_doc; hosts: load's load-driver hosts; repeats: make
repeat's report of repeated races). They import report/shared/ and one another, never report/history/ nor a module of
report/'s top (pyproject.toml's import-linter contracts)."""
