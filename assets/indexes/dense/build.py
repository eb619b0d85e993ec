"""Building a snapshot's dense index in one step: encode its passages, then build the FAISS index from
them (:func:`build_dense`; the ``dense_index`` asset runs the same steps shard by shard).

Pure module: no Dagster import.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assets.indexes.dense.embedding_reuse import ReuseSource
from assets.indexes.dense.embeddings import EncodeReport
from assets.indexes.dense.encoders import Encoder, encode_devices
from assets.indexes.dense.encoding import encode_passages
from assets.indexes.dense.faiss_index import IndexReport, build_faiss_index
from assets.indexes.dense.settings import DenseSettings
from assets.indexes.registry import BuiltIndex
from assets.storage import SnapshotPaths

__all__ = ["DenseBuild", "build_dense", "build_dense_over", "dense_documents", "has_embeddings"]


@dataclass(slots=True)
class DenseBuild:
    """What :func:`build_dense` did: the encode and the FAISS index reports."""

    encode: EncodeReport
    index: IndexReport


def build_dense(
    paths: SnapshotPaths,
    settings: DenseSettings,
    *,
    progress: bool = False,
    encoder: Encoder | None = None,
    reuse_from: SnapshotPaths | None = None,
) -> DenseBuild:
    """Encode the passages (resuming finished shards) and build the FAISS index from them.

    Embeddings made with another model, backend or input are discarded, not mixed. ``reuse_from``: an
    earlier snapshot whose vectors are copied for passages with the same id and text (when its
    embeddings were made with the same model and backend; the encode report says why not otherwise).
    """
    devices = encode_devices(settings.device) if encoder is None and settings.backend == "torch" else []
    encoder = encoder or settings.load_encoder(devices[0] if devices else None)
    reuse = ReuseSource(reuse_from.passages_parquet, reuse_from.dense_embeddings) if reuse_from else None
    encoded = encode_passages(
        paths.passages_parquet,
        paths.dense_embeddings,
        encoder,
        settings.shard_size,
        batch_size=settings.batch_size,
        progress=progress,
        on_mismatch="restart",
        reuse_from=reuse,
        devices=devices,
    )
    index = build_faiss_index(
        paths.dense_embeddings,
        paths.dense_index,
        settings.factory,
        settings.metric,
        train_sample=settings.train_sample,
        search_params=settings.search_params,
        gpu=settings.faiss_gpu,
    )
    return DenseBuild(encoded, index)


def build_dense_over(
    paths: SnapshotPaths, settings: Any, *, progress: bool = False, reuse_from: SnapshotPaths | None = None
) -> BuiltIndex:
    """The ``dense`` index type's build over a collection's passages (its ``SearcherType.build``;
    ``settings``: the :class:`~assets.indexes.settings.IndexSettings`, whose dense model is that of the
    snapshot's language)."""
    dense = build_dense(paths, settings.dense.for_snapshot(paths), progress=progress, reuse_from=reuse_from)
    return BuiltIndex(dense.index.vectors, dense.encode.encoded_passages, dense.encode.reused_passages)


def has_embeddings(paths: SnapshotPaths) -> bool:
    """Whether the snapshot (or a collection's view of it) has vectors a later build can reuse."""
    return paths.dense_embeddings.is_dir()


def dense_documents(index_dir: Path) -> int:
    """The vectors the FAISS index in ``index_dir`` holds (FAISS's own count, memory-mapped)."""
    from assets.indexes.dense.searcher import DenseSearcher

    return int(DenseSearcher(index_dir, mmap=True).index.ntotal)
