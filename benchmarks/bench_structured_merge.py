"""BM25 over text + structured passages: the merge of the two indices' rankings (what ``collection both``
searches) against one Lucene index over both collections (the peer), on the same snapshot, same run.

The structured passages have a Lucene index of their own (``indexes/structured/bm25``) beside the text
passages' (KILT-comparable, left as it is); ``bm25@both`` merges the two top-k lists by score. Each index
scores with its own document frequencies and average length, so the merge is close to, not the same as,
one index over both. Here that one index is built (``IndexCollection`` over both JsonCollections, the same
analyzer and settings) and both are searched with: the first ``--questions`` NQ dev questions (overlap
of the top 10, identical top-10 lists, structured passages in the top 10), and the page questions of
``benchmarks/structured_questions.py`` (success@5 and answer recall@5 of each).

    .venv/bin/python benchmarks/bench_structured_merge.py [--data-dir data] [--questions 1000]
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path
from typing import Any

from assets import params
from assets.indexes import IndexSettings, Retriever, collection_view, passage_kind
from assets.indexes.bm25 import Bm25Searcher, build_bm25_index, snapshot_language
from assets.storage import resolve_snapshot
from benchmarks.common import machine_info, nq_questions, write_results
from benchmarks.qa_topics import (
    TOPICS,
    answer_scores,
    page_questions,
    page_texts,
    read_topics,
    snapshot_rows,
)
from support.workspace import WORK_DIR, log

WORK = WORK_DIR / "structured_merge"


def joint_index(paths: Any, settings: IndexSettings) -> Path:
    """One Lucene index over the text and the structured passages' JsonCollections (built here)."""
    collection, index = WORK / "collection", WORK / "index"
    shutil.rmtree(WORK, ignore_errors=True)
    collection.mkdir(parents=True)
    for name, source in (
        ("text", paths.passages_collection),
        ("structured", collection_view(paths, "structured").passages_collection),
    ):
        for part in sorted(source.glob("*.jsonl")):
            (collection / f"{name}-{part.name}").symlink_to(part.resolve())
    build_bm25_index(
        collection,
        index,
        threads=settings.bm25.threads,
        heap=settings.bm25.heap,
        language=settings.bm25.language or snapshot_language(paths),
        progress=False,
    )
    return index


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--snapshot", default=None)
    parser.add_argument("--questions", type=int, default=1000)
    args = parser.parse_args()
    paths = resolve_snapshot(args.data_dir or params.data_dir(), args.snapshot)
    settings = IndexSettings.from_params(params.load_params().indexes)
    started = time.perf_counter()
    index = joint_index(paths, settings)
    log(f"joint index over both collections in {time.perf_counter() - started:.1f}s")
    questions = nq_questions(args.questions)
    pages = page_texts(snapshot_rows(paths))
    with Retriever(paths, settings) as retriever, Bm25Searcher(index, settings.bm25) as joint:

        def merged(queries: list[str], k: int) -> list[list[Any]]:
            return retriever.batch_search("bm25", queries, k, with_text=True, collection="both")

        def one_index(queries: list[str], k: int) -> list[list[Any]]:
            return retriever.with_text(joint.batch_search(queries, k, with_text=True))

        ours, theirs = merged(questions, 10), one_index(questions, 10)
        overlap = [
            len({h.passage_id for h in a} & {h.passage_id for h in b}) / max(len(b), 1)
            for a, b in zip(ours, theirs, strict=True)
            if b
        ]
        identical = sum(
            [h.passage_id for h in a] == [h.passage_id for h in b] for a, b in zip(ours, theirs, strict=True)
        )
        structured_share = {
            name: sum(passage_kind(h.passage_id) != "text" for hits in ranked for h in hits)
            / max(sum(len(hits) for hits in ranked), 1)
            for name, ranked in (("merged", ours), ("one_index", theirs))
        }
        answers = {}
        for name in TOPICS:
            asked = page_questions(read_topics(name)[0], pages)
            answers[name] = {
                "page_questions": len(asked),
                "merged": answer_scores(asked, merged),
                "one_index": answer_scores(asked, one_index),
            }
    results = {
        "machine": machine_info(),
        "snapshot": paths.snapshot_id,
        "nq_questions": len(questions),
        "top10_overlap_mean": round(sum(overlap) / max(len(overlap), 1), 4),
        "top10_identical": identical,
        "structured_share_of_top10": {k: round(v, 4) for k, v in structured_share.items()},
        "page_questions": answers,
    }
    write_results("structured_merge", results)
    log(
        f"NQ dev {len(questions):,}: top-10 overlap {results['top10_overlap_mean']:.3f}, identical "
        f"{identical:,}; structured in the top 10: merged {structured_share['merged']:.3f}, one index "
        f"{structured_share['one_index']:.3f}"
    )
    for name, scores in answers.items():
        log(
            f"{name} ({scores['page_questions']} page questions): merged {scores['merged']}, "
            f"one index {scores['one_index']}"
        )


if __name__ == "__main__":
    main()
