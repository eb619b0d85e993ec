"""Dense retrieval: sentence-transformers or DPR embeddings searched with FAISS.

* :mod:`~assets.indexes.dense.encoders`: the encoders, one module per backend;
* :mod:`~assets.indexes.dense.embeddings`: the embeddings directory (layout, manifest, reading);
* :mod:`~assets.indexes.dense.encoding`: sharded, resumable, incremental encoding (the ``dense_index``
  asset's steps), with :mod:`~assets.indexes.dense.embedding_reuse` for unchanged passages;
* :mod:`~assets.indexes.dense.faiss_index`: FAISS indices, whole or assembled from per-shard parts;
* :mod:`~assets.indexes.dense.build`: all of it in one call (:func:`build_dense`);
* :mod:`~assets.indexes.dense.searcher`: :class:`DenseSearcher`, the ``dense`` index type's searcher;
* :mod:`~assets.indexes.dense.settings`: :class:`DenseSettings` (``indexes.dense``).
"""

from __future__ import annotations

from operator import attrgetter

from assets.indexes.dense.budget import BUDGET_PREFIX, budget_factory, factory_bytes
from assets.indexes.dense.build import (
    DenseBuild,
    build_dense,
    build_dense_over,
    dense_documents,
    has_embeddings,
)
from assets.indexes.dense.embedding_reuse import ReuseSource
from assets.indexes.dense.embeddings import (
    MANIFEST,
    Embeddings,
    EmbeddingsMismatch,
    EncodeReport,
    write_embeddings,
)
from assets.indexes.dense.encoding import (
    EmbeddingPlan,
    EmbeddingShard,
    ShardResult,
    encode_embedding_shard,
    encode_passages,
    finish_embeddings,
    plan_embedding_shards,
)
from assets.indexes.dense.faiss_index import (
    DOCIDS_FILE,
    INDEX_FILE,
    INDEX_META,
    LEGACY_FILES,
    FaissTuning,
    IndexReport,
    add_shard_to_faiss,
    build_faiss_index,
    faiss_gpus,
    merge_faiss_shards,
    train_faiss_index,
)
from assets.indexes.dense.searcher import DenseSearcher
from assets.indexes.dense.settings import DenseSettings
from assets.indexes.registry import SearcherType

__all__ = [
    "BUDGET_PREFIX",
    "DENSE",
    "DOCIDS_FILE",
    "INDEX_FILE",
    "INDEX_META",
    "LEGACY_FILES",
    "MANIFEST",
    "DenseBuild",
    "DenseSearcher",
    "DenseSettings",
    "EmbeddingPlan",
    "EmbeddingShard",
    "Embeddings",
    "EmbeddingsMismatch",
    "EncodeReport",
    "FaissTuning",
    "IndexReport",
    "ReuseSource",
    "ShardResult",
    "add_shard_to_faiss",
    "budget_factory",
    "build_dense",
    "build_faiss_index",
    "encode_embedding_shard",
    "encode_passages",
    "factory_bytes",
    "faiss_gpus",
    "finish_embeddings",
    "merge_faiss_shards",
    "plan_embedding_shards",
    "train_faiss_index",
    "write_embeddings",
]

DENSE = SearcherType(
    "dense",
    "dense embeddings + FAISS",
    DenseSearcher.open,
    asset="dense_index",
    index_dir=attrgetter("dense_index"),
    build=build_dense_over,
    reusable=has_embeddings,
    documents=dense_documents,
    sources=("assets/indexes/dense",),
    dvc_outs=("dense/embeddings/", "dense/faiss"),
)
"""The ``dense`` index type (registered by :mod:`assets.indexes`)."""
