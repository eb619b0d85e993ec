"""Dense retrieval over the passages: sharded, resumable encoding; FAISS indices; a searcher.

Layout of an embeddings directory (written by :func:`encode_passages`)::

    manifest.json        model name, backend, dimension, source fingerprint, finished shards
    emb-00000.npy        float32 [rows, dimension], L2-normalised, one file per shard
    ids-00000.txt        the shard's passage ids, one per line, in row order

Every shard file is written under a temporary name and renamed; a shard counts as finished only once
the manifest (also replaced atomically) lists it, so an interrupted encode resumes after its last
finished shard. A resume with another model, backend, dimension, shard size or input refuses
(``on_mismatch="error"``) or starts over (``on_mismatch="restart"``), never mixes.

Layout of an index directory (written by :func:`build_faiss_index`)::

    index.faiss          the FAISS index (row i = i-th vector in shard order)
    docids.txt           passage id of row i on line i
    index.json           factory, metric, model, backend, dimension, vectors, bytes, build timings

Passages are encoded as ``title + " " + text`` (see :func:`assets.indexes.encoders.passage_text`);
queries as raw text. All vectors are L2-normalised, so inner product is cosine similarity.

Incremental encoding (``reuse_from``, a :class:`ReuseSource`): passages whose id, title and text equal
those of a passage of an earlier snapshot get that snapshot's vector copied from its memory-mapped
shards; only the others are encoded. The join runs in DuckDB over both Parquet inputs (spilling to
disk) and is consumed in passage order, shard by shard, so memory stays bounded by one shard.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from assets.incremental import ReuseUnavailable, SortedRows, connect
from assets.indexes.encoders import PASSAGE_SEPARATOR, Encoder, passage_text
from assets.indexes.hits import Hit, wikipedia_id_of
from assets.storage import (
    atomic_path,
    sql_list,
    sql_literal,
    temp_sibling,
    write_json_atomic,
    write_report_json,
)

EMBEDDINGS_FORMAT = 1
INDEX_FORMAT = 1
MANIFEST = "manifest.json"
INDEX_FILE = "index.faiss"
DOCIDS_FILE = "docids.txt"
INDEX_META = "index.json"
READ_BATCH_ROWS = 2048
BATCH_DEPENDENT_BACKENDS = frozenset({"onnx"})  # a text's vector depends on its batch mates
PROGRESS_CHUNK = 256  # passages handed to the encoder at a time (one progress-bar step)
REUSE_BATCH_ROWS = 65_536  # (row, source row) pairs streamed from the reuse join at a time
REUSE_KEYS = ("format", "model", "backend", "dimension", "dtype", "normalized", "passage_text")

log = logging.getLogger(__name__)


class EmbeddingsMismatch(ValueError):
    """An embeddings directory holds shards made by another model/backend/input: will not mix them."""


# ------------------------------------------------------------------------------------- encoding
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


@dataclass(frozen=True, slots=True)
class ReuseSource:
    """An earlier snapshot's passages and the complete embeddings :func:`encode_passages` made of them."""

    passages_dir: Path
    embeddings_dir: Path


class _SourceVectors:
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


