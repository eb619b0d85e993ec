"""Embeddings directories: their layout, their manifest, reading them, and writing vectors made elsewhere.

Layout of an embeddings directory (written by :func:`assets.indexes.dense.encoding.encode_passages` or the
``dense_index`` asset's shard steps)::

    manifest.json        model name, backend, dimension, source fingerprint, finished shards
    emb-00000.npy        float32 [rows, dimension], L2-normalised, one file per shard
    ids-00000.txt        the shard's passage ids, one per line, in row order

Every shard file is written under a temporary name and renamed. A resume with another model, backend,
dimension, shard size or input refuses (``on_mismatch="error"``) or starts over (``"restart"``), never mixes.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from assets.files import atomic_path, write_json_atomic
from assets.indexes.dense.encoders import Encoder

EMBEDDINGS_FORMAT = 2  # 2: the manifest records the encoder's description (family, prompts, pooling, ...)


MANIFEST = "manifest.json"


class EmbeddingsMismatch(ValueError):
    """An embeddings directory holds shards made by another model/backend/input: will not mix them."""


@dataclass(slots=True)
class EncodeReport:
    passages: int
    shards: int
    resumed_shards: int  # finished shards found and kept from an earlier (interrupted) run
    encoded_passages: int  # passages encoded by this run
    dimension: int
    model: str
    backend: str
    seconds: float
    passages_per_second: float  # of this run's encoding
    out_dir: str
    reused_passages: int = 0  # passages whose vector this run copied from ``reuse_from``
    reuse_source: str | None = None  # embeddings directory vectors were copied from
    reuse_skipped: str | None = None  # why a given ``reuse_from`` was not used
    devices: list[str] = field(default_factory=list)  # where the shards were encoded
    encoder: dict[str, Any] = field(default_factory=dict)  # the encoder's description (manifest)

    def metadata(self) -> dict[str, Any]:
        """What the ``dense_index`` asset shows of the encode in the Dagster UI (plain values)."""
        return {
            "embeddings_path": Path(self.out_dir),
            "model": self.model,
            "backend": self.backend,
            "dimension": self.dimension,
            "passages": self.passages,
            "encoded_passages": self.encoded_passages,
            "reused_passages": self.reused_passages,
            "reuse_ratio": float(round(self.reused_passages / max(self.passages, 1), 4)),
            "reuse_skipped": self.reuse_skipped or "",
            "resumed_shards": self.resumed_shards,
            "shards": self.shards,
            "encode_seconds": float(round(self.seconds, 2)),
            "passages_per_second": float(round(self.passages_per_second, 1)),
            "encode_devices": ", ".join(self.devices) or "none (every shard resumed or reused)",
            "encoder": {k: "" if v is None else v for k, v in self.encoder.items()},
        }


def passage_files(passages_dir: str | os.PathLike[str]) -> list[Path]:
    """The ``part-*.parquet`` shards of a passages directory, in name order."""
    directory = Path(passages_dir)
    files = sorted(directory.glob("part-*.parquet")) or sorted(directory.glob("*.parquet"))
    if not files:
        raise FileNotFoundError(f"no part-*.parquet passages under {directory}")
    return files


def source_fingerprint(files: Sequence[Path]) -> dict[str, Any]:
    """Names, sizes and row counts of the input shards (what a resume must find unchanged)."""
    entries = []
    for path in files:
        entries.append(
            {"name": path.name, "bytes": path.stat().st_size, "rows": pq.ParquetFile(path).metadata.num_rows}
        )
    return {"files": entries, "rows": sum(e["rows"] for e in entries)}


def shard_names(index: int) -> tuple[str, str]:
    return f"emb-{index:05d}.npy", f"ids-{index:05d}.txt"


def save_npy_atomic(path: Path, array: np.ndarray) -> None:
    with atomic_path(path) as temp, open(temp, "wb") as handle:  # a handle: np.save adds no suffix
        np.save(handle, array)


def save_text_atomic(path: Path, lines: Sequence[str]) -> None:
    with atomic_path(path) as temp:
        temp.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


def read_manifest(directory: str | os.PathLike[str]) -> dict[str, Any] | None:
    path = Path(directory) / MANIFEST
    return json.loads(path.read_text()) if path.is_file() else None


def encoder_identity(encoder: Encoder) -> tuple[str, str, int]:
    """What an embeddings manifest records of the encoder: model, backend, dimension."""
    return encoder.name, encoder.backend, int(encoder.dimension)


def expected_manifest(
    identity: tuple[str, str, int], shard_size: int, fingerprint: dict[str, Any], encoder: dict[str, Any]
) -> dict[str, Any]:
    """The manifest of embeddings made by an encoder of this ``identity`` and ``encoder`` description."""
    model, backend, dimension = identity
    return {
        "format": EMBEDDINGS_FORMAT,
        "model": model,
        "backend": backend,
        "dimension": dimension,
        "dtype": "float32",
        "normalized": bool(encoder.get("normalize")),
        "passage_text": encoder.get("passage_input"),
        "encoder": encoder,
        "shard_size": int(shard_size),
        "source": fingerprint,
    }


IDENTITY_KEYS = ("format", "model", "backend", "dimension", "encoder", "shard_size", "source")


def remove_leftovers(directory: Path) -> None:
    """Half-written files of a killed run (never listed as finished)."""
    for leftover in directory.glob(".tmp-*"):
        if leftover.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink(missing_ok=True)


def clear_shards(directory: Path) -> None:
    for pattern in ("emb-*.npy", "ids-*.txt", MANIFEST):
        for path in directory.glob(pattern):
            path.unlink()


def write_embeddings(
    out_dir: str | os.PathLike[str],
    blocks: Iterable[tuple[Sequence[str], np.ndarray]],
    *,
    model: str,
    backend: str,
    dimension: int,
    source: dict[str, Any] | None = None,
) -> Embeddings:
    """An embeddings directory from ``(passage_ids, vectors)`` blocks computed elsewhere (one shard each).

    For vectors that did not come from :func:`encode_passages` (other tools, synthetic benchmarks); the
    directory is usable by :func:`build_faiss_index`. Vectors are stored as float32, as given.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    clear_shards(out)
    shards = []
    for index, (ids, vectors) in enumerate(blocks):
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.shape != (len(ids), dimension):
            raise ValueError(
                f"block {index}: {vectors.shape} vectors for {len(ids)} ids of dimension {dimension}"
            )
        emb_name, ids_name = shard_names(index)
        save_text_atomic(out / ids_name, [str(i) for i in ids])
        save_npy_atomic(out / emb_name, vectors)
        shards.append({"embeddings": emb_name, "ids": ids_name, "rows": len(ids)})
    manifest = {
        "format": EMBEDDINGS_FORMAT,
        "model": model,
        "backend": backend,
        "dimension": int(dimension),
        "dtype": "float32",
        "normalized": None,
        "passage_text": None,
        "shard_size": None,
        "source": source or {},
        "shards": shards,
        "passages": sum(s["rows"] for s in shards),
        "complete": True,
    }
    write_json_atomic(out / MANIFEST, manifest)
    return Embeddings(out, manifest)


