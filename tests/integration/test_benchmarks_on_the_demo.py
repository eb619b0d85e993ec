"""Smoke runs of the benchmark scripts that read a built snapshot (the demo build, as ``make demo`` leaves
it for ``make bench``) or start Lucene's JVM, on their smallest input: an API change that breaks one fails
here. Results go to a temporary folder; the committed figures are kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from assets.storage import list_snapshots
from support.benchmark_smoke import DEMO_SMOKE_RUNS, SmokeRun, run_smoke

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("smoke", DEMO_SMOKE_RUNS, ids=lambda smoke: smoke.script)
def test_a_benchmark_of_the_built_snapshot_runs(tmp_path: Path, demo_build, smoke: SmokeRun) -> None:
    snapshots = list_snapshots(demo_build.data_dir)
    written = run_smoke(smoke, tmp_path, env={**demo_build.env, "OMP_NUM_THREADS": "2"})
    assert list_snapshots(demo_build.data_dir) == snapshots  # it built nothing into the demo's data
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
