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
DAGSTER_HOME ?= $(CURDIR)/.dagster_home
KILT_PARAMS ?= $(CURDIR)/params.yaml
export DAGSTER_HOME KILT_PARAMS

.PHONY: lock install install-gpu install-dvc data demo test test-fast docs ui repro repro-check bench bench-scale bench-gpu lint clean

# Every package of each environment comes from its lock under locks/ (exact versions with their sha256, Linux
# x86-64 CPython 3.11): a fresh install next month installs what installs today. torch alone is pinned by
# version and installed first: its CPU build comes from a local wheel or PyTorch's index (see `make lock`).
PIP_VERSION := 26.3
LOCKED_INSTALL := pip install --quiet --no-deps --require-hashes

# The dev lock with the benchmarks' peers (locks/bench.txt: nine small packages more), so that `make test`
# smoke-runs every benchmark script, peers included.
$(VENV)/.installed: pyproject.toml locks/bench.txt
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python >= 3.11 is required"'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet pip==$(PIP_VERSION)
	$(BIN)/pip install --quiet torch==$(TORCH_VERSION)
	$(BIN)/$(LOCKED_INSTALL) -r locks/bench.txt
	$(BIN)/pip install --quiet --no-deps -e .
	$(BIN)/pip check
	@touch $@

install: $(VENV)/.installed

# GPUs: the CUDA build of the same torch (CUDA=cu126, cu128, ...), and FAISS's GPU build with FAISS_GPU=1.
CUDA ?= cu128
install-gpu: install
	$(BIN)/pip install --quiet 'torch==$(TORCH_VERSION)+$(CUDA)' \
		--index-url https://download.pytorch.org/whl/$(CUDA) --extra-index-url https://pypi.org/simple
	@if [ "$(FAISS_GPU)" = 1 ]; then $(BIN)/pip uninstall --quiet -y faiss-cpu && $(BIN)/pip install --quiet faiss-gpu-cu12; fi
	$(BIN)/python -c 'import torch; assert torch.cuda.is_available(), "torch sees no GPU"; print("GPUs:", torch.cuda.device_count(), torch.cuda.get_device_name(0))'

# DVC lives in its own virtualenv: it pins antlr4-python3-runtime 4.9, which breaks Dagster's asset selection parser.
$(DVC_VENV)/.installed: locks/dvc.txt
	$(PYTHON) -m venv $(DVC_VENV)
	$(DVC_VENV)/bin/pip install --quiet pip==$(PIP_VERSION)
	$(DVC_VENV)/bin/$(LOCKED_INSTALL) -r locks/dvc.txt
	$(DVC_VENV)/bin/pip check
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
	$(KILTPIPE) search "who are alabama's senators on the national level" --index hybrid --collection both --k 3
	$(KILTPIPE) facts Angola
	$(KILTPIPE) kb-path Q916 Q262
	$(KILTPIPE) search "capital of Angola" --collection kb --k 2
	$(KILTPIPE) answer "what war was the movie patriot based on" --k 2
	$(KILTPIPE) answer "who is the president of angola" --abstain-below 0.9 --fallback bm25
	@# hand the outputs to DVC (its cache, for dvc push), then check them against the committed dvc.lock:
	@# byte-reproducible outputs byte for byte, float outputs by tolerance (kiltpipe verify-repro)
	$(DVC) commit --force --quiet
	@$(DVC) status --quiet || { echo "DVC: dvc.lock does not record the outputs of this build"; exit 1; }
	@$(KILTPIPE) verify-repro > $(DVC_VENV)/verify-repro.json 2> $(DVC_VENV)/verify-repro.log; \
	status=$$?; grep "^kiltpipe:" $(DVC_VENV)/verify-repro.log | grep -v "^kiltpipe: reproducible:" || true; \
	if [ $$status -eq 0 ]; then \
		echo "DVC: make repro has nothing to do, and $$(tail -n 1 $(DVC_VENV)/verify-repro.log | sed 's/^kiltpipe: //')"; \
	else \
		echo "DVC: make repro has nothing to do, but this build differs from what the committed dvc.lock and float reference describe (above)"; \
	fi

# pytest-xdist: one test process per core, at most one per TEST_GIB_PER_WORKER of memory (a worker's build
# runs its own conversion pool and a JVM of up to 2 GiB of heap), TEST_WORKERS=0: one process; whole modules
# in the collection's order, the demo build shared by them (tests/conftest.py)
TEST_GIB_PER_WORKER := 6
TEST_WORKERS ?= $(shell awk -v cores=$$(nproc) '/^MemTotal:/ {n = int($$2 / 1048576 / $(TEST_GIB_PER_WORKER)); \
	if (n > cores) n = cores; if (n < 1) n = 1; print n}' /proc/meminfo)
PYTEST_PARALLEL := -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

test: install install-dvc
	$(BIN)/python -m pytest -q $(PYTEST_PARALLEL) --durations=15 tests
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir $(VENV)/site

# unit tests only: no builds, no JVM, no Dagster runs; smoke runs of the benchmark scripts that need no built
# snapshot (about three minutes)
test-fast: install
	$(BIN)/python -m pytest -q $(PYTEST_PARALLEL) tests/unit

# the documentation site on http://127.0.0.1:8000 (docs/, mkdocs.yml)
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve -a 127.0.0.1:$${DOCS_PORT:-8000}

