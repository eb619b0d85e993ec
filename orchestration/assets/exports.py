"""The export assets: a snapshot as a Hugging Face dataset repository (off by default: its own
job, ``export_huggingface``, not part of ``build_all``)."""

from pathlib import Path

import dagster as dg

from assets import charts
from assets.exports import DEFAULT_MAX_SHARD_BYTES, export_huggingface, push_to_hub
from orchestration.assets.common import snapshot_asset
from orchestration.resources import PipelineSettings, SnapshotHandle, path_entries

GROUP = "exports"


class HuggingFaceExportConfig(dg.Config):
    """Where the repository goes and whether it is uploaded."""

    # default <data dir>/exports/huggingface/<snapshot>; a relative path is under the data dir
    out_dir: str | None = None
    max_shard_mb: int = DEFAULT_MAX_SHARD_BYTES // 10**6  # Parquet file size limit (MB)
    # ORG/NAME: upload with huggingface_hub (the token from HF_TOKEN or `hf auth login`)
    push_to: str | None = None
    private: bool = False  # with push_to: create the Hub dataset private


@snapshot_asset(
    GROUP,
    kinds={"huggingface"},
    ins={"snapshot": dg.AssetIn("remapped_datasets")},
    description="The snapshot as a Hugging Face dataset repository: Parquet shards of passages, pages, "
    "redirects and every remapped split, and a dataset card (not in build_all: run export_huggingface).",
)
def huggingface_export(
    context: dg.AssetExecutionContext,
    config: HuggingFaceExportConfig,
    pipeline: PipelineSettings,
    snapshot: SnapshotHandle,
) -> dg.Output[SnapshotHandle]:
    paths = snapshot.paths
    out = Path(config.out_dir) if config.out_dir else Path("exports") / "huggingface" / paths.snapshot_id
    out = out if out.is_absolute() else pipeline.data_path / out
    report = export_huggingface(paths, out, max_shard_bytes=config.max_shard_mb * 10**6)
    metadata = report.metadata()
    if config.push_to:
        metadata["pushed"] = push_to_hub(out, config.push_to, private=config.private)
        context.log.info(f"uploaded {out} to {config.push_to}: {metadata['pushed']}")
    rows = [
        {
            "config": c.name,
            "splits": ", ".join(f"{s} ({n:,})" for s, n in c.rows.items()),
            "MB": c.bytes // 10**6,
        }
        for c in report.configs.values()
    ]
    return dg.Output(
        snapshot,
        metadata={
            **metadata,
            **path_entries("out_path", out),
            "configs_table": dg.MetadataValue.md(charts.markdown_table(rows)),
            "card": dg.MetadataValue.md((out / "README.md").read_text(encoding="utf-8")),
        },
    )


EXPORT_ASSETS = [huggingface_export]
OPTIONAL_ASSETS = ("huggingface_export",)  # left out of build_all and rebuild_derived
