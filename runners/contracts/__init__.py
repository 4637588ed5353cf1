"""The contracts of the track: what the Rally plug-in (runners/), the report (report/) and the corpus generator
(corpora-gen/) agree on, each defined once here: the corpus and its ground truth (corpus), the race's records and their
file names (records), a task's cell (cells), the coverage vocabulary (queries), the track parameters and their rules
(parameters, rules), the track folder's files (track_files) and a race's context (context). These modules import
nothing of the plug-in (the parameter rules of each study are read from runners/studies/ when first asked for)."""
