"""Which Dagster executor runs the steps of a build: Dagster's own (multiprocess or in-process) or Dask.

Environment (read by ``orchestration.definitions.defs``, so by ``dagster dev``, and by ``kiltpipe build``)::

    KILT_EXECUTOR        multiprocess (default) | in_process | dask
    KILT_DASK_SCHEDULER  dask: address of a running scheduler, e.g. tcp://scheduler:8786
    KILT_DASK_WORKERS    dask: no scheduler given, start a local cluster of this many worker processes

Python::

    build_definitions(settings, executor=ExecutorChoice("dask", scheduler="tcp://host:8786").definition())

The Dask executor is built on dagster-dask: its worker entry point (``query_on_dask_worker``), its
``existing``/``local`` cluster config and its resource-requirements tag. The scheduling loop is Dagster's
``ActiveExecution``, as in the multiprocess executor, instead of dagster-dask's, so that: a step is sent once
its upstream steps succeeded, and a failed step or blocking check skips what depends on it; what is sent is
opaque to Dask's graph parser, which dagster-dask 0.29.27 trips over in every partitioned run with dask
2026.8 ("Iteration is not allowed on `@record` KeyRangesPartitionsSubset"); task keys carry the run id, so
concurrent runs of one job can share a cluster.

Every Dask worker runs one step at a time (one thread per worker: Dagster steps are not thread-safe). A
step's own process pool (``workers`` of the pipeline settings) starts inside the worker, so workers must not
be daemonic: the executor starts its local cluster so; workers of an existing cluster need
``DASK_DISTRIBUTED__WORKER__DAEMON=False`` (a run warns about daemonic ones).
"""

from __future__ import annotations

import multiprocessing
import os
import re
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal, cast, get_args

from dagster import (
    DagsterInvariantViolationError,
    ExecutorDefinition,
    Field,
    Permissive,
    Selector,
    StringSource,
    executor,
    in_process_executor,
    multi_or_in_process_executor,
    multiple_process_executor_requirements,
)
from dagster._core.definitions.reconstruct import ReconstructableJob
from dagster._core.errors import DagsterExecutionInterruptedError
from dagster._core.events import DagsterEvent, EngineEventData
from dagster._core.execution.plan.active import ActiveExecution
from dagster._core.execution.plan.state import KnownExecutionState
from dagster._core.execution.retries import RetryMode
from dagster._core.executor.base import Executor
from dagster._core.instance.ref import InstanceRef
from dagster._core.storage.dagster_run import DagsterRun
from dagster._utils.error import serializable_error_info_from_exc_info

if TYPE_CHECKING:  # dagster_dask and distributed take seconds to import: only runs on Dask load them
    from dagster._core.execution.context.system import PlanOrchestrationContext
    from dagster._core.execution.plan.plan import ExecutionPlan
    from distributed import Client, Future

ExecutorKind = Literal["multiprocess", "in_process", "dask"]
EXECUTOR_KINDS: tuple[ExecutorKind, ...] = get_args(ExecutorKind)

EXECUTOR_ENV = "KILT_EXECUTOR"
SCHEDULER_ENV = "KILT_DASK_SCHEDULER"
WORKERS_ENV = "KILT_DASK_WORKERS"

_ADDRESS = re.compile(r"^[a-z][a-z0-9+.-]*://\S+$")


