"""Dense retrieval: encoding speed of the fast backend vs sentence-transformers fp32, and FAISS search.

Targets (issue): (1) the fast CPU backend encodes passages >= 2x faster than sentence-transformers fp32 on
the same passages, with mean cosine >= 0.99 and top-10 overlap >= 0.9 against fp32; (2) FAISS answers
>= 1,000 queries/s at k=10 on >= 200k vectors with recall@10 >= 0.95 against exact search; memory per
vector for every factory tried.

Passages: the real enwiki excerpt's ~6,400 passages (built under ``benchmarks/work/dense-data`` unless
``--passages`` names a ``part-*.parquet`` directory). The 200k-vector set is synthetic, built from the
excerpt's real embeddings (``--copies`` 32 x ~6,400): copy 0 is the real vector, copy c >= 1 mixes the
passage with one of its 20 nearest real passages plus small noise (see ``synthetic_embeddings``).
Queries: the NQ dev questions of ``tests/data/original/dpr_topics``, encoded with the fast backend.

    .venv/bin/python benchmarks/bench_dense.py [--encode-sample 2000] [--copies 32] [--rounds 2]
    .venv/bin/python benchmarks/bench_dense.py --device cuda [--precisions fp32,fp16]   # GPU throughput
    .venv/bin/python benchmarks/bench_dense.py --from-snapshot --passage-limit 300 --copies 2 --nlist 8 \
        --pq-m 8 --queries 50 --encode-sample 64 --rounds 1 --repeats 1 --backends torch,onnx   # a smoke run
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from assets.indexes.dense import DenseSearcher, Embeddings, build_faiss_index, encode_passages
from assets.indexes.dense.encoders import (
    DEFAULT_MODEL_NAME,
    SentenceTransformerEncoder,
    default_model_dir,
    load_encoder,
    load_sentence_transformer,
    passage_text,
)
from assets.indexes.evaluation import first_sentence
from benchmarks.common import (
    NQ_TOPICS,
    code_fingerprint,
    format_table,
    machine_info,
    nq_questions,
    write_results,
)
from benchmarks.dense_sets import chosen_passages, read_passages, recall, synthetic_embeddings
from support.workspace import REPO_ROOT, RESULTS_DIR, WORK_DIR, log

DENSE_WORK = WORK_DIR / "dense"


# ------------------------------------------------------------------------------------- inputs
def load_now() -> float:
    return round(os.getloadavg()[0], 2)


# ------------------------------------------------------------------------------------- (1) encoding
def time_encode(encoder: Any, texts: list[str], batch_size: int) -> tuple[float, float, np.ndarray]:
    """(wall seconds, CPU seconds of this process, vectors) for one encode of ``texts``."""
    gc.collect()
    cpu = time.process_time()
    started = time.perf_counter()
    vectors = encoder.encode(texts, batch_size=batch_size)
    return time.perf_counter() - started, time.process_time() - cpu, vectors


def top10_overlap(
    queries_a: np.ndarray, corpus_a: np.ndarray, queries_b: np.ndarray, corpus_b: np.ndarray
) -> float:
    top_a = np.argsort(-(queries_a @ corpus_a.T), axis=1)[:, :10]
    top_b = np.argsort(-(queries_b @ corpus_b.T), axis=1)[:, :10]
    return float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(top_a, top_b, strict=True)]))


def bench_encoders(
    table: pa.Table, sample: int, rounds: int, backends: list[str], cache_dir: Path, seed: int
) -> dict[str, Any]:
    rng = random.Random(seed)
    rows = sorted(rng.sample(range(table.num_rows), min(sample, table.num_rows)))
    subset = table.take(rows)
    titles, bodies = subset.column("title").to_pylist(), subset.column("text").to_pylist()
    texts = [passage_text(t, x) for t, x in zip(titles, bodies, strict=True)]
    queries = [first_sentence(x) for x in rng.sample(bodies, min(200, len(bodies)))]
    log(f"encoding speed: {len(texts)} passages, backends {backends}, {rounds} round(s)")
    encoders = {}
    for backend in backends:
        started = time.perf_counter()
        try:
            if backend == "torch":  # the peer: sentence-transformers' own fp32 encode
                model = load_sentence_transformer(str(default_model_dir()), True)
                encoders[backend] = SentenceTransformerEncoder(model, DEFAULT_MODEL_NAME, "torch")
            else:
                encoders[backend] = load_encoder("default", backend, cache_dir=cache_dir)
        except Exception as error:  # an optional backend that is not installed
            log(f"  {backend}: unavailable ({type(error).__name__}: {error})")
            continue
        log(f"  {backend}: loaded in {time.perf_counter() - started:.1f} s")
    batch = {"torch": 32}  # sentence-transformers' default batch size for the reference
    results: dict[str, dict[str, Any]] = {
        b: {"wall_seconds": [], "cpu_seconds": [], "load_average": []} for b in encoders
    }
    vectors: dict[str, np.ndarray] = {}
    for name, encoder in encoders.items():  # warm-up (first-call allocations, lazy init)
        encoder.encode(texts[:32], batch_size=batch.get(name, 16))
    for round_index in range(rounds):
        for name, encoder in encoders.items():
            if round_index > 0 and name not in ("torch", "onnx"):
                continue
            load = load_now()
            wall, cpu, out = time_encode(encoder, texts, batch.get(name, 16))
            vectors[name] = out
            results[name]["wall_seconds"].append(round(wall, 2))
            results[name]["cpu_seconds"].append(round(cpu, 2))
            results[name]["load_average"].append(load)
            log(f"  round {round_index + 1} {name}: {len(texts) / wall:.1f} passages/s (load {load})")
    reference = vectors["torch"]
    reference_queries = encoders["torch"].encode(queries)
    for name, encoder in encoders.items():
        entry = results[name]
        best_wall, best_cpu = min(entry["wall_seconds"]), min(entry["cpu_seconds"])
        cosine = (vectors[name] * reference).sum(axis=1)
        entry.update(
            batch_size=batch.get(name, 16),
            passages_per_second=round(len(texts) / best_wall, 1),
            passages_per_cpu_second=round(len(texts) / best_cpu, 1),
            mean_cosine_vs_fp32=round(float(cosine.mean()), 5),
            min_cosine_vs_fp32=round(float(cosine.min()), 5),
            top10_overlap_vs_fp32=round(
                top10_overlap(encoder.encode(queries), vectors[name], reference_queries, reference), 4
            ),
        )
    base = results["torch"]
    for entry in results.values():
        entry["speedup_wall"] = round(entry["passages_per_second"] / base["passages_per_second"], 2)
        entry["speedup_cpu"] = round(entry["passages_per_cpu_second"] / base["passages_per_cpu_second"], 2)
    return {
        "passages": len(texts),
        "queries_for_overlap": len(queries),
        "rounds": rounds,
        "backends": results,
    }


# ------------------------------------------------------------------------------------- (2) FAISS
def timed_search(
    searcher: DenseSearcher, queries: np.ndarray, k: int, repeats: int
) -> tuple[float, np.ndarray]:
    """Best queries/s over ``repeats`` batch searches of all queries, and the result rows."""
    best, rows = float("inf"), None
    for _ in range(repeats):
        started = time.perf_counter()
        _, rows = searcher.search_vectors(queries, k)
        best = min(best, time.perf_counter() - started)
    return len(queries) / best, rows


FACTORIES: list[tuple[str, str, list[str]]] = [
    # (factory, search parameter, values swept)
    ("Flat", "", [""]),
    ("HNSW32", "efSearch", ["16", "32", "64", "128", "256", "512", "1024"]),
    ("IVF{n},SQ8", "nprobe", ["4", "8", "16", "32", "64", "128"]),
    ("IVF{n},PQ{m}", "nprobe", ["8", "16", "32", "64"]),
    ("IVF{n},PQ{m},RFlat", "nprobe,k_factor_rf", ["16,8", "32,16", "64,32", "128,32"]),
]


def bench_faiss(
    embeddings: Embeddings,
    queries: np.ndarray,
    domain_queries: np.ndarray,
    nlist: int,
    pq_m: int,
    repeats: int,
    threads: int,
) -> dict[str, Any]:
    """Every factory x setting: NQ queries/s and recall@10 vs exact; recall also for in-domain queries."""
    import faiss

    faiss.omp_set_num_threads(threads)
    rows: list[dict[str, Any]] = []
    exact = exact_domain = None
    for template, param, values in FACTORIES:
        factory = template.format(n=nlist, m=pq_m)
        index_dir = DENSE_WORK / "indexes" / factory.replace(",", "_")
        log(f"building {factory} on {embeddings.count:,} vectors")
        report = build_faiss_index(embeddings.directory, index_dir, factory)
        log(
            f"  built in {report.seconds:.1f} s (train {report.train_seconds:.1f} s on "
            f"{report.train_vectors:,}), {report.bytes_per_vector:.1f} bytes/vector"
        )
        searcher = DenseSearcher(index_dir)
        for value in values:
            setting = ",".join(f"{p}={v}" for p, v in zip(param.split(","), value.split(","), strict=True))
            searcher.set_params(setting if param else "")
            qps, result = timed_search(searcher, queries, 10, repeats)
            _, domain_result = searcher.search_vectors(domain_queries, 10)
            if factory == "Flat":
                exact, exact_domain = result, domain_result
            rows.append(
                {
                    "factory": factory,
                    "params": setting if param else "",
                    "queries_per_second": round(qps, 1),
                    "recall_at_10": round(recall(result, exact), 4),
                    "recall_at_10_in_domain": round(recall(domain_result, exact_domain), 4),
                    "bytes_per_vector": report.bytes_per_vector,
                    "index_bytes": report.bytes,
                    "build_seconds": report.seconds,
                    "train_seconds": report.train_seconds,
                    "train_vectors": report.train_vectors,
                    "load_average": load_now(),
                }
            )
            log(
                f"  {rows[-1]['params'] or 'exact'}: {qps:,.0f} q/s, recall@10 {rows[-1]['recall_at_10']:.3f}"
            )
        del searcher
        gc.collect()
    return {"vectors": embeddings.count, "dimension": embeddings.dimension, "threads": threads, "runs": rows}


# ------------------------------------------------------------------------------------- main
def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--passages", type=Path, help="a part-*.parquet passages directory (default: the excerpt)"
    )
    parser.add_argument(
        "--from-snapshot", action="store_true", help="the passages of the newest built snapshot (data_dir)"
    )
    parser.add_argument("--passage-limit", type=int, help="only the first N passages (a smoke run)")
    parser.add_argument("--encode-sample", type=int, default=2000, help="passages for the speed comparison")
    parser.add_argument("--rounds", type=int, default=2, help="timed rounds of torch vs onnx (best is kept)")
    parser.add_argument(
        "--backends",
        default="torch,onnx,onnx-fp32,openvino,torch-int8",
        help="backends to compare (torch first)",
    )
    parser.add_argument("--copies", type=int, default=32, help="copies of each passage in the FAISS set")
    parser.add_argument(
        "--noise", type=float, default=0.01, help="per-dimension sigma of the synthetic copies"
    )
    parser.add_argument(
        "--neighbours", type=int, default=20, help="real neighbours a synthetic copy mixes in"
    )
    parser.add_argument(
        "--reuse-encoding", action="store_true", help="keep the encoding section of the last dense.json"
    )
    parser.add_argument("--nlist", type=int, default=1024)
    parser.add_argument("--pq-m", type=int, default=48)
    parser.add_argument("--queries", type=int, default=0, help="NQ dev questions to use (0 = all 8,757)")
    parser.add_argument("--repeats", type=int, default=3, help="timed searches per setting (best is kept)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument(
        "--device",
        help="instead: encoding throughput on this device (auto, cpu, cuda, cuda:N) vs sentence-transformers "
        "(benchmarks/bench_dense_devices.py)",
    )
    parser.add_argument(
        "--precisions", help="with --device: e.g. fp32,fp16 (default: fp32,fp16 on GPU, fp32 on CPU)"
    )
    parser.add_argument(
        "--device-passages", type=int, help="with --device: passages (default 20,000 GPU, 384 CPU)"
    )
    parser.add_argument(
        "--device-batch", type=int, help="with --device: batch size (default 256 GPU, 32 CPU)"
    )
    return parser


def _targets(encoding: dict[str, Any], faiss_results: dict[str, Any]) -> dict[str, Any]:
    """Which targets the measurements meet: the encoding speed-up and agreement, the search settings."""
    qualifying = [
        r for r in faiss_results["runs"] if r["recall_at_10"] >= 0.95 and r["queries_per_second"] >= 1000
    ]
    qualifying_domain = [
        r
        for r in faiss_results["runs"]
        if r["recall_at_10_in_domain"] >= 0.95 and r["queries_per_second"] >= 1000 and r["factory"] != "Flat"
    ]
    onnx = encoding["backends"].get("onnx", {})
    return {
        "encoding_speedup_wall": onnx.get("speedup_wall"),
        "encoding_speedup_cpu": onnx.get("speedup_cpu"),
        "encoding_speedup_target_met": bool(onnx) and onnx["speedup_wall"] >= 2.0,
        "agreement_met": bool(onnx)
        and onnx["mean_cosine_vs_fp32"] >= 0.99
        and onnx["top10_overlap_vs_fp32"] >= 0.9,
        "search_settings_meeting_1000qps_recall095": [
            f"{r['factory']} {r['params']}".strip() for r in qualifying
        ],
        "search_target_met": bool(qualifying) and faiss_results["vectors"] >= 200_000,
        "approximate_settings_meeting_1000qps_recall095_in_domain": [
            f"{r['factory']} {r['params']}" for r in qualifying_domain
        ],
    }


def _print_report(results: dict[str, Any], path: Path) -> None:
    """The encoding, encode_passages and FAISS tables, and the targets."""
    encoding, faiss_results = results["encoding"], results["faiss"]
    print("\nEncoding (same passages; best of rounds; speedup vs sentence-transformers fp32):")
    headers = [
        "backend",
        "batch",
        "passages/s",
        "passages/CPU-s",
        "speedup",
        "speedup CPU",
        "mean cos",
        "top-10",
    ]
    table_rows = [
        [name, e["batch_size"], e["passages_per_second"], e["passages_per_cpu_second"],
         f"{e['speedup_wall']}x", f"{e['speedup_cpu']}x", e["mean_cosine_vs_fp32"],
         e["top10_overlap_vs_fp32"]]
        for name, e in encoding["backends"].items()
    ]  # fmt: skip
    print(format_table(headers, table_rows))
    query_rate = results["query_encoding"]["queries_per_second"]
    encoded = results["encode_passages"]
    print(
        f"\nencode_passages ({encoded['backend']}): {encoded['passages']:,} passages in "
        f"{encoded['seconds']:.1f} s = {encoded['passages_per_second']:.1f} passages/s; "
        f"NQ queries: {query_rate} q/s"
    )
    print(f"\nFAISS on {faiss_results['vectors']:,} vectors ({faiss_results['synthetic']}), k=10:")
    print(
        format_table(
            ["factory", "params", "queries/s", "recall@10 NQ", "recall@10 domain", "bytes/vector", "build s"],
            [
                [r["factory"], r["params"] or "exact", r["queries_per_second"], r["recall_at_10"],
                 r["recall_at_10_in_domain"],
                 r["bytes_per_vector"], r["build_seconds"]]
                for r in faiss_results["runs"]
            ],
        )
    )  # fmt: skip
    print(f"\ntargets: {results['targets']}")
    print(f"results: {path}")


def _encode_excerpt(
    passages_dir: Path,
    label: str,
    table: Any,
    cache_dir: Path,
    previous: Path,
    results: dict[str, Any],
    queries: int,
) -> tuple[Any, str, Path, list[str], Any]:
    """Every passage encoded with the int8 ONNX encoder (resumed shards kept), and the NQ dev questions;
    the measurements go into ``results``."""
    fast = load_encoder("default", "onnx", cache_dir=cache_dir)
    export_key = fast.onnx_path.parent.name  # a new export recipe re-encodes instead of reusing stale vectors
    embeddings_dir = DENSE_WORK / f"embeddings-{label}-{export_key}"
    log(f"encoding all {table.num_rows:,} passages with encode_passages ({fast.spec})")
    report = encode_passages(passages_dir, embeddings_dir, fast, shard_size=2500, on_mismatch="restart")
    results["encode_passages"] = {
        "passages": report.passages,
        "shards": report.shards,
        "resumed_shards": report.resumed_shards,
        "seconds": report.seconds,
        "passages_per_second": report.passages_per_second,
        "backend": report.backend,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    if report.encoded_passages == 0 and previous.is_file():  # already encoded: keep the measured run
        earlier = json.loads(previous.read_text()).get("encode_passages")
        if earlier and earlier.get("passages_per_second"):
            results["encode_passages"] = earlier
            log("embeddings were already complete: keeping the earlier encode_passages measurement")

    questions = nq_questions(queries or None)
    started = time.perf_counter()
    query_vectors = fast.encode(questions)
    query_seconds = time.perf_counter() - started
    results["query_encoding"] = {
        "queries": len(questions),
        "seconds": round(query_seconds, 2),
        "queries_per_second": round(len(questions) / query_seconds, 1),
        "backend": fast.backend,
    }
    log(f"encoded {len(questions):,} NQ dev questions in {query_seconds:.1f} s")

    return fast, export_key, embeddings_dir, questions, query_vectors


def main() -> None:
    args = _parser().parse_args()
    if args.device:
        from benchmarks import bench_dense_devices

        passages_dir, _ = chosen_passages(args.passages, args.from_snapshot, args.passage_limit, DENSE_WORK)
        table = read_passages(passages_dir)
        titles, texts = table.column("title").to_pylist(), table.column("text").to_pylist()
        bench_dense_devices.run(args, titles, texts, passages_dir)
        return

    DENSE_WORK.mkdir(parents=True, exist_ok=True)
    cache_dir = DENSE_WORK / "encoder-cache"
    passages_dir, label = chosen_passages(args.passages, args.from_snapshot, args.passage_limit, DENSE_WORK)
    table = read_passages(passages_dir)
    log(f"passages: {table.num_rows:,} from {passages_dir}")
    results: dict[str, Any] = {
        "machine": machine_info(),
        "load_average_start": load_now(),
        "code": code_fingerprint([REPO_ROOT / "assets/indexes/dense", Path(__file__)]),
        "passages_dir": str(passages_dir),
        "passages": table.num_rows,
        "passage_text": 'title + " " + text (queries: raw text)',
    }

    backends = [b for b in args.backends.split(",") if b]
    previous = RESULTS_DIR / "dense.json"
    if args.reuse_encoding and previous.is_file():
        encoding = json.loads(previous.read_text())["encoding"]
        log(f"reusing the encoding measurements of {previous} (measured {encoding.get('measured_at')})")
    else:
        encoding = bench_encoders(table, args.encode_sample, args.rounds, backends, cache_dir, args.seed)
        encoding["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    results["encoding"] = encoding

    fast, export_key, embeddings_dir, questions, query_vectors = _encode_excerpt(
        passages_dir, label, table, cache_dir, previous, results, args.queries
    )
    base = Embeddings.open(embeddings_dir)
    synthetic_dir = (
        DENSE_WORK / f"embeddings-synthetic-{'' if label == 'excerpt' else label + '-'}{export_key}"
    )
    synthetic = synthetic_embeddings(base, synthetic_dir, args.copies, args.neighbours, args.noise, args.seed)
    rng = random.Random(args.seed)
    texts = table.column("text").to_pylist()
    domain = [first_sentence(x) for x in rng.sample(texts, min(2000, len(texts)))]
    domain_vectors = fast.encode(domain)
    faiss_results = bench_faiss(
        synthetic, query_vectors, domain_vectors, args.nlist, args.pq_m, args.repeats, args.threads
    )
    faiss_results["in_domain_queries"] = "first full sentence of 2,000 random excerpt passages"
    faiss_results["synthetic"] = (
        f"{args.copies} x the excerpt's {base.count:,} real passage embeddings: copy 0 real, copy c >= 1 of "
        f"passage i = normalize((1-t) x_i + t x_j + {args.noise} N(0, I)), x_j one of i's {args.neighbours} "
        "nearest real passages, t ~ U(0, 0.5), seeded"
    )
    faiss_results["queries"] = f"{len(questions):,} NQ dev questions ({NQ_TOPICS.name}), k=10, one batch"
    results["faiss"] = faiss_results

    results["targets"] = _targets(encoding, faiss_results)
    results["load_average_end"] = load_now()
    path = write_results("dense", results)

    _print_report(results, path)


if __name__ == "__main__":
    main()
