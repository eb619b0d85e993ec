"""The remapped datasets asset: every configured dataset file mapped onto the snapshot, and its checks."""

import json
from typing import Any

import dagster as dg

from assets import charts, params
from assets.datasets import DatasetSpec, MappedSplit, configured_specs, map_datasets
from assets.params import DatasetsParams
from assets.reading import mapping_stores
from assets.storage import SnapshotPaths, write_report_json
from orchestration.assets.common import snapshot_asset, snapshot_check
from orchestration.resources import (
    PipelineSettings,
    SnapshotHandle,
    path_entries,
)
from orchestration.run_config import section_config, with_config

GROUP = "datasets"


class DatasetsConfig(
    section_config(
        DatasetsParams,
        "Which dataset files to map (see ``configured_specs``) and how: ``datasets`` of params.yaml (unset "
        "fields take its values; there ``files: null`` means the shipped records for the embedded default "
        "excerpt and none for other snapshots, and ``[]`` none).",
    )
):
    """``datasets`` of params.yaml (unset fields take its values), and ``strict``."""

    strict: bool = False
    """A malformed record fails the run (default: skipped and counted)."""


def _summary_table(summaries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A row per mapped split: records in and out, provenance, what was dropped."""
    return [
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


def _bleu_chart(summaries: list[dict[str, Any]]) -> bytes:
    """The BLEU histogram of the mapped spans of every split, as a PNG."""
    histogram: dict[str, int] = {}
    for s in summaries:
        for label, count in s["bleu_histogram"].items():
            histogram[label] = histogram.get(label, 0) + count
    return charts.bar_chart_png(histogram, title="BLEU of mapped spans", xlabel="BLEU", ylabel="spans")


@snapshot_asset(
    GROUP,
    kinds={"parquet", "duckdb"},
    ins={"snapshot": dg.AssetIn("provenance_store")},
    description="Task datasets remapped onto the snapshot: KILT JSONL, Parquet, dataset tables, reports.",
)
def remapped_datasets(
    context: dg.AssetExecutionContext,
    config: DatasetsConfig,
    pipeline: PipelineSettings,
    snapshot: SnapshotHandle,
) -> dg.Output[SnapshotHandle]:
    paths = snapshot.paths
    chosen = with_config(pipeline.params.datasets, config)
    specs, origin = configured_specs(chosen.files, paths)
    context.log.info(f"datasets to map onto {paths.snapshot_id}: {origin}")
    source = None
    if chosen.source_snapshot == paths.snapshot_id:  # the evidence is this build's own (unpublished) store
        source = paths
    elif chosen.source_snapshot:
        source = SnapshotPaths(pipeline.data_path, chosen.source_snapshot)
    summaries = []

    def log_mapped(spec: DatasetSpec, mapped: MappedSplit) -> None:
        summary = mapped.report.to_dict()
        summaries.append(summary)
        context.log.info(
            f"{summary['dataset']} {summary['split']}: {summary['records_out']}/{summary['records_in']} "
            f"records mapped, dropped {summary['dropped']}"
        )
        for line, problem in mapped.read_problems[:20]:
            context.log.warning(f"{spec.path}:{line}: {problem}")

    reports_dir = params.reports_dir(pipeline.data_path, chosen.reports_dir)
    with mapping_stores(paths, source, pipeline.params, chosen.store_memory) as (target_store, source_store):
        _, tables = map_datasets(
            specs,
            target_store,
            reports_dir,
            source=source_store,
            bleu_threshold=chosen.bleu_threshold,
            strict=config.strict,
            on_mapped=log_mapped,
            max_line_bytes=pipeline.params.limits.input.max_line_bytes,
        )
    write_report_json(paths.datasets / "mapping_summary.json", summaries)
    rows, png = _summary_table(summaries), _bleu_chart(summaries)
    mapping_reports = reports_dir / paths.snapshot_id / "mapping"  # written when a split was mapped
    return dg.Output(
        snapshot,
        metadata={
            **path_entries("datasets_path", paths.datasets),
            "datasets_origin": origin,
            **(
                path_entries("reports_path", mapping_reports)
                if mapping_reports.is_dir()
                else {"reports_path": "none written"}
            ),
            "records": tables["records"],
            "provenance_spans": tables["provenance"],
            "span_passages": tables["provenance_passages"],
            "splits": dg.MetadataValue.md(charts.markdown_table(rows)),
            "bleu_histogram": dg.MetadataValue.md(charts.markdown_image(png, "BLEU histogram")),
            "reports": dg.MetadataValue.json(summaries),
        },
    )


@snapshot_check(
    asset=remapped_datasets,
    blocking=True,
    description="Every dev/test split keeps at least datasets.min_mapped_fraction of its records.",
)
def mapped_fraction_floor(
    pipeline: PipelineSettings, remapped_datasets: SnapshotHandle
) -> dg.AssetCheckResult:
    floor = pipeline.params.datasets.min_mapped_fraction
    summaries = json.loads((remapped_datasets.paths.datasets / "mapping_summary.json").read_text())
    low = {
        f"{s['dataset']}-{s['split']}": s["mapped_fraction"]
        for s in summaries
        if s["split"] != "train" and s["mapped_fraction"] < floor
    }
    return dg.AssetCheckResult(
        passed=not low,
        severity=dg.AssetCheckSeverity.ERROR,
        description=f"{len(low)} dev/test splits under the {floor:.0%} floor" + (f": {low}" if low else ""),
        metadata={"floor": floor, "below_floor": dg.MetadataValue.json(low)},
    )


DATASET_ASSETS = [remapped_datasets]
DATASET_CHECKS = [mapped_fraction_floor]
