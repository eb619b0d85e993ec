"""Runs of a snapshot hold its build lock and keep its build record (``assets.storage.builds``).

``kiltpipe build`` takes the lock itself, before it starts the run, and tags the run with the lock's
token. Every other run (launched from the UI, by the landing sensor or the rebuild schedule) takes it in
its executor: :func:`guarded_executor` wraps whichever executor the definitions use, so the run worker
holds the lock from its first step to its last. ``job.execute_in_process`` (a notebook, a test) replaces
the job's executor with Dagster's in-process one; such a run takes the lock when it sets up its IO manager
(:func:`guarded_io_manager`) and gives it back when it tears it down, after its last step.
Either way the run's events say which steps and checks failed and which assets were published, and the
record says so when the run ends.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dagster import DagsterEventType, ExecutorDefinition, InitResourceContext, IOManagerDefinition, io_manager
from dagster._core.executor.base import Executor

from assets.disk_space import disk_full_line
from assets.snapshot_ids import is_snapshot_id
from assets.storage import LOCK_TAG, BuildLock, BuildSession, building, new_owner
from orchestration.resources import SnapshotIOManager

if TYPE_CHECKING:
    from dagster import DagsterInstance, DagsterRun
    from dagster._core.events import DagsterEvent
    from dagster._core.execution.context.system import PlanOrchestrationContext
    from dagster._core.execution.plan.plan import ExecutionPlan
    from dagster._core.execution.retries import RetryMode

PARTITION_TAG = "dagster/partition"
WRITES_NOTHING = frozenset({"wikipedia_dump"})
"""Assets whose materialization changes nothing of the snapshot (the dump is recorded only once the
knowledge source built from it is published)."""


_WORKER_TRACEBACKS = frozenset({"_RemoteTraceback", "RemoteTraceback"})


def _root_error(error: Any) -> Any:
    """The user's exception under Dagster's wrappers; not the traceback text a worker process sent along
    with it (``concurrent.futures.process._RemoteTraceback``), which is only its cause."""
    while error is not None and error.cause is not None and error.cause.cls_name not in _WORKER_TRACEBACKS:
        error = error.cause
    return error


def error_line(error: Any, where: Path | str | None = None) -> str:
    """One line saying why a step failed. A full disk, whichever library said so (Python, numpy, DuckDB,
    polars, FAISS), is one line naming the file it could not write (else ``where``, the folder written)."""
    root = _root_error(error)
    if root is None:
        return "failed"
    cause = error
    while cause is not None:  # the wrappers' messages too: a library's text may sit in any of them
        if cause.cls_name not in _WORKER_TRACEBACKS:
            line = disk_full_line(cause.message, where)
            if line:
                return line
        cause = cause.cause
    message = root.message.strip()
    return message.splitlines()[0] if message else root.cls_name


def observe(session: BuildSession, events: Iterable[DagsterEvent]) -> None:
    """Note in ``session`` the assets a run published and the steps and checks that failed."""
    for event in events:
        if event.event_type == DagsterEventType.ASSET_MATERIALIZATION and event.asset_key is not None:
            if event.asset_key.to_user_string() not in WRITES_NOTHING:
                session.materialized(event.asset_key.to_user_string())
        elif event.event_type == DagsterEventType.ASSET_CHECK_EVALUATION:
            evaluation = event.event_specific_data
            if evaluation is not None and not evaluation.passed:
                session.failed(f"check {evaluation.check_name} failed ({evaluation.description})")
        elif event.is_step_failure:
            error = _root_error(event.step_failure_data.error)
            if error is not None and error.cls_name == "DagsterAssetCheckFailedError":
                continue  # the failed check itself is noted, with its description
            line = error_line(event.step_failure_data.error, session.root)
            session.failed(f"step {event.step_key} failed: {line}")


def lock_held_for(data_dir: str | Path, snapshot_id: str, run: DagsterRun) -> bool:
    """Whether ``run``'s snapshot lock is already held for it: by the launcher that tagged the run with the
    lock's token (``kiltpipe build``), or by the run's own guarded executor."""
    holder = BuildLock(data_dir, snapshot_id).holder()
    if not holder:
        return False
    token = run.tags.get(LOCK_TAG)
    return (bool(token) and holder.get("token") == token) or holder.get("run_id") == run.run_id


def _guarded(data_dir: str | Path, snapshot_id: str | None, run: DagsterRun) -> bool:
    """Whether ``run`` must take its snapshot's lock: it has a snapshot (a valid id; with another partition
    key its steps fail, naming it, before writing anything) and nobody holds the lock for it yet."""
    if snapshot_id is None or not is_snapshot_id(snapshot_id):
        return False
    return not lock_held_for(data_dir, snapshot_id, run)


def _owner_of(run: DagsterRun) -> dict[str, Any]:
    return new_owner(command=f"Dagster run of {run.job_name}", run_id=run.run_id)


class SnapshotGuardedExecutor(Executor):
    """An executor whose runs hold their snapshot's build lock and keep its build record."""

    def __init__(self, inner: Executor, data_dir: str) -> None:
        self.inner = inner
        self.data_dir = data_dir

    @property
    def retries(self) -> RetryMode:
        return self.inner.retries

    def execute(
        self, plan_context: PlanOrchestrationContext, execution_plan: ExecutionPlan
    ) -> Iterator[DagsterEvent]:
        run = plan_context.dagster_run
        snapshot_id = run.tags.get(PARTITION_TAG)
        if not _guarded(self.data_dir, snapshot_id, run):
            yield from self.inner.execute(plan_context, execution_plan)
            return
        with building(self.data_dir, snapshot_id, _owner_of(run)) as session:
            for event in self.inner.execute(plan_context, execution_plan):
                observe(session, [event])
                yield event


def guarded_executor(definition: ExecutorDefinition, data_dir: str) -> ExecutorDefinition:
    """``definition`` (same name, config and requirements) whose executors guard their runs."""
    create = definition.executor_creation_fn
    assert create is not None, f"executor {definition.name} has no creation function"
    return ExecutorDefinition(
        name=definition.name,
        config_schema=definition.config_schema,
        requirements=definition.get_requirements,
        executor_creation_fn=lambda init_context: SnapshotGuardedExecutor(create(init_context), data_dir),
        description=definition.description,
    )


@contextlib.contextmanager
def _run_build(data_dir: str, run: DagsterRun | None, instance: DagsterInstance | None) -> Iterator[None]:
    """Hold the snapshot's lock around an in-process run that nothing else holds it for; at the end, note
    what the run's events say it published and what failed, and publish (``assets.storage.builds``)."""
    snapshot_id = run.tags.get(PARTITION_TAG) if run is not None else None
    if run is None or instance is None or not _guarded(data_dir, snapshot_id, run):
        yield
        return
    with building(data_dir, snapshot_id, _owner_of(run)) as session:
        yield
        events = [entry.dagster_event for entry in instance.all_logs(run.run_id)]
        observe(session, [event for event in events if event is not None])


def guarded_io_manager(data_dir: str) -> IOManagerDefinition:
    """The snapshot IO manager, whose set-up in a run that holds no lock (``execute_in_process``) takes
    the build lock for the rest of the run: every asset of a snapshot reads and writes through it."""

    @io_manager(description=SnapshotIOManager.__doc__)
    def snapshot_io_manager(context: InitResourceContext) -> Iterator[SnapshotIOManager]:
        with _run_build(data_dir, context.run, context.instance):
            yield SnapshotIOManager(data_dir=data_dir)

    return snapshot_io_manager
