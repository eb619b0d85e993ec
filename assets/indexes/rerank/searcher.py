"""The ``rerank`` index type's searcher: Re2G's retrieve-then-rerank over the retriever's bm25 and dense.

Pure module: no Dagster import.
"""

from __future__ import annotations

from collections.abc import Sequence

from assets.indexes.hits import Hit
from assets.indexes.registry import SearchContext
from assets.indexes.rerank.cross_encoder import CrossEncoderReranker, candidate_pool

__all__ = ["RerankSearcher"]


class RerankSearcher:
    """The ``rerank`` index: the context's ``bm25`` and ``dense`` searchers give ``indexes.rerank.depth``
    candidates each, the cross-encoder of ``indexes.rerank`` orders their union."""

    def __init__(self, context: SearchContext, parts: tuple[str, ...] = ("bm25", "dense")) -> None:
        settings = context.settings.rerank
        self.context = context
        self.parts = [context.searcher(name) for name in parts]
        self.depth = settings.depth
        self.reranker = CrossEncoderReranker(
            settings.model,
            device=settings.device or context.settings.dense.device,
            precision=settings.precision,
            batch_size=settings.batch_size,
            max_length=settings.max_length,
        )

    @classmethod
    def open(cls, context: SearchContext) -> RerankSearcher:
        """The reranker over the context's bm25 and dense searchers (its ``open`` as a
        :class:`~assets.indexes.registry.SearcherType`)."""
        return cls(context)

    def pools(self, queries: Sequence[str], *, threads: int | None = None) -> list[list[Hit]]:
        """Each query's candidate pool with title and text (what the cross-encoder scores)."""
        rankings = [
            part.batch_search(queries, self.depth, threads=threads, with_text=True) for part in self.parts
        ]
        pools = [candidate_pool(per_query) for per_query in zip(*rankings, strict=True)]
        return self.context.with_text(pools)

    def batch_search(
        self, queries: Sequence[str], k: int, *, threads: int | None = None, with_text: bool = False
    ) -> list[list[Hit]]:
        return self.reranker.rerank(queries, self.pools(queries, threads=threads), k)

    def close(self) -> None:  # the parts belong to the retriever, which closes them
        self.parts = []
        self.reranker = None
