"""Dagster wiring of the indices: BM25 and dense over the passages, their checks, the KILT evaluation."""

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
from pydantic import Field

from assets import charts, params
from assets.incremental import previous_snapshot
from assets.indexes.retrieval import (
    IndexSettings,
    Retriever,
    approximate_recall,
    build_bm25,
    build_dense,
    evaluate_indexes,
    passage_count,
    retrieval_reports_dir,
    self_retrieval,
)
from orchestration.resources import SNAPSHOTS, PipelineSettings, SnapshotHandle

GROUP = "indexes"
_PARAMS = params.load_params()["indexes"]
_CHECKS = _PARAMS["checks"]


class Bm25Config(Config):
    """Anserini indexing (defaults: ``indexes.bm25`` in params.yaml)."""

    threads: int = int(_PARAMS["bm25"]["threads"])
    heap: str = str(_PARAMS["bm25"]["heap"])
    language: str | None = _PARAMS["bm25"]["language"]


class DenseConfig(Config):
    """Encoder and FAISS factory (defaults: ``indexes.dense`` in params.yaml)."""

    model: str = str(_PARAMS["dense"]["model"])
    backend: str = str(_PARAMS["dense"]["backend"])
    shard_size: int = int(_PARAMS["dense"]["shard_size"])
    factory: str = str(_PARAMS["dense"]["factory"])
    train_sample: int | None = _PARAMS["dense"]["train_sample"]
    search_params: str = str(_PARAMS["dense"]["search_params"] or "")  # stored with the index
    incremental: bool = bool(params.load_params()["snapshots"]["incremental"])  # reuse older vectors


class EvaluationConfig(Config):
    """Which indices to evaluate, at which depth, and where reports go."""

    indexes: list[str] = Field(default_factory=lambda: list(_PARAMS["evaluation"]["indexes"]))
    depth: int = int(_PARAMS["evaluation"]["depth"])
    reports_dir: str = str(params.load_params()["datasets"]["reports_dir"])


@asset(
    group_name=GROUP,
    partitions_def=SNAPSHOTS,
    ins={"snapshot": AssetIn("passage_collection")},
    description="Lucene (Anserini) BM25 index of the passages; docids are passage ids, raw text stored.",
)
def bm25_index(
    context: AssetExecutionContext, config: Bm25Config, pipeline: PipelineSettings, snapshot: SnapshotHandle
) -> Output[SnapshotHandle]:
    settings = IndexSettings.from_params(
        bm25_threads=config.threads, bm25_heap=config.heap, bm25_language=config.language
    )
    report = build_bm25(snapshot.paths, settings, progress=pipeline.progress_bars)
    for warning in report.warnings:
        context.log.warning(warning)
    context.log.info(
        f"BM25: {report.documents_indexed} passages indexed in {report.seconds:.1f}s "
        f"({report.documents_per_second:.0f}/s), analyzer {report.language}"
    )
    return Output(
        snapshot,
        metadata={
            "index_path": MetadataValue.path(report.index_dir),
            "documents": report.documents_indexed,
            "language": report.language,
            "requested_language": report.requested_language,
            "anserini_counters": MetadataValue.json(
                {k: getattr(report, k) for k in ("unindexable", "empty", "skipped", "errors")}
            ),
            "index_bytes": report.index_bytes,
            "threads": report.threads,
            "heap": report.heap,
            "seconds": MetadataValue.float(report.seconds),
            "documents_per_second": MetadataValue.float(report.documents_per_second),
            "anserini": report.anserini_version,
            "java": report.java_version,
        },
    )


