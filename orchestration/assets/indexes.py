"""The indices' Dagster assets: BM25 and dense over the passages (dense as a graph of shard steps), their
blocking checks, and the KILT evaluation of every registered index type."""

import shutil
from collections.abc import Iterator
from dataclasses import asdict
from typing import Any

import dagster as dg

from assets import charts, params
from assets.disk_space import require_room
from assets.files import temp_sibling
from assets.incremental import previous_snapshot
from assets.indexes import searcher_types
from assets.indexes.bm25 import Bm25Settings, build_bm25
from assets.indexes.dense import (
    DenseSettings,
    EmbeddingPlan,
    EmbeddingShard,
    EncodeReport,
    ReuseSource,
    ShardResult,
    add_shard_to_faiss,
    encode_embedding_shard,
    finish_embeddings,
    merge_faiss_shards,
    plan_embedding_shards,
    train_faiss_index,
)
from assets.indexes.evaluation import (
    NO_EVALUATION,
    approximate_recall,
    evaluate_indexes,
    passage_count,
    retrieval_reports_dir,
    self_retrieval,
)
from assets.params import Bm25Params, DenseParams, EvaluationParams
from assets.reading import Snapshot
from orchestration.assets.common import snapshot_asset, snapshot_check, snapshot_graph_asset
from orchestration.resources import (
    STEP_IO_MANAGER,
    PipelineSettings,
    SnapshotHandle,
    dagster_metadata,
    float_metadata,
    path_entries,
    remove_step_values,
    step_scratch,
)
from orchestration.run_config import section_config, with_config

GROUP = "indexes"


Bm25Config = section_config(
    Bm25Params, "Anserini indexing and BM25: ``indexes.bm25`` of params.yaml (unset fields take its values)."
)


class DenseConfig(
    section_config(
        DenseParams,
        "The encoder and the FAISS index: ``indexes.dense`` of params.yaml (unset fields take its values; "
        "``device`` spreads the shard steps over the GPUs it names).",
    )
):
    """``indexes.dense`` of params.yaml (unset fields take its values), and ``incremental``."""

    incremental: bool | None = None
    """Reuse the vectors of unchanged passages (default ``snapshots.incremental``)."""


class EvaluationConfig(
    section_config(
        EvaluationParams,
        "Which indices to evaluate, on which collections, at which depth: ``indexes.evaluation`` of "
        "params.yaml (unset fields take its values).",
    )
):
    """``indexes.evaluation`` of params.yaml (unset fields take its values), and where reports go."""

    reports_dir: str | None = None
    """Default ``datasets.reports_dir``; relative: under the data dir."""


@snapshot_asset(
    GROUP,
    kinds={"lucene"},
    ins={"snapshot": dg.AssetIn("passage_collection")},
    description="Lucene (Anserini) BM25 index of the passages; docids are passage ids, raw text stored.",
)
def bm25_index(
    context: dg.AssetExecutionContext,
    config: Bm25Config,
    pipeline: PipelineSettings,
    snapshot: SnapshotHandle,
) -> dg.Output[SnapshotHandle]:
    settings = Bm25Settings.from_params(with_config(pipeline.params.indexes.bm25, config))
    require_room("bm25_index", [snapshot.paths.passages_collection], snapshot.paths.root)
    report = build_bm25(snapshot.paths, settings, progress=pipeline.progress_bars)
    for warning in report.warnings:
        context.log.warning(warning)
    context.log.info(
        f"BM25: {report.documents_indexed} passages indexed in {report.seconds:.1f}s "
        f"({report.documents_per_second:.0f}/s), analyzer {report.language}"
    )
    return dg.Output(
        snapshot,
        metadata=dagster_metadata(report.metadata()),
    )


def _dense_settings(
    config: DenseConfig, pipeline: PipelineSettings, snapshot: SnapshotHandle
) -> DenseSettings:
    """The dense settings of a snapshot: params.yaml's, the run config's, the model of its language."""
    settings = DenseSettings.from_params(with_config(pipeline.params.indexes.dense, config))
    return settings if config.model else settings.for_snapshot(snapshot.paths)


