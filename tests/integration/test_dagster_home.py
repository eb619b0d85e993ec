"""Issue 63, part 9: a Dagster home records one data dir's snapshots whoever writes first: a run of the UI
or the daemon ties it as ``kiltpipe build`` does, and a build of another data dir under it is refused."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from orchestration.dagster_home import DATA_DIR_MARK
from orchestration.resources import PipelineSettings

REPO = Path(__file__).resolve().parents[2]


def test_a_ui_run_ties_the_home_and_another_data_dir_is_refused(
    kiltpipe, tmp_path: Path, small_excerpt
) -> None:
    home = Path(os.environ["DAGSTER_HOME"])  # the kiltpipe fixture's home
    instance = dg.DagsterInstance.get()
    ui_data = tmp_path / "ui-data"
    PipelineSettings(data_dir=str(ui_data)).setup_for_execution(
        dg.build_init_resource_context(instance=instance)
    )
    assert (home / DATA_DIR_MARK).read_text().strip() == str(ui_data.absolute())
    other = tmp_path / "other-data"
    code, _, err = kiltpipe("build", "--data-dir", other, "--dump", small_excerpt, "--quiet")
    assert code == 2 and f"records the snapshots of the data dir {ui_data.absolute()}" in err, err
    assert not (other / "snapshots").exists()  # refused before anything was written
    with pytest.raises(ValueError, match="records the snapshots of the data dir"):  # nor may a UI run of it
        PipelineSettings(data_dir=str(other)).setup_for_execution(
            dg.build_init_resource_context(instance=instance)
        )
    ephemeral = dg.DagsterInstance.ephemeral()  # tests' and one-off runs: no home to tie
    PipelineSettings(data_dir=str(other)).setup_for_execution(
        dg.build_init_resource_context(instance=ephemeral)
    )


def test_make_ui_claims_its_home_before_the_ui_starts(tmp_path: Path) -> None:
    """``make ui`` runs ``python -m orchestration.dagster_home`` first: a fresh home is tied to params.yaml's
    data dir; a home of another data dir stops it, naming both."""

    def claim(data: Path) -> subprocess.CompletedProcess:
        env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home"), "KILT_DATA_DIR": str(data)}
        command = [sys.executable, "-m", "orchestration.dagster_home"]
        return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)

    (tmp_path / "home").mkdir()
    run = claim(tmp_path / "data")
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "home" / DATA_DIR_MARK).read_text().strip() == str((tmp_path / "data").absolute())
    run = claim(tmp_path / "elsewhere")
    assert run.returncode == 2 and "records the snapshots of the data dir" in run.stderr


PARENT = """
import multiprocessing, sys, time
from step_child import step
if __name__ == "__main__":
    child = multiprocessing.get_context("spawn").Process(target=step, args=(sys.argv[1],))
    child.start()
    time.sleep(600)
"""
CHILD = """
import os, time
import dagster as dg
from orchestration.resources import PipelineSettings

def step(pid_file):
    # what a step process does first: set up its resources
    PipelineSettings(data_dir=pid_file + ".data").setup_for_execution(
        dg.build_init_resource_context(instance=dg.DagsterInstance.ephemeral())
    )
    open(pid_file, "w").write(str(os.getpid()))
    time.sleep(600)
"""


def test_a_step_process_ends_with_the_run_worker_that_started_it(tmp_path: Path) -> None:
    """Issue 63, part 9: a step in a process of its own (spawned, as the multiprocess executor spawns them)
    dies when its run worker is killed with ``kill -9``: it cannot record a materialization after the run
    failed (one recorded "Materialized structured_passages" 3 s after)."""
    import signal
    import time

    (tmp_path / "step_child.py").write_text(CHILD)
    (tmp_path / "worker.py").write_text(PARENT)
    pid_file = tmp_path / "step.pid"
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}:{REPO}"}
    worker = subprocess.Popen([sys.executable, str(tmp_path / "worker.py"), str(pid_file)], cwd=REPO, env=env)
    try:
        deadline = time.monotonic() + 120
        while not pid_file.is_file() or not pid_file.read_text():
            assert time.monotonic() < deadline and worker.poll() is None
            time.sleep(0.2)
        step = int(pid_file.read_text())
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.kill(step, 0)
                with open(f"/proc/{step}/stat") as stat:  # a zombie waiting for init to reap it is gone too
                    if stat.read().split(")")[-1].split()[0] == "Z":
                        return
            except (ProcessLookupError, FileNotFoundError):
                return
            time.sleep(0.1)
        os.kill(step, signal.SIGKILL)
        raise AssertionError("the step process outlived its run worker")
    finally:
        if worker.poll() is None:
            worker.kill()
