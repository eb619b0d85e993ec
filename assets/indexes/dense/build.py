"""Building a snapshot's dense index in one step: encode its passages, then build the FAISS index from
them (:func:`build_dense`; the ``dense_index`` asset runs the same steps shard by shard).

Pure module: no Dagster import.
"""

from __future__ import annotations

from dataclasses import dataclass

from assets.indexes.dense.embedding_reuse import ReuseSource
from assets.indexes.dense.embeddings import EncodeReport
from assets.indexes.dense.encoders import Encoder, encode_devices
from assets.indexes.dense.encoding import encode_passages
from assets.indexes.dense.faiss_index import IndexReport, build_faiss_index
from assets.indexes.dense.settings import DenseSettings
from assets.storage import SnapshotPaths

__all__ = ["DenseBuild", "build_dense"]


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