def _encoder(
    config: DenseConfig, pipeline: PipelineSettings, snapshot: SnapshotHandle, shard: int = 0
) -> Any:
    """The encoder of a shard step, on its device: shard ``i`` on the ``i % n``-th of the ``n`` devices the
    setting spreads over (every GPU for ``auto``/``cuda``), so concurrent steps use every GPU."""
    from assets.indexes.dense.encoders import device_for_shard, encode_devices

    settings = _dense_settings(config, pipeline, snapshot)
    if settings.backend != "torch":
        return settings.load_encoder()
    return settings.load_encoder(device_for_shard(encode_devices(settings.device), shard))


def _reuse_source(
    config: DenseConfig, pipeline: PipelineSettings, snapshot: SnapshotHandle
) -> ReuseSource | None:
    incremental = pipeline.incremental(config.incremental)
    previous = previous_snapshot(pipeline.data_path, snapshot.snapshot_id) if incremental else None
    return ReuseSource(previous.passages_parquet, previous.dense_embeddings) if previous else None


@dg.op(
    out={
        "shards": dg.DynamicOut(dict, io_manager_key=STEP_IO_MANAGER),
        "plan": dg.Out(dict, io_manager_key=STEP_IO_MANAGER),
    }
)
def plan_embedding_shard_steps(
    context: dg.OpExecutionContext, config: DenseConfig, pipeline: PipelineSettings, snapshot: SnapshotHandle
) -> Iterator[dg.DynamicOutput[dict] | dg.Output[dict]]:
    """One step per embeddings shard of the snapshot (finished shards of an earlier run are kept); the
    plan the steps share (encoder identity, input fingerprint, reuse map made by one join)."""
    paths = snapshot.paths
    shard_size = _dense_settings(config, pipeline, snapshot).shard_size
    plan = plan_embedding_shards(
        paths.passages_parquet,
        paths.dense_embeddings,
        _encoder(config, pipeline, snapshot),
        shard_size,
        reuse_from=_reuse_source(config, pipeline, snapshot),
        scratch=step_scratch(pipeline.data_dir, context.run.run_id, "dense_index"),
    )
    context.log.info(
        f"dense: {len(plan.shards)} shard steps of <= {shard_size} passages"
        + (f"; reuse map from {plan.reuse_embeddings}" if plan.reuse_map else "")
    )
    yield dg.Output(plan.to_dict(), output_name="plan")
    for shard in plan.shards:
        yield dg.DynamicOutput(asdict(shard), output_name="shards", mapping_key=f"shard_{shard.index:05d}")


@dg.op(out=dg.Out(dict, io_manager_key=STEP_IO_MANAGER))
def encode_embedding_shard_step(
    context: dg.OpExecutionContext,
    config: DenseConfig,
    pipeline: PipelineSettings,
    snapshot: SnapshotHandle,
    plan: dict,
    shard: dict,
) -> dict:
    """Encode one shard of the passages (copying the vectors of the previous snapshot's unchanged ones)."""
    settings = _dense_settings(config, pipeline, snapshot)
    result = encode_embedding_shard(
        snapshot.paths.passages_parquet,
        snapshot.paths.dense_embeddings,
        _encoder(config, pipeline, snapshot, shard["index"]),
        EmbeddingPlan.from_dict(plan),
        EmbeddingShard(**shard),
        batch_size=settings.batch_size,
        progress=pipeline.progress_bars,
    )
    context.log.info(
        f"dense shard {result.index}: {result.rows} passages, {result.encoded} encoded, "
        f"{result.reused} reused"
        + (" (already done)" if result.resumed else "")
        + f" in {result.seconds:.1f}s on {result.device}"
    )
    return asdict(result)


@dg.op(out=dg.Out(dict, io_manager_key=STEP_IO_MANAGER))
def finish_embeddings_step(snapshot: SnapshotHandle, plan: dict, shard_results: list[dict]) -> dict:
    """Check every shard is there and complete the embeddings manifest."""
    encoded = finish_embeddings(
        snapshot.paths.dense_embeddings,
        EmbeddingPlan.from_dict(plan),
        [ShardResult(**r) for r in shard_results],
    )
    return asdict(encoded)


