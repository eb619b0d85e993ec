"""A run whose worker died is failed by the daemon's run monitoring, not left "Started" forever: a real
`kiltpipe build` killed mid-run, then Dagster's own monitoring step over the instance it recorded into."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from dagster import DagsterInstance, DagsterRunStatus
from dagster._daemon.monitoring.run_monitoring import monitor_started_run

from orchestration.run_launcher import MonitoredRunLauncher

KILTPIPE = Path(sys.executable).parent / "kiltpipe"


def _started_run(home: Path, build: subprocess.Popen, timeout: float = 300):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert build.poll() is None, build.stderr.read()
        if (home / "dagster.yaml").is_file() and (home / "storage").is_dir():
            with DagsterInstance.from_config(str(home)) as instance:
                records = instance.get_run_records()
                if records and records[0].dagster_run.status == DagsterRunStatus.STARTED:
                    return records[0].dagster_run.run_id
        time.sleep(0.5)
    raise AssertionError("the build's run did not start")


def test_a_killed_build_is_failed_by_run_monitoring(tmp_path: Path, tiny_excerpt: Path) -> None:
    home, data = tmp_path / "dagster_home", tmp_path / "data"  # a fresh home: the build writes its settings
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    command = [str(KILTPIPE), "build", "--data-dir", str(data), "--dump", str(tiny_excerpt), "--quiet"]
    build = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        run_id = _started_run(home, build)
        with DagsterInstance.from_config(str(home)) as instance:
            assert isinstance(instance.run_launcher, MonitoredRunLauncher)
            assert instance.run_monitoring_enabled
            run = instance.get_run_by_id(run_id)
            assert instance.run_launcher.check_run_worker_health(run).status.value == "RUNNING"
    finally:
        os.killpg(build.pid, signal.SIGKILL)  # the worker dies as a JVM crash takes it: no event, no cleanup
        build.wait()

    with DagsterInstance.from_config(str(home)) as instance:
        record = instance.get_run_record_by_id(run_id)
        assert record.dagster_run.status == DagsterRunStatus.STARTED  # what the UI showed forever before
        monitor_started_run(instance, None, record, logging.getLogger("run_monitoring"))
        run = instance.get_run_by_id(run_id)
        assert run.status == DagsterRunStatus.FAILURE
        failure = [
            e.message for e in instance.all_logs(run_id) if e.message and "run worker (pid" in e.message
        ]
        assert failure and f"(pid {build.pid}) is gone" in failure[0], failure
