"""The one Dagster ``Definitions`` of kilt-pipeline (loaded by ``dagster dev -w workspace.yaml``)."""

from __future__ import annotations

from dagster import AssetSelection, Definitions, define_asset_job

from assets.datasets.definitions import DATASET_ASSETS, DATASET_CHECKS
from assets.indexes.definitions import INDEX_ASSETS, INDEX_CHECKS
from assets.wikipedia.definitions import WIKIPEDIA_ASSETS, WIKIPEDIA_CHECKS
from orchestration.resources import PipelineSettings

ALL_ASSETS = [*WIKIPEDIA_ASSETS, *DATASET_ASSETS, *INDEX_ASSETS]
ALL_CHECKS = [*WIKIPEDIA_CHECKS, *DATASET_CHECKS, *INDEX_CHECKS]

build_all_job = define_asset_job(
    "build_all",
    selection=AssetSelection.all(),
    description="Materialize every asset of one snapshot (what `kiltpipe build` and `make demo` run).",
)


def build_definitions(pipeline: PipelineSettings | None = None) -> Definitions:
    """The definitions with a given resource configuration (the CLI passes its --data-dir here)."""
    return Definitions(
        assets=ALL_ASSETS,
        asset_checks=ALL_CHECKS,
        jobs=[build_all_job],
        resources={"pipeline": pipeline or PipelineSettings()},
    )


defs = build_definitions()
