"""The vectors dense benchmarks search: the excerpt's passages (built once under ``benchmarks/work``), and
synthetic embeddings grown from the real ones to any count; recall against exact search."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from assets.indexes.dense import Embeddings, write_embeddings
from assets.params import KnowledgeSourceParams, PassagesParams
from benchmarks.common import locate_excerpt
from support.workspace import WORK_DIR, log


def excerpt_passages() -> Path:
    """The excerpt's passages (kilt mode, 100 words), built once under benchmarks/work/dense-data."""
    from assets.storage import SnapshotPaths
    from assets.wikipedia.pages import build_knowledge_source
    from assets.wikipedia.passages import build_passages

    data_dir = WORK_DIR / "dense-data"
    existing = sorted((data_dir / "snapshots").glob("*/passages/parquet/part-*.parquet"))
    if existing:
        return existing[0].parent
    log("building the excerpt's knowledge source and passages")
    report = build_knowledge_source(
        locate_excerpt(), data_dir, KnowledgeSourceParams(workers=2), progress=False
    )
    paths = SnapshotPaths(data_dir, report.snapshot_id)
    build_passages(paths, PassagesParams(max_words=100, mode="kilt", workers=2), progress=False)
    return paths.passages_parquet


def chosen_passages(
    passages: Path | None, from_snapshot: bool, limit: int | None, work: Path
) -> tuple[Path, str]:
    """The passages directory a benchmark's options name (``passages``; the newest built snapshot's under
    ``data_dir`` with ``from_snapshot``; else the excerpt's), cut to its first ``limit`` rows in a directory
    of its own under ``work``; and the label of embeddings made of it (``excerpt`` for any whole one)."""
    from assets import params
    from assets.storage import resolve_snapshot

    if passages:
        directory = passages
    elif from_snapshot:
        directory = resolve_snapshot(params.data_dir(), None).passages_parquet
    else:
        directory = excerpt_passages()
    if not limit:
        return directory, "excerpt"
    label = f"first-{limit}-{hashlib.sha1(str(directory.resolve()).encode()).hexdigest()[:10]}"
    out = work / label / "parquet"
    if not out.is_dir():
        files = sorted(directory.glob("part-*.parquet"))
        first = pa.concat_tables(pq.read_table(f) for f in files).slice(0, limit)
        out.mkdir(parents=True)
        pq.write_table(first, out / "part-00000.parquet")
    return out, label


def read_passages(directory: Path) -> pa.Table:
    files = sorted(directory.glob("part-*.parquet"))
    return pa.concat_tables(pq.read_table(f, columns=["passage_id", "title", "text"]) for f in files)


def synthetic_embeddings(
    source: Embeddings,
    out: Path,
    copies: int,
    neighbours: int,
    sigma: float,
    seed: int,
    limit: int | None = None,
) -> Embeddings:
    """``copies`` x the real vectors (the first ``limit`` of them when given). Copy 0 is the real vector;
    copy c >= 1 of passage i is ``normalize((1 - t) x_i + t x_j + sigma * N(0, I))`` with x_j one of
    i's ``neighbours`` nearest real passages and t ~ U(0, 0.5): new points between related passages, all
    distinct (plain tiling with small noise makes clusters of near-tied copies, where "recall against
    exact" measures tie-breaking)."""
    import faiss

    expected = {
        "copies": copies,
        "neighbours": neighbours,
        "sigma": sigma,
        "seed": seed,
        "base": source.count,
    }
    if limit is not None:
        expected["limit"] = limit
    if (out / "manifest.json").is_file() and Embeddings.open(out).manifest.get("source") == expected:
        log(f"reusing synthetic embeddings {out} ({copies} copies)")
        return Embeddings.open(out)
    base = source.load()
    ids = source.ids()
    flat = faiss.IndexFlatIP(base.shape[1])
    flat.add(base)
    _, near = flat.search(base, neighbours + 1)
    near = near[:, 1:]  # drop the passage itself

    def copies_made():
        for copy in range(copies):
            if copy == 0:
                yield ids, base
                continue
            rng = np.random.default_rng(seed + copy)
            partner = near[np.arange(len(base)), rng.integers(0, neighbours, len(base))]
            t = rng.uniform(0.0, 0.5, (len(base), 1)).astype(np.float32)
            mixed = (1 - t) * base + t * base[partner]
            mixed += rng.standard_normal(base.shape, dtype=np.float32) * sigma
            mixed /= np.linalg.norm(mixed, axis=1, keepdims=True)
            yield [f"{pid}#{copy}" for pid in ids], mixed

    def blocks():
        left = copies * len(ids) if limit is None else limit
        for block_ids, vectors in copies_made():
            if left <= 0:
                return
            yield block_ids[:left], vectors[:left]
            left -= len(block_ids)

    log(f"writing {copies} x {len(ids)} synthetic vectors to {out}")
    return write_embeddings(
        out, blocks(), model=source.manifest["model"], backend=source.manifest["backend"],
        dimension=source.dimension, source=expected,
    )  # fmt: skip


def recall(approx: np.ndarray, exact: np.ndarray) -> float:
    k = exact.shape[1]
    return float(np.mean([len(set(a[a >= 0]) & set(e)) / k for a, e in zip(approx, exact, strict=True)]))
