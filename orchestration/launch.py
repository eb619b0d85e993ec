"""Runs that ``kiltpipe build`` starts, recorded as if the UI had launched them: with the origin of the
workspace's code location (``workspace.yaml``), so that the Dagster UI lists them under their job (Jobs ->
build_all), on the Overview timeline and in each asset's and partition's history, beside the runs launched
from the UI, the landing sensor or the schedule."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dagster import AssetKey, DagsterInstance
from dagster._core.definitions.reconstruct import ReconstructableJob
from dagster._core.definitions.repository_definition.valid_definitions import SINGLETON_REPOSITORY_NAME
from dagster._core.execution.api import execute_run
from dagster._core.execution.execution_result import ExecutionResult
from dagster._core.remote_origin import RemoteJobOrigin, RemoteRepositoryOrigin
from dagster._core.workspace.load import location_origins_from_yaml_paths

from orchestration.run_launcher import worker_tags

WORKSPACE = Path(__file__).resolve().parents[1] / "workspace.yaml"
"""The workspace ``make ui`` (``dagster dev -w workspace.yaml``) loads: its one code location."""


def workspace_job_origin(job_name: str, workspace: Path = WORKSPACE) -> RemoteJobOrigin:
    """The origin a run of ``job_name`` launched from the UI of ``workspace`` has (its code location, its
    repository, the job): what the UI files runs under."""
    origins = location_origins_from_yaml_paths([str(workspace)])
    if len(origins) != 1:
        raise ValueError(f"{workspace}: expected one code location, found {len(origins)}")
    return RemoteJobOrigin(RemoteRepositoryOrigin(origins[0], SINGLETON_REPOSITORY_NAME), job_name)


def execute_as_launched(
    job: ReconstructableJob,
    instance: DagsterInstance,
    *,
    run_config: Mapping[str, Any],
    tags: Mapping[str, str],
    asset_selection: Sequence[AssetKey] | None,
) -> ExecutionResult:
    """Create a run of ``job`` with the workspace's origin and execute it in this process with the job's
    executor (which may run steps elsewhere); the run's events are read back from ``instance``. The run
    names this process as its worker, so that the daemon's run monitoring fails it if the process dies."""
    definition = job.get_definition()
    run = instance.create_run_for_job(
        job_def=definition,
        run_config=run_config,
        tags={**tags, **worker_tags()},
        asset_selection=frozenset(asset_selection) if asset_selection else None,
        remote_job_origin=workspace_job_origin(definition.name),
        job_code_origin=job.get_python_origin(),
    )
    return execute_run(job, run, instance, raise_on_error=False)
