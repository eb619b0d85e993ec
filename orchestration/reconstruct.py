"""Jobs that every process of an out-of-process run (a Dask worker, a multiprocess child) rebuilds from plain
settings: :func:`reconstructable_job` records the arguments, :func:`reconstruct_job` rebuilds the job."""

from __future__ import annotations

import os
from typing import Any

from dagster import JobDefinition, build_reconstructable_job
from dagster._core.definitions.reconstruct import ReconstructableJob

from orchestration.definitions import build_definitions
from orchestration.executors import ExecutorChoice
from orchestration.resources import PipelineSettings

__all__ = ["reconstruct_job", "reconstructable_job"]


def reconstruct_job(job_name: str, pipeline: dict[str, Any], executor: dict[str, Any]) -> JobDefinition:
    """A job of the definitions built from plain settings: what every process of an out-of-process run (a
    Dask worker, a multiprocess child) calls, with the arguments ``reconstructable_job`` recorded."""
    definitions = build_definitions(
        PipelineSettings(**pipeline), executor=ExecutorChoice(**executor).definition()
    )
    return definitions.resolve_job_def(job_name)


def reconstructable_job(
    job_name: str, pipeline: PipelineSettings, executor: ExecutorChoice
) -> ReconstructableJob:
    """``job_name`` as ``dagster.execute_job`` needs it: a pointer to ``reconstruct_job`` plus its arguments.

    The settings (data dir, workers, ...) and the executor travel inside the pointer, which Dagster sends with
    every step, so a worker rebuilds exactly the job of the process that started the run whatever its own
    environment; only the code (this module, importable from the working directory) must be the same.
    """
    return build_reconstructable_job(
        __name__,
        reconstruct_job.__name__,
        reconstructable_kwargs={
            "job_name": job_name,
            "pipeline": pipeline.model_dump(),
            "executor": executor.to_dict(),
        },
        reconstructor_working_directory=os.getcwd(),
    )
