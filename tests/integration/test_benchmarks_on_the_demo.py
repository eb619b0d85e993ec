"""Smoke runs of the benchmark scripts that read a built snapshot (the demo build, as ``make demo`` leaves
it for ``make bench``) or start Lucene's JVM, on their smallest input: an API change that breaks one fails
here. Results go to a temporary folder; the committed figures are kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.benchmark_smoke import DEMO_SMOKE_RUNS, SmokeRun, run_smoke

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("smoke", DEMO_SMOKE_RUNS, ids=lambda smoke: smoke.script)
def test_a_benchmark_of_the_built_snapshot_runs(tmp_path: Path, demo_build, smoke: SmokeRun) -> None:
    written = run_smoke(smoke, tmp_path, env={**demo_build.env, "OMP_NUM_THREADS": "2"})
    if smoke.script == "bench_lookups.py":
        assert written
