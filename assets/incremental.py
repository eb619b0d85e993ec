"""Incremental rebuilds: find the snapshot a new one can reuse passages and embeddings from.

A snapshot ``B`` shares most pages with an earlier snapshot ``A`` of the same wiki. Pages with the same
``wikipedia_id``, title and ``text_sha1`` get ``A``'s passages copied (:func:`build_passages` with
``reuse_from``), and passages with the same id and text get ``A``'s vectors copied
(:func:`encode_passages` with ``reuse_from``); only new and changed content is chunked and encoded.
Joins between the two snapshots run in DuckDB over Parquet (spilling to disk), never in a Python dict.

Pure module: no Dagster import.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from assets.snapshot_ids import split_snapshot_id
from assets.storage import SnapshotPaths, complete_snapshots, spilling_duckdb


class ReuseUnavailable(Exception):
    """An earlier snapshot's artifacts cannot be reused; the message says why (the build goes on in full)."""


def previous_snapshot(
    data_dir: str | os.PathLike[str],
    snapshot_id: str,
    has: Callable[[SnapshotPaths], bool] = lambda paths: paths.passages_report.is_file(),
) -> SnapshotPaths | None:
    """The newest snapshot of the same wiki (dbname prefix) dated before ``snapshot_id`` whose last build
    completed and which ``has`` what is reused (default: complete passages); None when there is none or
    ``snapshot_id`` has no date."""
    target = split_snapshot_id(snapshot_id)
    if target is None:
        return None
    dbname, date = target
    for candidate in reversed(complete_snapshots(Path(data_dir))):  # newest dump first (complete builds)
        parts = split_snapshot_id(candidate)
        paths = SnapshotPaths(Path(data_dir), candidate)
        if parts and parts[0] == dbname and parts[1] < date and has(paths):
            return paths
    return None


def passages_reuse_problem(
    source: SnapshotPaths, *, max_words: int, mode: str, unit: str, chunker: int
) -> str | None:
    """Why ``source``'s passages cannot be copied into a build with these settings (None: they can)."""
    if not source.passages_report.is_file():
        return f"snapshot {source.snapshot_id} has no complete passages ({source.passages_report} is missing)"
    report = json.loads(source.passages_report.read_text())
    settings = (("max_words", max_words), ("mode", mode), ("unit", unit), ("chunker_version", chunker))
    for key, wanted in settings:
        if report.get(key) != wanted:
            return (
                f"snapshot {source.snapshot_id} passages were built with {key}={report.get(key)!r}, "
                f"this build uses {wanted!r} ({source.passages_report})"
            )
    pages = sorted(source.pages_dir.glob("*.parquet"))
    if not pages:
        return f"snapshot {source.snapshot_id} has no knowledge-source shards in {source.pages_dir}"
    if "text_sha1" not in pq.read_schema(pages[0]).names:
        return f"{pages[0]} has no text_sha1 column (knowledge source built by an older version)"
    if not sorted(source.passages_parquet.glob("*.parquet")):
        return f"snapshot {source.snapshot_id} has no passage shards in {source.passages_parquet}"
    return None


def connect(scratch: Path) -> duckdb.DuckDBPyConnection:
    """A DuckDB database in ``scratch`` (created) that spills to disk (:func:`spilling_duckdb`)."""
    scratch.mkdir(parents=True, exist_ok=True)
    return spilling_duckdb(scratch / "reuse.duckdb", scratch / "spill")


class SortedRows:
    """Rows of a stream of record batches sorted by the integer column ``key``, taken in key order
    (:meth:`before`): memory holds the rows of about one input batch, whatever the stream's length."""

    def __init__(self, batches: Iterable[pa.RecordBatch] | None, key: str) -> None:
        self._batches = iter(batches) if batches is not None else None
        self._key = key
        self._buffer: pa.Table | None = None

    def before(self, limit: int) -> pa.Table | None:
        """The rows not taken yet whose key is below ``limit`` (None when there are none)."""
        while self._batches is not None and (
            self._buffer is None or self._buffer.num_rows == 0 or self._buffer[self._key][-1].as_py() < limit
        ):
            batch = next(self._batches, None)
            if batch is None:
                self._batches = None
            elif batch.num_rows:
                more = pa.Table.from_batches([batch])
                self._buffer = more if self._buffer is None else pa.concat_tables([self._buffer, more])
        if self._buffer is None or self._buffer.num_rows == 0:
            return None
        cut = int(np.searchsorted(self._buffer[self._key].to_numpy(), limit, side="left"))
        taken, self._buffer = self._buffer.slice(0, cut), self._buffer.slice(cut).combine_chunks()
        return taken if cut else None
