"""Runs of a snapshot hold its build lock and keep its build record (``assets.build_state``).

``kiltpipe build`` takes the lock itself, before it starts the run, and tags the run with the lock's
token. Every other run (launched from the UI, by the landing sensor or the rebuild schedule) takes it in
its executor: :func:`guarded_executor` wraps whichever executor the definitions use, so the run worker
holds the lock from its first step to its last. Either way the run's events say which steps and checks
failed and which assets were published, and the record says so when the run ends.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dagster import DagsterEventType, ExecutorDefinition
from dagster._core.executor.base import Executor

from assets.build_state import LOCK_TAG, BuildLock, BuildSession, building, new_owner

if TYPE_CHECKING:
    from dagster._core.events import DagsterEvent
    from dagster._core.execution.context.system import PlanOrchestrationContext
    from dagster._core.execution.plan.plan import ExecutionPlan
    from dagster._core.execution.retries import RetryMode

PARTITION_TAG = "dagster/partition"
WRITES_NOTHING = frozenset({"wikipedia_dump"})
"""Assets whose materialization changes nothing of the snapshot (the dump is recorded only once the
knowledge source built from it is published)."""


_WORKER_TRACEBACKS = frozenset({"_RemoteTraceback", "RemoteTraceback"})
_NO_SPACE = re.compile(r"\[Errno 28\] No space left on device(?:: '(?P<path>[^']*)')?")


def _root_error(error: Any) -> Any:
    """The user's exception under Dagster's wrappers; not the traceback text a worker process sent along
    with it (``concurrent.futures.process._RemoteTraceback``), which is only its cause."""
    while error is not None and error.cause is not None and error.cause.cls_name not in _WORKER_TRACEBACKS:
        error = error.cause
    return error


def error_line(error: Any) -> str:
    """One line saying why a step failed (a full disk says which file it could not write)."""
    root = _root_error(error)
    if root is None:
        return "failed"
    message = root.message.strip()
    full = _NO_SPACE.search(message)
    if full:
        where = f"cannot write {full['path']}" if full["path"] else "cannot write"
        return f"disk full: {where} (No space left on device); free space and build again"
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
            session.failed(f"step {event.step_key} failed: {error_line(event.step_failure_data.error)}")


def lock_held_for(data_dir: str | Path, snapshot_id: str, tags: dict[str, str]) -> bool:
    """Whether the run with ``tags`` was started by a launcher that holds the snapshot's lock for it."""
    token = tags.get(LOCK_TAG)
    if not token:
        return False
    holder = BuildLock(data_dir, snapshot_id).holder()
    return bool(holder) and holder.get("token") == token


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
        if snapshot_id is None or lock_held_for(self.data_dir, snapshot_id, dict(run.tags)):
            yield from self.inner.execute(plan_context, execution_plan)
            return
        owner = new_owner(command=f"Dagster run of {run.job_name}", run_id=run.run_id)
        with building(self.data_dir, snapshot_id, owner) as session:
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
