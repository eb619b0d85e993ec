"""How the rerank index scores its candidates: ``indexes.rerank`` of params.yaml."""

from __future__ import annotations

from assets import params

__all__ = ["RerankSettings"]


class RerankSettings(params.RerankParams):
    """``indexes.rerank``: the params section itself (:class:`assets.params.RerankParams`), as the
    ``rerank`` index type takes it."""
