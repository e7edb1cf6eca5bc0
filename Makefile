# pyairport — every target installs what it needs into .venv on a fresh machine.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
STAMP  := $(VENV)/.installed
HOST   ?= 127.0.0.1
PORT   ?= 8815
BACKEND ?= spark
WAREHOUSE ?= warehouse
JARS   := .cache/jars
# Maven Central serves Delta 4.4.0 built for Spark 4.2 (4.4.1 is not there); keep in step
# with the delta-spark pin in pyproject.toml.
DELTA_ARTIFACTS := io.delta:delta-spark_4.2_2.13:4.4.0 io.delta:delta-storage:4.4.0
# DuckDB's Airport extension, built from its source for this .venv's duckdb (the DuckDB tier);
# DUCKDB_AIRPORT is the folder with its source and build.sh.
DUCKDB_AIRPORT ?= ../shared/duckdb-airport
DUCKDB_EXTENSION := .cache/duckdb-airport/airport.duckdb_extension
# DuckDB 1.5.5 with the extension's main line (sends airport-catalog), in a venv of its own.
DUCKDB_EXTENSION_MAIN := .cache/duckdb-airport-main/airport.duckdb_extension

# The other supported Pythons (pyproject's classifiers); pyenv's, else python3.X on PATH.
PYTHONS ?= 3.12 3.13
PYENV_ROOT ?= $(shell pyenv root 2>/dev/null)
python_for = $(lastword $(shell command -v python$(1) 2>/dev/null) $(wildcard $(PYENV_ROOT)/versions/$(1).*/bin/python$(1)))

.PHONY: help prereqs venv jars duckdb-extension duckdb-extension-main test-airport-suite generate check typecheck lint test test-ready test-main test-python-beside test-python serve bench soak diff-upstream interop clean

help:
	@echo "make serve      run the Flight server on local Spark + Delta (BACKEND=spark|memory, HOST, PORT, WAREHOUSE)"
	@echo "make jars       fetch the Delta Lake jars from Maven Central into .cache/jars"
	@echo "make duckdb-extension  build DuckDB's Airport extension for .venv (the DuckDB tests)"
	@echo "make duckdb-extension-main  DuckDB 1.5.5 + the extension's main line, in a venv of its own"
	@echo "make test       set up .venv, check generated code, mypy, ruff, run every test"
	@echo "make test-python  the tests without Spark on Python $(PYTHONS) too (a .venv-X.Y each)"
	@echo "make test-airport-suite  DuckDB's own Airport SQL suite on memory and Spark, DuckDB 1.4 and 1.5"
	@echo "make generate   regenerate generated/airport_contracts from contracts.yaml"
	@echo "make check      fail if generated/ differs from what contracts.yaml gives"
	@echo "make lint       ruff on handwritten code; no import circle in the runtime"
	@echo "make bench      run the benchmarks and print their ratios (TPC-H SF 1 among them)"
	@echo "make soak       10,000 fuzz cases, 500 disconnects, 16 clients x 1,000 statements"
	@echo "make diff-upstream  compare contracts.yaml with airport-go's Go source (needs Go)"
	@echo "make interop    Go client vs pyairport, pyairport's scenarios vs airport-go, parity table (needs Go)"

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[dev,spark,duckdb]"
	touch $(STAMP)

venv: $(STAMP)

$(JARS)/.fetched:
	@command -v mvn >/dev/null || { echo "make jars: Maven (mvn) is needed to fetch the Delta jars"; exit 1; }
	mkdir -p $(JARS)
	for artifact in $(DELTA_ARTIFACTS); do mvn -q -B --no-transfer-progress -Dstyle.color=never dependency:copy -Dartifact=$$artifact -DoutputDirectory=$(JARS) || exit 1; done
	touch $@

jars: $(JARS)/.fetched

