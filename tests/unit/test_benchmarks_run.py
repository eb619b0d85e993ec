"""Smoke runs of benchmark scripts on their smallest input (seconds each), so an API change that breaks a
script fails here rather than when a figure is next measured. Results and scratch files go to a temporary
folder (``$KILT_BENCH_RESULTS``, ``$KILT_BENCH_WORK``): a smoke run never replaces a committed figure.

The scripts that read a built snapshot or run builds are smoke-run beside the demo build
(``tests/integration/test_benchmarks_on_the_demo.py``); the three left to ``make bench``, and why, are
:data:`support.benchmark_smoke.NOT_SMOKE_RUN`: those are imported and their options parsed here
(``--help``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from support.benchmark_smoke import NOT_SMOKE_RUN, UNIT_SMOKE_RUNS, SmokeQueue, SmokeRun

REPO = Path(__file__).resolve().parents[2]

__all__: list[str] = []


@pytest.mark.parametrize("smoke", UNIT_SMOKE_RUNS, ids=lambda smoke: smoke.script)
def test_a_benchmark_runs_on_its_smallest_input(smoke_runs: SmokeQueue, smoke: SmokeRun) -> None:
    """Run in the background as the session goes (``tests/conftest.py``)."""
    written = smoke_runs.result(smoke)
    if smoke.script == "bench_knowledge_source.py":
        assert written["ours_1x"]["report"]["articles"] > 0


def test_every_benchmark_script_is_smoke_run_or_says_why_not() -> None:
    from support.benchmark_smoke import DEMO_SMOKE_RUNS, HELPERS

    scripts = {p.name for p in (REPO / "benchmarks").glob("*.py")}
    covered = {s.script for s in (*UNIT_SMOKE_RUNS, *DEMO_SMOKE_RUNS)}
    covered |= {command.split()[0] for s in UNIT_SMOKE_RUNS for command in s.before}
    assert scripts - covered - set(NOT_SMOKE_RUN) - HELPERS == set()
    assert not (covered & set(NOT_SMOKE_RUN))


@pytest.mark.parametrize("script", sorted(NOT_SMOKE_RUN))
def test_a_script_left_to_make_bench_still_imports_and_parses_its_arguments(script: str) -> None:
    """The scripts too slow for a smoke run (minutes at their smallest input) are still imported and their
    options parsed (``--help``): a module or name they use that moved fails here."""
    run = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / script), "--help"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0 and "usage:" in run.stdout, run.stderr[-2000:]
