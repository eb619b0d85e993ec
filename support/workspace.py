"""Where the benchmarks and the dump generator work, and how they report progress.

Everything generated goes under ``benchmarks/work/`` (gitignored, ``$KILT_BENCH_WORK`` elsewhere) and results
go to ``benchmarks/results/`` (``$KILT_BENCH_RESULTS`` elsewhere, so a smoke run never replaces a figure).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

__all__ = ["REPO_ROOT", "RESULTS_DIR", "WORK_DIR", "log"]

REPO_ROOT = Path(__file__).resolve().parent.parent
WORK_DIR = Path(os.environ.get("KILT_BENCH_WORK") or REPO_ROOT / "benchmarks" / "work")
"""Scratch space of the benchmarks and the generator (``$KILT_BENCH_WORK``: elsewhere, as the tests' smoke
runs put it)."""
RESULTS_DIR = Path(os.environ.get("KILT_BENCH_RESULTS") or REPO_ROOT / "benchmarks" / "results")
"""Where results are written (``$KILT_BENCH_RESULTS``: elsewhere, so a smoke run never replaces a figure)."""


def log(message: str) -> None:
    """Progress message on stderr (stdout stays for tables)."""
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)
