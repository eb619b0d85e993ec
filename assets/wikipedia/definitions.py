"""Dagster wiring of the Wikipedia assets: dump -> knowledge source -> KILT JSONL export."""

from dataclasses import dataclass
from pathlib import Path

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

from assets import params
from assets.storage import SnapshotPaths
from assets.wikipedia import checks, embedded
from assets.wikipedia.kilt_jsonl import export_kilt_jsonl, iter_pages
from assets.wikipedia.knowledge_source import build_knowledge_source
from orchestration.resources import PipelineSettings

GROUP = "wikipedia"
_KS_PARAMS = params.load_params()["knowledge_source"]


@dataclass(frozen=True)
class DumpHandle:
    """The dump a snapshot is built from."""

    path: str
    embedded: bool


@dataclass(frozen=True)
class SnapshotHandle:
    """A built snapshot (what downstream assets and checks receive)."""

    data_dir: str
    snapshot_id: str

    @property
    def paths(self) -> SnapshotPaths:
        return SnapshotPaths(Path(self.data_dir), self.snapshot_id)


class DumpConfig(Config):
    """Which dump to build; empty means the embedded default excerpt."""

    dump_path: str | None = _KS_PARAMS["dump"]


class KnowledgeSourceConfig(Config):
    """Snapshot naming and revision choice."""

    snapshot_id: str | None = _KS_PARAMS["snapshot"]
    as_of: str | None = _KS_PARAMS["as_of"]
    invalid_bytes: str = _KS_PARAMS["invalid_bytes"]


@asset(
    group_name=GROUP,
    description="The MediaWiki XML dump (default: the real enwiki excerpt from gensim 4.4.0).",
)
def wikipedia_dump(
    context: AssetExecutionContext, config: DumpConfig, pipeline: PipelineSettings
) -> Output[DumpHandle]:
    if config.dump_path:
        path = Path(config.dump_path)
        if not path.is_file():
            raise FileNotFoundError(f"dump not found: {path}")
        handle = DumpHandle(str(path.resolve()), embedded=False)
    else:
        path = embedded.ensure_embedded_dump(pipeline.data_path)
        handle = DumpHandle(str(path.resolve()), embedded=True)
        context.log.info(f"embedded default corpus: {embedded.ORIGIN}")
    return Output(
        handle,
        metadata={
            "dump_path": MetadataValue.path(handle.path),
            "bytes": path.stat().st_size,
            "embedded_default": handle.embedded,
        },
    )


def _page_preview(paths: SnapshotPaths, paragraphs: int = 4) -> str:
    page = next(iter_pages(paths, batch_size=1))
    lines = [f"### {page['wikipedia_title']} (id {page['wikipedia_id']})", ""]
    for paragraph in page["text"][1 : 1 + paragraphs]:
        lines.append(f"> {paragraph.strip()[:400]}")
        lines.append(">")
    lines.append("")
    lines.append(
        f"{len(page['text']) - 1} paragraphs, {len(page['anchors'])} anchors, categories: "
        f"{', '.join(page['categories'][:8])}"
    )
    return "\n".join(lines)


