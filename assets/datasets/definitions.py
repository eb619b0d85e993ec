"""Dagster wiring of the remapped datasets: every configured dataset file mapped onto the snapshot."""

import json

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetExecutionContext,
    AssetIn,
    Config,
    MetadataValue,
    Output,
    asset,
    asset_check,
)
from pydantic import Field

from assets import charts, params
from assets.datasets.outputs import build_datasets_db
from assets.datasets.pipeline import configured_specs, map_dataset
from assets.provenance_store import ProvenanceStore
from assets.resources import SNAPSHOTS, PipelineSettings, SnapshotHandle
from assets.storage import SnapshotPaths, write_report_json

GROUP = "datasets"
_PARAMS = params.load_params()["datasets"]


class DatasetsConfig(Config):
    """Which dataset files to map (see ``configured_specs``) and how strictly."""

    files: list[dict[str, str]] | None = Field(
        default_factory=lambda: None if _PARAMS["files"] is None else list(_PARAMS["files"])
    )  # None: the shipped records for the embedded default excerpt, none for other snapshots; []: none
    source_snapshot: str | None = _PARAMS["source_snapshot"]
    bleu_threshold: float = float(_PARAMS["bleu_threshold"])
    reports_dir: str = str(_PARAMS["reports_dir"])  # relative: under the data dir
    strict: bool = False


@asset(
    group_name=GROUP,
    partitions_def=SNAPSHOTS,
    ins={"snapshot": AssetIn("provenance_store")},
    description="Task datasets remapped onto the snapshot: KILT JSONL, Parquet, dataset tables, reports.",
)
def remapped_datasets(
    context: AssetExecutionContext,
    config: DatasetsConfig,
    pipeline: PipelineSettings,
    snapshot: SnapshotHandle,
) -> Output[SnapshotHandle]:
    paths = snapshot.paths
    specs, origin = configured_specs(config.files, paths)
    context.log.info(f"datasets to map onto {paths.snapshot_id}: {origin}")
    source = (
        ProvenanceStore(SnapshotPaths(pipeline.data_path, config.source_snapshot))
        if config.source_snapshot
        else None
    )
    reports_dir = params.reports_dir(pipeline.data_path, config.reports_dir)
    summaries = []
    try:
        with ProvenanceStore(paths) as target:
            for spec in specs:
                mapped = map_dataset(
                    spec,
                    target,
                    reports_dir,
                    source=source,
                    bleu_threshold=config.bleu_threshold,
                    strict=config.strict,
                )
                summary = mapped.report.to_dict()
                summary["read_problems"] = len(mapped.read_problems)
                summaries.append(summary)
                context.log.info(
                    f"{summary['dataset']} {summary['split']}: "
                    f"{summary['records_out']}/{summary['records_in']} records mapped, "
                    f"dropped {summary['dropped']}"
                )
                for line, problem in mapped.read_problems[:20]:
                    context.log.warning(f"{spec.path}:{line}: {problem}")
    finally:
        if source is not None:
            source.close()
    tables = build_datasets_db(paths)
    write_report_json(paths.datasets / "mapping_summary.json", summaries)
    rows = [
        {
            "dataset": s["dataset"],
            "split": s["split"],
            "in": s["records_in"],
            "out": s["records_out"],
            "mapped": f"{s['mapped_fraction']:.1%}",
            "provenance": f"{s['provenance_out']}/{s['provenance_in']}",
            "dropped": ", ".join(f"{k}={v}" for k, v in s["dropped"].items()) or "-",
        }
        for s in summaries
    ]
    histogram: dict[str, int] = {}
    for s in summaries:
        for label, count in s["bleu_histogram"].items():
            histogram[label] = histogram.get(label, 0) + count
    png = charts.bar_chart_png(histogram, title="BLEU of mapped spans", xlabel="BLEU", ylabel="spans")
    return Output(
        snapshot,
        metadata={
            "datasets_path": MetadataValue.path(str(paths.datasets)),
            "datasets_origin": origin,
            "reports_path": MetadataValue.path(str(reports_dir / paths.snapshot_id / "mapping")),
            "records": tables["records"],
            "provenance_spans": tables["provenance"],
            "span_passages": tables["provenance_passages"],
            "splits": MetadataValue.md(charts.markdown_table(rows)),
            "bleu_histogram": MetadataValue.md(charts.markdown_image(png, "BLEU histogram")),
            "reports": MetadataValue.json(summaries),
        },
    )


@asset_check(
    asset=remapped_datasets,
    blocking=True,
    description="Every dev/test split keeps at least datasets.min_mapped_fraction of its records.",
)
def mapped_fraction_floor(remapped_datasets: SnapshotHandle) -> AssetCheckResult:
    floor = float(_PARAMS["min_mapped_fraction"])
    summaries = json.loads((remapped_datasets.paths.datasets / "mapping_summary.json").read_text())
    low = {
        f"{s['dataset']}-{s['split']}": s["mapped_fraction"]
        for s in summaries
        if s["split"] != "train" and s["mapped_fraction"] < floor
    }
    return AssetCheckResult(
        passed=not low,
        severity=AssetCheckSeverity.ERROR,
        description=f"{len(low)} dev/test splits under the {floor:.0%} floor" + (f": {low}" if low else ""),
        metadata={"floor": floor, "below_floor": MetadataValue.json(low)},
    )


DATASET_ASSETS = [remapped_datasets]
DATASET_CHECKS = [mapped_fraction_floor]
