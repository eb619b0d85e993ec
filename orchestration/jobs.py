"""The jobs of the definitions: ``build_all`` and ``rebuild_derived`` over one snapshot (leaving out the
indices ``indexes.build`` does not make), and the optional Hugging Face export."""

from __future__ import annotations

from dagster import AssetSelection, define_asset_job
from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition

from assets.indexes import index_build_problems, searcher_types
from assets.params import ParamsError, params_path
from orchestration.assets import OPTIONAL_ASSETS

__all__ = [
    "BUILD_ALL",
    "OPTIONAL",
    "REBUILD_DERIVED",
    "export_huggingface_job",
    "index_assets_left_out",
    "snapshot_jobs",
]

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
    note += (
        " Runs launched here are listed under this job; Materialize on an asset's page runs the same steps as"
        " Dagster's jobless asset run (listed as __ASSET_JOB, 'Jobless asset materializations')."
    )
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
