"""The run launcher's worker health check on runs as the code server records them (a "Started process for
run" event with the worker's pid): a live worker runs, a dead or replaced one has failed, a worker of
another machine is not judged; and the settings it ships are the ones a Dagster home gets."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster._core.events import EngineEventData
from dagster._core.storage.tags import GRPC_INFO_TAG

from orchestration.run_launcher import (
    INSTANCE_SETTINGS,
    WORKER_HOST_TAG,
    WORKER_PID_TAG,
    MonitoredRunLauncher,
    prepare_dagster_home,
    process_id,
    worker_status,
)


@dg.op
def _noop() -> None:
    pass


@dg.job
def _job() -> None:
    _noop()


@pytest.fixture
def instance():
    with dg.instance_for_test() as instance:
        yield instance


def _launcher(instance: dg.DagsterInstance) -> MonitoredRunLauncher:
    launcher = MonitoredRunLauncher()
    launcher.register_instance(instance)
    return launcher


def _run_with_worker(instance: dg.DagsterInstance, pid: int, host: str = "localhost") -> dg.DagsterRun:
    run = instance.create_run_for_job(
        job_def=_job, tags={GRPC_INFO_TAG: json.dumps({"host": host, "port": 1})}
    )
    instance.report_engine_event(
        f"Started process for run (pid: {pid}).", run, EngineEventData.in_process(pid)
    )
    return instance.get_run_by_id(run.run_id)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_live_worker_runs_and_a_dead_one_has_failed(instance) -> None:
    launcher = _launcher(instance)
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) as child:
        try:
            live = _run_with_worker(instance, child.pid)
            assert launcher.check_run_worker_health(live).status.value == "RUNNING"
        finally:
            child.kill()
    dead = _run_with_worker(instance, _dead_pid())
    result = launcher.check_run_worker_health(dead)
    assert result.status.value == "FAILED" and "no such process" in result.msg


def test_a_worker_of_another_machine_or_not_yet_started_is_not_judged(instance) -> None:
    launcher = _launcher(instance)
    remote = _run_with_worker(instance, _dead_pid(), host="10.1.2.3")
    assert launcher.check_run_worker_health(remote).status.value == "RUNNING"
    unstarted = instance.create_run_for_job(job_def=_job, tags={GRPC_INFO_TAG: '{"host": "localhost"}'})
    assert launcher.check_run_worker_health(unstarted).status.value == "RUNNING"


def test_a_reused_process_id_is_not_the_worker() -> None:
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) as child:
        try:
            time.sleep(0.1)
            assert worker_status(child.pid, time.time()).status.value == "RUNNING"
            reused = worker_status(child.pid, time.time() - 3600)  # recorded an hour before it started
            assert reused.status.value == "FAILED" and "later process" in reused.msg
        finally:
            child.kill()


def test_a_dagster_home_gets_the_settings_and_keeps_its_own(tmp_path: Path) -> None:
    fresh = prepare_dagster_home(tmp_path / "fresh")
    settings = yaml.safe_load(fresh.read_text())
    assert settings["run_launcher"] == {
        "module": "orchestration.run_launcher",
        "class": "MonitoredRunLauncher",
    }
    assert settings["run_monitoring"]["enabled"] is True
    with dg.DagsterInstance.from_config(str(tmp_path / "fresh")) as instance:
        assert isinstance(instance.run_launcher, MonitoredRunLauncher) and instance.run_monitoring_enabled
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "dagster.yaml").touch()  # what earlier builds left
    assert prepare_dagster_home(empty).read_text() == INSTANCE_SETTINGS.read_text()
    own = tmp_path / "own"
    own.mkdir()
    (own / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    assert prepare_dagster_home(own).read_text() == "telemetry:\n  enabled: false\n"


def test_a_worker_tag_that_is_no_process_id_is_not_judged(instance) -> None:
    """``kilt/worker_pid`` is a tag anyone launching a run may set: 5,000 digits, 0, a negative or a
    number past Linux's largest pid are no process id (never handed to the process table)."""
    launcher = _launcher(instance)
    host = socket.gethostname()
    for hostile in ("9" * 5000, "0", "-1", "4194305", "12a", ""):
        run = instance.create_run_for_job(job_def=_job, tags={WORKER_PID_TAG: hostile, WORKER_HOST_TAG: host})
        assert launcher.check_run_worker_health(run).status.value == "RUNNING", hostile
        assert process_id(hostile) is None
    assert process_id("4194304") == 4194304
