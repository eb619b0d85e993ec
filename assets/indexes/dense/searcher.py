"""Searching the dense index: :class:`DenseSearcher`, the ``dense`` index type's searcher (FAISS over the
snapshot's embeddings, queries encoded as the index's passages were).

Pure module: no Dagster import.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from assets.indexes.dense.encoders import (
    Encoder,
    EncoderOptions,
    encode_query_batch,
    encoder_description,
    load_encoder,
    query_side_mismatch,
    resolve_model,
)
from assets.indexes.dense.encoding import BATCH_DEPENDENT_BACKENDS
from assets.indexes.dense.faiss_index import INDEX_META, faiss_module, hnsw_of, index_files, ivf_of
from assets.indexes.dense.settings import DenseSettings
from assets.indexes.hits import Hit, wikipedia_id_of
from assets.indexes.registry import SearchContext
from assets.storage import read_report_json

__all__ = ["DenseSearcher", "read_docids", "settings_conflicts"]


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

    @classmethod
    def open(cls, context: SearchContext) -> DenseSearcher:
        """The searcher of a snapshot's dense index, its queries encoded the index's way (its model,
        backend, family, prompts, pooling and length); its ``open`` as a
        :class:`~assets.indexes.registry.SearcherType`."""
        paths, settings = context.paths, context.settings.dense
        meta_path = paths.dense_index / INDEX_META
        if not meta_path.is_file():
            raise FileNotFoundError(
                f"no dense index for snapshot {paths.snapshot_id}: build it with "
                "`kiltpipe build --select key:dense_index`"
            )
        meta = read_report_json(meta_path)  # with its run facts: a local model's absolute path
        # search parameters: the settings', else those the index was built with
        search_params = settings.search_params or meta.get("search_params") or ""
        return cls(paths.dense_index, index_encoder(paths.snapshot_id, meta, settings), params=search_params)

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
    def higher_is_better(self) -> bool:
        """Whether a larger score ranks first (inner product), or a smaller one (L2 distance)."""
        return int(self.index.metric_type) != int(faiss_module().METRIC_L2)

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
        # torch-int8 quantizes activations per batch: one query per batch keeps a query's vector (and its
        # results) independent of the other queries it is searched with (onnx int8 does this itself)
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

    def batch_search(
        self, queries: Sequence[str], k: int = 10, *, threads: int | None = None, with_text: bool = False
    ) -> list[list[Hit]]:
        """The top ``k`` hits of each query, in query order; a blank query has none (``threads`` and
        ``with_text``: the searcher protocol's; FAISS uses its OpenMP threads, and stores no text)."""
        keep = [i for i, query in enumerate(queries) if query and query.strip()]
        results: list[list[Hit]] = [[] for _ in queries]
        if keep:
            scores, rows = self.search_vectors(self.encode_queries([queries[i] for i in keep]), k)
            for i, hits in zip(keep, self.hits_for(scores, rows), strict=True):
                results[i] = hits
        return results

    def close(self) -> None:
        """Nothing to release but memory (the index and the encoder go with the searcher)."""


def index_encoder(snapshot_id: str, meta: dict[str, Any], settings: DenseSettings) -> Encoder:
    """The query encoder of an index whose manifest is ``meta``: the encoder it records, on the settings'
    device; an error when the settings name another (rebuild the index, or set ``indexes.dense`` back)."""
    description = meta.get("encoder")
    if not description:  # an index from before manifests recorded the encoder: the settings' options
        backend = meta.get("backend") or settings.backend
        return load_encoder(settings.model, backend, options=settings.encoder_options())
    conflicts = settings_conflicts(settings, description)
    if conflicts:
        raise ValueError(
            f"the dense index of snapshot {snapshot_id} was built with another encoder than the settings "
            f"name ({'; '.join(conflicts)}): rebuild it (`kiltpipe build --select key:dense_index`) or set "
            "indexes.dense back"
        )
    options = EncoderOptions.from_description(description, device=settings.device)
    if options.family == "dpr" and not options.query_model:  # its local path is a run fact too
        options = options.model_copy(update={"query_model": settings.query_model})
    model = description.get("model") or settings.model  # a local path is a run fact (index.run.json)
    return load_encoder(model, meta["backend"], settings.batch_size, options=options)


def settings_conflicts(settings: DenseSettings, description: dict[str, Any]) -> list[str]:
    """Where the dense settings (model, family, question encoder, and each option set explicitly) differ
    from the encoder an index manifest describes, as ``key: index value != settings value``."""
    wanted: dict[str, Any] = {"model": resolve_model(settings.model)[0], "family": settings.family}
    if settings.family == "dpr" and settings.query_model:
        wanted["query_model"] = resolve_model(settings.query_model)[0]
    for key in ("query_prompt", "passage_prompt", "pooling", "normalize", "max_length"):
        if getattr(settings, key) is not None:
            wanted[key] = getattr(settings, key)
    return [
        f"{key}: {description.get(key)!r} != {value!r}"
        for key, value in wanted.items()
        if key in description and description.get(key) != value
    ]
