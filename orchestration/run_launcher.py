"""A run whose worker process died is marked failed, not left "Started" forever.

Dagster's default run launcher starts each run's worker as a process of the code server and cannot tell
the daemon's run monitoring whether it still lives, so a run whose worker was killed (a JVM crash taking
the process down, the OOM killer, a closed terminal of ``kiltpipe build``) stays "Started" in the UI.
:class:`MonitoredRunLauncher` is that launcher with the health check: the worker's process id comes from
the run (the ``kilt/worker_pid`` tag ``kiltpipe build`` sets, or the "Started process for run (pid: N)"
event of a worker the code server started), and a worker that no longer runs (gone, a zombie, or its id
reused by a later process) is reported failed; the daemon's run monitoring then fails the run with that
message. A worker on another host is reported running: this machine cannot see it.

The instance settings that turn it on are :data:`INSTANCE_SETTINGS` (``orchestration/dagster.yaml``),
which ``kiltpipe build`` and ``make ui`` write into a Dagster home that has none."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import psutil
from dagster import DagsterEventType, DagsterRun
from dagster._core.launcher import CheckRunHealthResult, WorkerStatus
from dagster._core.launcher.default_run_launcher import DefaultRunLauncher
from dagster._core.storage.tags import GRPC_INFO_TAG

__all__ = [
    "INSTANCE_SETTINGS",
    "WORKER_HOST_TAG",
    "WORKER_PID_TAG",
    "MonitoredRunLauncher",
    "prepare_dagster_home",
    "process_id",
    "worker_tags",
]

INSTANCE_SETTINGS = Path(__file__).with_name("dagster.yaml")
"""The Dagster instance settings of this project: this launcher, run monitoring, no telemetry."""

WORKER_PID_TAG = "kilt/worker_pid"
WORKER_HOST_TAG = "kilt/worker_host"
RUN_WORKER_STARTED = "Started process for run"
"""How Dagster's run worker announces its process id (an engine event with ``pid`` metadata)."""
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
PID_MAX = 4_194_304
"""The largest process id Linux hands out (``PID_MAX_LIMIT``)."""
START_SLACK_SECONDS = 2.0
"""A process created this long after the run recorded its id is another process that reused the id."""


def worker_tags() -> dict[str, str]:
    """Tags naming this process as a run's worker (``kiltpipe build`` executes its runs in itself)."""
    return {WORKER_PID_TAG: str(psutil.Process().pid), WORKER_HOST_TAG: socket.gethostname()}


def prepare_dagster_home(home: Path) -> Path:
    """Write this project's instance settings into ``home``'s ``dagster.yaml`` unless it has settings of
    its own (a non-empty file is the user's and is kept); returns the file."""
    settings = home / "dagster.yaml"
    home.mkdir(parents=True, exist_ok=True)
    if not settings.is_file() or not settings.read_text(encoding="utf-8").strip():
        settings.write_text(INSTANCE_SETTINGS.read_text(encoding="utf-8"), encoding="utf-8")
    return settings


class MonitoredRunLauncher(DefaultRunLauncher):
    """Dagster's default run launcher with a worker health check for the daemon's run monitoring."""

    def __init__(self, inst_data: Any = None) -> None:
        super().__init__(inst_data=inst_data)
        self._workers: dict[str, tuple[int, float]] = {}

    @property
    def supports_check_run_worker_health(self) -> bool:
        return True

    def check_run_worker_health(self, run: DagsterRun) -> CheckRunHealthResult:
        found = self._worker_of(run)
        if found is None:  # not started yet (the start timeout covers that), or on another host
            return CheckRunHealthResult(WorkerStatus.RUNNING, "no local run worker recorded")
        pid, recorded_at = found
        return worker_status(pid, recorded_at)

    def _worker_of(self, run: DagsterRun) -> tuple[int, float] | None:
        """The local worker's process id and when the run recorded it, or None; found once per run (the
        run's engine events are not read again at every poll)."""
        if run.run_id not in self._workers:
            found = self._find_worker(run)
            if found is None:
                return None  # not recorded yet: looked for again at the next poll
            self._workers[run.run_id] = found
        return self._workers[run.run_id]

    def _find_worker(self, run: DagsterRun) -> tuple[int, float] | None:
        tags = run.tags
        if WORKER_PID_TAG in tags:
            pid = process_id(tags[WORKER_PID_TAG])
            if tags.get(WORKER_HOST_TAG) != socket.gethostname() or pid is None:
                return None
            record = self._instance.get_run_record_by_id(run.run_id)
            return (pid, record.create_timestamp.timestamp()) if record else None
        if not _local_code_server(tags.get(GRPC_INFO_TAG)):
            return None
        for entry in self._instance.all_logs(run.run_id, of_type=DagsterEventType.ENGINE_EVENT):
            if entry.message.startswith(RUN_WORKER_STARTED):
                value = entry.dagster_event.engine_event_data.metadata.get("pid")
                pid = process_id(str(value.value)) if value is not None else None
                return (pid, entry.timestamp) if pid is not None else None
        return None


def process_id(text: str) -> int | None:
    """``text`` as a process id, or None when it is none (a tag anyone may set: bounded before use)."""
    if not text.isdigit() or len(text) > len(str(PID_MAX)):
        return None
    pid = int(text)
    return pid if 0 < pid <= PID_MAX else None


def worker_status(pid: int, recorded_at: float) -> CheckRunHealthResult:
    """Whether process ``pid``, recorded as a run's worker at ``recorded_at`` (epoch seconds), still runs."""
    try:
        process = psutil.Process(pid)
        alive = process.is_running() and process.status() != psutil.STATUS_ZOMBIE
        reused = process.create_time() > recorded_at + START_SLACK_SECONDS
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        alive, reused = False, False
    except psutil.AccessDenied:  # another user's process with this id: ours would be ours to read
        alive, reused = False, True
    if alive and not reused:
        return CheckRunHealthResult(WorkerStatus.RUNNING)
    why = "its id now belongs to a later process" if reused else "no such process"
    return CheckRunHealthResult(
        WorkerStatus.FAILED,
        f"the run worker (pid {pid}) is gone ({why}): the process died without ending the run (a crash, a"
        " kill, the OOM killer); its steps' logs are in the run's event log",
    )


def _local_code_server(grpc_info: str | None) -> bool:
    """Whether the run was started by a code server on this machine (its worker a local process)."""
    if not grpc_info:
        return False
    try:
        info = json.loads(grpc_info)
    except ValueError:
        return False
    return "socket" in info or info.get("host") in LOCAL_HOSTS | {socket.gethostname()}
