"""Re2G's retrieve-then-rerank: a cross-encoder over bm25 and dense candidates.

The candidates of a query are scored together (:class:`CrossEncoderReranker`); the ``rerank`` index
type's :class:`RerankSearcher` and its :class:`RerankSettings` (``indexes.rerank``). It builds no index
of its own, and loads a model of its own, so ``kiltpipe serve`` serves it only when asked.
"""

from __future__ import annotations

from assets.indexes.registry import SearcherType
from assets.indexes.rerank.cross_encoder import CrossEncoderReranker, candidate_pool
from assets.indexes.rerank.searcher import RerankSearcher
from assets.indexes.rerank.settings import RerankSettings

__all__ = [
    "RERANK",
    "CrossEncoderReranker",
    "RerankSearcher",
    "RerankSettings",
    "candidate_pool",
]

RERANK = SearcherType(
    "rerank",
    "cross-encoder rerank of the bm25 + dense candidates (Re2G)",
    RerankSearcher.open,
    searches=("bm25", "dense"),
    served_by_default=False,
    sources=("assets/indexes/rerank",),
)
"""The ``rerank`` index type (registered by :mod:`assets.indexes`)."""