# the Dagster UI and its daemon (sensors, schedules, queued runs) as two processes: `dagster dev` is superseded
ui: install $(DAGSTER_HOME)
	@test -s $(DAGSTER_HOME)/dagster.yaml || cp orchestration/dagster.yaml $(DAGSTER_HOME)/dagster.yaml
	@$(BIN)/python -m orchestration.dagster_home  # the home records this data dir's snapshots, no other's
	@$(BIN)/dagster-daemon run -w workspace.yaml & daemon=$$!; \
	trap 'kill $$daemon 2>/dev/null; wait $$daemon' EXIT INT TERM; \
	$(BIN)/dagster-webserver -w workspace.yaml -h 127.0.0.1 -p $${DAGSTER_PORT:-3000}

# after changing a dependency: renew dvc.lock and the float reference (commit both)
repro: install install-dvc $(DAGSTER_HOME)
	$(DVC) repro
	$(KILTPIPE) verify-repro --write-reference

# CI: a clean `dvc repro` of the embedded default must reproduce every byte-reproducible output of the
# committed dvc.lock, its float outputs within tolerance of the committed reference, and a second
# `dvc repro` must have nothing to do.
repro-check: install install-dvc $(DAGSTER_HOME)
	$(DVC) repro
	$(KILTPIPE) verify-repro > $(DVC_VENV)/verify-repro.json
	$(DVC) repro | tee $(DVC_VENV)/repro-again.log
	@grep -q "Data and pipelines are up to date." $(DVC_VENV)/repro-again.log || \
		{ echo "NOT REPRODUCIBLE: a second dvc repro ran stages again"; exit 1; }
	@echo "reproducible: dvc repro rebuilt every output as the committed dvc.lock and float reference describe"

bench: install demo  # bench_rerank and bench_serve search the built excerpt
	$(BIN)/python benchmarks/bench_knowledge_source.py
	$(BIN)/python benchmarks/bench_passages_store.py
	$(BIN)/python benchmarks/bench_span_search.py
	$(BIN)/python benchmarks/bench_bm25.py
	$(BIN)/python benchmarks/bench_dense.py
	$(BIN)/python benchmarks/bench_incremental.py
	$(BIN)/python benchmarks/bench_kb_facts.py
	$(BIN)/python benchmarks/bench_wikidata_reader.py --entities 100000
	$(BIN)/python benchmarks/bench_kb_paths.py
	$(BIN)/python benchmarks/bench_qa.py --pairs 10000 100000
	$(BIN)/python benchmarks/bench_lookups.py
	$(BIN)/python benchmarks/capacity_plan.py
	$(BIN)/python benchmarks/bench_dense.py --device cpu
	$(BIN)/python benchmarks/bench_rerank.py --device cpu
	$(BIN)/python benchmarks/bench_serve.py
	$(BIN)/python benchmarks/bench_serve_hostile.py
	$(BIN)/python benchmarks/bench_serve_quotes.py
	$(BIN)/python benchmarks/bench_structured_hostile.py
	$(BIN)/python benchmarks/bench_sql_tables.py
	$(BIN)/python benchmarks/run_figures.py  # the README's table from the results just written

# a generated Wikipedia of SIZE articles (benchmarks/gen_wiki_dump.py: enwiki's shape, real text) built stage by
# stage through the Dagster definitions and measured (benchmarks/bench_scale.py: time, CPU, peak RSS, disk;
# resumes where it stopped; not part of make test): make bench-scale SIZE=100000
SIZE ?= 10000
bench-scale: install
	$(BIN)/python benchmarks/bench_scale.py --articles $(SIZE)

# on a machine with a GPU: CUDA torch, then encoding and rerank throughput on it (figures under benchmarks/results)
bench-gpu: install-gpu demo
	$(BIN)/python benchmarks/bench_dense.py --device cuda
	$(BIN)/python benchmarks/bench_rerank.py --device cuda

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) $(DVC_VENV) $(VENV)-lock .dagster_home .pytest_cache .ruff_cache

# Renew the locks from pyproject.toml's ranges (today's newest matching releases), for the main (runtime),
# dev (runtime, tests, docs), bench (dev and the peers benchmarks run) and DVC environments. A deliberate
# commit: run `make install`, then `make repro` when the bytes of an output change. torch's CPU build (the
# wheel folder pip is configured with, else PyTorch's CPU index) decides the versions of torch's own deps.
TORCH_WHEELS ?= $(or $(PIP_FIND_LINKS),https://download.pytorch.org/whl/cpu/torch/)
UV_VERSION := 0.13.9
LOCK := $(VENV)-lock/bin/uv pip compile --quiet --generate-hashes --python-version 3.11 \
	--python-platform x86_64-manylinux_2_28 --find-links $(TORCH_WHEELS) --no-emit-package torch
lock:
	@test -x $(VENV)-lock/bin/uv || { $(PYTHON) -m venv $(VENV)-lock && $(VENV)-lock/bin/pip install --quiet uv==$(UV_VERSION); }
	$(LOCK) pyproject.toml -o locks/main.txt
	$(LOCK) pyproject.toml --extra dev -o locks/dev.txt
	$(LOCK) pyproject.toml --extra dev --extra bench -o locks/bench.txt
	echo 'dvc==$(DVC_VERSION)' | $(LOCK) - -o locks/dvc.txt
