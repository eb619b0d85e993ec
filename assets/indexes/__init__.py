"""A snapshot's indices: a package per index type, one retriever over them.

* :mod:`~assets.indexes.bm25`, :mod:`~assets.indexes.dense`: the indices a build makes (each: building, its
  searcher, its settings); :mod:`~assets.indexes.hybrid`, :mod:`~assets.indexes.rerank`: searchers over those
  two;
* :mod:`~assets.indexes.registry`: the index types (:class:`SearcherType`); the four above are registered
  here, in this order, and a new one is its module, its Dagster asset and one :func:`register_searcher`;
* :mod:`~assets.indexes.retriever`: :class:`Retriever`, every index type of one snapshot;
* :mod:`~assets.indexes.settings`: :class:`IndexSettings`, one typed settings object per index type;
* :mod:`~assets.indexes.evaluation.scoring`: KILT's metrics, the evaluation and the checks' measures;
* the HTTP search API over these is :mod:`assets.reading.serving`, in the read package above the domains;
* :mod:`~assets.indexes.runs` (runs out; topics in: :mod:`assets.topics`), :mod:`~assets.indexes.hits` (the
  one result type) and :mod:`~assets.indexes.reproducibility` (what a rebuild on another CPU must reproduce).

Nothing heavy is imported here: the JVM, FAISS and torch load when a searcher opens.
"""

from __future__ import annotations

from assets.indexes.bm25 import BM25
from assets.indexes.collection_indexes import build_collection_indexes
from assets.indexes.collections import (
    ALL,
    DEFAULT_COLLECTION,
    TEXT,
    Collection,
    collection_built,
    collection_count,
    collection_names,
    collection_view,
    get_collection,
    indexed_collections,
    key_of,
    searcher_key,
    split_searcher_key,
)
from assets.indexes.dense import DENSE
from assets.indexes.hits import Hit, passage_kind
from assets.indexes.hybrid import HYBRID
from assets.indexes.registry import (
    SearcherType,
    get_searcher_type,
    index_build_problems,
    index_names,
    register_searcher,
    searcher_types,
    servable_types,
    unregister_searcher,
)
from assets.indexes.reproducibility import cpu_model, verify_rebuild, write_reference
from assets.indexes.rerank import RERANK
from assets.indexes.retriever import Retriever
from assets.indexes.runs import write_kilt_output, write_trec_run
from assets.indexes.settings import IndexSettings

__all__ = [
    "ALL",
    "DEFAULT_COLLECTION",
    "TEXT",
    "Collection",
    "Hit",
    "IndexSettings",
    "Retriever",
    "SearcherType",
    "build_collection_indexes",
    "collection_built",
    "collection_count",
    "collection_names",
    "collection_view",
    "cpu_model",
    "get_collection",
    "get_searcher_type",
    "index_build_problems",
    "index_names",
    "indexed_collections",
    "key_of",
    "passage_kind",
    "register_searcher",
    "searcher_key",
    "searcher_types",
    "servable_types",
    "split_searcher_key",
    "unregister_searcher",
    "verify_rebuild",
    "write_kilt_output",
    "write_reference",
    "write_trec_run",
]

for _built_in in (BM25, DENSE, HYBRID, RERANK):
    register_searcher(_built_in)
