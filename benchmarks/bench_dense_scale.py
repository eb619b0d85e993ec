"""Dense retrieval at the 1M-article build's vector count, on the CPU (issue 28, part 2).

No GPU is lent to every session, so the 1M build's ~4.06M passages are not encoded here (the encoder's
CPU cost is measured per passage in ``dense.json`` and extrapolated in the capacity plan). What this
script measures at the real vector count is everything after encoding: building the FAISS index by the
``dense_index`` asset's steps (train, add each embeddings shard, merge, publish) and searching it.

Vectors: **not** encodings of the 1M build's passages. They are the real enwiki excerpt's passage
embeddings (the fast ONNX encoder), tiled to the 1M build's passage count by
``dense_sets.synthetic_embeddings``: copy 0 real, every further copy a seeded mix of a passage with one
of its 20 nearest real passages plus N(0, 0.01) noise, re-normalised. Queries: real NQ dev questions,
encoded by the same encoder. Recall@10 is measured against exact search streamed over the shards.

Each factory is built and searched in its own measured subprocess (wall, CPU, peak RSS of the tree);
disk is the index directory. Steps resume: vectors, ground truth and built indexes are reused.

    .venv/bin/python benchmarks/bench_dense_scale.py [--vectors 4057349] [--factories Flat,IVF8192,SQ8]
    .venv/bin/python benchmarks/bench_dense_scale.py --from-snapshot --passage-limit 200 --vectors 2000 \
        --factories "Flat;IVF16,SQ8" --queries 50          # a smoke run
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from assets.disk_space import tree_bytes
from benchmarks.common import machine_info, run_measured_json, write_results
from benchmarks.dense_sets import chosen_passages
from support.workspace import RESULTS_DIR, WORK_DIR, log

SCALE_DENSE = WORK_DIR / "dense-scale"
K = 10


def one_million_passages() -> int:
    """The passage count of the measured 1M-article build (``scale_n1000000.json``)."""
    run = json.loads((RESULTS_DIR / "scale_n1000000.json").read_text())
    return int(run["stages"]["passages"]["asset"]["passages"])


# ------------------------------------------------------------------------------------- steps
def prepare(vectors: int, queries: int, seed: int, passages: tuple[Path, str]) -> dict[str, Any]:
    """The real embeddings of ``passages`` (a directory and its label), their tiling to ``vectors`` and the
    encoded NQ questions (reused)."""
    from assets.indexes.dense import Embeddings, encode_passages
    from assets.indexes.dense.encoders import load_encoder
    from benchmarks.common import nq_questions
    from benchmarks.dense_sets import synthetic_embeddings

    SCALE_DENSE.mkdir(parents=True, exist_ok=True)
    fast = load_encoder("default", "onnx", cache_dir=SCALE_DENSE / "encoder-cache")
    passages_dir, label = passages
    real_dir = SCALE_DENSE / f"embeddings-{label}"
    started = time.perf_counter()
    report = encode_passages(passages_dir, real_dir, fast, shard_size=2500, on_mismatch="restart")
    real = Embeddings.open(real_dir)
    copies = math.ceil(vectors / real.count)
    tiled = synthetic_embeddings(
        real, SCALE_DENSE / "embeddings-tiled", copies, neighbours=20, sigma=0.01, seed=seed, limit=vectors
    )
    query_file = SCALE_DENSE / f"queries-{queries}.npy"
    if not query_file.is_file():
        np.save(query_file, fast.encode(nq_questions(queries)))
    return {
        "real_passages": real.count,
        "real_encoding_seconds": report.seconds,
        "copies": copies,
        "vectors": tiled.count,
        "dimension": tiled.dimension,
        "embeddings_bytes": tree_bytes(tiled.directory),
        "encoder": fast.spec,
        "prepare_seconds": round(time.perf_counter() - started, 1),
    }


def exact_top(query_file: Path) -> np.ndarray:
    """Exact top-``K`` rows of every query over the tiled embeddings, one shard in memory at a time."""
    from assets.indexes.dense import Embeddings

    embeddings = Embeddings.open(SCALE_DENSE / "embeddings-tiled")
    truth = exact_file(query_file, embeddings.count)
    if truth.is_file():
        return np.load(truth)
    queries = np.load(query_file)
    best_scores = np.full((len(queries), K), -np.inf, dtype=np.float32)
    best_rows = np.full((len(queries), K), -1, dtype=np.int64)
    offset = 0
    for shard in embeddings.shard_arrays():
        scores = queries @ np.asarray(shard).T
        rows = np.broadcast_to(np.arange(offset, offset + scores.shape[1]), scores.shape)
        merged_scores = np.concatenate([best_scores, scores], axis=1)
        merged_rows = np.concatenate([best_rows, rows], axis=1)
        top = np.argpartition(-merged_scores, K - 1, axis=1)[:, :K]
        best_scores = np.take_along_axis(merged_scores, top, axis=1)
        best_rows = np.take_along_axis(merged_rows, top, axis=1)
        offset += scores.shape[1]
    np.save(truth, best_rows)
    return best_rows


def build_step(factory: str) -> None:
    """Subprocess: the FAISS index of the tiled embeddings (the ``dense_index`` asset's steps)."""
    from assets.indexes.dense import FaissTuning, build_faiss_index

    report = build_faiss_index(
        SCALE_DENSE / "embeddings-tiled",
        index_dir(factory),
        factory,
        gpu="off",
        tuning=FaissTuning(threads=os.cpu_count()),
    )
    print(json.dumps(asdict(report), default=str))


def search_step(factory: str, settings: list[str], query_file: Path, mmap: bool) -> None:
    """Subprocess: open the index, search every query batch per setting; queries/s and recall@10."""
    from assets.indexes.dense import DenseSearcher
    from benchmarks.dense_sets import recall

    queries = np.load(query_file)
    started = time.perf_counter()
    searcher = DenseSearcher(index_dir(factory), mmap=mmap, threads=os.cpu_count())
    exact = np.load(exact_file(query_file, searcher.count))
    rows = []
    opened = time.perf_counter() - started
    for setting in settings:
        searcher.set_params(setting)
        begin = time.perf_counter()
        _, found = searcher.search_vectors(queries, K)
        seconds = time.perf_counter() - begin
        single = []
        for vector in queries[:200]:  # one client: one query per call
            t0 = time.perf_counter()
            searcher.search_vectors(vector[None, :], K)
            single.append(time.perf_counter() - t0)
        rows.append(
            {
                "params": setting,
                "queries_per_second_batch": round(len(queries) / seconds, 1),
                "single_query_p50_ms": round(float(np.percentile(single, 50)) * 1000, 2),
                "single_query_p99_ms": round(float(np.percentile(single, 99)) * 1000, 2),
                "recall_at_10": round(recall(found, exact), 4),
            }
        )
    print(json.dumps({"open_seconds": round(opened, 2), "settings": rows}))


def index_dir(factory: str) -> Path:
    """Where ``factory``'s index of the tiled embeddings goes (rebuilt when the vector count changes)."""
    return SCALE_DENSE / "indexes" / factory.replace(",", "_")


def exact_file(query_file: Path, vectors: int) -> Path:
    return query_file.with_suffix(f".exact-{vectors}.npy")


# ------------------------------------------------------------------------------------- driver
SETTINGS = {"Flat": [""], "HNSW32": ["efSearch=64", "efSearch=128", "efSearch=256"]}
IVF_SETTINGS = ["nprobe=16", "nprobe=32", "nprobe=64", "nprobe=128"]


def measured(arguments: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(what this script run with ``arguments`` printed, its wall/CPU/peak RSS)."""
    return run_measured_json([sys.executable, str(Path(__file__).resolve()), *arguments], interval=0.05)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--vectors", type=int, help="vectors to index (default: the 1M build's passages)")
    parser.add_argument("--factories", default="Flat;IVF8192,SQ8", help="';'-separated FAISS factories")
    parser.add_argument("--queries", type=int, default=2000, help="NQ dev questions searched")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--passages", type=Path, help="the real passages (default: the excerpt's)")
    parser.add_argument(
        "--from-snapshot", action="store_true", help="the passages of the newest built snapshot (data_dir)"
    )
    parser.add_argument("--passage-limit", type=int, help="only the first N real passages (a smoke run)")
    parser.add_argument("--rebuild", action="store_true", help="rebuild indexes that exist")
    parser.add_argument("--step", choices=["build", "search"], help=argparse.SUPPRESS)
    parser.add_argument("--factory", help=argparse.SUPPRESS)
    parser.add_argument("--settings", default="", help=argparse.SUPPRESS)
    parser.add_argument("--query-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--mmap", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step == "build":
        build_step(args.factory)
        return
    if args.step == "search":
        search_step(args.factory, args.settings.split(";"), args.query_file, args.mmap)
        return

    vectors = args.vectors or one_million_passages()
    log(f"preparing {vectors:,} vectors")
    passages = chosen_passages(args.passages, args.from_snapshot, args.passage_limit, SCALE_DENSE)
    data = prepare(vectors, args.queries, args.seed, passages)
    query_file = SCALE_DENSE / f"queries-{args.queries}.npy"
    started = time.perf_counter()
    exact_top(query_file)
    data["exact_search_seconds"] = round(time.perf_counter() - started, 1)
    results: dict[str, Any] = {
        "machine": machine_info(),
        "vectors": data,
        "what": (
            f"{data['vectors']:,} vectors = the 1M-article build's passage count; NOT encodings of its "
            f"passages: the excerpt's {data['real_passages']:,} real passage embeddings ({data['encoder']}) "
            "tiled by dense_sets.synthetic_embeddings (copy 0 real, copy c >= 1 = normalize((1-t) x_i + "
            "t x_j + 0.01 N(0, I)), x_j one of i's 20 nearest real passages, t ~ U(0, 0.5), seeded)"
        ),
        "queries": f"{args.queries:,} NQ dev questions, k={K}; recall@10 against exact search (all shards)",
        "factories": {},
    }
    for factory in [f for f in args.factories.split(";") if f]:
        target = index_dir(factory)
        built = json.loads((target / "index.json").read_text()) if (target / "index.json").is_file() else {}
        if args.rebuild or built.get("vectors") != data["vectors"]:
            log(f"building {factory} over {data['vectors']:,} vectors")
            report, build = measured(["--step", "build", "--factory", factory])
        else:
            report, build = built, {"reused": True}
        settings = SETTINGS.get(factory, IVF_SETTINGS if factory.startswith("IVF") else [""])
        entry: dict[str, Any] = {
            "build": {**build, "disk_bytes": tree_bytes(target)},
            "report": {k: report.get(k) for k in ("train_vectors", "train_seconds", "add_seconds", "bytes")},
        }
        for mode in ("in_memory", "mmap"):
            log(f"searching {factory} ({mode})")
            found, search = measured(
                ["--step", "search", "--factory", factory, "--settings", ";".join(settings),
                 "--query-file", str(query_file), *(["--mmap"] if mode == "mmap" else [])]
            )  # fmt: skip
            entry[f"search_{mode}"] = {**search, **found}
            for row in found["settings"]:
                log(
                    f"  {row['params'] or 'exact'}: {row['queries_per_second_batch']:,.0f} q/s batch, "
                    f"p50 {row['single_query_p50_ms']} ms one query, recall@10 {row['recall_at_10']:.3f}"
                )
        results["factories"][factory] = entry
        write_results("dense_scale", results)  # after each factory: a cut-off run keeps what it measured
    log(f"wrote {RESULTS_DIR / 'dense_scale.json'}")


if __name__ == "__main__":
    main()