# Once per checkout, about 3 minutes on 2 cores (both clients at once): the shared build script
# run with its sources compiled as a few translation units (tools/duckdb_client_build.py says
# why). Without the source the DuckDB tests are skipped and say why.
$(DUCKDB_EXTENSION): | $(STAMP)
	@test -f $(DUCKDB_AIRPORT)/build.sh || { echo "make duckdb-extension: no $(DUCKDB_AIRPORT)/build.sh (set DUCKDB_AIRPORT=…)"; exit 1; }
	@mkdir -p $(dir $@)
	VENV=$(abspath $(VENV)) WORK=$(abspath $(dir $@)) $(PY) tools/duckdb_client_build.py run $(DUCKDB_AIRPORT)/build.sh > $(dir $@)build.log 2>&1 \
		|| { tail -n 20 $(dir $@)build.log; exit 1; }

duckdb-extension: $(DUCKDB_EXTENSION)

$(DUCKDB_EXTENSION_MAIN): | $(STAMP)
	@test -f $(DUCKDB_AIRPORT)/build-main.sh || { echo "make duckdb-extension-main: no $(DUCKDB_AIRPORT)/build-main.sh (set DUCKDB_AIRPORT=…)"; exit 1; }
	@mkdir -p $(dir $@)
	WORK=$(abspath $(dir $@)) $(PY) tools/duckdb_client_build.py run $(DUCKDB_AIRPORT)/build-main.sh > $(dir $@)build.log 2>&1 \
		|| { tail -n 20 $(dir $@)build.log; exit 1; }

duckdb-extension-main: $(DUCKDB_EXTENSION_MAIN)

generate: $(STAMP)
	$(PY) -m airport_codegen generate --root .

check: $(STAMP)
	$(PY) -m airport_codegen check --root .

typecheck: $(STAMP)
	MYPYPATH=support $(BIN)/mypy --strict support/airport_support generated/airport_contracts
	MYPYPATH=generated:codegen:support $(BIN)/mypy --strict runtime/pyairport codegen/airport_codegen

lint: $(STAMP)
	$(BIN)/ruff check codegen runtime support tests bench tools setup.py
	$(BIN)/ruff format --check codegen runtime support tests bench tools setup.py
	$(PY) tools/import_cycles.py runtime/pyairport support/airport_support codegen/airport_codegen
	@if command -v go >/dev/null; then \
		test -z "$$(gofmt -l tests/interop/go codegen)" || { gofmt -l tests/interop/go codegen; exit 1; }; \
		cd tests/interop/go && go vet ./...; \
	fi

# Where the extension's source is at hand, the DuckDB tier must run: it fails rather than skip.
# What `make test` needs on the machine, said in one line before anything runs.
prereqs:
	@missing=""; \
	for version in $(PYTHONS); do \
		py="$$(command -v python$$version 2>/dev/null || ls $(PYENV_ROOT)/versions/$$version.*/bin/python$$version 2>/dev/null | tail -n 1)"; \
		[ -n "$$py" ] || missing="$$missing python$$version"; \
	done; \
	command -v java >/dev/null || missing="$$missing java(JDK 17)"; \
	[ -f $(JARS)/.fetched ] || command -v mvn >/dev/null || missing="$$missing mvn"; \
	command -v go >/dev/null || missing="$$missing go"; \
	if [ -f $(DUCKDB_AIRPORT)/build.sh ]; then \
		for tool in gcc g++; do command -v $$tool >/dev/null || missing="$$missing $$tool"; done; \
	fi; \
	if [ -n "$$missing" ]; then echo "make test: missing on this machine:$$missing (see README, Prerequisites)"; exit 1; fi

# Everything on a fresh machine is CPU-bound on 2 cores but for waits (pip and Maven downloads,
# Spark and DuckDB): the set-up runs two at a time, and the tests without Spark on the other
# Pythons run beside the main run, niced, on the cores it leaves idle while it waits; their
# output follows the main run's.
test: prereqs
	$(MAKE) -s -j2 test-ready
	@mkdir -p .cache; $(MAKE) -s -j2 test-main test-python-beside; status=$$?; \
	cat .cache/test-python.log; exit $$status

