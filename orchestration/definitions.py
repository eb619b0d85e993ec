"""The one Dagster ``Definitions`` of kilt-pipeline (loaded by ``dagster dev -w workspace.yaml``): the assets
and checks of every domain (:mod:`orchestration.assets`), the jobs (:mod:`orchestration.jobs`), the landing
sensor and the rebuild schedule (:mod:`orchestration.sensors`), the resources and the executor, assembled."""

from __future__ import annotations

from pathlib import Path

from dagster import Definitions, ExecutorDefinition, multi_or_in_process_executor

from assets.indexes import IndexSettings
from assets.params import params_path
from orchestration.assets import (
    COLLECTION_INDEX_ASSETS,
    COLLECTION_INDEX_CHECKS,
    DATASET_ASSETS,
    DATASET_CHECKS,
    EXPORT_ASSETS,
    INDEX_ASSETS,
    INDEX_CHECKS,
    QA_ASSETS,
    QA_CHECKS,
    WIKIDATA_ASSETS,
    WIKIDATA_CHECKS,
    WIKIPEDIA_ASSETS,
    WIKIPEDIA_CHECKS,
)
from orchestration.build_guard import guarded_executor, guarded_io_manager
from orchestration.console import console_logger
from orchestration.executors import executor_from_env
from orchestration.jobs import (
    BUILD_ALL,
    REBUILD_DERIVED,
    export_huggingface_job,
    index_assets_left_out,
    snapshot_jobs,
)
from orchestration.releases import build_release_sensor, fetch_dump
from orchestration.resources import STEP_IO_MANAGER, PipelineSettings, StepIOManager
from orchestration.sensors import build_landing_sensor, build_rebuild_schedule

ALL_ASSETS = [
    *WIKIPEDIA_ASSETS,
    *WIKIDATA_ASSETS,
    *DATASET_ASSETS,
    *INDEX_ASSETS,
    *QA_ASSETS,
    *COLLECTION_INDEX_ASSETS,
    *EXPORT_ASSETS,
]
ALL_CHECKS = [
    *WIKIPEDIA_CHECKS,
    *WIKIDATA_CHECKS,
    *DATASET_CHECKS,
    *INDEX_CHECKS,
    *QA_CHECKS,
    *COLLECTION_INDEX_CHECKS,
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
    IndexSettings.from_params(loaded.indexes)  # a section of indexes no registered type claims fails here
    return Definitions(
        assets=ALL_ASSETS,
        asset_checks=ALL_CHECKS,
        jobs=[*snapshot_jobs(left_out), export_huggingface_job, fetch_dump],
        sensors=[
            build_landing_sensor(BUILD_ALL, landing_dir, loaded.snapshots),
            build_release_sensor(loaded.snapshots.releases, landing_dir),
        ],
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


defs = build_definitions(executor=executor_from_env())
"""What ``dagster dev`` loads; ``$KILT_EXECUTOR`` etc. choose the executor of its runs."""
