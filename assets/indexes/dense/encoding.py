"""Encoding the passages into an embeddings directory: sharded, resumable, incremental.

The ``dense_index`` asset runs :func:`plan_embedding_shards`, then :func:`encode_embedding_shard` once per
shard (any order, any process), then :func:`finish_embeddings`; :func:`encode_passages` runs the same
steps one after the other in this process. A shard whose files hold exactly its planned rows is finished
and skipped by a rerun, so an interrupted encode (or a failed executor step) resumes with the shards still
missing.

Passages are encoded as ``title + " " + text`` (see
:func:`assets.indexes.dense.encoders.base.passage_text`); queries as raw text. All vectors are L2-normalised,
so inner product is cosine similarity.

Incremental encoding (``reuse_from``, a :class:`~assets.indexes.dense.embedding_reuse.ReuseSource`): passages
an earlier snapshot already encoded get its vectors copied (:mod:`assets.indexes.dense.embedding_reuse`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from assets.files import temp_sibling, write_json_atomic
from assets.incremental import ReuseUnavailable
from assets.indexes.dense.embedding_reuse import ReuseSource, SourceVectors, write_reuse_map
from assets.indexes.dense.embeddings import (
    IDENTITY_KEYS,
    MANIFEST,
    Embeddings,
    EmbeddingsMismatch,
    EncodeReport,
    clear_shards,
    encoder_identity,
    expected_manifest,
    passage_files,
    read_manifest,
    remove_leftovers,
    save_npy_atomic,
    save_text_atomic,
    shard_names,
    source_fingerprint,
)
from assets.indexes.dense.encoders import Encoder, encode_passage_batch, encoder_description
from assets.params import DENSE_SHARD_SIZE

log = logging.getLogger(__name__)

BATCH_DEPENDENT_BACKENDS = frozenset({"torch-int8"})  # a text's vector depends on its batch mates (int8
# activation scales per tensor; the onnx int8 encoder runs each text alone instead)


PROGRESS_CHUNK = 256  # passages handed to the encoder at a time (one progress-bar step)


def _shard_vectors(
    encoder: Encoder,
    fresh: tuple[list[str], list[str]],
    sources: np.ndarray,
    reuse: SourceVectors | None,
    batch_size: int | None,
    bar: Any,
) -> np.ndarray:
    """One shard's vectors: the ``fresh`` (titles, texts) encoded for the rows whose source is -1, the
    others copied."""
    fresh_rows, copied = np.flatnonzero(sources < 0), np.flatnonzero(sources >= 0)
    vectors = np.empty((len(sources), int(encoder.dimension)), dtype=np.float32)
    if len(fresh_rows):
        vectors[fresh_rows] = _encode_sorted(encoder, *fresh, batch_size, bar)
    if len(copied):
        assert reuse is not None
        vectors[copied] = reuse.vectors(sources[copied])
        bar.update(len(copied))
    return vectors


def encode_passages(
    passages_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    encoder: Encoder,
    shard_size: int = DENSE_SHARD_SIZE,
    *,
    batch_size: int | None = None,
    progress: bool = True,
    on_mismatch: str = "error",
    on_shard: Callable[[int, int], None] | None = None,
    reuse_from: ReuseSource | None = None,
    devices: Sequence[str] | None = None,
) -> EncodeReport:
    """Encode every passage of ``passages_dir`` into ``out_dir``, one ``.npy`` shard per ``shard_size`` rows:
    the shard steps of the ``dense_index`` asset (:func:`plan_embedding_shards`, then
    :func:`encode_embedding_shard` for each shard, then :func:`finish_embeddings`), run one after the other
    in this process. The same code, so the same bytes, as a build on any executor.

    Memory is bounded by one shard (texts + vectors), whatever the corpus size. The manifest lists the
    finished shards as they are written, and a rerun skips them. ``on_shard(index, rows)`` is called after
    each shard this call encoded (tests raise there to simulate a crash). ``on_mismatch``: ``"error"``
    (raise :class:`EmbeddingsMismatch`) or ``"restart"`` (delete the old shards) when ``out_dir`` holds
    shards of another model/backend/input/shard size. ``reuse_from``: copy the vectors of passages with
    the same id, title and text from an earlier snapshot's complete embeddings (same model, backend,
    dimension and passage text format; otherwise everything is encoded and ``reuse_skipped`` says why).
    ``devices``: several devices (e.g. every GPU) share the shards round robin, one process each: this
    process and ``encoder`` take the first device's shards, a spawned process per other device loads the
    encoder from its recipe (:attr:`~assets.indexes.dense.encoders.loading.EncoderRecipe`) on its device.
    """
    out = Path(out_dir)
    scratch = temp_sibling(out / "reuse")
    try:
        plan = plan_embedding_shards(
            passages_dir,
            out,
            encoder,
            shard_size,
            reuse_from=reuse_from,
            scratch=scratch,
            on_mismatch=on_mismatch,
        )
        bar = _progress_bar(plan.fingerprint["rows"], progress, encoder.spec)
        results: list[ShardResult] = []

        def finished(result: ShardResult) -> None:
            results.append(result)
            _record_finished_shards(out, plan, sorted(results, key=lambda r: r.index))
            if on_shard is not None and not result.resumed:
                on_shard(result.index, result.rows)

        try:
            devices = list(devices or [])
            own = [s for s in plan.shards if len(devices) < 2 or s.index % len(devices) == 0]
            with _device_processes(passages_dir, out, encoder, plan, devices, batch_size) as others:
                for shard in own:
                    finished(
                        encode_embedding_shard(
                            passages_dir, out, encoder, plan, shard, batch_size=batch_size, bar=bar
                        )
                    )
                for future in others:
                    for result in future.result():
                        bar.update(result.rows)
                        finished(result)
        finally:
            bar.close()
        return finish_embeddings(out, plan, results)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@contextlib.contextmanager
def _device_processes(
    passages_dir: str | os.PathLike[str],
    out: Path,
    encoder: Encoder,
    plan: EmbeddingPlan,
    devices: list[str],
    batch_size: int | None,
) -> Iterator[list[Any]]:
    """One spawned process per device after the first, each encoding its round-robin shards (futures of
    their :class:`ShardResult` lists); none for one device."""
    if len(devices) < 2:
        yield []
        return
    recipe = getattr(encoder, "recipe", None)
    if recipe is None:
        raise ValueError("encoding on several devices needs an encoder made by load_encoder (its recipe)")
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("spawn")  # CUDA cannot be used in a forked child
    with ProcessPoolExecutor(len(devices) - 1, mp_context=context) as pool:
        futures = []
        for slot, device in enumerate(devices[1:], start=1):
            shards = [s for s in plan.shards if s.index % len(devices) == slot]
            if shards:
                futures.append(
                    pool.submit(
                        _encode_on_device,
                        str(passages_dir),
                        str(out),
                        recipe,
                        device,
                        plan,
                        shards,
                        batch_size,
                    )
                )
        yield futures


def _encode_on_device(
    passages_dir: str,
    out: str,
    recipe: Any,
    device: str,
    plan: EmbeddingPlan,
    shards: list[EmbeddingShard],
    batch_size: int | None,
) -> list[ShardResult]:
    """A device process: the encoder loaded from its recipe on ``device``, then each of its shards."""
    encoder = recipe.load(device)
    return [
        encode_embedding_shard(passages_dir, out, encoder, plan, shard, batch_size=batch_size)
        for shard in shards
    ]


def _shard_entry(index: int, rows: int) -> dict[str, Any]:
    """A shard as the manifest lists it."""
    embeddings, ids = shard_names(index)
    return {"embeddings": embeddings, "ids": ids, "rows": rows}


def _record_finished_shards(out: Path, plan: EmbeddingPlan, results: Sequence[ShardResult]) -> None:
    """The manifest of an encode in progress: the shards finished so far, in order (not complete)."""
    shards = [_shard_entry(r.index, r.rows) for r in results]
    expected = expected_manifest(plan.identity, plan.shard_size, plan.fingerprint, plan.encoder)
    passages = sum(s["rows"] for s in shards)
    write_json_atomic(out / MANIFEST, {**expected, "shards": shards, "complete": False, "passages": passages})


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
    device: str = "cpu"


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
    encoder: dict[str, Any] = field(default_factory=dict)  # the encoder's description (manifest ``encoder``)
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
        description = encoder_description(encoder)
        if description != self.encoder:
            differing = sorted(
                k for k in {*description, *self.encoder} if description.get(k) != self.encoder.get(k)
            )
            details = ", ".join(f"{k}: {self.encoder.get(k)!r} != {description.get(k)!r}" for k in differing)
            raise EmbeddingsMismatch(f"{out} is planned for another encoder setup ({details}); plan again")


def plan_embedding_shards(
    passages_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    encoder: Encoder,
    shard_size: int,
    *,
    reuse_from: ReuseSource | None = None,
    scratch: str | os.PathLike[str] | None = None,
    on_mismatch: str = "restart",
) -> EmbeddingPlan:
    """Prepare ``out_dir`` for shard steps and plan them: the shards :func:`encode_passages` writes.

    Each shard is then encoded by :func:`encode_embedding_shard`, in any order and any process (the
    Dagster graph of ``dense_index`` maps one step over each), and :func:`finish_embeddings` completes
    the manifest. Shards of another model, backend or input are deleted; finished ones of this
    configuration stay, and their steps find them and skip. With ``reuse_from``, one DuckDB join over
    both snapshots' passages writes the reuse map into ``scratch`` (which the caller removes after
    the steps), so a step reads only its own rows of it. ``on_mismatch``: ``"restart"`` deletes shards of
    another model, backend, input or shard size; ``"error"`` raises :class:`EmbeddingsMismatch` instead.
    """
    if shard_size <= 0:
        raise ValueError("shard_size must be positive")
    if on_mismatch not in ("error", "restart"):
        raise ValueError("on_mismatch must be 'error' or 'restart'")
    files = passage_files(passages_dir)
    fingerprint = source_fingerprint(files)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    remove_leftovers(out)
    description = encoder_description(encoder)
    expected = expected_manifest(encoder_identity(encoder), shard_size, fingerprint, description)
    manifest = read_manifest(out)
    differing = [k for k in IDENTITY_KEYS if manifest is not None and manifest.get(k) != expected[k]]
    if differing and on_mismatch == "error":
        details = ", ".join(
            f"{k}: {manifest.get(k)!r} != {expected[k]!r}" for k in differing if k != "source"
        )
        raise EmbeddingsMismatch(
            f"{out} holds embeddings of another configuration ({details or 'input passages changed'}); "
            "pass on_mismatch='restart' or use another directory"
        )
    if manifest is None or differing:
        clear_shards(out)
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
        encoder=description,
    )
    if reuse_from is not None:
        if scratch is None:
            raise ValueError("reuse_from needs a scratch directory for the reuse map")
        try:
            plan.reuse_map = str(write_reuse_map(reuse_from, files, expected, Path(scratch)))
            plan.reuse_embeddings = str(reuse_from.embeddings_dir)
        except ReuseUnavailable as reason:
            plan.reuse_skipped = str(reason)
            log.warning("encoding every passage of %s: %s", passages_dir, reason)
    return plan


def _planned_sources(plan: EmbeddingPlan, shard: EmbeddingShard) -> np.ndarray:
    """Per row of the shard: the source row to copy the vector from, or -1 to encode it."""
    sources = np.full(shard.stop - shard.start, -1, dtype=np.int64)
    if plan.reuse_map is not None:
        table = pq.read_table(plan.reuse_map, filters=[("row", ">=", shard.start), ("row", "<", shard.stop)])
        sources[table.column("row").to_numpy() - shard.start] = table.column("source_row").to_numpy()
    return sources


def read_passage_rows(
    files: Sequence[Path], fingerprint: dict[str, Any], start: int, stop: int
) -> tuple[list[str], list[str], list[str]]:
    """``(passage_ids, titles, texts)`` of rows ``[start, stop)`` of the shards, reading only their row
    groups."""
    ids: list[str] = []
    titles: list[str] = []
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
            titles.extend(table.column("title").to_pylist())
            texts.extend(table.column("text").to_pylist())
        if base >= stop:
            break
    if len(ids) != stop - start:
        raise RuntimeError(f"rows {start}-{stop} of the passages: read {len(ids)} (input changed?)")
    return ids, titles, texts


def encode_embedding_shard(
    passages_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    encoder: Encoder,
    plan: EmbeddingPlan,
    shard: EmbeddingShard,
    *,
    batch_size: int | None = None,
    progress: bool = False,
    bar: Any = None,
) -> ShardResult:
    """Encode one planned shard: vectors of the plan's reuse map are copied, the others encoded; a
    finished shard (its files there, for the same rows) is skipped. ``bar``: a progress bar to advance
    (default: one of its own when ``progress``)."""
    started = time.perf_counter()
    device = str(getattr(encoder, "device", "cpu"))
    out = Path(out_dir)
    plan.check_encoder(encoder, out)
    expected = expected_manifest(plan.identity, plan.shard_size, plan.fingerprint, plan.encoder)
    manifest = read_manifest(out)
    if manifest is None or any(manifest.get(k) != expected[k] for k in IDENTITY_KEYS):
        raise EmbeddingsMismatch(
            f"{out} is not planned for this model, backend and input (plan_embedding_shards)"
        )
    ids, titles, texts = read_passage_rows(
        passage_files(passages_dir), plan.fingerprint, shard.start, shard.stop
    )
    emb_name, ids_name = shard_names(shard.index)
    if (out / emb_name).is_file() and (out / ids_name).is_file():
        stored = (out / ids_name).read_text(encoding="utf-8").splitlines()
        shape = np.load(out / emb_name, mmap_mode="r").shape
        if stored == ids and shape == (len(ids), plan.dimension):
            if bar is not None:
                bar.update(len(ids))
            return ShardResult(shard.index, len(ids), 0, 0, True, time.perf_counter() - started, device)
    sources = _planned_sources(plan, shard)
    source = None
    if plan.reuse_embeddings is not None and (sources >= 0).any():
        source = SourceVectors(Embeddings.open(plan.reuse_embeddings))
    fresh_rows = np.flatnonzero(sources < 0).tolist()
    fresh = ([titles[i] for i in fresh_rows], [texts[i] for i in fresh_rows])
    own_bar = bar is None
    bar = _progress_bar(len(ids), progress, f"{encoder.spec} shard {shard.index}") if own_bar else bar
    try:
        vectors = _shard_vectors(encoder, fresh, sources, source, batch_size, bar)
    finally:
        if own_bar:
            bar.close()
    save_text_atomic(out / ids_name, ids)
    save_npy_atomic(out / emb_name, vectors)
    return ShardResult(
        shard.index,
        len(ids),
        len(fresh_rows),
        len(ids) - len(fresh_rows),
        False,
        time.perf_counter() - started,
        device,
    )


def finish_embeddings(
    out_dir: str | os.PathLike[str], plan: EmbeddingPlan, results: Sequence[ShardResult]
) -> EncodeReport:
    """Check that every planned shard is there and complete the manifest; the report sums the steps."""
    out = Path(out_dir)
    expected = expected_manifest(plan.identity, plan.shard_size, plan.fingerprint, plan.encoder)
    planned = len(plan.shards)
    by_index = {r.index: r for r in results}
    if sorted(by_index) != list(range(planned)):
        raise RuntimeError(f"{out}: {planned} shards planned, results for {sorted(by_index)}")
    shards = []
    for index in range(planned):
        emb_name, ids_name = shard_names(index)
        if not ((out / emb_name).is_file() and (out / ids_name).is_file()):
            raise EmbeddingsMismatch(f"{out}: shard {index} was reported done but {emb_name} is missing")
        shards.append(_shard_entry(index, by_index[index].rows))
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
        devices=sorted({r.device for r in results if r.encoded}),
        encoder=plan.encoder,
    )


def _encode_sorted(
    encoder: Encoder, titles: list[str], texts: list[str], batch_size: int | None, bar: Any
) -> np.ndarray:
    """Encode a shard longest-first (little padding), in chunks that advance the progress bar (at least
    8 batches each, so a GPU gets full batches)."""
    order = np.argsort(
        [-(len(t or "") + len(x or "")) for t, x in zip(titles, texts, strict=True)], kind="stable"
    )
    vectors = np.empty((len(texts), encoder.dimension), dtype=np.float32)
    chunk = max(PROGRESS_CHUNK, 8 * (batch_size or getattr(encoder, "batch_size", 32) or 32))
    for start in range(0, len(texts), chunk):
        rows = order[start : start + chunk]
        vectors[rows] = encode_passage_batch(
            encoder, [titles[i] for i in rows], [texts[i] for i in rows], batch_size=batch_size
        )
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
