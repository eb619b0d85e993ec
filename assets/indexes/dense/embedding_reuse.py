"""Incremental encoding: which passages of a snapshot an earlier snapshot's embeddings already hold.

Passages whose id, title and text equal those of a passage of an earlier snapshot (a :class:`ReuseSource`)
get that snapshot's vector copied from its memory-mapped shards (:class:`SourceVectors`); only the others
are encoded (:mod:`assets.indexes.dense.encoding`). The join runs once in DuckDB over both Parquet inputs
(spilling to disk) into a ``(row, source_row)`` Parquet map (:func:`write_reuse_map`), of which each shard
reads only its own rows, so memory stays bounded by one shard.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from assets.files import atomic_path
from assets.incremental import ReuseUnavailable, connect
from assets.indexes.dense.embeddings import Embeddings, passage_files, source_fingerprint
from assets.storage import sql_list, sql_literal

REUSE_KEYS = ("format", "model", "backend", "dimension", "dtype", "normalized", "passage_text", "encoder")


@dataclass(frozen=True, slots=True)
class ReuseSource:
    """An earlier snapshot's passages and the complete embeddings :func:`encode_passages` made of them."""

    passages_dir: Path
    embeddings_dir: Path


class SourceVectors:
    """The vectors of a :class:`ReuseSource`, read by global row from its memory-mapped shards."""

    def __init__(self, embeddings: Embeddings) -> None:
        self.embeddings = embeddings
        self.arrays = list(embeddings.shard_arrays())
        self.starts = np.cumsum([0, *(a.shape[0] for a in self.arrays)])

    def vectors(self, source_rows: np.ndarray) -> np.ndarray:
        out = np.empty((len(source_rows), self.embeddings.dimension), dtype=np.float32)
        shard_of = np.searchsorted(self.starts, source_rows, side="right") - 1
        for shard in np.unique(shard_of).tolist():
            picked = np.flatnonzero(shard_of == shard)
            out[picked] = self.arrays[shard][source_rows[picked] - self.starts[shard]]
        return out


def open_reuse_source(
    source: ReuseSource, expected: dict[str, Any]
) -> tuple[Embeddings, list[Path], dict[str, Any]]:
    """The source's embeddings, passage files and their fingerprint, or :class:`ReuseUnavailable` with
    the reason (another configuration, not complete, not encoded from those passages)."""
    try:
        embeddings = Embeddings.open(source.embeddings_dir)
    except (FileNotFoundError, RuntimeError) as error:
        raise ReuseUnavailable(str(error)) from error
    manifest = embeddings.manifest
    differing = [k for k in REUSE_KEYS if manifest.get(k) != expected[k]]
    if differing:
        details = ", ".join(f"{k}: {manifest.get(k)!r} != {expected[k]!r}" for k in differing)
        raise ReuseUnavailable(
            f"{source.embeddings_dir} holds embeddings of another configuration ({details})"
        )
    try:
        source_files = passage_files(source.passages_dir)
    except FileNotFoundError as error:
        raise ReuseUnavailable(str(error)) from error
    source_print = source_fingerprint(source_files)
    if manifest.get("source") != source_print:
        raise ReuseUnavailable(
            f"{source.embeddings_dir} was not encoded from the passages now in {source.passages_dir}"
        )
    return embeddings, source_files, source_print


def _reuse_join_sql(
    files: Sequence[Path],
    fingerprint: dict[str, Any],
    source_files: Sequence[Path],
    source_print: dict[str, Any],
    start: int = 0,
) -> str:
    """``(row, source_row)`` for every input row from ``start`` on whose passage (same id, title and
    text) the source has, the first such source row, in row order. Title and text are joined by a
    128-bit hash, so the join's build side does not hold the corpus text."""
    return f"""
        WITH b AS ({_rows_sql(files, fingerprint)}), a AS ({_rows_sql(source_files, source_print)})
        SELECT b.row AS row, min(a.row) AS source_row
        FROM b JOIN a ON a.passage_id = b.passage_id AND a.text_key = b.text_key
        WHERE b.row >= {int(start)}
        GROUP BY b.row ORDER BY b.row
    """


def _rows_sql(files: Sequence[Path], fingerprint: dict[str, Any]) -> str:
    """SQL over parquet passage shards: ``passage_id``, the ``text_key`` hash of title and text, and the
    global ``row`` in shard order (row counts from the shards' :func:`source_fingerprint`)."""
    bases = np.cumsum([0, *(entry["rows"] for entry in fingerprint["files"])])
    offsets = ", ".join(f"({sql_literal(f)}, {int(base)})" for f, base in zip(files, bases[:-1], strict=True))
    listing = sql_list(list(files))
    return (
        "SELECT p.passage_id, md5_number(p.title || chr(31) || p.text) AS text_key, "
        "o.base + p.file_row_number AS row "
        f"FROM read_parquet({listing}, filename = true, file_row_number = true) p "
        f"JOIN (VALUES {offsets}) o(filename, base) ON o.filename = p.filename"
    )


def write_reuse_map(
    source: ReuseSource, files: Sequence[Path], expected: dict[str, Any], scratch: Path
) -> Path:
    """The ``(row, source_row)`` pairs of all input rows, sorted by row, as ``scratch/reuse-map.parquet``."""
    _, source_files, source_print = open_reuse_source(source, expected)
    target = scratch / "reuse-map.parquet"
    con = connect(scratch / "duckdb")
    try:
        query = _reuse_join_sql(files, expected["source"], source_files, source_print)
        with atomic_path(target) as temp:
            con.execute(f"COPY ({query}) TO {sql_literal(temp)} (FORMAT parquet, ROW_GROUP_SIZE 100000)")
    finally:
        con.close()
        shutil.rmtree(scratch / "duckdb", ignore_errors=True)
    return target
