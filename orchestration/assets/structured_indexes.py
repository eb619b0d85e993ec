"""The structured passages' indices (tables and infoboxes): the ``structured_indexes`` asset, beside the
text passages' ``bm25_index`` and ``dense_index``, and its blocking check."""

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetExecutionContext,
    AssetIn,
    Config,
    Output,
    asset,
    asset_check,
)

from assets.disk_space import require_room
from assets.incremental import previous_snapshot
from assets.indexes.collections import structured_view
from assets.indexes.settings import IndexSettings
from assets.indexes.structured_indexes import build_structured_indexes, structured_count
from assets.storage import SnapshotPaths
from orchestration.resources import (
    OWNERS,
    SNAPSHOTS,
    PipelineSettings,
    SnapshotHandle,
    dagster_metadata,
    path_entries,
)

GROUP = "indexes"


class StructuredIndexesConfig(Config):
    """The indices of ``indexes.build``, as ``indexes.bm25`` and ``indexes.dense`` say; ``incremental``:
    reuse the previous snapshot's structured vectors of unchanged passages (default
    ``snapshots.incremental``)."""

    incremental: bool | None = None


def _has_structured_vectors(paths: SnapshotPaths) -> bool:
    return structured_view(paths).dense_embeddings.is_dir()


@asset(
    kinds={"faiss", "lucene"},
    owners=OWNERS,
    group_name=GROUP,
    partitions_def=SNAPSHOTS,
    ins={"snapshot": AssetIn("structured_passages")},
    description="BM25 and dense indices of the structured passages (tables and infoboxes), under "
    "indexes/structured/: searched alone or with the text passages' (collection structured or both).",
)
def structured_indexes(
    context: AssetExecutionContext,
    config: StructuredIndexesConfig,
    pipeline: PipelineSettings,
    snapshot: SnapshotHandle,
) -> Output[SnapshotHandle]:
    paths = snapshot.paths
    view = structured_view(paths)
    require_room("structured_indexes", [view.passages_collection], paths.root)  # none: 0 bytes needed
    previous = None
    if pipeline.incremental(config.incremental):  # the newest earlier snapshot with structured vectors
        previous = previous_snapshot(pipeline.data_path, paths.snapshot_id, has=_has_structured_vectors)
    report = build_structured_indexes(
        paths,
        IndexSettings.from_params(pipeline.params.indexes),
        pipeline.params.indexes.build,
        reuse_from=previous,
        progress=pipeline.progress_bars,
        log=context.log.info,
    )
    if report.skipped:
        context.log.info(f"structured indexes of {paths.snapshot_id}: none ({report.skipped})")
    built = {name: getattr(view, f"{name}_index") for name in report.built}
    return Output(
        snapshot,
        metadata={
            **dagster_metadata(report.metadata()),
            **{
                key: value
                for name, path in built.items()
                for key, value in path_entries(f"{name}_path", path).items()
            },
        },
    )


@asset_check(
    asset=structured_indexes,
    blocking=True,
    description="Each structured index holds exactly one document (vector) per structured passage.",
)
def structured_index_counts(
    pipeline: PipelineSettings, structured_indexes: SnapshotHandle
) -> AssetCheckResult:
    from assets.indexes.dense import DenseSearcher
    from assets.indexes.retriever import Retriever

    paths = structured_indexes.paths
    view = structured_view(paths)
    expected = structured_count(paths) or 0
    counts: dict[str, int] = {}
    if view.bm25_index.is_dir():  # what Lucene holds, not what the build reported
        with Retriever(paths, IndexSettings.from_params(pipeline.params.indexes)) as retriever:
            counts["bm25"] = int(retriever.searcher("bm25@structured").num_docs)
    if view.dense_index.is_dir():  # FAISS's own count (memory-mapped)
        counts["dense"] = int(DenseSearcher(view.dense_index, mmap=True).index.ntotal)
    wrong = {name: count for name, count in counts.items() if count != expected}
    return AssetCheckResult(
        passed=not wrong,
        severity=AssetCheckSeverity.ERROR,
        description=(
            ", ".join(f"{name}: {count:,}" for name, count in counts.items()) or "no structured index"
        )
        + f" for {expected:,} structured passages",
        metadata={"structured_passages": expected, **{f"{name}_documents": c for name, c in counts.items()}},
    )


STRUCTURED_INDEX_ASSETS = [structured_indexes]
STRUCTURED_INDEX_CHECKS = [structured_index_counts]
