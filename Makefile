# kilt-pipeline: `make demo` builds everything on the embedded default corpus; `make test` runs the tests.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
DVC_VENV := .venv-dvc
DVC := $(DVC_VENV)/bin/dvc
BIN := $(VENV)/bin
KILTPIPE := $(BIN)/kiltpipe
TORCH_VERSION := 2.13.0
DVC_VERSION := 3.67.1
export DAGSTER_HOME := $(CURDIR)/.dagster_home
export KILT_PARAMS := $(CURDIR)/params.yaml

.PHONY: install install-dvc data demo test ui repro repro-check bench lint clean

$(VENV)/.installed: pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python >= 3.11 is required"'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==$(TORCH_VERSION)
	$(BIN)/pip install --quiet -e '.[dev]' torch==$(TORCH_VERSION)
	@touch $@

install: $(VENV)/.installed

# DVC lives in its own virtualenv: it pins antlr4-python3-runtime 4.9, which breaks Dagster's asset selection parser.
$(DVC_VENV)/.installed:
	$(PYTHON) -m venv $(DVC_VENV)
	$(DVC_VENV)/bin/pip install --quiet 'dvc==$(DVC_VERSION)'
	@touch $@

install-dvc: $(DVC_VENV)/.installed

$(DAGSTER_HOME):
	@mkdir -p $@

data: install
	$(KILTPIPE) fetch-default

demo: install install-dvc $(DAGSTER_HOME)
	$(KILTPIPE) fetch-default
	$(KILTPIPE) build
	$(KILTPIPE) snapshots
	$(KILTPIPE) search "Which Greek hero was killed by an arrow in his heel?" --index hybrid --k 3
	@# hand the outputs to DVC (its cache, for dvc push) and say whether they match the committed dvc.lock
	$(DVC) commit --force --quiet
	@if git diff --quiet -- dvc.lock; then \
		echo "DVC: every output matches the committed dvc.lock: make repro has nothing to do"; \
	else \
		echo "DVC: these outputs differ from the committed dvc.lock:"; git --no-pager diff --stat -- dvc.lock; \
	fi

test: install install-dvc
	$(BIN)/python -m pytest -q

ui: install $(DAGSTER_HOME)
	$(BIN)/dagster dev -w workspace.yaml -h 127.0.0.1 -p $${DAGSTER_PORT:-3000}

repro: install install-dvc
	$(DVC) repro

# CI: a clean `dvc repro` of the embedded default must reproduce every hash of the committed dvc.lock,
# and a second one must have nothing to do.
repro-check: install install-dvc $(DAGSTER_HOME)
	$(DVC) repro
	@if ! git diff --quiet -- dvc.lock; then \
		echo "NOT REPRODUCIBLE: dvc repro changed dvc.lock (or it is stale after a code change: make repro)"; \
		git --no-pager diff -- dvc.lock; exit 1; \
	fi
	$(DVC) repro | tee $(DVC_VENV)/repro-again.log
	@grep -q "Data and pipelines are up to date." $(DVC_VENV)/repro-again.log || \
		{ echo "NOT REPRODUCIBLE: a second dvc repro ran stages again"; exit 1; }
	@echo "reproducible: dvc repro rebuilt every output with the hashes of the committed dvc.lock"

bench: install
	$(BIN)/pip install --quiet -e '.[dev,bench]' torch==$(TORCH_VERSION)
	$(BIN)/python benchmarks/bench_knowledge_source.py
	$(BIN)/python benchmarks/bench_passages_store.py
	$(BIN)/python benchmarks/bench_span_search.py
	$(BIN)/python benchmarks/bench_bm25.py
	$(BIN)/python benchmarks/bench_dense.py
	$(BIN)/python benchmarks/bench_incremental.py
	$(BIN)/python benchmarks/capacity_plan.py

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) $(DVC_VENV) .dagster_home .pytest_cache .ruff_cache
