"""How the hybrid index fuses BM25 and dense: ``indexes.hybrid`` of params.yaml."""

from __future__ import annotations

from assets import params

__all__ = ["HybridSettings"]


class HybridSettings(params.HybridParams):
    """``indexes.hybrid``: the params section itself (:class:`assets.params.HybridParams`), as the
    ``hybrid`` index type takes it."""
