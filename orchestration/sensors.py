"""The landing sensor (a new dump lands -> a snapshot partition and its build) and the rebuild schedule."""

import json
import os
from pathlib import Path

from dagster import (
    DefaultScheduleStatus,
    DefaultSensorStatus,
    RunRequest,
    ScheduleDefinition,
    ScheduleEvaluationContext,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    schedule,
    sensor,
)

from assets import params
from assets.snapshot_ids import snapshot_order_key
from assets.storage import complete_snapshots
from assets.wikipedia.fetch import LandedDump, scan_landing
from orchestration.resources import SNAPSHOTS, PipelineSettings

TRIGGER_TAG = "kilt/trigger"


def _files_tag(files: tuple[Path, ...]) -> str:
    return files[0].name + (f" (+{len(files) - 1} parts)" if len(files) > 1 else "")


def landing_problem(folder: Path) -> str | None:
    """Why the landing sensor cannot look into ``folder`` (absolute), with what to do; None when it can."""
    fix = "set snapshots.landing_dir in params.yaml or $KILT_LANDING_DIR to the folder your dumps land in"
    if not folder.exists():
        return f"landing folder {folder} does not exist: create it (mkdir -p {folder}) or {fix}"
    if not folder.is_dir():
        return f"landing folder {folder} is not a folder: {fix}"
    if not os.access(folder, os.R_OK | os.X_OK):
        return (
            f"landing folder {folder} cannot be read by this process (uid {os.getuid()}): fix its permissions"
        )
    return None


def _run_request(dump: LandedDump) -> RunRequest:
    """The run that builds a landed dump: its files (and SQL tables) as the wikipedia_dump's config."""
    details = {"run_key": dump.run_key, "form": dump.form, "verified_by": dump.verified_by}
    dump_config = {
        "dump_paths": [str(f) for f in dump.files],
        "source": "landing",
        "details": details,
        "page_props": str(dump.page_props) if dump.page_props else None,
        "redirect_table": str(dump.redirect_table) if dump.redirect_table else None,
    }
    return RunRequest(
        run_key=dump.run_key,
        partition_key=dump.snapshot_id,
        run_config={"ops": {"wikipedia_dump": {"config": dump_config}}},
        tags={TRIGGER_TAG: "landing", "kilt/dump": _files_tag(dump.files)},
    )


def build_landing_sensor(
    job_name: str,
    landing_dir: Path | None = None,
    settings: params.SnapshotsParams | None = None,
    *,
    interval_seconds: int | None = None,
    settle_seconds: float | None = None,
) -> SensorDefinition:
    """A sensor on ``landing_dir``: each complete, verified dump adds its snapshot partition and requests
    one run of ``job_name`` for it. The cursor keeps the checksum cache and the run keys already requested, so
    a dump is built once; a half-copied file fails verification and waits for the next tick. At most
    ``snapshots.hash_budget_mb`` is hashed per tick (a sensor evaluation has a timeout); the rest waits.
    ``settings``: ``snapshots`` of params.yaml (default: the built-in defaults); keywords override it."""
    folder = (landing_dir or params.landing_dir()).absolute()
    settings = settings or params.SnapshotsParams()
    interval_seconds = settings.sensor_interval_seconds if interval_seconds is None else interval_seconds
    settle_seconds = settings.settle_seconds if settle_seconds is None else settle_seconds
    hash_budget_bytes = settings.hash_budget_mb << 20
    running = settings.sensor_running

    @sensor(
        name="dump_landing_sensor",
        job_name=job_name,
        minimum_interval_seconds=interval_seconds,
        default_status=DefaultSensorStatus.RUNNING if running else DefaultSensorStatus.STOPPED,
        description=(
            f"Watches {folder} for new MediaWiki dumps (single file or verified part files); the folder is "
            "snapshots.landing_dir of params.yaml, or $KILT_LANDING_DIR."
        ),
    )
    def dump_landing_sensor(
        context: SensorEvaluationContext, pipeline: PipelineSettings
    ) -> SensorResult | SkipReason:
        cursor = json.loads(context.cursor) if context.cursor else {}
        requested: list[str] = cursor.get("requested", [])
        problem = landing_problem(folder)
        if problem is None:
            try:
                scan = scan_landing(
                    folder,
                    cursor.get("verified"),
                    settle_seconds=settle_seconds,
                    hash_budget_bytes=hash_budget_bytes,
                )
            except PermissionError as error:
                problem = f"cannot read the landing folder {folder}: {error.strerror} ({error.filename})"
        if problem is not None:
            context.log.warning(problem)  # in the tick's logs, not only in its result
            return SkipReason(problem)
        for waiting in scan.incomplete:
            context.log.info(f"{waiting.snapshot_id}: not ready ({waiting.reason})")
        built = set(complete_snapshots(pipeline.data_path))
        known = set(context.instance.get_dynamic_partitions(SNAPSHOTS.name))
        run_requests, new_partitions = [], []
        for dump in scan.complete:
            if dump.run_key in requested:
                continue
            requested.append(dump.run_key)
            if dump.snapshot_id in built:
                context.log.info(f"{dump.snapshot_id} is already built; {dump.run_key} is not built again")
                continue
            if dump.snapshot_id not in known:
                new_partitions.append(dump.snapshot_id)
            run_requests.append(_run_request(dump))
        new_cursor = json.dumps({"verified": scan.cache, "requested": requested}, sort_keys=True)
        if not run_requests and new_cursor == context.cursor:
            return SkipReason(f"no new complete dump in {folder}")
        if not run_requests:  # every tick names the folder, the first one too (not "an empty result")
            skip = SkipReason(f"no new complete dump in {folder}")
            return SensorResult(skip_reason=skip, cursor=new_cursor)
        return SensorResult(
            run_requests=run_requests,
            dynamic_partitions_requests=(
                [SNAPSHOTS.build_add_request(new_partitions)] if new_partitions else []
            ),
            cursor=new_cursor,
        )

    return dump_landing_sensor


def build_rebuild_schedule(
    job_name: str, settings: params.RebuildScheduleParams | None = None
) -> ScheduleDefinition:
    """A cron schedule requesting ``job_name`` (the derived assets) for the newest built snapshot
    (``settings``: ``snapshots.rebuild_schedule`` of params.yaml; default: the built-in one)."""
    settings = settings or params.RebuildScheduleParams()
    cron, timezone, running = settings.cron, settings.timezone, settings.running

    @schedule(
        name="rebuild_newest_snapshot",
        job_name=job_name,
        cron_schedule=cron,
        execution_timezone=timezone,
        default_status=DefaultScheduleStatus.RUNNING if running else DefaultScheduleStatus.STOPPED,
        description=f"Rebuilds the derived assets of the newest snapshot ({cron}, {timezone}): at each tick"
        " it picks the newest snapshot partition whose build completed. The snapshot partitions are dynamic,"
        " so this page shows no partition set; each run it starts carries its snapshot's partition.",
    )
    def rebuild_newest_snapshot(
        context: ScheduleEvaluationContext, pipeline: PipelineSettings
    ) -> RunRequest | SkipReason:
        partitions = set(context.instance.get_dynamic_partitions(SNAPSHOTS.name))
        candidates = [s for s in complete_snapshots(pipeline.data_path) if s in partitions]
        if not candidates:
            return SkipReason("no snapshot partition whose last build completed")
        newest = max(candidates, key=snapshot_order_key)
        return RunRequest(partition_key=newest, tags={TRIGGER_TAG: "schedule"})

    return rebuild_newest_snapshot
