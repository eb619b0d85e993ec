"""The one Dagster ``Definitions`` of kilt-pipeline (loaded by ``dagster dev -w workspace.yaml``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from dagster import (
    AssetSelection,
    Definitions,
    ExecutorDefinition,
    JobDefinition,
    build_reconstructable_job,
    define_asset_job,
    multi_or_in_process_executor,
)
from dagster._core.definitions.reconstruct import ReconstructableJob
from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition

from assets.datasets.definitions import DATASET_ASSETS, DATASET_CHECKS
from assets.exports.definitions import EXPORT_ASSETS, OPTIONAL_ASSETS
from assets.indexes.definitions import INDEX_ASSETS, INDEX_CHECKS
from assets.indexes.searchers import index_build_problems, searcher_types
from assets.params import ParamsError, params_path
from assets.resources import STEP_IO_MANAGER, PipelineSettings, StepIOManager
from assets.wikipedia.definitions import WIKIPEDIA_ASSETS, WIKIPEDIA_CHECKS
from orchestration.build_guard import guarded_executor, guarded_io_manager
from orchestration.console import console_logger
from orchestration.executors import ExecutorChoice, executor_from_env
from orchestration.sensors import build_landing_sensor, build_rebuild_schedule

ALL_ASSETS = [*WIKIPEDIA_ASSETS, *DATASET_ASSETS, *INDEX_ASSETS, *EXPORT_ASSETS]
ALL_CHECKS = [*WIKIPEDIA_CHECKS, *DATASET_CHECKS, *INDEX_CHECKS]
OPTIONAL = AssetSelection.assets(*OPTIONAL_ASSETS)

BUILD_ALL = "build_all"
REBUILD_DERIVED = "rebuild_derived"
export_huggingface_job = define_asset_job(
    "export_huggingface",
    selection=OPTIONAL,
    description="Export a built snapshot as a Hugging Face dataset repository (`kiltpipe export-hf` does the "
    "same without Dagster).",
)


def index_assets_left_out(build: tuple[str, ...], evaluated: tuple[str, ...]) -> list[str]:
    """The index assets a build leaves out (``indexes.build``); a :class:`ParamsError` when the evaluation
    (``indexes.evaluation.indexes``) searches one of them or ``build`` names an index no build makes."""
    problems = index_build_problems(build, evaluated)
    if problems:
        raise ParamsError(
            f"{params_path()}: indexes.build / indexes.evaluation.indexes: " + "; ".join(problems)
        )
    return [kind.asset for kind in searcher_types() if kind.asset and kind.name not in build]


def snapshot_jobs(left_out: list[str]) -> list[UnresolvedAssetJobDefinition]:
    """``build_all`` (every asset of one snapshot but the optional exports and the indices left out) and
    ``rebuild_derived``."""
    skipped = OPTIONAL | AssetSelection.assets(*left_out)
    note = f" Leaves out {', '.join(left_out)} (indexes.build)." if left_out else ""
    return [
        define_asset_job(
            BUILD_ALL,
            selection=AssetSelection.all() - skipped,
            description="Materialize every asset of one snapshot but the optional exports (what `kiltpipe "
            "build`, `make demo` and the landing sensor run)." + note,
        ),
        define_asset_job(
            REBUILD_DERIVED,
            selection=AssetSelection.assets("knowledge_source").downstream(include_self=False) - skipped,
            description="Rebuild what derives from a snapshot's knowledge source (passages, store, datasets, "
            "indices, evaluation), e.g. after a model or parameter change." + note,
        ),
    ]


def build_definitions(
    pipeline: PipelineSettings | None = None,
    landing_dir: Path | None = None,
    executor: ExecutorDefinition | None = None,
) -> Definitions:
    """The definitions with a given resource configuration (the CLI passes its --data-dir here) and executor
    (default: Dagster's, multiprocess; see ``orchestration.executors`` for Dask). Every run the executor
    runs holds its snapshot's build lock and keeps its build record (``orchestration.build_guard``)."""
    pipeline = _with_params_file(pipeline or PipelineSettings.from_params())
    loaded = pipeline.params  # read here, once: a bad params.yaml fails the definitions, naming the key
    executor = guarded_executor(executor or multi_or_in_process_executor, pipeline.data_dir)
    left_out = index_assets_left_out(loaded.indexes.build, loaded.indexes.evaluation.indexes)
    return Definitions(
        assets=ALL_ASSETS,
        asset_checks=ALL_CHECKS,
        jobs=[*snapshot_jobs(left_out), export_huggingface_job],
        sensors=[build_landing_sensor(BUILD_ALL, landing_dir, loaded.snapshots)],
        schedules=[build_rebuild_schedule(REBUILD_DERIVED, loaded.snapshots.rebuild_schedule)],
        resources={
            "pipeline": pipeline,
            "io_manager": guarded_io_manager(pipeline.data_dir),
            STEP_IO_MANAGER: StepIOManager(data_dir=pipeline.data_dir),
        },
        executor=executor,
        loggers={"console": console_logger},
    )


def _with_params_file(pipeline: PipelineSettings) -> PipelineSettings:
    """``pipeline`` naming its params.yaml by absolute path, so that every process of a run (whatever its
    working directory) reads the same file."""
    if pipeline.params_file:
        return pipeline
    return PipelineSettings(**{**pipeline.model_dump(), "params_file": str(params_path().resolve())})


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
        "orchestration.definitions",
        reconstruct_job.__name__,
        reconstructable_kwargs={
            "job_name": job_name,
            "pipeline": pipeline.model_dump(),
            "executor": executor.to_dict(),
        },
        reconstructor_working_directory=os.getcwd(),
    )


defs = build_definitions(executor=executor_from_env())
"""What ``dagster dev`` loads; ``$KILT_EXECUTOR`` etc. choose the executor of its runs."""
