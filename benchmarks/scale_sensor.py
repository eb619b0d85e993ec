"""Issue 28, part 3's landing sensor at scale: snapshot N+1 lands in the folder a Dagster daemon watches,
and the landing sensor builds it (``build_all``, incremental from N) with nothing done by hand.

``bench_scale.py --articles N --month M --sensor`` runs it after N is built (``--articles N``): it starts
``dagster-daemon run`` on the project's ``workspace.yaml`` with a Dagster home of its own, copies N+1's
dump files into the landing folder as a mirror would (checksum list first, each file under a temporary name,
renamed when copied), waits for the sensor's run to finish, and records the run's status, the sensor's
latency, the build's wall time, the peak RSS summed over the daemon's session (daemon, code server, run
worker and its step processes) and what the build reused; then checks the remapped dataset against the
month's truth, as the stage-by-stage month build is checked.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil

from assets.storage import SnapshotPaths, build_state
from support.generator.scale_runs import remapped_against_truth
from support.workspace import REPO_ROOT, log

DAEMON = REPO_ROOT / ".venv" / "bin" / "dagster-daemon"
FINISHED = ("SUCCESS", "FAILURE", "CANCELED")


def landing_files(out: Path, snapshot: str) -> list[Path]:
    """The files of a generated dump a mirror would fetch: the multistream dump, its index and the SQL
    tables."""
    files = sorted(
        p for p in out.iterdir() if p.name.startswith(f"{snapshot}-") and p.name.endswith((".bz2", ".gz"))
    )
    if not any(p.name.endswith("-pages-articles-multistream.xml.bz2") for p in files):
        raise FileNotFoundError(f"{out}: no {snapshot}-pages-articles-multistream.xml.bz2")
    return files


def land(files: list[Path], landing: Path, snapshot: str) -> float:
    """Copy ``files`` into ``landing`` as a mirror does: the md5 list first, each file under a temporary
    name, renamed when complete. Returns the time (epoch) the last file appeared."""
    landing.mkdir(parents=True, exist_ok=True)
    sums = "".join(f"{_md5(f)}  {f.name}\n" for f in files)
    (landing / f"{snapshot}-md5sums.txt").write_text(sums)
    for file in files:
        partial = landing / f".{file.name}.partial"
        shutil.copyfile(file, partial)
        partial.rename(landing / file.name)
    return time.time()


def _md5(path: Path) -> str:
    digest = hashlib.md5()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def session_rss(session: int) -> int:
    """Bytes of RSS summed over the processes of a session (the daemon and everything it started)."""
    total = 0
    for process in psutil.process_iter(["pid"]):
        try:
            if os.getsid(process.pid) == session:
                total += process.memory_info().rss
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    return total


@contextlib.contextmanager
def dagster_daemon(env: dict[str, str], log_file: Path) -> Iterator[subprocess.Popen]:
    """``dagster-daemon run`` on the project's workspace.yaml in a session of its own (output to
    ``log_file``), killed as a group on the way out (it ignores SIGTERM in some sandboxes)."""
    command = [str(DAEMON), "run", "-w", str(REPO_ROOT / "workspace.yaml")]
    with log_file.open("w") as output:
        daemon = subprocess.Popen(
            command, cwd=REPO_ROOT, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        yield daemon
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(daemon.pid, signal.SIGKILL)
        daemon.wait()


def sensor_build(
    env: dict[str, str], landing: Path, files: list[Path], snapshot: str, *, timeout: float, log_file: Path
) -> dict[str, Any]:
    """Start the daemon (its own session, killed as a group at the end), land ``files``, and wait for the
    sensor's run of ``snapshot``; its measurements."""
    from dagster import DagsterInstance, RunsFilter

    home = Path(env["DAGSTER_HOME"])
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    shutil.rmtree(landing, ignore_errors=True)
    os.environ["DAGSTER_HOME"] = str(home)
    instance = DagsterInstance.get()  # its storage created here, before the daemon opens it too
    with dagster_daemon(env, log_file) as daemon:
        started = time.time()
        landed = land(files, landing, snapshot)
        log(f"sensor: {len(files)} files landed in {landed - started:.0f} s; waiting for the sensor's run")
        peak, run = 0, None
        while time.time() - landed < timeout:
            if daemon.poll() is not None:
                raise SystemExit(f"dagster-daemon exited ({daemon.returncode}); see {log_file}")
            peak = max(peak, session_rss(daemon.pid))
            records = instance.get_run_records(RunsFilter(tags={"dagster/partition": snapshot}))
            if records and records[0].dagster_run.status.value in FINISHED:
                run = records[0]
                break
            time.sleep(1.0)
        if run is None:
            raise SystemExit(f"no finished run of {snapshot} {timeout:.0f} s after landing; see {log_file}")
    tags = run.dagster_run.tags
    return {
        "status": run.dagster_run.status.value,
        "run_id": run.dagster_run.run_id,
        "tags": {
            k: v for k, v in tags.items() if k.startswith(("kilt/", "dagster/sensor", "dagster/partition"))
        },
        "files_landed": [f.name for f in files],
        "landed_bytes": sum(f.stat().st_size for f in files),
        "copy_seconds": round(landed - started, 1),
        "landed_to_run_created_s": round(run.create_timestamp.timestamp() - landed, 1),
        "run_wall_s": round(run.end_time - run.start_time, 1) if run.end_time and run.start_time else None,
        "landed_to_finished_s": round(run.end_time - landed, 1) if run.end_time else None,
        "peak_rss_session_bytes": peak,
        "daemon_log": str(log_file),
    }


def sensor_outcome(
    sensor: dict[str, Any],
    base: SnapshotPaths,
    paths: SnapshotPaths,
    full_walls: dict[str, float],
    dataset_dir: Path,
    truth: Path,
    bleu_threshold: float,
) -> dict[str, Any]:
    """What the sensor's build of ``paths`` (N+1) made: complete or not, the knowledge source's reuse of
    ``base`` (N), its wall time against N's full build (``full_walls``: N's stages, built one by one), and
    the dataset drawn from N as remapped onto N+1 against the month's ``truth``."""
    log(f"sensor: {json.dumps(sensor)[:600]}")
    report = json.loads(paths.report_file.read_text())
    full = sum(full_walls.values())
    return {
        "complete": build_state(base.data_dir, paths.snapshot_id).complete,
        "knowledge_source": {key: report.get(key) for key in ("articles", "pages_reused", "reuse")},
        "full_build_of_n": {"stage_wall_s": full_walls, "wall_s": round(full, 1)},
        "ratio_to_full_build_of_n": round(sensor["run_wall_s"] / full, 3) if sensor["run_wall_s"] else None,
        "against_truth": remapped_against_truth(
            dataset_dir, base, paths, truth, bleu_threshold=bleu_threshold
        ),
    }


SUMMARY_KEYS = (
    "status",
    "landed_to_run_created_s",
    "run_wall_s",
    "complete",
    "peak_rss_session_bytes",
    "knowledge_source",
    "full_build_of_n",
    "ratio_to_full_build_of_n",
    "machine",
)


def sensor_summary(sensor: dict[str, Any]) -> dict[str, Any]:
    """The sensor's build as ``scale.json`` shows it."""
    truth = sensor["against_truth"]
    return {key: sensor.get(key) for key in SUMMARY_KEYS} | {
        "as_expected_fraction": truth["as_expected_fraction"],
        "report_counts_equal_truth": truth["report_counts_equal_truth"],
    }
