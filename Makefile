# The common commands. `make race` and `make test` do all set-up on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
ESRALLY := $(VENV)/bin/esrally

# local node
NODES ?= 1
HEAP ?= 1g
PORT ?= 9200
# corpus (defaults: the seed's scale)
EPOCHS ?= 5
ROWS ?= 1000000
CORPUS_NODES ?= 30
TASKS ?= 200
SEED ?= 42
# race
CHALLENGE ?= full
TARGET_HOSTS ?= 127.0.0.1:$(PORT)
TRACK_PARAMS ?=
RACE_ARGS ?=
RACE ?=
RACES ?=

.PHONY: venv es-start es-stop es-status es-wipe corpus race layout-sweep test test-fast report accuracy validation-proof compare

venv: $(VENV)/.installed
$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade pip
	$(VPY) -m pip install --quiet -r requirements.txt
	touch $@

es-start:
	$(PYTHON) local-es/esnode.py start --nodes $(NODES) --heap $(HEAP) --http-port $(PORT)
es-stop:
	$(PYTHON) local-es/esnode.py stop --http-port $(PORT)
es-status:
	$(PYTHON) local-es/esnode.py status --http-port $(PORT)
es-wipe:
	$(PYTHON) local-es/esnode.py wipe --http-port $(PORT)

corpus: venv
	$(VPY) corpora-gen/generate --epochs $(EPOCHS) --rows-per-epoch $(ROWS) --nodes $(CORPUS_NODES) --tasks $(TASKS) --seed $(SEED)

# the main job: venv, local node, corpus, then the default race (the whole seed study) in your Rally home
race: venv es-start corpus
	$(ESRALLY) race --track-path=tracks/cluster-metrics --challenge=$(CHALLENGE) --pipeline=benchmark-only \
	  --offline --target-hosts=$(TARGET_HOSTS) $(if $(TRACK_PARAMS),--track-params="$(TRACK_PARAMS)") $(RACE_ARGS)

# the layout sweep (seed 003) on a local 3-node cluster: make es-stop first if a 1-node cluster runs on PORT
layout-sweep: NODES = 3
layout-sweep: CHALLENGE = layout-sweep
layout-sweep: race

test: venv
	$(VPY) -m pytest tests

# unit tests only (no node, no race): seconds
test-fast: venv
	$(VPY) -m pytest -m 'not integration' tests

report: venv
	$(VPY) -m report $(if $(RACE),--race $(RACE))

accuracy: venv
	$(VPY) -m report.accuracy --target-hosts $(TARGET_HOSTS)

# the coverage validation fed the cluster's real answers and wrong ones (run it on a full-scale ingest)
validation-proof: venv
	$(VPY) -m report.validation_proof --target-hosts $(TARGET_HOSTS)

compare: venv
	$(VPY) -m report $(foreach r,$(RACES),--race $(r)) --compare
