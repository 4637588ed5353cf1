# The common commands. `make race` and `make test` do all set-up on a fresh machine.
SHELL := /bin/bash
comma := ,
PYTHON ?= python3
# RALLY=<path to a Rally source checkout>: every target runs in a venv of its own (.venv-rally-<checksum of the path>)
# holding that checkout (pip install -e, so its edits apply) and requirements.txt without the esrally line (docs/tests.md)
RALLY ?=
VENV := $(if $(RALLY),.venv-rally-$(shell printf '%s' '$(abspath $(RALLY))' | cksum | cut -d' ' -f1),.venv)
VPY := $(VENV)/bin/python
ESRALLY := $(VENV)/bin/esrally

# local node: ES_VERSION one of local-es/localnode/shared.py's VERSIONS (`make es-versions`; empty: its default, the study's 8.17.2)
ES_VERSION ?=
ES_VERSION_ARG = $(if $(ES_VERSION),--version $(ES_VERSION))
NODES ?= 1
HEAP ?= 1g
PORT ?= 9200
# COORDINATING=yes: a coordinating-only node (node.roles []) in front of the NODES data nodes; it takes PORT, the data
# nodes PORT+1.. (local-es/esnode.py), so a race's requests all go through it. Default no (yes for layout-sweep).
# PIN_CORES=yes: each data node's JVM under taskset on a core of its own, node.processors 1 (needs taskset)
PIN_CORES ?= no
ES_TOPOLOGY = $(if $(filter-out yes no,$(COORDINATING) $(PIN_CORES)),$(error COORDINATING and PIN_CORES take yes or no)) \
  $(if $(filter yes,$(COORDINATING)),--coordinating 1) $(if $(filter yes,$(PIN_CORES)),--pin-cores)
# corpus (defaults: the seed's scale)
EPOCHS ?= 5
ROWS ?= 1000000
CORPUS_NODES ?= 30
TASKS ?= 200
SEED ?= 42
# race
CHALLENGE ?= full
# the track folder every race loads (a copy of it, or one holding fewer challenges, loads the same track)
TRACK_PATH ?= tracks/cluster-metrics
TARGET_HOSTS ?= 127.0.0.1:$(PORT)
# a race starts the local node (es-start) only when it targets it: TARGET_HOSTS left at 127.0.0.1:PORT (or
# localhost:PORT). Your own cluster (TARGET_HOSTS=es1.example:9200) starts nothing here; the corpus is still made in
# Rally's data directory on this machine, where the track's runners read it. LOCAL_NODE=yes|no overrides.
LOCAL_NODE ?= $(if $(filter 127.0.0.1:$(PORT) localhost:$(PORT),$(TARGET_HOSTS)),yes,no)
LOCAL_ES_START = $(if $(filter yes,$(LOCAL_NODE)),es-start)
# how every race and tool reaches the cluster (TLS, credentials): Rally's --client-options, inline or a .json file
# (README: Your own cluster). The shell reads it from the environment, so make never echoes a secret.
CLIENT_OPTIONS ?=
export CLIENT_OPTIONS
CLIENT_ARGS := $${CLIENT_OPTIONS:+--client-options="$$CLIENT_OPTIONS"}
# the cluster reached as a race would, before Rally (whose version check ends in a traceback): TLS, credentials and an
# unreachable host named with their fix
CHECK_CLUSTER = $(VPY) -m report.shared.cluster --target-hosts $(1) $(CLIENT_ARGS)
TRACK_PARAMS ?=
RACE_ARGS ?=
RACE ?=
RACES ?=
BASELINE ?=
# Rally's Elasticsearch metrics store (make metrics-store): METRICS_STORE=yes races, reports and compares through it
METRICS_STORE ?= no
STORE_PORT ?= 9210
STORE_CONFIG = $(shell $(VPY) -c 'from report.shared.store import CONFIG_NAME; print(CONFIG_NAME)')
RALLY_CONFIG = $(if $(filter yes,$(METRICS_STORE)),--configuration-name=$(STORE_CONFIG))
# network (Toxiproxy, loopback): the proxy in front of the local cluster's HTTP port (RTT sweep, faults), and the
# remote cluster of the cross-cluster comparison with a proxy in front of its transport port (HTTP port + 100)
TOXIPROXY_PORT ?= 8474
PROXY_PORT ?= 9290
REMOTE_PORT ?= 9400
REMOTE_PROXY_PORT ?= 9590
# seed 001's point: the remote's index in 200 shards; its corpus one epoch (1M rows: 200 shards of 5,000 on a 1 GB
# node; the seed had 500,000 documents), also asked directly, near and through a proxy in front of its HTTP port
CCS_SHARDS ?= 200
CCS_EPOCHS ?= 1
REMOTE_HTTP_PROXY_PORT ?= 9690
INGEST ?= yes
REMOTE_ALIAS := metrics-remote
FAR_ALIAS := metrics-remote-far
TOXIPROXY := $(PYTHON) local-es/toxiproxy_launcher.py
# one Rally at a time: the previous race's processes take a moment to exit (waits, never kills)
WAIT_FOR_RALLY := for i in $$(seq 120); do pgrep -f '[e]srally race' >/dev/null || pgrep -x esrally >/dev/null || break; sleep 1; done

