"""Smoke runs of benchmark scripts on their smallest input (seconds each), so an API change that breaks a
script fails here rather than when a figure is next measured. Results and scratch files go to a temporary
folder (``$KILT_BENCH_RESULTS``, ``$KILT_BENCH_WORK``): a smoke run never replaces a committed figure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

SMOKE_RUNS = [
    ("bench_knowledge_source.py", ["--copies", "1", "--skip-4x", "--skip-wikiextractor"], "knowledge_source"),
    ("bench_span_search.py", ["--pairs", "300", "--page-pairs", "0", "--repeat", "1"], "span_search"),
    ("bench_passages_store.py", ["--copies", "1", "--lookups", "100"], "passages_store"),
    ("bench_structured.py", ["--articles", "200", "--stages", "structured"], "structured_scale"),
]
"""Scripts that run on their smallest input without a built snapshot or a peer from locks/bench.txt; the
others (a peer, the demo build, a GPU) are run by ``make bench``, whose figures the README quotes."""


@pytest.mark.parametrize(("script", "arguments", "result"), SMOKE_RUNS)
def test_a_benchmark_runs_on_its_smallest_input(
    tmp_path: Path, script: str, arguments: list[str], result: str
) -> None:
    env = {
        **os.environ,
        "KILT_BENCH_RESULTS": str(tmp_path / "results"),
        "KILT_BENCH_WORK": str(tmp_path / "work"),
    }
    committed = REPO / "benchmarks" / "results" / f"{result}.json"
    before = committed.read_bytes() if committed.is_file() else None
    run = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / script), *arguments],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    written = json.loads((tmp_path / "results" / f"{result}.json").read_text())
    assert written and (committed.read_bytes() if committed.is_file() else None) == before  # figure kept
    if result == "knowledge_source":
        assert written["ours_1x"]["report"]["articles"] > 0