def _read_ids(directory: Path, shards: Sequence[dict[str, Any]]) -> list[str]:
    ids: list[str] = []
    for shard in shards:
        ids.extend((directory / shard["ids"]).read_text(encoding="utf-8").splitlines())
    return ids


@dataclass(slots=True)
class Embeddings:
    """A finished embeddings directory: shard files, passage ids, the manifest."""

    directory: Path
    manifest: dict[str, Any]

    @classmethod
    def open(cls, directory: str | os.PathLike[str]) -> Embeddings:
        directory = Path(directory)
        manifest = read_manifest(directory)
        if manifest is None:
            raise FileNotFoundError(f"no {MANIFEST} under {directory}: not an embeddings directory")
        if not manifest.get("complete"):
            raise RuntimeError(f"{directory}: the encode did not finish (rerun encode_passages to resume)")
        return cls(directory, manifest)

    @property
    def count(self) -> int:
        return int(sum(s["rows"] for s in self.manifest["shards"]))

    @property
    def dimension(self) -> int:
        return int(self.manifest["dimension"])

    def shard_arrays(self) -> Iterator[np.ndarray]:
        """Each shard's vectors, memory-mapped (read as they are used)."""
        for shard in self.manifest["shards"]:
            yield np.load(self.directory / shard["embeddings"], mmap_mode="r")

    def iter_batches(self, batch: int) -> Iterator[np.ndarray]:
        """Contiguous float32 blocks of at most ``batch`` vectors, in row order."""
        for array in self.shard_arrays():
            for start in range(0, array.shape[0], batch):
                yield np.ascontiguousarray(array[start : start + batch], dtype=np.float32)

    def ids(self) -> list[str]:
        return _read_ids(self.directory, self.manifest["shards"])

    def load(self) -> np.ndarray:
        """All vectors in memory (small corpora and tests only)."""
        arrays = list(self.shard_arrays())
        return (
            np.concatenate([np.asarray(a) for a in arrays])
            if arrays
            else np.zeros((0, self.dimension), np.float32)
        )

    def sample(self, count: int, *, seed: int) -> np.ndarray:
        """``count`` distinct rows drawn uniformly (sorted, read shard by shard)."""
        total = self.count
        count = min(count, total)
        rng = np.random.default_rng(seed)
        rows = np.sort(rng.choice(total, size=count, replace=False)) if count < total else np.arange(total)
        out = np.empty((count, self.dimension), dtype=np.float32)
        filled, offset = 0, 0
        for array in self.shard_arrays():
            n = array.shape[0]
            lo, hi = np.searchsorted(rows, [offset, offset + n])
            if hi > lo:
                out[filled : filled + hi - lo] = array[rows[lo:hi] - offset]
                filled += hi - lo
            offset += n
        return out