.PHONY: venv-python nightly cluster-check params privileges it-setup it-versions lint format venv es-start es-versions es-stop es-status es-wipe corpus race repeat layout-sweep node-scaling test it test-fast report accuracy client-cost validation-proof compare metrics-store metrics-store-stop \
	toxiproxy proxy-start proxy-clear proxy-stop proxy-status remote-start remote-stop rtt-sweep network-faults ccs-roundtrips \
	source-cost source-large aggregation-memory width-corpora coverage-width node-starts versions trend trend-scale trend-eval

venv: $(VENV)/.installed
# the venv's python, for report/nightly.py run by the system's python3 (cron): it runs itself in it
venv-python: venv
	@echo $(abspath $(VPY))
ifeq ($(RALLY),)
$(VENV)/.installed: requirements.txt requirements-no-deps.txt
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade pip
	$(VPY) -m pip install --quiet -r requirements.txt
	$(VPY) -m pip install --quiet --no-deps -r requirements-no-deps.txt
	touch $@
else
ifeq ($(wildcard $(RALLY)/esrally/__init__.py),)
$(error RALLY=$(RALLY) is not a Rally source checkout (no esrally/__init__.py there))
endif
$(VENV)/.installed: requirements.txt requirements-no-deps.txt $(RALLY)/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade pip
	$(VPY) -m pip install --quiet -e $(abspath $(RALLY))
	grep -v '^esrally==' requirements.txt > $(VENV)/requirements-without-esrally.txt
	$(VPY) -m pip install --quiet -r $(VENV)/requirements-without-esrally.txt
	$(VPY) -m pip install --quiet --no-deps -r requirements-no-deps.txt
	touch $@
endif

es-start:
	$(PYTHON) local-es/esnode.py start $(ES_VERSION_ARG) --nodes $(NODES) --heap $(HEAP) --http-port $(PORT) $(ES_TOPOLOGY)
es-versions:
	$(PYTHON) local-es/esnode.py versions
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
race: venv $(LOCAL_ES_START) corpus
	$(if $(filter yes,$(METRICS_STORE)),$(VPY) -m report.shared.store --check)
	$(call CHECK_CLUSTER,$(TARGET_HOSTS))
	$(WAIT_FOR_RALLY)
	$(ESRALLY) race --track-path=$(TRACK_PATH) --challenge=$(CHALLENGE) --pipeline=benchmark-only \
	  --offline --target-hosts=$(TARGET_HOSTS) $(CLIENT_ARGS) $(if $(TRACK_PARAMS),--track-params="$(TRACK_PARAMS)") $(RALLY_CONFIG) $(RACE_ARGS)
	@$(VPY) -m report host $(RALLY_CONFIG)

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
	$(VPY) -m report.shared.store --host 127.0.0.1 --port $(STORE_PORT)
metrics-store-stop:
	$(PYTHON) local-es/esnode.py stop --http-port $(STORE_PORT)

# the layout sweep (seed 003) on a local cluster of 3 data nodes behind a coordinating-only node, as the seed's JMeter
# sent every request through its client node (COORDINATING=no: the data nodes alone, Rally sending to the first); the
# coordinating node takes PORT, which the race targets. make es-stop first if another cluster runs on PORT.
layout-sweep: NODES = 3
layout-sweep: COORDINATING ?= yes
layout-sweep: CHALLENGE = layout-sweep
layout-sweep: TARGET_HOSTS = 127.0.0.1:$(PORT)
layout-sweep: race