# --durations: the slowest tests, where CI's time (limit 70 minutes) is to be won back.
test-main:
	$(if $(wildcard $(DUCKDB_AIRPORT)/build.sh),PYAIRPORT_REQUIRE_DUCKDB=1) $(BIN)/pytest -q \
		--durations=25

test-python-beside:
	@nice -n 5 $(MAKE) -s -j1 test-python > .cache/test-python.log 2>&1

test-ready: check typecheck lint jars $(if $(wildcard $(DUCKDB_AIRPORT)/build.sh),$(DUCKDB_EXTENSION) $(DUCKDB_EXTENSION_MAIN))

# DuckDB's own Airport suite (test/sql/*.test) alone, memory and Spark, DuckDB 1.4 and 1.5
# (`make test` runs it too).
test-airport-suite: $(STAMP) jars $(DUCKDB_EXTENSION) $(DUCKDB_EXTENSION_MAIN)
	rm -f .cache/airport-suite.jsonl
	AIRPORT_SUITE_RESULTS=$(abspath .cache/airport-suite.jsonl) PYAIRPORT_REQUIRE_DUCKDB=1 \
		$(BIN)/pytest -q -p no:cacheprovider tests/duckdb/test_airport_suite.py; status=$$?; \
		$(PY) tests/duckdb/sqllogic/figures.py .cache/airport-suite.jsonl; exit $$status

test-python: $(foreach version,$(PYTHONS),test-python-$(version))

test-python-%:
	@py="$(call python_for,$*)"; \
	"$$py" -c 'import sys; sys.exit(sys.version_info[:2] != tuple(map(int, "$*".split("."))))' 2>/dev/null \
		|| { echo "make test-python: Python $* not found (pyenv install $*)"; exit 1; }; \
	if [ ! .venv-$*/.installed -nt pyproject.toml ]; then \
		"$$py" -m venv .venv-$* && .venv-$*/bin/pip install -q --upgrade pip \
			&& flock "$${TMPDIR:-/tmp}/pyairport-pip-install.lock" .venv-$*/bin/pip install -q -e ".[dev]" \
			&& touch .venv-$*/.installed || exit 1; \
	fi; \
	echo "Python $*: tests without Spark"; \
	.venv-$*/bin/pytest -q -p no:cacheprovider -m "not spark and not slow and not duckdb" \
		--basetemp="$${TMPDIR:-/tmp}/pyairport-test-python-$*"

serve: $(STAMP) jars
	$(BIN)/pyairport serve --backend $(BACKEND) --host $(HOST) --port $(PORT) --warehouse $(WAREHOUSE) --jars-dir $(JARS) --demo

# 4 fuzz targets x 2,500 cases, 500 random disconnects, 16 clients x 1,000 statements.
soak: $(STAMP)
	PYAIRPORT_FUZZ_EXAMPLES=2500 PYAIRPORT_DISCONNECT_ROUNDS=500 PYAIRPORT_LOAD_STATEMENTS=1000 \
		$(BIN)/pytest -q -s -p no:cacheprovider -m "not spark" tests/reliability

diff-upstream: $(STAMP)
	$(BIN)/pyairport diff-upstream

bench: $(STAMP) jars $(DUCKDB_EXTENSION)
	$(PY) bench/run.py
	$(PY) bench/duckdb_shaped.py
	$(PY) bench/catalog_plane.py
	$(PY) bench/duckdb_client.py
	$(PY) bench/duckdb_lake.py
	$(PY) bench/wide_table.py
	$(PY) bench/data_plane_floor.py
	$(PY) bench/tpch_q1_floor.py
	$(PY) bench/tpch.py --scale 1 --dml
	$(PY) bench/bulk_load.py
	$(PY) bench/functions.py
	$(PY) bench/spark.py
	$(PY) bench/vs_go.py

# Both directions of the cross-implementation suite (Go programs built once, cached), then
# the parity table the README shows.
interop: $(STAMP) jars
	$(BIN)/pytest -q -rs tests/interop
	$(PY) -m tests.interop.report

clean:
	rm -rf $(VENV) $(foreach version,$(PYTHONS),.venv-$(version)) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
