"""What the indices' blocking asset checks measure: self-retrieval (sampled passages found by their first
sentence) and the approximate dense index's recall against exact search.

Pure module: no Dagster import.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from assets.indexes.dense import Embeddings
from assets.indexes.retriever import Retriever
from assets.params import CHECK_SEED, RECALL_QUERIES, SELF_RETRIEVAL_SAMPLE
from assets.storage import SnapshotPaths, sql_literal

__all__ = [
    "EXACT_FACTORIES",
    "RecallResult",
    "SelfRetrieval",
    "approximate_recall",
    "exact_top_k",
    "first_sentence",
    "passage_count",
    "recall_against_exact",
    "sample_passages",
    "self_retrieval",
]

EXACT_FACTORIES = frozenset({"Flat", "IDMap,Flat", "FlatIP", "FlatL2"})


def passage_count(paths: SnapshotPaths) -> int:
    """Passages of the snapshot, from the passages stage's report."""
    return int(json.loads(paths.passages_report.read_text())["passages"])


_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+")


def first_sentence(text: str, min_words: int = 4) -> str:
    """The passage's first full sentence of at least ``min_words`` words (a passage that opens
    mid-sentence, e.g. ``"law practice. He ..."``, skips that fragment); the whole text when none."""
    parts = _SENTENCE_BREAK.split(text.strip())
    if len(parts) > 1 and parts[0][:1].islower():
        parts = parts[1:]
    return next((p for p in parts if len(p.split()) >= min_words), text.strip())


def sample_passages(paths: SnapshotPaths, size: int, seed: int = CHECK_SEED) -> list[tuple[str, str]]:
    """``size`` ``(passage_id, text)`` drawn uniformly (reservoir sample, streamed; sorted by id)."""
    import duckdb

    con = duckdb.connect()
    try:
        rows = con.execute(
            f"SELECT passage_id, text FROM read_parquet({sql_literal(paths.passages_glob)}) "
            f"USING SAMPLE reservoir({int(size)} ROWS) REPEATABLE ({int(seed)})"
        ).fetchall()
    finally:
        con.close()
    return sorted(rows)


@dataclass(slots=True)
class SelfRetrieval:
    """How many sampled passages are in the top ``k`` when queried with their first sentence. A sentence
    that other passages hold word for word (boilerplate, stubs of one mould, copied paragraphs) does not
    single its passage out: a hit that holds the sentence is its evidence as well, and counts as found
    (``found_as_duplicate`` of ``found``). A broken index (ids and vectors or documents out of step) still
    fails: its hits do not hold the sentence."""

    index: str
    queried: int
    found: int
    k: int
    seconds: float
    found_as_duplicate: int = 0
    misses: list[dict[str, Any]] = field(default_factory=list)  # the first 20, for the report

    @property
    def fraction(self) -> float:
        return self.found / self.queried if self.queried else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "fraction": self.fraction}


def self_retrieval(
    retriever: Retriever,
    index: str,
    *,
    sample: int = SELF_RETRIEVAL_SAMPLE,
    seed: int = CHECK_SEED,
    k: int = 10,
) -> SelfRetrieval:
    """Query ``sample`` random passages by their first sentence on ``index``; count own-passage hits."""
    started = time.perf_counter()
    passages = sample_passages(retriever.paths, sample, seed)
    queries = [first_sentence(text) for _, text in passages]
    results = retriever.batch_search(index, queries, k, with_text=True)
    found, duplicates, misses = 0, 0, []
    for (passage_id, _), query, hits in zip(passages, queries, results, strict=True):
        if any(h.passage_id == passage_id for h in hits):
            found += 1
        elif any(query in (h.text or "") for h in hits):
            found, duplicates = found + 1, duplicates + 1
        elif len(misses) < 20:
            misses.append({"passage_id": passage_id, "query": query, "top": [h.passage_id for h in hits[:3]]})
    seconds = round(time.perf_counter() - started, 2)
    return SelfRetrieval(index, len(passages), found, k, seconds, duplicates, misses)


@dataclass(slots=True)
class RecallResult:
    """recall@k of the configured FAISS index against exact inner-product search on the same queries."""

    factory: str
    exact_index: bool
    queries: int
    k: int
    recall: float
    search_params: str


def exact_top_k(embeddings_dir: Path, queries: np.ndarray, k: int) -> np.ndarray:
    """Row numbers of the exact top ``k`` inner products (as a set per query, in no particular order),
    streamed shard by shard (bounded memory)."""
    embeddings = Embeddings.open(embeddings_dir)
    best_scores = np.full((len(queries), 0), -np.inf, dtype=np.float32)
    best_rows = np.zeros((len(queries), 0), dtype=np.int64)
    offset = 0
    for shard in embeddings.shard_arrays():
        scores = queries @ np.asarray(shard, dtype=np.float32).T
        rows = np.broadcast_to(np.arange(offset, offset + shard.shape[0]), scores.shape)
        scores = np.concatenate([best_scores, scores], axis=1)
        rows = np.concatenate([best_rows, rows], axis=1)
        if scores.shape[1] > k:  # a partial selection: the callers compare sets, not orders
            top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
            scores, rows = np.take_along_axis(scores, top, axis=1), np.take_along_axis(rows, top, axis=1)
        best_scores, best_rows = scores, np.ascontiguousarray(rows)
        offset += shard.shape[0]
    return best_rows


def recall_against_exact(searcher: Any, embeddings_dir: Path, vectors: np.ndarray, k: int = 10) -> float:
    """Mean |approximate top-k ∩ exact top-k| / k of a :class:`DenseSearcher` over query ``vectors``;
    ``k`` is at most the number of vectors (an index of 3 vectors has 3, not 10, to find)."""
    k = min(k, searcher.count)
    if k == 0:
        raise ValueError("the dense index holds no vectors: recall is undefined")
    _, approx = searcher.search_vectors(vectors, k)
    exact = exact_top_k(embeddings_dir, vectors, k)
    overlaps = [
        len(set(a[a >= 0].tolist()) & set(e.tolist())) / k for a, e in zip(approx, exact, strict=True)
    ]
    return float(np.mean(overlaps)) if overlaps else 0.0


def approximate_recall(
    retriever: Retriever, *, queries: int = RECALL_QUERIES, seed: int = CHECK_SEED, k: int = 10
) -> RecallResult:
    """recall@k of the snapshot's dense index on first-sentence queries of sampled passages; an exact
    factory is measured too (it must come out at 1.0)."""
    searcher = retriever.dense
    texts = [first_sentence(text) for _, text in sample_passages(retriever.paths, queries, seed)]
    vectors = searcher.encode_queries(texts)
    factory = str(searcher.meta["factory"])
    return RecallResult(
        factory=factory,
        exact_index=factory.replace(" ", "") in EXACT_FACTORIES,
        queries=len(texts),
        k=min(k, searcher.count),
        recall=recall_against_exact(searcher, retriever.paths.dense_embeddings, vectors, k),
        search_params=retriever.settings.dense.search_params or searcher.meta.get("search_params") or "",
    )
