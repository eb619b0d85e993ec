"""A snapshot's indices: a package per index type, one retriever over them.

* :mod:`~assets.indexes.bm25`, :mod:`~assets.indexes.dense`: the indices a build makes (each: building, its
  searcher, its settings); :mod:`~assets.indexes.hybrid`, :mod:`~assets.indexes.rerank`: searchers over those
  two;
* :mod:`~assets.indexes.registry`: the index types (:class:`SearcherType`); the four above are registered
  here, in this order, and a new one is its module, its Dagster asset and one :func:`register_searcher`;
* :mod:`~assets.indexes.retriever`: :class:`Retriever`, every index type of one snapshot;
* :mod:`~assets.indexes.settings`: :class:`IndexSettings`, one typed settings object per index type;
* :mod:`~assets.indexes.evaluation.scoring`: KILT's metrics, the evaluation and the checks' measures;
* :mod:`~assets.indexes.serving`: the HTTP search API;
* :mod:`~assets.indexes.runs` (topics in, runs out), :mod:`~assets.indexes.hits` (the one result type) and
  :mod:`~assets.indexes.reproducibility` (what a rebuild on another CPU must reproduce).

Nothing heavy is imported here: the JVM, FAISS and torch load when a searcher opens.
"""

from __future__ import annotations

from assets.indexes.bm25 import BM25
from assets.indexes.dense import DENSE
from assets.indexes.hits import Hit
from assets.indexes.hybrid import HYBRID
from assets.indexes.registry import (
    SearcherType,
    get_searcher_type,
    index_names,
    register_searcher,
    searcher_types,
    unregister_searcher,
)
from assets.indexes.rerank import RERANK
from assets.indexes.retriever import Retriever
from assets.indexes.settings import IndexSettings

__all__ = [
    "Hit",
    "IndexSettings",
    "Retriever",
    "SearcherType",
    "get_searcher_type",
    "index_names",
    "register_searcher",
    "searcher_types",
    "unregister_searcher",
]

for _built_in in (BM25, DENSE, HYBRID, RERANK):
    register_searcher(_built_in)