@asset(
    group_name=GROUP,
    partitions_def=SNAPSHOTS,
    ins={"snapshot": AssetIn("passages")},
    description="Passage embeddings (sharded, resumable) and a FAISS index over them, with the docid map.",
)
def dense_index(
    context: AssetExecutionContext, config: DenseConfig, pipeline: PipelineSettings, snapshot: SnapshotHandle
) -> Output[SnapshotHandle]:
    settings = IndexSettings.from_params(
        model=config.model,
        backend=config.backend,
        shard_size=config.shard_size,
        factory=config.factory,
        train_sample=config.train_sample,
        search_params=config.search_params,
    )
    reuse_from = previous_snapshot(pipeline.data_path, snapshot.snapshot_id) if config.incremental else None
    built = build_dense(snapshot.paths, settings, progress=pipeline.progress_bars, reuse_from=reuse_from)
    encoded, index = built.encode, built.index
    if encoded.reuse_skipped:
        context.log.warning(f"embeddings of {reuse_from.snapshot_id} not reused: {encoded.reuse_skipped}")
    context.log.info(
        f"dense: {encoded.encoded_passages} passages encoded, {encoded.reused_passages} reused "
        f"({encoded.resumed_shards} shards resumed) "
        f"at {encoded.passages_per_second:.0f}/s with {encoded.model}@{encoded.backend}; "
        f"FAISS {index.factory}: {index.vectors} vectors, {index.bytes_per_vector} B/vector"
    )
    return Output(
        snapshot,
        metadata={
            "index_path": MetadataValue.path(index.index_dir),
            "embeddings_path": MetadataValue.path(encoded.out_dir),
            "model": encoded.model,
            "backend": encoded.backend,
            "dimension": encoded.dimension,
            "passages": encoded.passages,
            "encoded_passages": encoded.encoded_passages,
            "reused_passages": encoded.reused_passages,
            "reuse_source": reuse_from.snapshot_id if reuse_from and encoded.reused_passages else "none",
            "reuse_ratio": MetadataValue.float(round(encoded.reused_passages / max(encoded.passages, 1), 4)),
            "reuse_skipped": encoded.reuse_skipped or "",
            "resumed_shards": encoded.resumed_shards,
            "shards": encoded.shards,
            "encode_seconds": MetadataValue.float(round(encoded.seconds, 2)),
            "passages_per_second": MetadataValue.float(round(encoded.passages_per_second, 1)),
            "factory": index.factory,
            "vectors": index.vectors,
            "index_bytes": index.bytes,
            "bytes_per_vector": MetadataValue.float(index.bytes_per_vector),
            "index_seconds": MetadataValue.float(index.seconds),
            "search_params": MetadataValue.json(index.params),
        },
    )


@asset(
    group_name=GROUP,
    partitions_def=SNAPSHOTS,
    ins={
        "bm25": AssetIn("bm25_index"),
        "dense": AssetIn("dense_index"),
        "datasets": AssetIn("remapped_datasets"),
    },
    description="KILT page-level retrieval metrics of bm25, dense and hybrid on every remapped dataset.",
)
def retrieval_evaluation(
    context: AssetExecutionContext,
    config: EvaluationConfig,
    bm25: SnapshotHandle,
    dense: SnapshotHandle,
    datasets: SnapshotHandle,
) -> Output[SnapshotHandle]:
    with Retriever(datasets.paths) as retriever:
        results = evaluate_indexes(
            retriever, Path(config.reports_dir), indexes=config.indexes, depth=config.depth
        )
    out = retrieval_reports_dir(Path(config.reports_dir), datasets.paths.snapshot_id)
    for row in results["table"]:
        context.log.info(
            f"{row['dataset']} {row['index']}: R-precision {row['R-precision']:.3f}, "
            f"recall@5 {row.get('recall@5', 0):.3f} ({row['queries']} queries)"
        )
    png = (out / "r_precision.png").read_bytes()
    return Output(
        datasets,
        metadata={
            "reports_path": MetadataValue.path(str(out)),
            "splits": len(results["splits"]),
            "queries": sum(s["queries"] for s in results["splits"]),
            "table": MetadataValue.md(charts.markdown_table(results["table"]) if results["table"] else "-"),
            "r_precision": MetadataValue.md(charts.markdown_image(png, "R-precision")),
            "results": MetadataValue.json({k: v for k, v in results.items() if k != "table"}),
        },
    )


# ------------------------------------------------------------------------------------------- checks
def _count_check(index: str, documents: int, snapshot: SnapshotHandle) -> AssetCheckResult:
    expected = passage_count(snapshot.paths)
    return AssetCheckResult(
        passed=documents == expected,
        severity=AssetCheckSeverity.ERROR,
        description=f"{index}: {documents:,} documents for {expected:,} passages",
        metadata={"documents": documents, "passages": expected},
    )