def _open_reuse_source(
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


class _Reuse(_SourceVectors):
    """Which passages of the input have a vector in a :class:`ReuseSource`, streamed in input order.

    ``pending(limit)`` gives the ``(row, source_row)`` pairs below input row ``limit`` not taken yet;
    ``vectors(source_rows)`` reads those rows from the source's memory-mapped shards.
    """

    def __init__(
        self, source: ReuseSource, files: Sequence[Path], expected: dict[str, Any], start: int, scratch: Path
    ) -> None:
        embeddings, source_files, source_print = _open_reuse_source(source, expected)
        super().__init__(embeddings)
        self.source = source
        self.con = connect(scratch)
        try:
            query = _reuse_join_sql(files, expected["source"], source_files, source_print, start)
            self.rows = SortedRows(self.con.sql(query).to_arrow_reader(REUSE_BATCH_ROWS), "row")
        except BaseException:
            self.con.close()
            raise

    def pending(self, limit: int) -> tuple[np.ndarray, np.ndarray]:
        table = self.rows.before(limit)
        if table is None:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty
        return table.column("row").to_numpy(), table.column("source_row").to_numpy()

    def close(self) -> None:
        self.con.close()


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


def iter_passages(
    files: Sequence[Path], batch_rows: int = READ_BATCH_ROWS
) -> Iterator[tuple[list[str], list[str]]]:
    """``(passage_ids, texts)`` batches streamed from the parquet shards (only 3 columns are read)."""
    for path in files:
        handle = pq.ParquetFile(path)
        for batch in handle.iter_batches(batch_size=batch_rows, columns=["passage_id", "title", "text"]):
            ids = batch.column("passage_id").to_pylist()
            titles = batch.column("title").to_pylist()
            texts = batch.column("text").to_pylist()
            yield [str(i) for i in ids], [passage_text(t, x) for t, x in zip(titles, texts, strict=True)]


def _shard_names(index: int) -> tuple[str, str]:
    return f"emb-{index:05d}.npy", f"ids-{index:05d}.txt"


def _save_npy_atomic(path: Path, array: np.ndarray) -> None:
    with atomic_path(path) as temp, open(temp, "wb") as handle:  # a handle: np.save adds no suffix
        np.save(handle, array)


def _save_text_atomic(path: Path, lines: Sequence[str]) -> None:
    with atomic_path(path) as temp:
        temp.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


def read_manifest(directory: str | os.PathLike[str]) -> dict[str, Any] | None:
    path = Path(directory) / MANIFEST
    return json.loads(path.read_text()) if path.is_file() else None


def encoder_identity(encoder: Encoder) -> tuple[str, str, int]:
    """What an embeddings manifest records of the encoder: model, backend, dimension."""
    return encoder.name, encoder.backend, int(encoder.dimension)


def _expected_manifest(
    identity: tuple[str, str, int], shard_size: int, fingerprint: dict[str, Any]
) -> dict[str, Any]:
    model, backend, dimension = identity
    return {
        "format": EMBEDDINGS_FORMAT,
        "model": model,
        "backend": backend,
        "dimension": dimension,
        "dtype": "float32",
        "normalized": True,
        "passage_text": f"title{PASSAGE_SEPARATOR!r}text".replace("'", '"'),
        "shard_size": int(shard_size),
        "source": fingerprint,
    }


_IDENTITY_KEYS = ("format", "model", "backend", "dimension", "shard_size", "source")


def _remove_leftovers(directory: Path) -> None:
    """Half-written files of a killed run (never listed as finished)."""
    for leftover in directory.glob(".tmp-*"):
        if leftover.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink(missing_ok=True)


def _shard_vectors(
    encoder: Encoder,
    fresh_texts: list[str],
    sources: np.ndarray,
    reuse: _SourceVectors | None,
    batch_size: int | None,
    bar: Any,
) -> np.ndarray:
    """One shard's vectors: ``fresh_texts`` encoded for the rows whose source is -1, the others copied."""
    fresh, copied = np.flatnonzero(sources < 0), np.flatnonzero(sources >= 0)
    vectors = np.empty((len(sources), int(encoder.dimension)), dtype=np.float32)
    if len(fresh):
        vectors[fresh] = _encode_sorted(encoder, fresh_texts, batch_size, bar)
    if len(copied):
        assert reuse is not None
        vectors[copied] = reuse.vectors(sources[copied])
        bar.update(len(copied))
    return vectors


def _clear_shards(directory: Path) -> None:
    for pattern in ("emb-*.npy", "ids-*.txt", MANIFEST):
        for path in directory.glob(pattern):
            path.unlink()


def encode_passages(
    passages_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    encoder: Encoder,
    shard_size: int = 50_000,
    *,
    batch_size: int | None = None,
    progress: bool = True,
    on_mismatch: str = "error",
    on_shard: Callable[[int, int], None] | None = None,
    reuse_from: ReuseSource | None = None,
) -> EncodeReport:
    """Encode every passage of ``passages_dir`` into ``out_dir``, one ``.npy`` shard per ``shard_size`` rows.

    Memory is bounded by one shard (texts + vectors), whatever the corpus size. ``on_shard(index, rows)``
    is called after each shard is published (tests raise there to simulate a crash). ``on_mismatch``:
    ``"error"`` (raise :class:`EmbeddingsMismatch`) or ``"restart"`` (delete the old shards) when
    ``out_dir`` holds shards of another model/backend/input. ``reuse_from``: copy the vectors of
    passages with the same id, title and text from an earlier snapshot's complete embeddings (same
    model, backend, dimension and passage text format; otherwise everything is encoded and the report's
    ``reuse_skipped`` says why). Shards are the same either way, so a resume may mix both.
    """
    if shard_size <= 0:
        raise ValueError("shard_size must be positive")
    if on_mismatch not in ("error", "restart"):
        raise ValueError("on_mismatch must be 'error' or 'restart'")
    started = time.perf_counter()
    files = passage_files(passages_dir)
    fingerprint = source_fingerprint(files)
    total = fingerprint["rows"]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    expected = _expected_manifest(encoder_identity(encoder), shard_size, fingerprint)

    _remove_leftovers(out)
    manifest = read_manifest(out)
    if manifest is not None:
        differing = [k for k in _IDENTITY_KEYS if manifest.get(k) != expected[k]]
        if differing:
            if on_mismatch == "error":
                details = ", ".join(
                    f"{k}: {manifest.get(k)!r} != {expected[k]!r}" for k in differing if k != "source"
                )
                raise EmbeddingsMismatch(
                    f"{out} holds embeddings of another configuration "
                    f"({details or 'input passages changed'}); "
                    "pass on_mismatch='restart' or use another directory"
                )
            _clear_shards(out)
            manifest = None
    if manifest is None:
        manifest = {**expected, "shards": [], "complete": False, "passages": 0}
        _clear_shards(out)
        write_json_atomic(out / MANIFEST, manifest)

    finished: list[dict[str, Any]] = list(manifest["shards"])
    for shard in finished:  # a listed shard must be intact, or nothing is trusted
        emb, ids = out / shard["embeddings"], out / shard["ids"]
        if not (emb.is_file() and ids.is_file()):
            raise EmbeddingsMismatch(f"{out}: manifest lists {shard['embeddings']} but its files are missing")
    skip_rows = sum(s["rows"] for s in finished)
    resumed = len(finished)

    reuse: _Reuse | None = None
    reuse_skipped: str | None = None
    scratch = temp_sibling(out / "reuse")
    if reuse_from is not None and skip_rows < total:
        try:
            reuse = _Reuse(reuse_from, files, expected, skip_rows, scratch)
        except ReuseUnavailable as reason:
            reuse_skipped = str(reason)
            log.warning("encoding every passage of %s: %s", passages_dir, reason)

    bar = _progress_bar(total, progress, encoder.spec)
    bar.update(skip_rows)
    encoded = 0
    reused = 0
    pending_ids: list[str] = []
    pending_texts: list[str] = []  # of the pending rows to encode
    pending_sources: list[int] = []  # per pending row: the source row to copy, -1 = encode
    position = 0  # rows of the stream consumed so far
    shard_index = len(finished)
    # the finished shards' ids must be the stream's first rows: compared by hash, in constant memory
    skipped_hash = hashlib.sha256()
    verified = not finished

    def verify() -> None:
        nonlocal verified
        stored = hashlib.sha256()
        for shard in finished:
            with open(out / shard["ids"], "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    stored.update(block)
        if stored.digest() != skipped_hash.digest():
            raise EmbeddingsMismatch(f"{out}: finished shards do not match the passages' order")
        verified = True

    def flush() -> None:
        nonlocal pending_ids, pending_texts, pending_sources, shard_index, encoded, reused
        sources = np.asarray(pending_sources, dtype=np.int64)
        vectors = _shard_vectors(encoder, pending_texts, sources, reuse, batch_size, bar)
        fresh, copied = np.flatnonzero(sources < 0), np.flatnonzero(sources >= 0)
        emb_name, ids_name = _shard_names(shard_index)
        _save_text_atomic(out / ids_name, pending_ids)
        _save_npy_atomic(out / emb_name, vectors)
        finished.append({"embeddings": emb_name, "ids": ids_name, "rows": len(pending_ids)})
        manifest["shards"] = finished
        manifest["passages"] = sum(s["rows"] for s in finished)
        write_json_atomic(out / MANIFEST, manifest)
        encoded += len(fresh)
        reused += len(copied)
        rows = len(pending_ids)
        pending_ids, pending_texts, pending_sources = [], [], []
        shard_index += 1
        if on_shard is not None:
            on_shard(shard_index - 1, rows)

    try:
        for ids, texts in iter_passages(files):
            if position < skip_rows:  # rows already in finished shards
                cut = min(len(ids), skip_rows - position)
                skipped_hash.update("".join(f"{i}\n" for i in ids[:cut]).encode("utf-8"))
                ids, texts = ids[cut:], texts[cut:]
                position += cut
                if position < skip_rows:
                    continue
            if not verified:
                verify()
            sources = [-1] * len(ids)
            if reuse is not None:
                rows, source_rows = reuse.pending(position + len(ids))
                for row, source_row in zip((rows - position).tolist(), source_rows.tolist(), strict=True):
                    sources[row] = source_row
            position += len(ids)
            while ids:
                room = shard_size - len(pending_ids)
                pending_ids.extend(ids[:room])
                pending_sources.extend(sources[:room])
                pending_texts.extend(
                    t for t, src in zip(texts[:room], sources[:room], strict=True) if src < 0
                )
                ids, texts, sources = ids[room:], texts[room:], sources[room:]
                if len(pending_ids) == shard_size:
                    flush()
        if pending_ids:
            flush()
    finally:
        bar.close()
        if reuse is not None:
            reuse.close()
        shutil.rmtree(scratch, ignore_errors=True)
    if not verified:
        verify()
    passages = sum(s["rows"] for s in finished)
    if passages != total:
        raise RuntimeError(f"encoded {passages} passages but the input has {total}")
    manifest["complete"] = True
    manifest["passages"] = passages
    seconds = time.perf_counter() - started
    write_json_atomic(out / MANIFEST, manifest)
    return EncodeReport(
        passages=passages,
        shards=len(finished),
        resumed_shards=resumed,
        encoded_passages=encoded,
        dimension=int(encoder.dimension),
        model=encoder.name,
        backend=encoder.backend,
        seconds=round(seconds, 3),
        passages_per_second=round(encoded / seconds, 2) if seconds > 0 else 0.0,
        out_dir=str(out),
        reused_passages=reused,
        reuse_source=str(reuse.source.embeddings_dir) if reuse is not None else None,
        reuse_skipped=reuse_skipped,
    )


# ------------------------------------------------------------------ encoding as parallel shard steps
@dataclass(frozen=True, slots=True)
class EmbeddingShard:
    """Rows ``[start, stop)`` of the passages, written as shard ``index``: one executor step each."""

    index: int
    start: int
    stop: int


@dataclass(slots=True)
class ShardResult:
    """What one shard step did (``resumed``: its files were already there, for the same rows)."""

    index: int
    rows: int
    encoded: int
    reused: int
    resumed: bool
    seconds: float


@dataclass(slots=True)
class EmbeddingPlan:
    """What the shard steps share, worked out once by :func:`plan_embedding_shards`: the encoder's
    identity, the input's fingerprint, the shards, and the reuse map (Parquet ``row, source_row`` sorted
    by row: the rows whose vector is copied from ``reuse_embeddings``) or why there is none."""

    model: str
    backend: str
    dimension: int
    shard_size: int
    fingerprint: dict[str, Any]
    shards: list[EmbeddingShard]
    reuse_map: str | None = None
    reuse_embeddings: str | None = None
    reuse_skipped: str | None = None

    @property
    def identity(self) -> tuple[str, str, int]:
        return self.model, self.backend, self.dimension

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> EmbeddingPlan:
        return cls(**{**values, "shards": [EmbeddingShard(**shard) for shard in values["shards"]]})

    def check_encoder(self, encoder: Encoder, out: Path) -> None:
        if encoder_identity(encoder) != self.identity:
            raise EmbeddingsMismatch(
                f"{out} is planned for {self.model}@{self.backend} ({self.dimension} dims), not "
                f"{encoder.name}@{encoder.backend} ({encoder.dimension} dims); plan again"
            )


def plan_embedding_shards(
    passages_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    encoder: Encoder,
    shard_size: int,
    *,
    reuse_from: ReuseSource | None = None,
    scratch: str | os.PathLike[str] | None = None,
) -> EmbeddingPlan:
    """Prepare ``out_dir`` for shard steps and plan them: the shards :func:`encode_passages` writes.

    Each shard is then encoded by :func:`encode_embedding_shard`, in any order and any process (the
    Dagster graph of ``dense_index`` maps one step over each), and :func:`finish_embeddings` completes
    the manifest. Shards of another model, backend or input are deleted; finished ones of this
    configuration stay, and their steps find them and skip. With ``reuse_from``, one DuckDB join over
    both snapshots' passages writes the reuse map into ``scratch`` (which the caller removes after
    the steps), so a step reads only its own rows of it.
    """
    if shard_size <= 0:
        raise ValueError("shard_size must be positive")
    files = passage_files(passages_dir)
    fingerprint = source_fingerprint(files)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _remove_leftovers(out)
    expected = _expected_manifest(encoder_identity(encoder), shard_size, fingerprint)
    manifest = read_manifest(out)
    if manifest is None or any(manifest.get(k) != expected[k] for k in _IDENTITY_KEYS):
        _clear_shards(out)
        write_json_atomic(out / MANIFEST, {**expected, "shards": [], "complete": False, "passages": 0})
    total = fingerprint["rows"]
    plan = EmbeddingPlan(
        *encoder_identity(encoder),
        shard_size,
        fingerprint,
        [
            EmbeddingShard(index, start, min(start + shard_size, total))
            for index, start in enumerate(range(0, total, shard_size))
        ],
    )
    if reuse_from is not None:
        if scratch is None:
            raise ValueError("reuse_from needs a scratch directory for the reuse map")
        try:
            plan.reuse_map = str(_write_reuse_map(reuse_from, files, expected, Path(scratch)))
            plan.reuse_embeddings = str(reuse_from.embeddings_dir)
        except ReuseUnavailable as reason:
            plan.reuse_skipped = str(reason)
            log.warning("encoding every passage of %s: %s", passages_dir, reason)
    return plan


def _write_reuse_map(
    source: ReuseSource, files: Sequence[Path], expected: dict[str, Any], scratch: Path
) -> Path:
    """The ``(row, source_row)`` pairs of all input rows, sorted by row, as ``scratch/reuse-map.parquet``."""
    _, source_files, source_print = _open_reuse_source(source, expected)
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


def _planned_sources(plan: EmbeddingPlan, shard: EmbeddingShard) -> np.ndarray:
    """Per row of the shard: the source row to copy the vector from, or -1 to encode it."""
    sources = np.full(shard.stop - shard.start, -1, dtype=np.int64)
    if plan.reuse_map is not None:
        table = pq.read_table(plan.reuse_map, filters=[("row", ">=", shard.start), ("row", "<", shard.stop)])
        sources[table.column("row").to_numpy() - shard.start] = table.column("source_row").to_numpy()
    return sources


def read_passage_rows(
    files: Sequence[Path], fingerprint: dict[str, Any], start: int, stop: int
) -> tuple[list[str], list[str]]:
    """``(passage_ids, texts)`` of rows ``[start, stop)`` of the shards, reading only their row groups."""
    ids: list[str] = []
    texts: list[str] = []
    base = 0
    for path, entry in zip(files, fingerprint["files"], strict=True):
        low, high = max(start - base, 0), min(stop - base, entry["rows"])
        base += entry["rows"]
        if low >= high:
            continue
        handle = pq.ParquetFile(path)
        group_base = 0
        for group in range(handle.num_row_groups):
            size = handle.metadata.row_group(group).num_rows
            first, last = max(low - group_base, 0), min(high - group_base, size)
            group_base += size
            if first >= last:
                continue
            table = handle.read_row_group(group, columns=["passage_id", "title", "text"]).slice(
                first, last - first
            )
            ids.extend(str(i) for i in table.column("passage_id").to_pylist())
            texts.extend(
                passage_text(t, x)
                for t, x in zip(
                    table.column("title").to_pylist(), table.column("text").to_pylist(), strict=True
                )
            )
        if base >= stop:
            break
    if len(ids) != stop - start:
        raise RuntimeError(f"rows {start}-{stop} of the passages: read {len(ids)} (input changed?)")
    return ids, texts


def encode_embedding_shard(
    passages_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    encoder: Encoder,
    plan: EmbeddingPlan,
    shard: EmbeddingShard,
    *,
    batch_size: int | None = None,
    progress: bool = False,
) -> ShardResult:
    """Encode one planned shard (same bytes as :func:`encode_passages` writes for it): vectors of the
    plan's reuse map are copied, the others encoded; a finished shard is skipped."""
    started = time.perf_counter()
    out = Path(out_dir)
    plan.check_encoder(encoder, out)
    expected = _expected_manifest(plan.identity, plan.shard_size, plan.fingerprint)
    manifest = read_manifest(out)
    if manifest is None or any(manifest.get(k) != expected[k] for k in _IDENTITY_KEYS):
        raise EmbeddingsMismatch(
            f"{out} is not planned for this model, backend and input (plan_embedding_shards)"
        )
    ids, texts = read_passage_rows(passage_files(passages_dir), plan.fingerprint, shard.start, shard.stop)
    emb_name, ids_name = _shard_names(shard.index)
    if (out / emb_name).is_file() and (out / ids_name).is_file():
        stored = (out / ids_name).read_text(encoding="utf-8").splitlines()
        shape = np.load(out / emb_name, mmap_mode="r").shape
        if stored == ids and shape == (len(ids), plan.dimension):
            return ShardResult(shard.index, len(ids), 0, 0, True, time.perf_counter() - started)
    sources = _planned_sources(plan, shard)
    source = None
    if plan.reuse_embeddings is not None and (sources >= 0).any():
        source = _SourceVectors(Embeddings.open(plan.reuse_embeddings))
    fresh_texts = [text for text, row in zip(texts, sources.tolist(), strict=True) if row < 0]
    bar = _progress_bar(len(ids), progress, f"{encoder.spec} shard {shard.index}")
    try:
        vectors = _shard_vectors(encoder, fresh_texts, sources, source, batch_size, bar)
    finally:
        bar.close()
    _save_text_atomic(out / ids_name, ids)
    _save_npy_atomic(out / emb_name, vectors)
    return ShardResult(
        shard.index,
        len(ids),
        len(fresh_texts),
        len(ids) - len(fresh_texts),
        False,
        time.perf_counter() - started,
    )


def finish_embeddings(
    out_dir: str | os.PathLike[str], plan: EmbeddingPlan, results: Sequence[ShardResult]
) -> EncodeReport:
    """Check that every planned shard is there and complete the manifest; the report sums the steps."""
    out = Path(out_dir)
    expected = _expected_manifest(plan.identity, plan.shard_size, plan.fingerprint)
    planned = len(plan.shards)
    by_index = {r.index: r for r in results}
    if sorted(by_index) != list(range(planned)):
        raise RuntimeError(f"{out}: {planned} shards planned, results for {sorted(by_index)}")
    shards = []
    for index in range(planned):
        emb_name, ids_name = _shard_names(index)
        if not ((out / emb_name).is_file() and (out / ids_name).is_file()):
            raise EmbeddingsMismatch(f"{out}: shard {index} was reported done but {emb_name} is missing")
        shards.append({"embeddings": emb_name, "ids": ids_name, "rows": by_index[index].rows})
    passages = sum(s["rows"] for s in shards)
    if passages != plan.fingerprint["rows"]:
        raise RuntimeError(f"encoded {passages} passages but the input has {plan.fingerprint['rows']}")
    write_json_atomic(out / MANIFEST, {**expected, "shards": shards, "complete": True, "passages": passages})
    seconds = sum(r.seconds for r in results)
    encoded = sum(r.encoded for r in results)
    reused = sum(r.reused for r in results)
    return EncodeReport(
        passages=passages,
        shards=planned,
        resumed_shards=sum(r.resumed for r in results),
        encoded_passages=encoded,
        dimension=plan.dimension,
        model=plan.model,
        backend=plan.backend,
        seconds=round(seconds, 3),  # summed over the steps (they may have run side by side)
        passages_per_second=round(encoded / seconds, 2) if seconds > 0 else 0.0,
        out_dir=str(out),
        reused_passages=reused,
        reuse_source=plan.reuse_embeddings if reused else None,
        reuse_skipped=plan.reuse_skipped,
    )


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
    _clear_shards(out)
    shards = []
    for index, (ids, vectors) in enumerate(blocks):
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.shape != (len(ids), dimension):
            raise ValueError(
                f"block {index}: {vectors.shape} vectors for {len(ids)} ids of dimension {dimension}"
            )
        emb_name, ids_name = _shard_names(index)
        _save_text_atomic(out / ids_name, [str(i) for i in ids])
        _save_npy_atomic(out / emb_name, vectors)
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


def _encode_sorted(encoder: Encoder, texts: list[str], batch_size: int | None, bar: Any) -> np.ndarray:
    """Encode a shard longest-first (little padding), in chunks that advance the progress bar."""
    order = np.argsort([-len(t) for t in texts], kind="stable")
    vectors = np.empty((len(texts), encoder.dimension), dtype=np.float32)
    for start in range(0, len(texts), PROGRESS_CHUNK):
        rows = order[start : start + PROGRESS_CHUNK]
        vectors[rows] = encoder.encode([texts[i] for i in rows], batch_size=batch_size)
        bar.update(len(rows))
    return vectors


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress_bar(total: int, enabled: bool, description: str) -> Any:
    if not enabled:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, unit="passage", desc=f"encode {description}", file=sys.stderr, smoothing=0.05)


# ------------------------------------------------------------------------------------- reading embeddings
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

    def sample(self, count: int, seed: int = 0) -> np.ndarray:
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


# ------------------------------------------------------------------------------------- FAISS index
@dataclass(slots=True)
class IndexReport:
    factory: str
    metric: str
    vectors: int
    dimension: int
    bytes: int  # size of index.faiss
    bytes_per_vector: float
    docids_bytes: int
    train_vectors: int
    train_seconds: float
    add_seconds: float
    seconds: float
    index_dir: str
    params: dict[str, Any] = field(default_factory=dict)


def _faiss() -> Any:
    import faiss

    return faiss


def _metric(metric: str) -> int:
    faiss = _faiss()
    key = metric.lower().replace("-", "_")
    if key in ("ip", "inner_product", "cosine", "dot"):
        return faiss.METRIC_INNER_PRODUCT
    if key in ("l2", "euclidean"):
        return faiss.METRIC_L2
    raise ValueError(f"unknown metric {metric!r} (ip or l2)")


def default_train_sample(factory: str) -> int:
    """Training vectors for a factory: 40 per IVF list (FAISS warns under 39), 10k for PQ/SQ, else 0."""
    import re

    match = re.search(r"IVF(\d+)", factory)
    sizes = [40 * int(match.group(1))] if match else []
    if re.search(r"PQ\d+|SQ\d|SQfp16|LSH|OPQ|PCA", factory):
        sizes.append(10_000)
    return max(sizes, default=0)


def _new_index(factory: str, dimension: int, metric: str, hnsw_ef_construction: int | None = None) -> Any:
    faiss = _faiss()
    index = faiss.index_factory(dimension, factory, _metric(metric))
    for sub in _sub_indexes(index):  # polysemous codes are not used by searches here: training them is slow
        if hasattr(sub, "do_polysemous_training"):
            sub.do_polysemous_training = False
    if hnsw_ef_construction is not None:
        hnsw = _hnsw(index)
        if hnsw is None:
            raise ValueError(f"{factory!r} has no HNSW graph: hnsw_ef_construction does not apply")
        hnsw.efConstruction = hnsw_ef_construction
    return index


def _train(
    index: Any, embeddings: Embeddings, factory: str, train_sample: int | None, seed: int
) -> tuple[int, float]:
    if index.is_trained:
        return 0, 0.0
    started = time.perf_counter()
    vectors = min(train_sample or default_train_sample(factory) or 10_000, embeddings.count)
    index.train(embeddings.sample(vectors, seed=seed))
    return vectors, time.perf_counter() - started


def build_faiss_index(
    embeddings_dir: str | os.PathLike[str],
    index_dir: str | os.PathLike[str],
    factory: str = "Flat",
    metric: str = "ip",
    *,
    train_sample: int | None = None,
    add_batch: int = 65_536,
    hnsw_ef_construction: int | None = None,
    seed: int = 0,
    threads: int | None = None,
    search_params: str = "",
) -> IndexReport:
    """A FAISS ``index_factory(dimension, factory, metric)`` index over the vectors of ``embeddings_dir``.

    Trainable factories (``IVF{n},SQ8``, ``IVF{n},PQ{m}``, ...) are trained on ``train_sample`` rows drawn
    uniformly (default :func:`default_train_sample`); vectors are then added ``add_batch`` at a time,
    read from the memory-mapped shard files. Files are published atomically into ``index_dir``.
    """
    faiss = _faiss()
    if threads:
        faiss.omp_set_num_threads(threads)
    started = time.perf_counter()
    embeddings = Embeddings.open(embeddings_dir)
    index = _new_index(factory, embeddings.dimension, metric, hnsw_ef_construction)
    train_vectors, train_seconds = _train(index, embeddings, factory, train_sample, seed)
    t0 = time.perf_counter()
    for block in embeddings.iter_batches(add_batch):
        index.add(block)
    add_seconds = time.perf_counter() - t0
    return _publish_index(
        index, embeddings, Path(index_dir), factory, metric, search_params,
        train_vectors=train_vectors, train_seconds=train_seconds, add_seconds=add_seconds, started=started,
    )  # fmt: skip


# ----------------------------------------------------------- FAISS assembled from per-shard steps
def _mergeable(index: Any) -> bool:
    """Whether shard copies of this (trained, empty) index merge into one: IVF lists and flat codes do,
    HNSW graphs do not (FAISS raises on merge_from)."""
    if _hnsw(index) is not None:
        return False
    try:
        _faiss().clone_index(index).merge_from(_faiss().clone_index(index), 0)
    except RuntimeError:
        return False
    return True


def train_faiss_index(
    embeddings_dir: str | os.PathLike[str],
    work_dir: str | os.PathLike[str],
    factory: str = "Flat",
    metric: str = "ip",
    *,
    train_sample: int | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """The trained, empty index every shard step adds its vectors to (``trained.faiss`` in ``work_dir``);
    ``mergeable`` False (HNSW) means the shard steps do nothing and :func:`merge_faiss_shards` adds all."""
    faiss = _faiss()
    embeddings = Embeddings.open(embeddings_dir)
    index = _new_index(factory, embeddings.dimension, metric)
    train_vectors, train_seconds = _train(index, embeddings, factory, train_sample, seed)
    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    with atomic_path(work / "trained.faiss") as temp:
        faiss.write_index(index, str(temp))
    return {
        "work_dir": str(work),
        "train_vectors": train_vectors,
        "train_seconds": train_seconds,
        "mergeable": _mergeable(index),
    }


def add_shard_to_faiss(
    embeddings_dir: str | os.PathLike[str],
    work_dir: str | os.PathLike[str],
    shard: int,
    add_batch: int = 65_536,
) -> dict[str, Any]:
    """Encode one embeddings shard into a copy of the trained index (``part-<shard>.faiss``: its codes)."""
    faiss = _faiss()
    started = time.perf_counter()
    embeddings = Embeddings.open(embeddings_dir)
    work = Path(work_dir)
    index = faiss.read_index(str(work / "trained.faiss"))
    vectors = np.load(
        embeddings.directory / embeddings.manifest["shards"][shard]["embeddings"], mmap_mode="r"
    )
    for begin in range(0, vectors.shape[0], add_batch):
        index.add(np.ascontiguousarray(vectors[begin : begin + add_batch]))
    name = f"part-{shard:05d}.faiss"
    with atomic_path(work / name) as temp:
        faiss.write_index(index, str(temp))
    return {
        "shard": shard,
        "part": name,
        "vectors": int(index.ntotal),
        "seconds": time.perf_counter() - started,
    }


def merge_faiss_shards(
    embeddings_dir: str | os.PathLike[str],
    index_dir: str | os.PathLike[str],
    training: dict[str, Any],
    parts: Sequence[dict[str, Any]],
    factory: str = "Flat",
    metric: str = "ip",
    *,
    search_params: str = "",
) -> IndexReport:
    """The index of ``embeddings_dir`` from its shard parts, merged in shard order (ids run on: the same
    index as :func:`build_faiss_index` adds), published into ``index_dir``; the work dir goes."""
    faiss = _faiss()
    started = time.perf_counter()
    embeddings = Embeddings.open(embeddings_dir)
    work = Path(training["work_dir"])
    if not training["mergeable"]:  # an HNSW graph: one process adds every vector
        report = build_faiss_index(
            embeddings_dir, index_dir, factory, metric, train_sample=training["train_vectors"] or None,
            search_params=search_params,
        )  # fmt: skip
        shutil.rmtree(work, ignore_errors=True)
        return report
    ordered = sorted(parts, key=lambda part: part["shard"])
    if [part["shard"] for part in ordered] != list(range(len(embeddings.manifest["shards"]))):
        raise RuntimeError(f"{work}: FAISS parts for shards {[p['shard'] for p in ordered]}, not every shard")
    index = faiss.read_index(str(work / "trained.faiss"))
    ivf = _ivf(index) is not None  # IVF lists store ids (shifted past what is merged); flat codes do not
    for part in ordered:
        index.merge_from(faiss.read_index(str(work / part["part"])), index.ntotal if ivf else 0)
    report = _publish_index(
        index, embeddings, Path(index_dir), factory, metric, search_params,
        train_vectors=training["train_vectors"], train_seconds=training["train_seconds"],
        add_seconds=sum(part["seconds"] for part in ordered), started=started,
    )  # fmt: skip
    shutil.rmtree(work, ignore_errors=True)
    return report


def _publish_index(
    index: Any,
    embeddings: Embeddings,
    out: Path,
    factory: str,
    metric: str,
    search_params: str,
    *,
    train_vectors: int,
    train_seconds: float,
    add_seconds: float,
    started: float,
) -> IndexReport:
    """Write ``index``, its docids and ``index.json`` into ``out`` (each file atomically)."""
    faiss = _faiss()
    if index.ntotal != embeddings.count:
        raise RuntimeError(f"index holds {index.ntotal} vectors, expected {embeddings.count}")
    out.mkdir(parents=True, exist_ok=True)
    with atomic_path(out / INDEX_FILE) as temp:
        faiss.write_index(index, str(temp))
    ids_lines = 0
    with atomic_path(out / DOCIDS_FILE) as temp, open(temp, "w", encoding="utf-8") as handle:
        for shard in embeddings.manifest["shards"]:
            lines = (embeddings.directory / shard["ids"]).read_text(encoding="utf-8").splitlines()
            ids_lines += len(lines)
            handle.writelines(f"{line}\n" for line in lines)
    if ids_lines != index.ntotal:
        raise RuntimeError(f"{ids_lines} passage ids for {index.ntotal} vectors")
    size = (out / INDEX_FILE).stat().st_size
    report = IndexReport(
        factory=factory,
        metric="ip" if _metric(metric) == faiss.METRIC_INNER_PRODUCT else "l2",
        vectors=int(index.ntotal),
        dimension=embeddings.dimension,
        bytes=size,
        bytes_per_vector=round(size / max(1, index.ntotal), 2),
        docids_bytes=(out / DOCIDS_FILE).stat().st_size,
        train_vectors=train_vectors,
        train_seconds=round(train_seconds, 3),
        add_seconds=round(add_seconds, 3),
        seconds=round(time.perf_counter() - started, 3),
        index_dir=str(out),
        params=_search_params(index),
    )
    meta = {
        "format": INDEX_FORMAT,
        "model": embeddings.manifest["model"],
        "backend": embeddings.manifest["backend"],
        "passage_text": embeddings.manifest.get("passage_text"),
        "embeddings_dir": str(embeddings.directory),
        "search_params": search_params,  # FAISS ParameterSpace string searches apply (e.g. "nprobe=64")
        **asdict(report),
    }
    write_report_json(out / INDEX_META, meta)
    return report


def _sub_indexes(index: Any) -> Iterator[Any]:
    """The index and the indices it wraps (pre-transform, refine, IVF), downcast to their classes."""
    faiss = _faiss()
    seen = 0
    while index is not None and seen < 8:
        index = faiss.downcast_index(index)
        yield index
        seen += 1
        inner = getattr(index, "base_index", None) or getattr(index, "index", None)
        index = inner if inner is not None and not isinstance(inner, int) else None


def _hnsw(index: Any) -> Any:
    faiss = _faiss()
    index = faiss.downcast_index(index)
    if hasattr(index, "hnsw"):
        return index.hnsw
    return None


def _ivf(index: Any) -> Any:
    faiss = _faiss()
    try:
        return faiss.extract_index_ivf(index)
    except RuntimeError:
        return None


def _search_params(index: Any) -> dict[str, Any]:
    params: dict[str, Any] = {}
    ivf = _ivf(index)
    if ivf is not None:
        params["nlist"] = int(ivf.nlist)
        params["nprobe"] = int(ivf.nprobe)
    hnsw = _hnsw(index)
    if hnsw is not None:
        params["efSearch"] = int(hnsw.efSearch)
        params["efConstruction"] = int(hnsw.efConstruction)
    return params


# ------------------------------------------------------------------------------------- searching
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
        faiss = _faiss()
        if threads:
            faiss.omp_set_num_threads(threads)
        self.index_dir = Path(index_dir)
        self.meta = json.loads((self.index_dir / INDEX_META).read_text())
        flags = faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY if mmap else 0
        self.index = faiss.read_index(str(self.index_dir / INDEX_FILE), flags)
        self.docids = read_docids(self.index_dir / DOCIDS_FILE)
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
        self._ivf = _ivf(self.index)
        self._hnsw = _hnsw(self.index)
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
            _faiss().ParameterSpace().set_index_parameters(self.index, params)

    def encode_queries(self, queries: Sequence[str]) -> np.ndarray:
        if self.encoder is None:
            raise ValueError("this searcher has no encoder: pass one, or use search_vectors")
        # int8 ONNX quantizes activations per batch: one query per batch keeps a query's vector (and its
        # results) independent of the other queries it is searched with
        batch_size = 1 if self.encoder.backend in BATCH_DEPENDENT_BACKENDS else None
        return self.encoder.encode(list(queries), batch_size=batch_size)

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
