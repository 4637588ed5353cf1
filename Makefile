# The common commands. `make race` and `make test` do all set-up on a fresh machine.
SHELL := /bin/bash
comma := ,
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
# how every race and tool reaches the cluster (TLS, credentials): Rally's --client-options, inline or a .json file
# (README: Your own cluster). The shell reads it from the environment, so make never echoes a secret.
CLIENT_OPTIONS ?=
export CLIENT_OPTIONS
CLIENT_ARGS := $${CLIENT_OPTIONS:+--client-options="$$CLIENT_OPTIONS"}
# the cluster reached as a race would, before Rally (whose version check ends in a traceback): TLS, credentials and an
# unreachable host named with their fix
CHECK_CLUSTER = $(VPY) -m report.cluster --target-hosts $(1) $(CLIENT_ARGS)
TRACK_PARAMS ?=
RACE_ARGS ?=
RACE ?=
RACES ?=
BASELINE ?=
# Rally's Elasticsearch metrics store (make metrics-store): METRICS_STORE=yes races, reports and compares through it
METRICS_STORE ?= no
STORE_PORT ?= 9210
STORE_CONFIG = $(shell $(VPY) -c 'from report.store import CONFIG_NAME; print(CONFIG_NAME)')
RALLY_CONFIG = $(if $(filter yes,$(METRICS_STORE)),--configuration-name=$(STORE_CONFIG))
# network (Toxiproxy, loopback): the proxy in front of the local cluster's HTTP port (RTT sweep, faults), and the
# remote cluster of the cross-cluster comparison with a proxy in front of its transport port (HTTP port + 100)
TOXIPROXY_PORT ?= 8474
PROXY_PORT ?= 9290
REMOTE_PORT ?= 9400
REMOTE_PROXY_PORT ?= 9590
CCS_SHARDS ?= 50
INGEST ?= yes
REMOTE_ALIAS := metrics-remote
TOXIPROXY := $(PYTHON) local-es/toxiproxy_launcher.py
# one Rally at a time: the previous race's processes take a moment to exit (waits, never kills)
WAIT_FOR_RALLY := for i in $$(seq 120); do pgrep -f '[e]srally race' >/dev/null || pgrep -x esrally >/dev/null || break; sleep 1; done

.PHONY: lint format venv es-start es-stop es-status es-wipe corpus race repeat layout-sweep test it test-fast report accuracy validation-proof compare metrics-store metrics-store-stop \
	toxiproxy proxy-start proxy-clear proxy-stop proxy-status remote-start remote-stop rtt-sweep network-faults ccs-roundtrips \
	source-cost aggregation-memory width-corpora coverage-width

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

# the coverage-width sweep's corpus sets (one per width, beside the main corpus; the track's defaults), then its race
# (other widths: the same values here and in the race's track parameters, e.g. TRACK_PARAMS=widths.json)
WIDTHS ?= 30,100,300,1000,3000
WIDTH_ROWS ?= 1000000
WIDTH_EPOCHS ?= 1
width-corpora: venv
	$(VPY) corpora-gen/generate --widths $(WIDTHS) --rows-per-epoch $(WIDTH_ROWS) --epochs $(WIDTH_EPOCHS)
coverage-width: CHALLENGE = coverage-width
coverage-width: width-corpora race

# the main job: venv, local node, corpus, then the default race (the whole seed study) in your Rally home
race: venv es-start corpus
	$(if $(filter yes,$(METRICS_STORE)),$(VPY) -m report.store --check)
	$(call CHECK_CLUSTER,$(TARGET_HOSTS))
	$(WAIT_FOR_RALLY)
	$(ESRALLY) race --track-path=tracks/cluster-metrics --challenge=$(CHALLENGE) --pipeline=benchmark-only \
	  --offline --target-hosts=$(TARGET_HOSTS) $(CLIENT_ARGS) $(if $(TRACK_PARAMS),--track-params="$(TRACK_PARAMS)") $(RALLY_CONFIG) $(RACE_ARGS)

