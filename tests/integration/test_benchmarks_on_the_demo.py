"""Smoke runs of the benchmark scripts that read a built snapshot (the demo build, as ``make demo`` leaves
it for ``make bench``) or start Lucene's JVM, on their smallest input: an API change that breaks one fails
here. Results go to a temporary folder; the committed figures are kept."""

from __future__ import annotations

import pytest

from support.benchmark_smoke import DEMO_SMOKE_RUNS, SmokeQueue, SmokeRun

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("smoke", DEMO_SMOKE_RUNS, ids=lambda smoke: smoke.script)
def test_a_benchmark_of_the_built_snapshot_runs(demo_build, smoke_runs: SmokeQueue, smoke: SmokeRun) -> None:
    """Run in the background over the demo build as the session goes (``tests/conftest.py``); it builds
    nothing into the demo's data."""
    written = smoke_runs.result(smoke)
    if smoke.script == "bench_lookups.py":
        assert written
    # what the smallest runs still show: the figures' own checks hold
    if smoke.script == "bench_dense.py":
        assert (
            written["passages"] == 200
            and written["encoding"]["backends"]["onnx"]["mean_cosine_vs_fp32"] > 0.99
        )
    if smoke.script == "bench_dense_scale.py":
        assert written["factories"]["Flat"]["search_in_memory"]["settings"][0]["recall_at_10"] == 1.0
    if smoke.script == "bench_exports.py":
        assert written["runs"]["20"]["read_back"]["datasets_load_dataset"]["rows_equal"] is True
    if smoke.script == "bench_incremental.py":
        assert written["checks"]["passage_files_byte_identical"] and written["reuse"]["reused_pages"] > 0
