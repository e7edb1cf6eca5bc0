# pyairport — every target installs what it needs into .venv on a fresh machine.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
STAMP  := $(VENV)/.installed
HOST   ?= 127.0.0.1
PORT   ?= 8815
BACKEND ?= memory

.PHONY: help venv generate check typecheck lint test test-fast serve bench clean

help:
	@echo "make serve      run the Flight server (BACKEND=memory|spark, HOST, PORT)"
	@echo "make test       set up .venv, check generated code, mypy, run every test"
	@echo "make generate   regenerate generated/airport_contracts from contracts.yaml"
	@echo "make check      fail if generated/ differs from what contracts.yaml gives"
	@echo "make lint       ruff on handwritten code"
	@echo "make bench      run the benchmarks and print their ratios"

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[dev]"
	touch $(STAMP)

venv: $(STAMP)

generate: $(STAMP)
	$(PY) -m airport_codegen generate

check: $(STAMP)
	$(PY) -m airport_codegen check

typecheck: $(STAMP)
	$(BIN)/mypy --strict generated/airport_contracts

lint: $(STAMP)
	$(BIN)/ruff check codegen runtime tests bench
	$(BIN)/ruff format --check codegen runtime tests bench

test: check typecheck
	$(BIN)/pytest -q

serve: $(STAMP)
	$(BIN)/pyairport serve --backend $(BACKEND) --host $(HOST) --port $(PORT)

bench: $(STAMP)
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