@dg.op(out=dg.Out(dict, io_manager_key=STEP_IO_MANAGER))
def train_faiss_step(
    config: DenseConfig, pipeline: PipelineSettings, snapshot: SnapshotHandle, encoded: dict
) -> dict:
    """Train the FAISS index once (IVF centroids, PQ/SQ codebooks) on a sample of every shard."""
    settings = _dense_settings(config, pipeline, snapshot)
    index_dir = snapshot.paths.dense_index
    for stale in index_dir.parent.glob(f".tmp-{index_dir.name}-*"):  # parts of a failed earlier run
        shutil.rmtree(stale, ignore_errors=True)
    return train_faiss_index(
        snapshot.paths.dense_embeddings,
        temp_sibling(snapshot.paths.dense_index),
        settings.factory,
        settings.metric,
        train_sample=settings.train_sample,
        gpu=settings.faiss_gpu,
    )


@dg.op(out=dg.Out(dict, io_manager_key=STEP_IO_MANAGER))
def add_shard_to_faiss_step(snapshot: SnapshotHandle, shard: dict, training: dict) -> dict:
    """Add one shard's vectors to a copy of the trained index: that shard's IVF lists / codes."""
    if not training["mergeable"]:
        return {"shard": shard["index"], "part": None, "vectors": 0, "seconds": 0.0}
    gpu = "off" if training.get("device", "cpu") == "cpu" else "on"  # where the index was trained
    return add_shard_to_faiss(snapshot.paths.dense_embeddings, training["work_dir"], shard["index"], gpu=gpu)


@dg.op
def assemble_dense_index(
    context: dg.OpExecutionContext,
    config: DenseConfig,
    pipeline: PipelineSettings,
    snapshot: SnapshotHandle,
    encoded: dict,
    training: dict,
    parts: list[dict],
) -> dg.Output[SnapshotHandle]:
    """Merge the shards' FAISS parts in shard order into the snapshot's index, with its docid map."""
    settings = _dense_settings(config, pipeline, snapshot)
    encoded = EncodeReport(**encoded)
    index = merge_faiss_shards(
        snapshot.paths.dense_embeddings,
        snapshot.paths.dense_index,
        training,
        parts,
        settings.factory,
        settings.metric,
        search_params=settings.search_params,
    )
    if encoded.reuse_skipped:
        context.log.warning(f"embeddings of the previous snapshot not reused: {encoded.reuse_skipped}")
    context.log.info(
        f"dense: {encoded.encoded_passages} passages encoded, {encoded.reused_passages} reused "
        f"({encoded.resumed_shards} of {encoded.shards} shards resumed) "
        f"at {encoded.passages_per_second:.0f}/s per step with {encoded.model}@{encoded.backend}; "
        f"FAISS {index.factory}: {index.vectors} vectors from {len(parts)} shard parts, "
        f"{index.bytes_per_vector} B/vector"
    )
    incremental = pipeline.incremental(config.incremental)
    previous = previous_snapshot(pipeline.data_path, snapshot.snapshot_id) if incremental else None
    remove_step_values(pipeline.data_dir, context.run.run_id, "dense_index")
    return dg.Output(
        snapshot,
        metadata=dagster_metadata(
            {
                **encoded.metadata(),
                **index.metadata(),
                "reuse_source": previous.snapshot_id if previous and encoded.reused_passages else "none",
                "faiss_parts_merged": sum(1 for part in parts if part["part"]),
            }
        ),
    )


@dg.config_mapping
def _dense_config(config: DenseConfig) -> dict[str, Any]:
    """``ops: {dense_index: {config: ...}}`` in run config reaches every step of the graph."""
    values = {"config": config.model_dump()}
    steps = (plan_embedding_shard_steps, encode_embedding_shard_step, train_faiss_step)
    names = [step.name for step in (*steps, assemble_dense_index)]
    return {name: values for name in names}