# the challenge RUNS times, one race after the other, then one report of the set: each cell's race medians, their
# run-to-run spread and the pooled interval (reports/repeat-<ids>/); compare sets with make compare RACES="a,b,c d,e,f"
RUNS ?= 3
repeat: venv
	@ids=""; log=$$(mktemp); for run in $$(seq $(RUNS)); do \
	  $(MAKE) --no-print-directory race > $$log 2>&1; status=$$?; cat $$log; \
	  id=$$(grep -o 'Race id is \[[0-9a-f-]*\]' $$log | tail -1 | tr -d '[]' | cut -d' ' -f4); \
	  [ $$status -eq 0 ] && [ -n "$$id" ] || { rm -f $$log; echo "repeat: race $$run of $(RUNS) failed"; exit 1; }; \
	  ids="$$ids,$$id"; \
	done; rm -f $$log; echo "races: $${ids#,}"; $(VPY) -m report --race $${ids#,} $(RALLY_CONFIG)

# a second local node as Rally's metrics store, and a Rally configuration of its own (rally-$(STORE_CONFIG).ini
# beside your rally.ini, which stays as it is) that races into it: then make race/report/compare METRICS_STORE=yes
metrics-store: venv
	$(PYTHON) local-es/esnode.py start --nodes 1 --heap 512m --http-port $(STORE_PORT)
	$(VPY) -m report.store --host 127.0.0.1 --port $(STORE_PORT)
metrics-store-stop:
	$(PYTHON) local-es/esnode.py stop --http-port $(STORE_PORT)

# the layout sweep (seed 003) on a local 3-node cluster: make es-stop first if a 1-node cluster runs on PORT
layout-sweep: NODES = 3
layout-sweep: CHALLENGE = layout-sweep
layout-sweep: race

# Toxiproxy: installed with `go install` into .tools/ on first use; started on 127.0.0.1:$(TOXIPROXY_PORT)
toxiproxy:
	$(TOXIPROXY) install
# proxy-start also clears the track's toxics off its proxies: only a killed race (kill -9) leaves one (proxy-clear)
proxy-start:
	$(TOXIPROXY) start --api-port $(TOXIPROXY_PORT)
	$(TOXIPROXY) proxy --api-port $(TOXIPROXY_PORT) --role http --listen $(PROXY_PORT) --upstream $(PORT)
	$(TOXIPROXY) clear --api-port $(TOXIPROXY_PORT)
proxy-clear:
	$(TOXIPROXY) clear --api-port $(TOXIPROXY_PORT)
proxy-stop:
	$(TOXIPROXY) stop --api-port $(TOXIPROXY_PORT)
proxy-status:
	$(TOXIPROXY) status --api-port $(TOXIPROXY_PORT)

# the remote cluster of the cross-cluster comparison, and the proxy in front of its transport port
remote-start:
	$(PYTHON) local-es/esnode.py start --nodes 1 --heap $(HEAP) --http-port $(REMOTE_PORT)
remote-stop:
	$(PYTHON) local-es/esnode.py stop --http-port $(REMOTE_PORT)

# ingest-baseline first unless INGEST=no (the index must hold this corpus; the race checks it before timing)
rtt-sweep network-faults: venv es-start corpus proxy-start
	$(if $(filter yes,$(INGEST)),$(MAKE) --no-print-directory race CHALLENGE=ingest-baseline TRACK_PARAMS="$(TRACK_PARAMS)")
	$(call CHECK_CLUSTER,127.0.0.1:$(PROXY_PORT))
	$(WAIT_FOR_RALLY)
	$(ESRALLY) race --track-path=tracks/cluster-metrics --challenge=$@ --pipeline=benchmark-only --offline \
	  --target-hosts=127.0.0.1:$(PROXY_PORT) $(CLIENT_ARGS) $(if $(TRACK_PARAMS),--track-params="$(TRACK_PARAMS)") $(RACE_ARGS)
	$(VPY) -m report

# seed 001: searches sent to the local cluster, the index (CCS_SHARDS shards) on the remote, through the proxy; both
# clusters are the local nodes it starts (two secured clusters: esrally race with --client-options keyed by cluster,
# track README "Over a network")
ccs-roundtrips: venv es-start remote-start corpus proxy-start
	$(TOXIPROXY) proxy --api-port $(TOXIPROXY_PORT) --role remote --listen $(REMOTE_PROXY_PORT) --upstream $$(( $(REMOTE_PORT) + 100 ))
	$(if $(filter yes,$(INGEST)),$(ESRALLY) race --track-path=tracks/cluster-metrics --challenge=ingest-baseline \
	  --pipeline=benchmark-only --offline --target-hosts=127.0.0.1:$(REMOTE_PORT) \
	  --track-params="number_of_shards:$(CCS_SHARDS)$(if $(TRACK_PARAMS),$(comma)$(TRACK_PARAMS))" $(RACE_ARGS))
	$(WAIT_FOR_RALLY)
	$(ESRALLY) race --track-path=tracks/cluster-metrics --challenge=$@ --pipeline=benchmark-only --offline \
	  --target-hosts='{"default": ["127.0.0.1:$(PORT)"], "$(REMOTE_ALIAS)": ["127.0.0.1:$(REMOTE_PORT)"]}' \
	  $(if $(TRACK_PARAMS),--track-params="$(TRACK_PARAMS)") $(RACE_ARGS)
	$(VPY) -m report

# seed 004: what _source costs, stored, synthetic and disabled (each mode ingests the corpus into its own index)
source-cost: venv es-start corpus
	$(MAKE) --no-print-directory race CHALLENGE=source-cost
	$(VPY) -m report

# seed 002: the memory each aggregation cell needs (ingest-baseline first unless INGEST=no)
aggregation-memory: venv es-start corpus
	$(if $(filter yes,$(INGEST)),$(MAKE) --no-print-directory race CHALLENGE=ingest-baseline)
	$(MAKE) --no-print-directory race CHALLENGE=aggregation-memory
	$(VPY) -m report

# the tests in two tiers (README: Tests). test: lint, every unit test and a few representative races on one node
# (minutes); it: every other integration test (every challenge, Toxiproxy, the 3-node and remote clusters, the
# network namespaces, the private checkout). CI runs both, so every behaviour is proven on every change.
test: venv lint
	$(VPY) -m pytest -m 'not integration or smoke' --durations=10 tests
it: venv
	$(VPY) -m pytest -m 'integration and not smoke' --durations=25 tests

# unit tests only (no node, no race): seconds
test-fast: venv lint
	$(VPY) -m pytest -m 'not integration' tests

# the formatting (pyproject.toml: black and isort, line length 140) is checked by the tests and applied by make format
PY_SOURCES := runners report tests corpora-gen local-es tracks corpora-gen/generate
lint: venv
	$(VENV)/bin/isort --check-only --diff $(PY_SOURCES)
	$(VENV)/bin/black --check $(PY_SOURCES)
format: venv
	$(VENV)/bin/isort $(PY_SOURCES)
	$(VENV)/bin/black $(PY_SOURCES)

report: venv
	$(VPY) -m report $(if $(RACE),--race $(RACE)) $(if $(BASELINE),--baseline $(BASELINE)) $(RALLY_CONFIG)

accuracy: venv
	$(VPY) -m report.accuracy --target-hosts $(TARGET_HOSTS) $(CLIENT_ARGS)

# the coverage validation fed the cluster's real answers and wrong ones (run it on a full-scale ingest)
validation-proof: venv
	$(VPY) -m report.validation_proof --target-hosts $(TARGET_HOSTS) $(CLIENT_ARGS)

compare: venv
	$(VPY) -m report $(foreach r,$(RACES),--race $(r)) --compare $(RALLY_CONFIG)
