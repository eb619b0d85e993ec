"""Smoke runs of the benchmark scripts on their smallest input, shared by the unit tests (scripts that need
no built snapshot) and the integration tests (scripts that read the demo build): each run writes its
results and scratch files to a temporary folder (``$KILT_BENCH_RESULTS``, ``$KILT_BENCH_WORK``), so a
smoke run never replaces a committed figure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "DEMO_SMOKE_RUNS",
    "HELPERS",
    "NOT_SMOKE_RUN",
    "UNIT_SMOKE_RUNS",
    "SmokeQueue",
    "SmokeRun",
    "run_smoke",
]

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = REPO / "benchmarks"
SMOKE_TIMEOUT_SECONDS = 600


@dataclass(frozen=True)
class SmokeRun:
    """``benchmarks/<script> <arguments>``, after ``before`` (scripts with their arguments, which make its
    input), writing ``results/<result>.json`` (None: the script writes no results file). Arguments are
    split on spaces."""

    script: str
    arguments: str = ""
    result: str | None = None
    before: tuple[str, ...] = ()


MONTH_DUMPS = ("gen_wiki_dump.py --articles 200", "gen_wiki_dump.py --articles 200 --month 1")
"""A generated dump and its month later, the input of ``month_streams.py``."""

UNIT_SMOKE_RUNS = (
    SmokeRun("bench_knowledge_source.py", "--copies 1 --skip-4x --skip-wikiextractor", "knowledge_source"),
    SmokeRun("bench_span_search.py", "--pairs 300 --page-pairs 0 --repeat 1", "span_search"),
    SmokeRun("bench_passages_store.py", "--copies 1 --lookups 100", "passages_store"),
    SmokeRun("bench_structured.py", "--articles 200 --stages structured", "structured_scale"),
    SmokeRun("bench_text_fidelity.py", "", "text_fidelity"),
    SmokeRun("bench_text_style.py", "--repeat 1", "text_style"),
    SmokeRun("bench_sql_tables.py", "--pages 2000", "sql_tables"),
    SmokeRun("bench_kb_paths.py", "--entities 2000 --pairs 10 --peer-pairs 2", "kb_paths"),
    SmokeRun("bench_fetch.py", "--size-mb 2 --repeat 1", "fetch"),
    SmokeRun("bench_wikidata_reader.py", "--entities 1000 --threads 2", "wikidata_reader"),
    SmokeRun("bench_structured_hostile.py", "--peer-cap 1", "structured_hostile"),
    SmokeRun("structure.py", "--label smoke", "structure_smoke"),
    SmokeRun("capacity_plan.py", f"--results {BENCHMARKS / 'results'} --no-write", None),
    SmokeRun("run_figures.py", f"--results {BENCHMARKS / 'results'} --check", None),  # the README's figures
    SmokeRun("month_streams.py", "--articles 200", "month_streams", before=MONTH_DUMPS),
    SmokeRun("check_kilt_fixtures.py", "", None),  # the shipped KILT fixtures; exit 1 on any difference
    SmokeRun("bench_html_fidelity.py", "", "html_fidelity"),  # the 11 shipped Parsoid pages, 3 records
    SmokeRun("bench_unspaced_scripts.py", "--articles 20 --repeat 1", "unspaced_scripts"),
)
"""Scripts that need no built snapshot: ``make test-fast`` runs them."""

DEMO_SMOKE_RUNS = (
    SmokeRun("bench_lookups.py", "--lookups 50", "lookups"),
    SmokeRun("bench_kb_facts.py", "", "kb_facts"),
    SmokeRun("bench_rerank.py", "--questions 1 --depths 5 --batch-sizes 8 --device cpu", "rerank_cpu"),
    SmokeRun("bench_structured_merge.py", "--questions 20", "structured_merge"),
    SmokeRun("bench_bm25.py", "--copies 1 --queries 20 --repeats 1", "bm25"),
    SmokeRun(
        "bench_serve.py",
        "--requests 5 --clients 1 --indexes bm25 --burst 5 --answer-clients 4 --answer-requests 20",
        "serve",
    ),
    SmokeRun("bench_serve_hostile.py", "--rounds 1 --clients 4 --long 1 --words 100", "serve_hostile"),
    SmokeRun("bench_serve_quotes.py", "--bytes 100000 --peer-bytes 0 --bodies 2", "serve_quotes"),
    # its scale rows use the snapshot's passages
    SmokeRun("bench_qa.py", "--pairs 300 --skip-real --queries 50", "qa"),
    SmokeRun("structured_questions.py", "--questions 50", "structured_questions"),
    SmokeRun("bench_serve_limits.py", "--queries 40 --hostile-seconds 2 --stop-cap 5", "serve_limits"),
    SmokeRun(
        "bench_dense.py",
        "--from-snapshot --passage-limit 200 --copies 2 --nlist 8 --pq-m 8 --queries 30 --encode-sample 32 "
        "--rounds 1 --repeats 1 --backends torch,onnx",
        "dense",
    ),
    SmokeRun(
        "bench_dense_scale.py",
        "--from-snapshot --passage-limit 200 --vectors 2000 --factories Flat;IVF16,SQ8 --queries 50",
        "dense_scale",
    ),
    SmokeRun("bench_exports.py", "--articles 20 --records 50", "exports"),
    SmokeRun(
        "bench_scale.py",
        "--articles 20 --records 50 --stages knowledge_source",  # bench_exports builds the rest
        "scale_n20",
    ),
    SmokeRun("bench_incremental.py", "--articles 10 --queries 5", "incremental_n10"),
    SmokeRun("bench_html_route.py", "--articles 30 --peer-articles 10 --member-records 10", "html_route"),
)
"""Scripts that read the built demo snapshot (``KILT_DATA_DIR``), start Lucene's JVM or run ``kiltpipe
build``: the integration tests run them, beside the demo build."""

HELPERS = frozenset({
    "__init__.py", "common.py", "figures.py", "replication.py", "structure_rules.py", "dense_sets.py",
    "bench_dense_devices.py", "qa_topics.py",
    "capacity_kb.py", "capacity_model.py", "capacity_scale.py", "capacity_stages.py",
    "scale_build.py", "scale_sensor.py", "scale_tables.py", "scale_lookups.py",
    "wikidata_readers.py", "gen_wikidata_dump.py", "gen_scale_dataset.py",
})  # fmt: skip
"""Modules the scripts import or run as their measured children (each run through its script)."""

NOT_SMOKE_RUN = {
    "bench_release_chain.py": "two `build_all` runs through dagster-daemon: 4.5 minutes at 20 articles (the "
    "same daemon path is tested by test_ui's landing-sensor build)",
    "repro_other_kernels.py": "the demo build again under other float kernels: 10 minutes (CI's repro check "
    "runs the same build, dvc commit and verify-repro)",
    "suite_time.py": "times `make test` itself in a fresh clone: it cannot run inside it",
}
"""Scripts no test runs on an input, and why: the unit tests import them and parse their options;
``make bench`` (or the script's docstring) runs them."""


def run_smoke(
    smoke: SmokeRun, tmp_path: Path, env: Mapping[str, str] | None = None, niceness: int = 0
) -> dict[str, Any]:
    """Run ``smoke`` (after its ``before``) with results and scratch under ``tmp_path``, its processes
    ``niceness`` lower in the scheduler's priority; assert it exits 0, writes its results there and leaves
    the committed figure as it was; returns what it wrote."""
    environment = {
        **os.environ,
        **(env or {}),
        "KILT_BENCH_RESULTS": str(tmp_path / "results"),
        "KILT_BENCH_WORK": str(tmp_path / "work"),
    }
    committed = BENCHMARKS / "results" / f"{smoke.result}.json"
    before = committed.read_bytes() if smoke.result and committed.is_file() else None
    commands = [command.split() for command in smoke.before]
    for script, *arguments in [*commands, [smoke.script, *smoke.arguments.split()]]:
        run = subprocess.run(
            [sys.executable, str(BENCHMARKS / script), *arguments],
            cwd=REPO,
            env=environment,
            capture_output=True,
            text=True,
            timeout=SMOKE_TIMEOUT_SECONDS,
            preexec_fn=(lambda: os.nice(niceness)) if niceness else None,
        )
        assert run.returncode == 0, f"{script} {' '.join(arguments)}:\n{run.stderr[-3000:]}"
    if smoke.result is None:
        assert run.stdout.strip(), f"{smoke.script} printed nothing"
        return {}
    written = json.loads((tmp_path / "results" / f"{smoke.result}.json").read_text())
    assert written, f"{smoke.script} wrote an empty result"
    assert (committed.read_bytes() if committed.is_file() else None) == before  # the figure is kept
    return written


class SmokeQueue:
    """Smoke runs done one after another in a background thread while the other tests run: the test process
    keeps one core busy, the scripts' processes take the other. Each test waits for its own run's outcome
    (what its job returned, or its failure, raised again in the test). Runs are planned with their job,
    started by :meth:`start_all` (the session's start) or, when not started, by the first :meth:`result`
    (so a pytest-xdist worker runs only its own tests' smoke runs)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="smoke-runs")
        self._jobs: dict[str, tuple[SmokeRun, Callable[[SmokeRun, Path], Any]]] = {}
        self._runs: dict[str, Future[Any]] = {}

    def plan(self, smoke: SmokeRun, job: Callable[[SmokeRun, Path], Any] | None = None) -> None:
        """Plan ``smoke``: ``job(smoke, its own folder)`` (default :func:`run_smoke`)."""
        self._jobs[smoke.script] = (smoke, job or run_smoke)

    def _start(self, script: str) -> Future[Any]:
        if script not in self._runs:
            smoke, job = self._jobs[script]
            folder = self.folder / script.removesuffix(".py")
            folder.mkdir(parents=True, exist_ok=True)
            self._runs[script] = self._pool.submit(job, smoke, folder)
        return self._runs[script]

    def start_all(self) -> None:
        """Queue every planned run, in the order planned."""
        for script in self._jobs:
            self._start(script)

    def result(self, smoke: SmokeRun) -> Any:
        """The outcome of ``smoke``'s run, waiting for it."""
        assert smoke.script in self._jobs, f"{smoke.script}: no smoke run was planned for it"
        return self._start(smoke.script).result()

    def close(self) -> None:
        """Drop the runs not started yet; wait for the one running."""
        self._pool.shutdown(wait=True, cancel_futures=True)