@snapshot_graph_asset(
    GROUP,
    kinds={"faiss", "pytorch"},
    ins={"snapshot": dg.AssetIn("passages")},
    config=_dense_config,
    description=(
        "Passage embeddings, one executor step per shard (resumable), and a FAISS index assembled from "
        "the shards, with the docid map."
    ),
)
def dense_index(snapshot: SnapshotHandle) -> SnapshotHandle:
    shards, plan = plan_embedding_shard_steps(snapshot)
    encoded = finish_embeddings_step(
        snapshot, plan, shards.map(lambda shard: encode_embedding_shard_step(snapshot, plan, shard)).collect()
    )
    training = train_faiss_step(snapshot, encoded)
    parts = shards.map(lambda shard: add_shard_to_faiss_step(snapshot, shard, training))
    return assemble_dense_index(snapshot, encoded, training, parts.collect())


@snapshot_asset(
    "evaluation",
    kinds={"python"},
    ins={"datasets": dg.AssetIn("remapped_datasets")},
    deps=[  # every registered index's asset, and the structured passages' indices
        *(kind.asset for kind in searcher_types() if kind.asset),
        "structured_indexes",
    ],
    description="KILT page-level retrieval metrics of every index type (bm25, dense, hybrid, ...) on every "
    "remapped dataset, over the text passages (KILT-comparable) and over text + structured passages.",
)
def retrieval_evaluation(
    context: dg.AssetExecutionContext,
    config: EvaluationConfig,
    pipeline: PipelineSettings,
    datasets: SnapshotHandle,
) -> dg.Output[SnapshotHandle]:
    evaluation = with_config(pipeline.params.indexes.evaluation, config)
    reports_dir = params.reports_dir(
        pipeline.data_path, config.reports_dir or pipeline.params.datasets.reports_dir
    )
    with Snapshot(datasets.paths, pipeline.params) as opened:
        retriever = opened.retriever
        results = evaluate_indexes(
            retriever,
            reports_dir,
            evaluation,
            progress=context.log.info,
        )
    out = retrieval_reports_dir(reports_dir, datasets.paths.snapshot_id)
    skipped = "" if results["splits"] else NO_EVALUATION
    if skipped:
        context.log.info(f"retrieval evaluation of {datasets.paths.snapshot_id} skipped: {skipped}")
    for row in results["table"]:
        context.log.info(
            f"{row['dataset']} {row['index']} (collection {row['collection']}): "
            f"Rprec {row['Rprec']:.3f}, "
            f"recall@5 {row.get('recall@5', 0):.3f} ({row['queries']} queries)"
        )
    # without datasets there is nothing to chart: the UI says why (it showed an empty chart and a "-",
    # which Markdown draws as a lone bullet)
    said = f"Skipped: {charts.markdown_text(skipped)}."
    chart = said if skipped else charts.markdown_image((out / "r_precision.png").read_bytes(), "R-precision")
    return dg.Output(
        datasets,
        metadata={
            **path_entries("reports_path", out),
            "splits": len(results["splits"]),
            "skipped": skipped or "no",
            "queries": sum(s["queries"] for s in results["splits"]),
            "table": dg.MetadataValue.md(
                charts.markdown_table(results["table"]) if results["table"] and not skipped else said
            ),
            "r_precision": dg.MetadataValue.md(chart),
            "results": dg.MetadataValue.json({k: v for k, v in results.items() if k != "table"}),
        },
    )


# ------------------------------------------------------------------------------------------- checks
def _count_check(index: str, documents: int, snapshot: SnapshotHandle) -> dg.AssetCheckResult:
    expected = passage_count(snapshot.paths)
    return dg.AssetCheckResult(
        passed=documents == expected,
        severity=dg.AssetCheckSeverity.ERROR,
        description=f"{index}: {documents:,} documents for {expected:,} passages",
        metadata={"documents": documents, "passages": expected},
    )


