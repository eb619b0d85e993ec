"""Worker pools forked from one fork server per process: a worker runs in the environment and folder its
pool's creator has when the pool starts (as a spawned one would), and starts without importing again what
the server preloaded."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from assets.worker_pools import in_order, worker_pool

REPO = Path(__file__).resolve().parents[2]


def _seen(name: str) -> tuple[str | None, str, int]:
    return os.environ.get(name), os.getcwd(), os.getppid()


def _imported(module: str) -> bool:
    return module in sys.modules


def test_a_later_pool_sees_the_environment_and_folder_of_now(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with worker_pool(1) as first:  # starts this process's fork server (if no test did before)
        assert first.submit(_seen, "KILT_POOL_PROBE").result()[0] is None
    monkeypatch.setenv("KILT_POOL_PROBE", "after the server started")
    monkeypatch.chdir(tmp_path)
    with worker_pool(2) as second:
        seen = [second.submit(_seen, "KILT_POOL_PROBE").result() for _ in range(4)]
    assert {value for value, _, _ in seen} == {"after the server started"}
    assert {folder for _, folder, _ in seen} == {str(tmp_path)}
    assert all(parent != os.getpid() for _, _, parent in seen)  # forked by the server, not by this process


def test_the_server_preloads_the_modules_named_before_it_starts() -> None:
    """In a fresh process, the first pool's ``preload`` (``json.tool``: nothing a pool imports) is in
    its workers before they run anything; a module named once the server runs is not (each worker imports
    it when it needs it)."""
    script = (
        "from assets.worker_pools import worker_pool\n"
        "from tests.unit.test_worker_pools import _imported\n"
        "with worker_pool(1, preload=('json.tool',)) as pool:\n"
        "    first = pool.submit(_imported, 'json.tool').result()\n"
        "with worker_pool(1, preload=('colorsys',)) as pool:\n"
        "    later = pool.submit(_imported, 'colorsys').result()\n"
        "print(first, later)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["True", "False"]


def test_results_come_back_in_input_order_with_a_bounded_window() -> None:
    with worker_pool(2) as pool:
        assert [result for _, result in in_order(abs, range(-20, 0), pool, 3)] == list(range(20, 0, -1))
    assert [result for _, result in in_order(abs, [-1, -2], None, 1)] == [1, 2]