@asset(
    group_name=GROUP,
    ins={"dump": AssetIn("wikipedia_dump")},
    description="KILT-format pages (Parquet shards) and the redirects table of one snapshot.",
)
def knowledge_source(
    context: AssetExecutionContext,
    config: KnowledgeSourceConfig,
    pipeline: PipelineSettings,
    dump: DumpHandle,
) -> Output[SnapshotHandle]:
    snapshot_id = config.snapshot_id
    if dump.embedded and snapshot_id is None:
        snapshot_id = embedded.SNAPSHOT_ID
    report = build_knowledge_source(
        dump.path,
        pipeline.data_path,
        snapshot_id=snapshot_id,
        as_of=config.as_of,
        workers=pipeline.workers,
        rows_per_shard=pipeline.rows_per_shard,
        invalid_bytes=config.invalid_bytes,
        progress=pipeline.progress_bars,
        on_progress=context.log.info,
    )
    handle = SnapshotHandle(str(pipeline.data_path.resolve()), report.snapshot_id)
    context.log.info(
        f"snapshot {report.snapshot_id}: {report.articles} articles, {report.redirects} redirects in "
        f"{report.seconds:.1f}s ({report.xml_mb_per_second:.1f} MB XML/s)"
    )
    return Output(
        handle,
        metadata={
            "snapshot_id": report.snapshot_id,
            "snapshot_path": MetadataValue.path(str(handle.paths.knowledge_source)),
            "pages": report.articles,
            "redirects": report.redirects,
            "pages_read": report.pages_read,
            "skipped_by_reason": MetadataValue.json(report.skipped),
            "paragraphs": report.paragraphs,
            "anchors": report.anchors,
            "anchors_resolved": report.anchors_resolved,
            "residual_markup_fraction": MetadataValue.float(report.residual_markup_fraction),
            "xml_bytes": report.xml_bytes,
            "parquet_bytes": report.parquet_bytes,
            "shards": report.shards,
            "seconds": MetadataValue.float(report.seconds),
            "pages_per_second": MetadataValue.float(report.pages_per_second),
            "xml_mb_per_second": MetadataValue.float(report.xml_mb_per_second),
            "preview": MetadataValue.md(_page_preview(handle.paths)),
        },
    )


@asset(
    group_name=GROUP,
    ins={"snapshot": AssetIn("knowledge_source")},
    description="The knowledge source as KILT JSONL (KILT's field names), one page per line.",
)
def knowledge_source_jsonl(snapshot: SnapshotHandle) -> Output[str]:
    out = snapshot.paths.kilt_jsonl
    count = export_kilt_jsonl(snapshot.paths, out, progress=False)
    return Output(
        str(out),
        metadata={"jsonl_path": MetadataValue.path(str(out)), "pages": count, "bytes": out.stat().st_size},
    )


def _check_result(outcome: checks.CheckOutcome) -> AssetCheckResult:
    return AssetCheckResult(
        passed=outcome.passed,
        severity=AssetCheckSeverity.ERROR,
        description=outcome.description,
        metadata={
            key: MetadataValue.json(value) if isinstance(value, (list, dict)) else value
            for key, value in outcome.metadata.items()
        },
    )


@asset_check(
    asset=knowledge_source, blocking=True, description="wikipedia_id and wikipedia_title are unique."
)
def unique_ids_and_titles(knowledge_source: SnapshotHandle) -> AssetCheckResult:
    return _check_result(checks.unique_ids_and_titles(knowledge_source.paths))


@asset_check(
    asset=knowledge_source, blocking=True, description="Every article has body text, no empty paragraph."
)
def no_empty_article(knowledge_source: SnapshotHandle) -> AssetCheckResult:
    return _check_result(checks.no_empty_article(knowledge_source.paths))


@asset_check(
    asset=knowledge_source, blocking=True, description="Every anchor span lies inside its paragraph."
)
def anchors_inside_paragraphs(knowledge_source: SnapshotHandle) -> AssetCheckResult:
    return _check_result(checks.anchors_inside_paragraphs(knowledge_source.paths))


@asset_check(
    asset=knowledge_source, blocking=True, description="Redirect targets are resolved or counted by reason."
)
def redirects_resolved_or_counted(knowledge_source: SnapshotHandle) -> AssetCheckResult:
    return _check_result(checks.redirects_resolved_or_counted(knowledge_source.paths))


WIKIPEDIA_ASSETS = [wikipedia_dump, knowledge_source, knowledge_source_jsonl]
WIKIPEDIA_CHECKS = [
    unique_ids_and_titles,
    no_empty_article,
    anchors_inside_paragraphs,
    redirects_resolved_or_counted,
]
