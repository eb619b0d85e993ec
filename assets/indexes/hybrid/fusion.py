"""Hybrid retrieval: reciprocal-rank fusion of ranked lists (Re2G merges by summed inverse ranks)."""

from __future__ import annotations

from collections.abc import Sequence

from assets.params import HYBRID_DEPTH, RRF_CONSTANT


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]],
    *,
    depth: int = HYBRID_DEPTH,
    constant: float = RRF_CONSTANT,
    k: int = 10,
) -> list[tuple[str, float]]:
    """Fuse ranked doc-id lists: ``score(d) = sum over lists of 1 / (constant + rank(d))``.

    Only the first ``depth`` ids of each list take part; ``constant = 0`` is Re2G's plain sum of
    inverse ranks. Ties break by the best single rank, then by id, so the result is deterministic.
    """
    scores: dict[str, float] = {}
    best_rank: dict[str, int] = {}
    for ranking in rankings:
        for rank, doc_id in enumerate(ranking[:depth], start=1):
            scores[doc_id] = scores.get(doc_id, 0.0) + 1.0 / (constant + rank)
            best_rank[doc_id] = min(best_rank.get(doc_id, rank), rank)
    fused = sorted(scores.items(), key=lambda item: (-item[1], best_rank[item[0]], item[0]))
    return fused[:k]