@dataclass(frozen=True)
class ExecutorChoice:
    """An executor by name, with its Dask cluster when ``kind`` is ``dask``.

    ``scheduler`` connects to a running Dask scheduler (``tcp://host:8786``); ``workers`` starts a local
    ``distributed.LocalCluster`` of that many worker processes for the run and stops it afterwards. At most
    one of the two; neither means a local cluster of Dask's default size.
    """

    kind: ExecutorKind = "multiprocess"
    scheduler: str | None = None
    workers: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in EXECUTOR_KINDS:
            raise ValueError(f"unknown executor {self.kind!r}: expected one of {', '.join(EXECUTOR_KINDS)}")
        if self.kind != "dask" and (self.scheduler is not None or self.workers is not None):
            raise ValueError(
                f"executor {self.kind!r} takes no Dask scheduler or workers "
                f"(got scheduler={self.scheduler!r}, workers={self.workers!r}); use kind='dask'"
            )
        if self.scheduler is not None and self.workers is not None:
            raise ValueError(
                f"give either a Dask scheduler address ({self.scheduler!r}) or a number of local workers "
                f"({self.workers}), not both: workers of an existing cluster are started with `dask worker`"
            )
        if self.scheduler is not None and not _ADDRESS.match(self.scheduler):
            raise ValueError(
                f"Dask scheduler address {self.scheduler!r} is not PROTOCOL://HOST:PORT, e.g. tcp://host:8786"
            )
        if self.workers is not None and (isinstance(self.workers, bool) or self.workers < 1):
            raise ValueError(f"number of Dask workers must be a positive integer, not {self.workers!r}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ExecutorChoice:
        """The choice of ``$KILT_EXECUTOR`` (default ``multiprocess``) and, for ``dask``,
        ``$KILT_DASK_SCHEDULER`` or ``$KILT_DASK_WORKERS`` (ignored by the other executors)."""
        env = os.environ if environ is None else environ
        kind = env.get(EXECUTOR_ENV, "").strip() or "multiprocess"
        if kind not in EXECUTOR_KINDS:
            raise ValueError(f"{EXECUTOR_ENV}={kind!r}: expected one of {', '.join(EXECUTOR_KINDS)}")
        if kind != "dask":
            return cls(cast(ExecutorKind, kind))
        scheduler = env.get(SCHEDULER_ENV, "").strip() or None
        workers_text = env.get(WORKERS_ENV, "").strip()
        try:
            workers = int(workers_text) if workers_text else None
        except ValueError:
            raise ValueError(f"{WORKERS_ENV}={workers_text!r} is not an integer") from None
        try:
            return cls("dask", scheduler=scheduler, workers=workers)
        except ValueError as exc:
            raise ValueError(f"{EXECUTOR_ENV}=dask with {SCHEDULER_ENV}/{WORKERS_ENV}: {exc}") from None

    @property
    def out_of_process(self) -> bool:
        """Whether steps run in processes other than the one that starts the run."""
        return self.kind != "in_process"

    def cluster_config(self) -> dict[str, Any]:
        """The ``cluster`` config of ``dagster_dask.dask_executor`` (``existing`` or ``local``)."""
        if self.kind != "dask":
            raise ValueError(f"executor {self.kind!r} has no Dask cluster")
        if self.scheduler is not None:
            return {"existing": {"address": self.scheduler}}
        return {"local": {"n_workers": self.workers, "processes": True} if self.workers else {}}

    def definition(self) -> ExecutorDefinition:
        """The Dagster executor definition (the Dask one with its cluster configured in)."""
        if self.kind == "in_process":
            return in_process_executor
        if self.kind == "multiprocess":
            return multi_or_in_process_executor  # what Definitions use when given no executor
        return dask_executor.configured({"cluster": self.cluster_config()}, name="dask")

    def to_dict(self) -> dict[str, Any]:
        """JSON-serializable keyword arguments of the constructor (carried to reconstructed jobs)."""
        return asdict(self)

    def describe(self) -> str:
        if self.kind != "dask":
            return self.kind
        if self.scheduler:
            return f"dask (scheduler {self.scheduler})"
        return f"dask (local cluster, {self.workers or 'default number of'} workers)"


def executor_from_env(environ: Mapping[str, str] | None = None) -> ExecutorDefinition:
    """The executor definition the environment asks for (see the module docstring)."""
    return ExecutorChoice.from_env(environ).definition()


# ------------------------------------------------------------------------------------------- dask
@dataclass(frozen=True)
class _StepTask:
    """One step to run on a worker; a plain object, so Dask sends it as it is instead of parsing it."""

    job: ReconstructableJob
    run: DagsterRun
    run_config: Mapping[str, object]
    step_key: str
    instance_ref: InstanceRef
    known_state: KnownExecutionState


@dataclass(frozen=True)
class _StepEvents:
    """A step's events (opaque to ``dask.sizeof``, which cannot iterate Dagster records)."""

    events: Sequence[DagsterEvent]


def _is_daemonic() -> bool:
    return bool(multiprocessing.current_process().daemon)


def _run_step(task: _StepTask) -> _StepEvents:
    """On a Dask worker: rebuild the job from its pointer and execute one step against the instance."""
    from dagster_dask.executor import query_on_dask_worker

    events = query_on_dask_worker(
        None, task.job, task.run, task.run_config, [task.step_key], task.instance_ref, task.known_state
    )
    return _StepEvents(tuple(events))


def local_cluster_addresses(configuration: Mapping[str, Any], host: str | None = None) -> dict[str, Any]:
    """``LocalCluster`` arguments with the addresses it listens on: those ``configuration`` names, else
    ``host`` (default ``limits.network.bind_host``, loopback) for the scheduler, the workers and the
    dashboard (on Dask's port 8787, or any free one when that is taken)."""
    from assets.params import load_params

    host = host or load_params().limits.network.bind_host
    local = dict(configuration)
    local.setdefault("host", host)
    local.setdefault("dashboard_address", f"[{host}]:8787" if ":" in host else f"{host}:8787")
    return local


class KiltDaskExecutor(Executor):
    """dagster-dask's executor with Dagster's step scheduling (see the module docstring)."""

    POLL_SECONDS = 0.1

    def __init__(self, cluster_type: str, cluster_configuration: Mapping[str, Any] | None) -> None:
        if cluster_type not in ("existing", "local"):
            raise ValueError(f"unsupported Dask cluster type {cluster_type!r}: use existing or local")
        self.cluster_type = cluster_type
        self.cluster_configuration = dict(cluster_configuration or {})

    @property
    def retries(self) -> RetryMode:
        return RetryMode.DISABLED

    def _client(self, stack: ExitStack) -> Client:
        """A client of the configured scheduler, or of a local cluster started (and stopped) for the run."""
        import dask
        from distributed import Client, LocalCluster

        if self.cluster_type == "existing":
            address = self.cluster_configuration["address"]
            try:
                return stack.enter_context(Client(address, set_as_default=False))
            except OSError as exc:
                raise OSError(f"cannot reach the Dask scheduler at {address}: {exc}") from exc
        # one thread per worker, as dagster-dask does; non-daemonic workers, as steps start process pools;
        # the scheduler, workers and dashboard on limits.network.bind_host unless the configuration names
        # addresses (Dask's own default binds the dashboard to every interface)
        local = {**local_cluster_addresses(self.cluster_configuration), "threads_per_worker": 1}
        with dask.config.set({"distributed.worker.daemon": False}):
            cluster = stack.enter_context(LocalCluster(**local))
        return stack.enter_context(Client(cluster, set_as_default=False))

    def execute(
        self, plan_context: PlanOrchestrationContext, execution_plan: ExecutionPlan
    ) -> Iterator[DagsterEvent]:
        instance = plan_context.instance
        if not instance.is_persistent:
            raise DagsterInvariantViolationError(
                "the Dask executor needs a persistent Dagster instance (set DAGSTER_HOME): workers record "
                "their events in its storage"
            )
        from dagster_dask.executor import get_dask_resource_requirements

        run = plan_context.dagster_run
        with ExitStack() as stack:
            client = self._client(stack)
            workers = client.scheduler_info(n_workers=-1)["workers"]
            yield DagsterEvent.engine_event(
                plan_context,
                f"Executing steps on Dask: scheduler {client.scheduler.address}, {len(workers)} workers "
                f"(parent pid {os.getpid()})",
                EngineEventData.multiprocess(os.getpid(), execution_plan.step_keys_to_execute),
            )
            daemonic = sorted(address for address, flag in client.run(_is_daemonic).items() if flag)
            if daemonic:
                plan_context.log.warning(
                    f"Dask workers {', '.join(daemonic)} are daemonic processes: steps that start process "
                    "pools (pipeline workers > 0) fail there with 'daemonic processes are not allowed to "
                    "have children'; start the workers with DASK_DISTRIBUTED__WORKER__DAEMON=False"
                )
            active = stack.enter_context(ActiveExecution(execution_plan, retry_mode=self.retries))
            running: dict[str, Future] = {}
            while not active.is_complete:
                if active.check_for_interrupts():
                    client.cancel(list(running.values()))
                    active.mark_interrupted()
                    raise DagsterExecutionInterruptedError()
                for step in active.get_steps_to_execute():
                    task = _StepTask(
                        plan_context.reconstructable_job,
                        run,
                        plan_context.run_config,
                        step.key,
                        instance.get_ref(),
                        active.get_known_state(),
                    )
                    running[step.key] = client.submit(
                        _run_step,
                        task,
                        key=f"{plan_context.job_name}.{step.key}.{run.run_id}",
                        pure=False,
                        resources=get_dask_resource_requirements(step.tags),
                    )
                done = [key for key, future in running.items() if future.done()]
                for key in done:
                    yield from self._finish(plan_context, active, key, running.pop(key))
                yield from active.plan_events_iterator(plan_context)
                if not done and running:
                    time.sleep(self.POLL_SECONDS)

    def _finish(
        self, plan_context: PlanOrchestrationContext, active: ActiveExecution, key: str, future: Future
    ) -> Iterator[DagsterEvent]:
        """The events of a finished step, or its failure when the worker could not run it at all (code not
        importable there, worker lost, ...)."""
        try:
            events = future.result().events
        except Exception:
            error = serializable_error_info_from_exc_info(sys.exc_info())
            step_context = plan_context.for_step(active.get_step_by_key(key))
            yield DagsterEvent.engine_event(
                step_context,
                f"Dask could not run step {key}: {error.message.strip()}",
                EngineEventData.engine_error(error),
            )
            failure = self.log_failure_or_retry_event_after_error(
                step_context, error, active.get_known_state()
            )
            events = [failure]
        for event in events:
            yield event
            active.handle_event(event)
        active.verify_complete(plan_context, key)


@executor(
    name="dask",
    requirements=multiple_process_executor_requirements(),
    config_schema={
        "cluster": Field(
            Selector(
                {
                    "existing": Field({"address": StringSource}, description="A running scheduler."),
                    "local": Field(
                        Permissive(), is_required=False, description="distributed.LocalCluster arguments."
                    ),
                }
            )
        )
    },
)
def dask_executor(init_context: Any) -> KiltDaskExecutor:
    """Steps on a Dask cluster: ``cluster: {existing: {address: tcp://host:8786}}`` or ``cluster: {local:
    {n_workers: N}}`` (a ``LocalCluster`` for the run, one thread per worker)."""
    ((cluster_type, cluster_configuration),) = init_context.executor_config["cluster"].items()
    return KiltDaskExecutor(cluster_type, cluster_configuration)
