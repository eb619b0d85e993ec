"""Dense retrieval over the passages: the searcher, and one place to import the dense stack from.

The work is done in three modules: :mod:`assets.indexes.embeddings` (the embeddings directory: layout,
manifest, reading), :mod:`assets.indexes.encoding` (sharded, resumable, incremental encoding: the
``dense_index`` asset's steps) and :mod:`assets.indexes.faiss_index` (FAISS indices, whole or assembled
from per-shard parts). This module searches an index (:class:`DenseSearcher`) and re-exports their public
names.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa

from assets.indexes.embedding_reuse import ReuseSource
from assets.indexes.embeddings import (
    EMBEDDINGS_FORMAT,
    MANIFEST,
    Embeddings,
    EmbeddingsMismatch,
    EncodeReport,
    encoder_identity,
    passage_files,
    read_manifest,
    source_fingerprint,
    write_embeddings,
)
from assets.indexes.encoder_options import query_side_mismatch
from assets.indexes.encoders import Encoder, encode_query_batch, encoder_description
from assets.indexes.encoding import (
    BATCH_DEPENDENT_BACKENDS,
    EmbeddingPlan,
    EmbeddingShard,
    ShardResult,
    encode_embedding_shard,
    encode_passages,
    finish_embeddings,
    plan_embedding_shards,
    read_passage_rows,
)
from assets.indexes.faiss_index import (
    DOCIDS_FILE,
    INDEX_FILE,
    INDEX_FORMAT,
    INDEX_META,
    LEGACY_FILES,
    IndexReport,
    add_shard_to_faiss,
    build_faiss_index,
    default_train_sample,
    faiss_module,
    hnsw_of,
    index_files,
    ivf_of,
    merge_faiss_shards,
    train_faiss_index,
)
from assets.indexes.hits import Hit, wikipedia_id_of
from assets.storage import read_report_json

__all__ = [
    "BATCH_DEPENDENT_BACKENDS",
    "DOCIDS_FILE",
    "EMBEDDINGS_FORMAT",
    "INDEX_FILE",
    "INDEX_FORMAT",
    "INDEX_META",
    "LEGACY_FILES",
    "MANIFEST",
    "DenseSearcher",
    "EmbeddingPlan",
    "EmbeddingShard",
    "Embeddings",
    "EmbeddingsMismatch",
    "EncodeReport",
    "IndexReport",
    "ReuseSource",
    "ShardResult",
    "add_shard_to_faiss",
    "build_faiss_index",
    "default_train_sample",
    "encode_embedding_shard",
    "encode_passages",
    "encoder_identity",
    "finish_embeddings",
    "index_files",
    "merge_faiss_shards",
    "passage_files",
    "plan_embedding_shards",
    "read_docids",
    "read_manifest",
    "read_passage_rows",
    "source_fingerprint",
    "train_faiss_index",
    "write_embeddings",
]


def read_docids(path: str | os.PathLike[str]) -> pa.Array:
    """The row -> passage id table as a compact Arrow string array (one id per line)."""
    import pyarrow.csv as csv

    table = csv.read_csv(
        path,
        read_options=csv.ReadOptions(column_names=["passage_id"], block_size=1 << 24),
        parse_options=csv.ParseOptions(delimiter="\t", quote_char=False, escape_char=False),
        convert_options=csv.ConvertOptions(column_types={"passage_id": pa.string()}),
    )
    return table.column("passage_id").combine_chunks()


class DenseSearcher:
    """Search an index directory with queries encoded by ``encoder`` (the model the passages used)."""

    def __init__(
        self,
        index_dir: str | os.PathLike[str],
        encoder: Encoder | None = None,
        *,
        nprobe: int | None = None,
        ef_search: int | None = None,
        params: str = "",
        mmap: bool = False,
        threads: int | None = None,
    ) -> None:
        faiss = faiss_module()
        if threads:
            faiss.omp_set_num_threads(threads)
        self.index_dir = Path(index_dir)
        self.meta = read_report_json(self.index_dir / INDEX_META)
        flags = faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY if mmap else 0
        index_file, docids_file = index_files(self.index_dir)
        self.index = faiss.read_index(str(index_file), flags)
        self.docids = read_docids(docids_file)
        if len(self.docids) != self.index.ntotal:
            raise RuntimeError(f"{self.index_dir}: {len(self.docids)} docids for {self.index.ntotal} vectors")
        self.encoder = encoder
        if encoder is not None:
            if int(encoder.dimension) != int(self.meta["dimension"]):
                raise ValueError(
                    f"encoder dimension {encoder.dimension} != index dimension {self.meta['dimension']}"
                )
            if encoder.name != self.meta["model"]:
                raise ValueError(f"index was built with {self.meta['model']!r}, encoder is {encoder.name!r}")
            index_encoder = self.meta.get("encoder")
            differing = (
                query_side_mismatch(index_encoder, encoder_description(encoder)) if index_encoder else []
            )
            if differing:
                raise ValueError(
                    f"{self.index_dir}: queries would not be encoded as the index's passages were "
                    f"({'; '.join(differing)}); load the encoder with the index's settings"
                )
        self._ivf = ivf_of(self.index)
        self._hnsw = hnsw_of(self.index)
        if nprobe is not None:
            self.nprobe = nprobe
        if ef_search is not None:
            self.ef_search = ef_search
        self.set_params(params)

    @property
    def count(self) -> int:
        return int(self.index.ntotal)

    @property
    def nprobe(self) -> int | None:
        return int(self._ivf.nprobe) if self._ivf is not None else None

    @nprobe.setter
    def nprobe(self, value: int) -> None:
        if self._ivf is None:
            raise ValueError(f"{self.meta['factory']!r} is not an IVF index: nprobe does not apply")
        self._ivf.nprobe = int(value)

    @property
    def ef_search(self) -> int | None:
        return int(self._hnsw.efSearch) if self._hnsw is not None else None

    @ef_search.setter
    def ef_search(self, value: int) -> None:
        if self._hnsw is None:
            raise ValueError(f"{self.meta['factory']!r} has no HNSW graph: efSearch does not apply")
        self._hnsw.efSearch = int(value)

    def set_params(self, params: str) -> None:
        """FAISS ``ParameterSpace`` settings, e.g. ``"nprobe=32"``, ``"efSearch=128"``, ``"k_factor=4"``."""
        if params:
            faiss_module().ParameterSpace().set_index_parameters(self.index, params)

    def encode_queries(self, queries: Sequence[str]) -> np.ndarray:
        if self.encoder is None:
            raise ValueError("this searcher has no encoder: pass one, or use search_vectors")
        # int8 ONNX quantizes activations per batch: one query per batch keeps a query's vector (and its
        # results) independent of the other queries it is searched with
        batch_size = 1 if self.encoder.backend in BATCH_DEPENDENT_BACKENDS else None
        return encode_query_batch(self.encoder, list(queries), batch_size=batch_size)

    def search_vectors(self, vectors: np.ndarray, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
        """Raw FAISS ``(scores, rows)`` for float32 query vectors ``[n, d]`` (row -1 = no result)."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim == 1:
            vectors = vectors[None, :]
        return self.index.search(vectors, k)

    def hits_for(self, scores: np.ndarray, rows: np.ndarray) -> list[list[Hit]]:
        results = []
        for score_row, id_row in zip(scores, rows, strict=True):
            found = id_row >= 0  # FAISS pads with -1 when fewer than k vectors were found
            pids = self.docids.take(pa.array(id_row[found], pa.int64())).to_pylist()
            scores_found = score_row[found].tolist()
            results.append([Hit(p, wikipedia_id_of(p), s) for p, s in zip(pids, scores_found, strict=True)])
        return results

    def search(self, query: str, k: int = 10) -> list[Hit]:
        return self.batch_search([query], k)[0]

    def batch_search(self, queries: Sequence[str], k: int = 10) -> list[list[Hit]]:
        if not queries:
            return []
        scores, rows = self.search_vectors(self.encode_queries(queries), k)
        return self.hits_for(scores, rows)
