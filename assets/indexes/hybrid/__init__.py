"""Hybrid retrieval: reciprocal-rank fusion of bm25 and dense.

Re2G merges by summed inverse ranks: :func:`reciprocal_rank_fusion`, the ``hybrid`` index type's
:class:`HybridSearcher` and its :class:`HybridSettings` (``indexes.hybrid``). It builds no index of its
own.
"""

from __future__ import annotations

from assets.indexes.hybrid.fusion import reciprocal_rank_fusion
from assets.indexes.hybrid.searcher import HybridSearcher
from assets.indexes.hybrid.settings import HybridSettings
from assets.indexes.registry import SearcherType

__all__ = [
    "HYBRID",
    "HybridSearcher",
    "HybridSettings",
    "reciprocal_rank_fusion",
]

HYBRID = SearcherType(
    "hybrid",
    "reciprocal-rank fusion of bm25 and dense",
    HybridSearcher.open,
    searches=("bm25", "dense"),
    sources=("assets/indexes/hybrid",),
)
"""The ``hybrid`` index type (registered by :mod:`assets.indexes`)."""
