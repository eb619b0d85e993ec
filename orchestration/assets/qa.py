"""The QA-pair knowledge base's asset and check: ``qa_pairs`` (the ``qa`` collection, whose indices
``qa_indexes`` builds from the collection registry) in the snapshot's partition, Dagster group ``qa``."""

from pathlib import Path

import dagster as dg

from assets.datasets import built_from_embedded_excerpt
from assets.params import QAParams
from assets.qa import build_qa_pairs, embedded_qa_files, qa_pairs_consistent
from assets.reading import Snapshot
from assets.storage import SnapshotPaths
from orchestration.assets.common import check_result, snapshot_asset, snapshot_check
from orchestration.resources import (
    PipelineSettings,
    SnapshotHandle,
    dagster_metadata,
    float_metadata,
    path_entries,
)
from orchestration.run_config import section_config, with_config

GROUP = "qa"

QAConfig = section_config(
    QAParams,
    "The QA-pair files and how their answers are placed: ``qa`` of params.yaml (unset fields take its "
    "values; no files: an empty QA KB that says so).",
)


def qa_files(names: tuple[str, ...] | None, pipeline: PipelineSettings, paths: SnapshotPaths) -> list[Path]:
    """``qa.files`` as paths: relative ones from params.yaml's folder; None: the embedded pairs for the
    embedded default snapshot, none for another. A file that does not exist is an error naming it."""
    if names is None:
        return embedded_qa_files() if built_from_embedded_excerpt(paths) else []
    files = [pipeline.params_relative(name) for name in names]
    missing = [str(f.absolute()) for f in files if not f.is_file()]
    if missing:
        raise FileNotFoundError(f"qa.files names {', '.join(missing)}, which do not exist; fix params.yaml")
    return files


@snapshot_asset(
    GROUP,
    kinds={"parquet"},
    ins={"snapshot": dg.AssetIn("bm25_index")},
    deps=["provenance_store"],
    description="The QA-pair KB (RePAQ): the configured QA pairs grouped by question, every answer kept, "
    "each placed on the snapshot (PAQ metadata's passage, else the first BM25 passage holding it): the qa "
    "collection (kiltpipe answer).",
)
def qa_pairs(
    context: dg.AssetExecutionContext,
    config: QAConfig,
    pipeline: PipelineSettings,
    snapshot: SnapshotHandle,
) -> dg.Output[SnapshotHandle]:
    paths = snapshot.paths
    qa = with_config(pipeline.params.qa, config)
    files = qa_files(qa.files, pipeline, paths)
    # after a dvc pull the store (not versioned) is rebuilt from the Parquet first
    with Snapshot.building(paths, pipeline.params) as opened:

        def search(questions: list[str], k: int) -> list[list]:
            return opened.retriever.batch_search("bm25", questions, k, with_text=True)

        report = build_qa_pairs(
            paths,
            files,
            opened.store,
            search,
            qa,
            pipeline.params.limits.qa,
            source_passages=pipeline.params_relative(qa.source_passages) if qa.source_passages else None,
            bleu_threshold=pipeline.params.datasets.bleu_threshold,
            progress=context.log.info,
        )
    summary = report.to_dict()
    return dg.Output(
        snapshot,
        metadata={
            **path_entries("qa_pairs_path", paths.qa_pairs / "parquet"),
            **dagster_metadata(
                {
                    "questions": report.questions,
                    "pairs_read": report.read.pairs,
                    "skipped_lines": report.read.skipped,
                    "conflicting": report.conflicting,
                    "source_passages_kept": report.source_passages_kept,
                    **{f"provenance_{k}": v for k, v in summary["provenance"].items()},
                    "dense_factory": report.dense_factory,
                }
            ),
            "with_provenance": float_metadata(summary["with_provenance"]),
            "seconds": float_metadata(report.seconds),
        },
    )


@snapshot_check(
    asset=dg.AssetKey("qa_pairs"),
    blocking=True,
    description="Every stored question has an answer and a unique id, and every provenance span reads as its "
    "answer on the page.",
)
def qa_pairs_spans(qa_pairs: SnapshotHandle) -> dg.AssetCheckResult:
    with Snapshot(qa_pairs.paths) as opened:
        return check_result(qa_pairs_consistent(qa_pairs.paths, opened.store), qa_pairs)


QA_ASSETS = [qa_pairs]
QA_CHECKS = [qa_pairs_spans]
