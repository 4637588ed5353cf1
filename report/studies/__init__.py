"""The report by study: a module per study, each listing its report sections (`SECTIONS`, tables.Section), which
report/__main__.py collects from every module of this package in the order its `REPORT_ORDER` names them (a new study
joins the report by a new module here), and the modules that serve one study only (layout_seed: the seed's figures
for layouts and single_doc; hosts: load's load-driver hosts; repeats: make repeat's report of repeated races). They
import report/shared/ and one another, never a module of report/'s top."""
