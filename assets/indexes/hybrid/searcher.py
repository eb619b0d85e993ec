"""The ``hybrid`` index type's searcher: reciprocal-rank fusion of the retriever's bm25 and dense rankings.

Pure module: no Dagster import.
"""

from __future__ import annotations

from collections.abc import Sequence

from assets.indexes.hits import Hit
from assets.indexes.hybrid.fusion import reciprocal_rank_fusion
from assets.indexes.hybrid.settings import HybridSettings
from assets.indexes.registry import SearchContext, Searcher

__all__ = ["HybridSearcher"]


class HybridSearcher:
    """Reciprocal-rank fusion of ``parts`` (searchers of other index types; ``indexes.hybrid``)."""

    def __init__(self, parts: Sequence[Searcher], settings: HybridSettings) -> None:
        self.parts = list(parts)
        self.settings = settings

    @classmethod
    def open(cls, context: SearchContext, parts: tuple[str, ...] = ("bm25", "dense")) -> HybridSearcher:
        """The fusion of the context's searchers of ``parts``, with its ``indexes.hybrid`` settings."""
        return cls([context.searcher(name) for name in parts], context.settings.hybrid)

    def batch_search(
        self, queries: Sequence[str], k: int, *, threads: int | None = None, with_text: bool = False
    ) -> list[list[Hit]]:
        depth = max(k, self.settings.depth)
        rankings = [part.batch_search(queries, depth, threads=threads) for part in self.parts]
        fused = []
        for per_query in zip(*rankings, strict=True):
            by_id: dict[str, Hit] = {}
            for hits in reversed(per_query):
                by_id.update((hit.passage_id, hit) for hit in hits)
            ranking = reciprocal_rank_fusion(
                [[h.passage_id for h in hits] for hits in per_query],
                depth=depth,
                constant=self.settings.constant,
                k=k,
            )
            fused.append([Hit(pid, by_id[pid].wikipedia_id, score) for pid, score in ranking])
        return fused

    def close(self) -> None:  # the parts belong to the retriever, which closes them
        self.parts = []