def _self_retrieval_check(index: str, snapshot: SnapshotHandle) -> AssetCheckResult:
    floor = float(_CHECKS["self_retrieval_floor"])
    with Retriever(snapshot.paths) as retriever:
        result = self_retrieval(
            retriever, index, sample=int(_CHECKS["self_retrieval_sample"]), seed=int(_CHECKS["seed"])
        )
    return AssetCheckResult(
        passed=result.fraction >= floor,
        severity=AssetCheckSeverity.ERROR,
        description=(
            f"{index}: {result.found}/{result.queried} passages ({result.fraction:.1%}) in the top "
            f"{result.k} for their first sentence (floor {floor:.0%})"
        ),
        metadata={
            "fraction": MetadataValue.float(result.fraction),
            "floor": floor,
            "queried": result.queried,
            "seconds": MetadataValue.float(result.seconds),
            "misses": MetadataValue.json(result.misses),
        },
    )


@asset_check(asset=bm25_index, blocking=True, description="The index holds exactly one document per passage.")
def bm25_document_count(bm25_index: SnapshotHandle) -> AssetCheckResult:
    with Retriever(bm25_index.paths) as retriever:
        documents = retriever.bm25.num_docs  # what Lucene holds, not what the build reported
    return _count_check("bm25", documents, bm25_index)


@asset_check(
    asset=bm25_index,
    blocking=True,
    description="Sampled passages come back in the top 10 when queried with their first sentence.",
)
def bm25_self_retrieval(bm25_index: SnapshotHandle) -> AssetCheckResult:
    return _self_retrieval_check("bm25", bm25_index)


@asset_check(asset=dense_index, blocking=True, description="The index holds exactly one vector per passage.")
def dense_document_count(dense_index: SnapshotHandle) -> AssetCheckResult:
    from assets.indexes.dense import DenseSearcher

    try:  # FAISS's own count (memory-mapped, nothing searched); it checks the docid map against it
        vectors = int(DenseSearcher(dense_index.paths.dense_index, mmap=True).index.ntotal)
    except RuntimeError as error:
        return AssetCheckResult(
            passed=False, severity=AssetCheckSeverity.ERROR, description=f"dense: {error}"
        )
    return _count_check("dense", vectors, dense_index)


@asset_check(
    asset=dense_index,
    blocking=True,
    description="Sampled passages come back in the top 10 when queried with their first sentence.",
)
def dense_self_retrieval(dense_index: SnapshotHandle) -> AssetCheckResult:
    return _self_retrieval_check("dense", dense_index)


@asset_check(
    asset=dense_index,
    blocking=True,
    description="The FAISS index reaches recall@10 >= the floor against exact search on the same queries.",
)
def dense_approximate_recall(dense_index: SnapshotHandle) -> AssetCheckResult:
    floor = float(_CHECKS["recall_floor"])
    with Retriever(dense_index.paths) as retriever:
        result = approximate_recall(
            retriever, queries=int(_CHECKS["recall_queries"]), seed=int(_CHECKS["seed"])
        )
    kind = "exact index" if result.exact_index else "approximate index"
    return AssetCheckResult(
        passed=result.recall >= floor,
        severity=AssetCheckSeverity.ERROR,
        description=(
            f"{result.factory} ({kind}): recall@{result.k} {result.recall:.3f} vs exact search over "
            f"{result.queries} queries (floor {floor})"
        ),
        metadata={
            "recall": MetadataValue.float(result.recall),
            "floor": floor,
            "factory": result.factory,
            "exact_index": result.exact_index,
            "queries": result.queries,
            "search_params": result.search_params,
        },
    )


INDEX_ASSETS = [bm25_index, dense_index, retrieval_evaluation]
INDEX_CHECKS = [
    bm25_document_count,
    bm25_self_retrieval,
    dense_document_count,
    dense_self_retrieval,
    dense_approximate_recall,
]