# node scaling (docs/layouts.md, "Node scaling"): the layout sweep's coverage throughput of 1S0R on 1 data node pinned to
# core 0, then of 2S0R and 1S1R on 2 data nodes pinned to cores 0 and 1 (node.processors 1 each), both behind an
# unpinned coordinating node on PORT; then one report of the two races (reports/node-scaling-<ids>/). It stops the local
# cluster on PORT and starts each of the two in turn (the launcher signals only its own pids). TRACK_PARAMS adds to both.
SCALING_STEPS ?= 1:1S0R 2:2S0R,1S1R
# make through an alias: make -n runs every recipe line that names the MAKE variable itself (it would stop the cluster)
SCALING_MAKE = $(MAKE) --no-print-directory
node-scaling: venv corpus
	@ids=""; log=$$(mktemp); for step in $(SCALING_STEPS); do \
	  nodes=$${step%%:*}; layouts=$${step#*:}; \
	  $(PYTHON) local-es/esnode.py stop --http-port $(PORT) || exit 1; \
	  params=$$($(VPY) -m report.scaling track-params --layouts $$layouts $(if $(TRACK_PARAMS),--extra "$(TRACK_PARAMS)")) || exit 1; \
	  $(SCALING_MAKE) race NODES=$$nodes COORDINATING=yes PIN_CORES=yes CHALLENGE=layout-sweep \
	    TARGET_HOSTS=127.0.0.1:$(PORT) TRACK_PARAMS=$$params > $$log 2>&1; status=$$?; cat $$log; rm -f $$params; \
	  id=$$(grep -o 'Race id is \[[0-9a-f-]*\]' $$log | tail -1 | tr -d '[]' | cut -d' ' -f4); \
	  [ $$status -eq 0 ] && [ -n "$$id" ] || { rm -f $$log; echo "node-scaling: the race on $$nodes data node(s) failed"; exit 1; }; \
	  ids="$$ids --race $$id"; \
	done; rm -f $$log; $(PYTHON) local-es/esnode.py stop --http-port $(PORT); $(VPY) -m report --node-scaling $$ids $(RALLY_CONFIG)

# races by node start (local-es/node_starts.py): for each arm of NODE_START_VERSIONS (a version, or LABEL=VERSION),
# NODE_STARTS node starts alternated across the arms, each a node started afresh, ingest-baseline, then NODE_START_RUNS
# races of NODE_START_CHALLENGE (production-comparison), every race tagged node-starts:PLAN, es:<version>, arm:<label>,
# node-start:<n>; resumable (run it again)
PLAN ?= history
NODE_START_VERSIONS ?= 8.17.2,9.5.3
NODE_STARTS ?= 3
NODE_START_RUNS ?= 4
NODE_START_CHALLENGE ?= production-comparison
node-starts: venv corpus
	$(PYTHON) local-es/node_starts.py --plan $(PLAN) --versions $(NODE_START_VERSIONS) --starts $(NODE_STARTS) --runs $(NODE_START_RUNS) \
	  --challenge $(NODE_START_CHALLENGE) --http-port $(PORT) $(if $(TRACK_PARAMS),--track-params "$(TRACK_PARAMS)") \
	  $(if $(RACE_ARGS),--race-args="$(RACE_ARGS)")

# versions judged by node start (docs/versions.md): make node-starts over VERSIONS (8.17.2, 8.19.21, 9.5.3 and the A/A
# arm, a second label of 8.17.2), 3 node starts each, then their verdicts (report/history/versions.py); unattended at
# full scale (about 6 minutes a node start on 2 cores), resumable
VERSIONS ?= 8.17.2,8.19.21,9.5.3,8.17.2-aa=8.17.2
versions: PLAN = versions
versions: NODE_START_VERSIONS = $(VERSIONS)
versions: node-starts
	$(VPY) -m report versions $(RALLY_CONFIG) --user-tag node-starts:$(PLAN)

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
	$(PYTHON) local-es/esnode.py start $(ES_VERSION_ARG) --nodes 1 --heap $(HEAP) --http-port $(REMOTE_PORT)
remote-stop:
	$(PYTHON) local-es/esnode.py stop --http-port $(REMOTE_PORT)

# ingest-baseline first unless INGEST=no (the index must hold this corpus; the race checks it before timing)
rtt-sweep network-faults: venv es-start corpus proxy-start
	$(if $(filter yes,$(INGEST)),$(MAKE) --no-print-directory race CHALLENGE=ingest-baseline TRACK_PARAMS="$(TRACK_PARAMS)")
	$(call CHECK_CLUSTER,127.0.0.1:$(PROXY_PORT))
	$(WAIT_FOR_RALLY)
	$(ESRALLY) race --track-path=$(TRACK_PATH) --challenge=$@ --pipeline=benchmark-only --offline \
	  --target-hosts=127.0.0.1:$(PROXY_PORT) $(CLIENT_ARGS) $(if $(TRACK_PARAMS),--track-params="$(TRACK_PARAMS)") $(RACE_ARGS)
	$(VPY) -m report

# seed 001: searches sent to the local cluster, the index (CCS_SHARDS shards, CCS_EPOCHS epochs) on the remote,
# through the proxy; beside them the remote asked directly, near and far (its HTTP proxy); both clusters are the
# local nodes it starts (two secured clusters: esrally race with --client-options keyed by cluster, docs/network.md)
CCS_PARAMS = epochs:$(CCS_EPOCHS)$(if $(TRACK_PARAMS),$(comma)$(TRACK_PARAMS))
ccs-roundtrips: venv es-start remote-start corpus proxy-start
	$(TOXIPROXY) proxy --api-port $(TOXIPROXY_PORT) --role remote --listen $(REMOTE_PROXY_PORT) --upstream $$(( $(REMOTE_PORT) + 100 ))
	$(TOXIPROXY) proxy --api-port $(TOXIPROXY_PORT) --role remote-http --listen $(REMOTE_HTTP_PROXY_PORT) --upstream $(REMOTE_PORT)
	$(if $(filter yes,$(INGEST)),$(ESRALLY) race --track-path=$(TRACK_PATH) --challenge=ingest-baseline \
	  --pipeline=benchmark-only --offline --target-hosts=127.0.0.1:$(REMOTE_PORT) \
	  --track-params="number_of_shards:$(CCS_SHARDS)$(comma)$(CCS_PARAMS)" $(RACE_ARGS))
	$(WAIT_FOR_RALLY)
	$(ESRALLY) race --track-path=$(TRACK_PATH) --challenge=$@ --pipeline=benchmark-only --offline \
	  --target-hosts='{"default": ["127.0.0.1:$(PORT)"], "$(REMOTE_ALIAS)": ["127.0.0.1:$(REMOTE_PORT)"], "$(FAR_ALIAS)": ["127.0.0.1:$(REMOTE_HTTP_PROXY_PORT)"]}' \
	  --track-params="ccs_shards:$(CCS_SHARDS),$(CCS_PARAMS)" $(RACE_ARGS)
	$(VPY) -m report

# seed 004: what _source costs, stored, synthetic and disabled (each mode ingests the corpus into its own index)
source-cost: venv es-start corpus
	$(MAKE) --no-print-directory race CHALLENGE=source-cost
	$(VPY) -m report

# seed 004 at its scale: 40 documents of 10 MB (an id and one text field) generated, indexed into their own index and
# fetched 20 at a time, _source returned, excluded or filtered, as JSON and CBOR, then the report; needs no corpus
# (smaller: TRACK_PARAMS="large_doc_mb:1,large_docs:4,large_fetch_size:2")
source-large: venv $(LOCAL_ES_START)
	$(if $(filter yes,$(METRICS_STORE)),$(VPY) -m report.shared.store --check)
	$(call CHECK_CLUSTER,$(TARGET_HOSTS))
	$(WAIT_FOR_RALLY)
	$(ESRALLY) race --track-path=$(TRACK_PATH) --challenge=$@ --pipeline=benchmark-only \
	  --offline --target-hosts=$(TARGET_HOSTS) $(CLIENT_ARGS) $(if $(TRACK_PARAMS),--track-params="$(TRACK_PARAMS)") $(RALLY_CONFIG) $(RACE_ARGS)
	$(VPY) -m report $(RALLY_CONFIG)

# seed 002: the memory each aggregation cell needs (ingest-baseline first unless INGEST=no)
aggregation-memory: venv es-start corpus
	$(if $(filter yes,$(INGEST)),$(MAKE) --no-print-directory race CHALLENGE=ingest-baseline)
	$(MAKE) --no-print-directory race CHALLENGE=aggregation-memory
	$(VPY) -m report

# the tests in two tiers (docs/tests.md). test: lint, every unit test and a few representative races on one node
# (minutes); it: every other integration test (every challenge, Toxiproxy, the 3-node and remote clusters, the
# network namespaces, the private checkout). CI runs both, so every behaviour is proven on every change.
# TEST_METRICS_STORE=yes (make test): each race goes to a metrics store node too, and its report is
# built from its files and again from the store alone, and the two compared (tests/conftest.py assert_reported)
# the few races make test runs (smoke: one node, one Rally at a time) with the unit tests beside them, on every core at
# a lower priority: the races leave the CPU idle some 40% of their time (Rally's actors wait on their wake-ups), and
# the unit tests fill it. Their output follows the races'. Then the unit tests that start a Rally process (marked
# rally_process), which Rally would not let a race start beside.
test: venv lint
	$(PYTHON) local-es/esnode.py build
	@unit_log=$$(mktemp); trap 'kill $$unit 2>/dev/null; rm -f "$$unit_log"' EXIT INT TERM; \
	nice -n 10 $(VPY) -m pytest -n $(TEST_JOBS) -m 'not integration and not rally_process' --beside-races \
	  --durations=10 tests >"$$unit_log" 2>&1 & unit=$$!; \
	echo "[make test] the races, with the unit tests beside them (their output follows)"; \
	TEST_METRICS_STORE=yes $(LOOPBACK_ONLY) $(VPY) -m pytest -m 'integration and smoke' --durations=10 tests; races=$$?; \
	wait $$unit; units=$$?; unit=; echo "[make test] the unit tests, run beside the races:"; cat "$$unit_log"; \
	[ $$races -eq 0 ] && [ $$units -eq 0 ]
	$(VPY) -m pytest -m 'rally_process and not integration' tests
# the races of make test and make it run in a private network namespace with loopback alone where the machine allows
# it (root; else as they are): there the suite keeps one Rally actor system for its races (tests/loopback_only.py).
# What needs the network is done first: Toxiproxy's go install and the other versions' node homes from Maven Central
# (it-setup, which .ci/run does while make test runs), the baseline's node home (as make test builds it).
LOOPBACK_ONLY = $(VPY) tests/loopback_only.py
it-setup: toxiproxy
	$(PYTHON) local-es/esnode.py build --version $(NEWEST_ES)
	$(PYTHON) local-es/esnode.py build --version $(LAST_8X_ES)
it: venv it-setup
	$(PYTHON) local-es/esnode.py build
	$(LOOPBACK_ONLY) $(VPY) -m pytest -m 'integration and not smoke' --durations=25 tests
	$(MAKE) --no-print-directory it-versions
# the version tier: every challenge's race (its test marked versions) on the newest 9.x, but one a module leaves out with its
# reason (versions(..., left_out=why): layout-sweep's four nodes) (versions
# of local-es/localnode/shared.py's VERSIONS; make test and the rest of make it run the study's 8.17.2, and the last 8.x in the
# version study's test-mode form, tests/test_versions.py, through make race as a user's races)
NEWEST_ES := 9.5.3
# the unit tier's workers (pytest-xdist): one per core
TEST_JOBS ?= auto
LAST_8X_ES := 8.19.21
it-versions: venv it-setup
	$(PYTHON) local-es/esnode.py build
	TEST_ES_VERSION=$(NEWEST_ES) $(LOOPBACK_ONLY) $(VPY) -m pytest -m versions --durations=10 tests

# every track parameter with its default (declared at track.json's top) and what it accepts
params: venv
	@$(VPY) -m runners.listings params

# each challenge's Elasticsearch privileges, as check-privileges asks for them (TRACK_PARAMS as for a race)
privileges: venv
	@$(VPY) -m runners.listings privileges $(if $(TRACK_PARAMS),--track-params="$(TRACK_PARAMS)")

# the quick loop: unit tests only (no node, no race), less those marked slow (make test runs them): about 55 s on 2
# cores, lint included
test-fast: venv lint
	$(VPY) -m pytest -n $(TEST_JOBS) -m 'not integration and not slow' tests

# the formatting (pyproject.toml: black and isort, line length 140) is checked by the tests and applied by make format
PY_SOURCES := runners report tests corpora-gen local-es tracks corpora-gen/generate
lint: venv
	$(VENV)/bin/isort --check-only --diff $(PY_SOURCES)
	$(VENV)/bin/black --check $(PY_SOURCES)
	PYTHONPATH=local-es $(VENV)/bin/lint-imports --no-cache
format: venv
	$(VENV)/bin/isort $(PY_SOURCES)
	$(VENV)/bin/black $(PY_SOURCES)

report: venv
	$(VPY) -m report $(if $(RACE),--race $(RACE)) $(if $(BASELINE),--baseline $(BASELINE)) $(RALLY_CONFIG)

accuracy: venv
	$(VPY) -m report.accuracy --target-hosts $(TARGET_HOSTS) $(CLIENT_ARGS)

# what the load driver adds per request: the track's request path beside a plain client on the running cluster's
# corpus index (full scale: make race CHALLENGE=ingest-baseline first); every race's report then shows its share
CLIENT_COST_ARGS ?= --bulk-docs 5000000
client-cost: venv
	mkdir -p reports
	$(VPY) -m report.client_cost --target-hosts $(TARGET_HOSTS) $(CLIENT_ARGS) $(CLIENT_COST_ARGS) --out reports/client-cost.json | tee reports/client-cost.md

# the coverage validation fed the cluster's real answers and wrong ones (run it on a full-scale ingest)
validation-proof: venv
	$(VPY) -m report.validation_proof --target-hosts $(TARGET_HOSTS) $(CLIENT_ARGS)

# a team's history (report/history/trend.py): every cell's race medians over the races selected, changes found and
# judged with the node start as the unit, what changed with each; FAIL_ON=slower exits 3 on a slower change among the
# newest races (a nightly job's alert, docs/nightly.md). USER_TAG=k:v[,k2:v2], TREND_CHALLENGE, ES_VERSION_PREFIX,
# SINCE, UNTIL (YYYY-MM-DD), ORDER (race, version, tag:KEY)
USER_TAG ?=
TREND_CHALLENGE ?=
ES_VERSION_PREFIX ?=
SINCE ?=
UNTIL ?=
ORDER ?= race
FAIL_ON ?=
trend: venv
	$(VPY) -m report trend $(RALLY_CONFIG) --order $(ORDER) $(if $(USER_TAG),--user-tag $(USER_TAG)) \
	  $(if $(TREND_CHALLENGE),--challenge $(TREND_CHALLENGE)) $(if $(ES_VERSION_PREFIX),--es-version $(ES_VERSION_PREFIX)) \
	  $(if $(SINCE),--since $(SINCE)) $(if $(UNTIL),--until $(UNTIL)) $(if $(FAIL_ON),--fail-on $(FAIL_ON))

# a team's night (docs/nightly.md): report/nightly.py. The make variables given here reach its races (TARGET_HOSTS,
# EPOCHS, ... through make's own MAKEFLAGS; RACE_ARGS, which it adds its tags to, as an argument). make exits 2 for an
# alert and a failed night alike: cron runs python3 report/nightly.py, whose status is 0, 3 (slower) or 1 (failed).
NIGHTLY_TAG ?= env:nightly
NIGHTLY_ARGS ?=
# the cluster a race would reach, reached as make race reaches it (the local node started when it is the target)
cluster-check: venv $(LOCAL_ES_START)
	@$(call CHECK_CLUSTER,$(TARGET_HOSTS))
nightly: venv
	$(VPY) -m report.nightly --history-tag $(NIGHTLY_TAG) $(if $(filter yes,$(METRICS_STORE)),--local-store) $(NIGHTLY_ARGS) \
	  $(if $(RACE_ARGS),"RACE_ARGS=$(RACE_ARGS)")

# the trend's benchmark (report/trend_scale.py): a store node of its own on TREND_SCALE_PORT filled with 500 races x
# 100 cells as Rally writes them, then the trend over it timed (docs/history.md, "Scale"); the node is stopped after
TREND_SCALE_PORT ?= 9220
trend-scale: venv
	$(PYTHON) local-es/esnode.py start --nodes 1 --heap 1g --http-port $(TREND_SCALE_PORT)
	$(VPY) -m report.trend_scale --port $(TREND_SCALE_PORT); status=$$?; \
	  $(PYTHON) local-es/esnode.py stop --http-port $(TREND_SCALE_PORT); $(PYTHON) local-es/esnode.py wipe --http-port $(TREND_SCALE_PORT); exit $$status

# the trend's judge scored blind on histories made of the fixtures' real races (report/trend_eval.py): planted
# slowdowns in every shape a team's history takes, named, alerted, and the unplanted alerts (docs/history.md); a minute
TREND_EVAL_ARGS ?=
trend-eval: venv
	$(VPY) -m report.trend_eval $(TREND_EVAL_ARGS)

compare: venv
	$(VPY) -m report $(foreach r,$(RACES),--race $(r)) --compare $(RALLY_CONFIG)