def _self_retrieval_check(
    index: str, snapshot: SnapshotHandle, pipeline: PipelineSettings
) -> dg.AssetCheckResult:
    checks = pipeline.params.indexes.checks
    floor = checks.self_retrieval_floor
    with Snapshot(snapshot.paths, pipeline.params) as opened:
        retriever = opened.retriever
        result = self_retrieval(retriever, index, sample=checks.self_retrieval_sample, seed=checks.seed)
    return dg.AssetCheckResult(
        passed=result.fraction >= floor,
        severity=dg.AssetCheckSeverity.ERROR,
        description=(
            f"{index}: {result.found}/{result.queried} passages ({result.fraction:.1%}) in the top "
            f"{result.k} for their first sentence (floor {floor:.0%})"
            + (
                f"; {result.found_as_duplicate} of them through another passage holding the same sentence"
                if result.found_as_duplicate
                else ""
            )
        ),
        metadata={
            "fraction": float_metadata(result.fraction),
            "found_as_duplicate": result.found_as_duplicate,
            "floor": floor,
            "queried": result.queried,
            "seconds": float_metadata(result.seconds),
            "misses": dg.MetadataValue.json(result.misses),
        },
    )


@snapshot_check(
    asset=bm25_index, blocking=True, description="The index holds exactly one document per passage."
)
def bm25_document_count(pipeline: PipelineSettings, bm25_index: SnapshotHandle) -> dg.AssetCheckResult:
    with Snapshot(bm25_index.paths, pipeline.params) as opened:
        retriever = opened.retriever
        documents = retriever.bm25.num_docs  # what Lucene holds, not what the build reported
    return _count_check("bm25", documents, bm25_index)


@snapshot_check(
    asset=bm25_index,
    blocking=True,
    description="Sampled passages come back in the top 10 when queried with their first sentence.",
)
def bm25_self_retrieval(pipeline: PipelineSettings, bm25_index: SnapshotHandle) -> dg.AssetCheckResult:
    return _self_retrieval_check("bm25", bm25_index, pipeline)


@snapshot_check(
    asset=dense_index, blocking=True, description="The index holds exactly one vector per passage."
)
def dense_document_count(dense_index: SnapshotHandle) -> dg.AssetCheckResult:
    from assets.indexes.dense import DenseSearcher

    try:  # FAISS's own count (memory-mapped, nothing searched); it checks the docid map against it
        vectors = int(DenseSearcher(dense_index.paths.dense_index, mmap=True).index.ntotal)
    except RuntimeError as error:
        return dg.AssetCheckResult(
            passed=False, severity=dg.AssetCheckSeverity.ERROR, description=f"dense: {error}"
        )
    return _count_check("dense", vectors, dense_index)


@snapshot_check(
    asset=dense_index,
    blocking=True,
    description="Sampled passages come back in the top 10 when queried with their first sentence.",
)
def dense_self_retrieval(pipeline: PipelineSettings, dense_index: SnapshotHandle) -> dg.AssetCheckResult:
    return _self_retrieval_check("dense", dense_index, pipeline)


@snapshot_check(
    asset=dense_index,
    blocking=True,
    description="The FAISS index reaches recall@10 >= the floor against exact search on the same queries.",
)
def dense_approximate_recall(pipeline: PipelineSettings, dense_index: SnapshotHandle) -> dg.AssetCheckResult:
    checks = pipeline.params.indexes.checks
    floor = checks.recall_floor
    with Snapshot(dense_index.paths, pipeline.params) as opened:
        retriever = opened.retriever
        result = approximate_recall(retriever, queries=checks.recall_queries, seed=checks.seed)
    kind = "exact index" if result.exact_index else "approximate index"
    return dg.AssetCheckResult(
        passed=result.recall >= floor,
        severity=dg.AssetCheckSeverity.ERROR,
        description=(
            f"{result.factory} ({kind}): recall@{result.k} {result.recall:.3f} vs exact search over "
            f"{result.queries} queries (floor {floor})"
        ),
        metadata={
            "recall": float_metadata(result.recall),
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
