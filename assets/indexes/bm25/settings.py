"""How the BM25 index is built and searched: ``indexes.bm25`` of params.yaml."""

from __future__ import annotations

from assets import params

__all__ = ["Bm25Settings"]


class Bm25Settings(params.Bm25Params):
    """``indexes.bm25``: the params section itself (its fields, defaults and docstrings are
    :class:`assets.params.Bm25Params`'s), as the ``bm25`` index type takes it."""
