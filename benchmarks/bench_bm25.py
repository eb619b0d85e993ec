"""BM25: indexing through ``build_bm25_index`` vs Anserini directly, and batch-search QPS vs bm25s.

On the passages of the excerpt replicated ``--copies`` times (40: a ~245 MB dump, ~256k passages):

1. Indexing: ``build_bm25_index`` (a fresh ``python -c`` process: interpreter, checks, Anserini
   subprocess, log parsing, publish) vs Anserini ``IndexCollection`` run directly with the same jar,
   java binary, JVM options, arguments and threads. Alternated, ``--repeats`` times each; the ratio
   of the medians is the figure (target <= 1.2x).
2. Search: ``Bm25Searcher.batch_search`` (pyserini ``LuceneSearcher`` in-process, 2 threads, k=100)
   vs ``bm25s`` (k1/b equal, Snowball English stemmer + English stopwords, ``n_threads=2``) on the
   same passages (title + text) and the same ``--queries`` NQ dev questions; QPS of both (query
   tokenization included for bm25s, Java query analysis for Anserini) and the mean top-10 overlap.
   Every replicated passage exists ``--copies`` times with equal scores, so the overlap is given
   by id and tie-aware (copies folded), and again on the unreplicated excerpt (x1, unique passages).
   Anserini's own ``SearchCollection`` (subprocess, TREC run) is timed as a Java-only reference.

    .venv/bin/python benchmarks/bench_bm25.py [--copies 40] [--queries 2000] [--repeats 3]

Results: ``benchmarks/results/bm25.json``. The machine is shared: figures are indicative.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from assets.indexes.bm25 import (
    Bm25Searcher,
    Bm25Settings,
    anserini_command,
    anserini_version,
    build_bm25_index,
    index_collection_args,
    java_runtime,
    lucene_buffer_mb,
    parse_index_log,
    run_anserini,
)
from assets.params import KnowledgeSourceParams, PassagesParams
from assets.storage import SnapshotPaths
from assets.topics import read_topics
from benchmarks.common import (
    code_fingerprint,
    format_table,
    machine_info,
    repo_path,
    run_measured,
    write_results,
)
from benchmarks.replication import PAGE_ID_STRIDE, replicate_dump
from support.real_data import real_file
from support.workspace import REPO_ROOT, WORK_DIR, log

NQ_DEV = real_file("original", "dpr_topics", "topics.dpr.nq.dev.txt")
DATA_ROOT = WORK_DIR / "bm25-data"
INDEX_WORK = WORK_DIR / "bm25"
HEAP = "2g"
THREADS = 2


# ------------------------------------------------------------------------------------- input
def ensure_passages(copies: int) -> tuple[SnapshotPaths, dict[str, Any]]:
    """Knowledge source + kilt passages of the replicated dump under ``benchmarks/work/`` (cached)."""
    from assets.wikipedia.pages import build_knowledge_source
    from assets.wikipedia.passages import build_passages

    dump = replicate_dump(copies)
    data_dir = DATA_ROOT / f"x{copies}"
    marker = data_dir / "source.json"
    paths = SnapshotPaths(data_dir, "bench")
    source = {"dump": Path(dump.path).name, "compressed_bytes": dump.compressed_bytes, "copies": copies}
    if marker.is_file() and paths.passages_report.is_file():
        cached = json.loads(marker.read_text())
        if cached.get("source") == source:
            log(f"reusing cached passages in {data_dir}")
            return paths, cached
    shutil.rmtree(data_dir, ignore_errors=True)
    log(f"building knowledge source + passages of {Path(dump.path).name} ({dump.xml_mb:,.0f} MB XML)")
    started = time.perf_counter()
    build_knowledge_source(
        Path(dump.path), data_dir, KnowledgeSourceParams(snapshot="bench", workers=2), progress=False
    )
    report = build_passages(paths, PassagesParams(max_words=100, mode="kilt", workers=2), progress=False)
    info = {
        "source": source,
        "xml_bytes": dump.xml_bytes,
        "passages": report.passages,
        "collection_bytes": report.bytes.get("collection"),
        "collection_files": len(list(paths.passages_collection.glob("*.jsonl"))),
        "build_seconds": round(time.perf_counter() - started, 1),
    }
    marker.write_text(json.dumps(info, indent=2) + "\n")
    return paths, info


# ------------------------------------------------------------------------------------- 1. indexing
def _direct_command(collection: Path, index_dir: Path) -> list[str]:
    args = index_collection_args(
        collection,
        index_dir,
        threads=THREADS,
        language="en",
        memory_buffer_mb=lucene_buffer_mb(HEAP),
    )
    return anserini_command("io.anserini.index.IndexCollection", args, heap=HEAP)


def _wrapper_command(collection: Path, index_dir: Path) -> list[str]:
    code = (
        "import json; from pathlib import Path; "
        "from assets.indexes.bm25 import build_bm25_index; "
        f"r = build_bm25_index(Path({str(collection)!r}), Path({str(index_dir)!r}), threads={THREADS}, "
        f"heap={HEAP!r}, progress=False); print(json.dumps(r.to_dict()))"
    )
    return [sys.executable, "-c", code]


def bench_indexing(collection: Path, passages: int, repeats: int) -> dict[str, Any]:
    INDEX_WORK.mkdir(parents=True, exist_ok=True)
    runs: dict[str, list[dict[str, Any]]] = {"direct": [], "wrapper": []}
    report: dict[str, Any] = {}
    for rep in range(repeats):
        for name in ("direct", "wrapper"):
            index_dir = INDEX_WORK / f"{name}-index"
            shutil.rmtree(index_dir, ignore_errors=True)
            command = (_direct_command if name == "direct" else _wrapper_command)(collection, index_dir)
            log(f"indexing {rep + 1}/{repeats}: {name}")
            run = run_measured(command)
            if run.returncode != 0:
                raise RuntimeError(f"{name} indexing failed ({run.returncode}):\n{run.stderr[-3000:]}")
            if name == "direct":
                counts = parse_index_log((run.stdout + run.stderr).splitlines())
                indexed = counts.get("indexed", -1)
            else:
                report = json.loads(run.stdout.strip().splitlines()[-1])
                indexed = report["documents_indexed"]
            if indexed != passages:
                raise RuntimeError(f"{name}: {indexed} documents indexed, expected {passages}")
            extra = {}
            if name == "wrapper":  # time spent in Python around the Anserini subprocess
                extra["python_overhead_seconds"] = round(report["seconds"] - report["anserini_seconds"], 3)
            runs[name].append(
                {
                    **extra,
                    "wall_seconds": run.wall_seconds,
                    "cpu_seconds": round(run.user_seconds + run.system_seconds, 2),
                    "peak_rss_tree_bytes": run.peak_rss_tree,
                    "load_average_before": run.load_average_before,
                    "documents_indexed": indexed,
                    "index_bytes": sum(p.stat().st_size for p in index_dir.iterdir() if p.is_file()),
                }
            )
            log(f"  {name}: {run.wall_seconds:.1f} s wall, {indexed:,} documents")
    direct = statistics.median(r["wall_seconds"] for r in runs["direct"])
    wrapper = statistics.median(r["wall_seconds"] for r in runs["wrapper"])
    direct_cpu = statistics.median(r["cpu_seconds"] for r in runs["direct"])
    wrapper_cpu = statistics.median(r["cpu_seconds"] for r in runs["wrapper"])
    shutil.rmtree(INDEX_WORK / "direct-index", ignore_errors=True)
    return {
        "passages": passages,
        "threads": THREADS,
        "heap": HEAP,
        "direct_command": _direct_command(collection, Path("<index>")),
        "runs": runs,
        "direct_median_seconds": direct,
        "wrapper_median_seconds": wrapper,
        "ratio_wrapper_over_direct": round(wrapper / direct, 3),
        "target_ratio": 1.2,
        "direct_min_seconds": min(r["wall_seconds"] for r in runs["direct"]),
        "wrapper_min_seconds": min(r["wall_seconds"] for r in runs["wrapper"]),
        "ratio_of_minimums": round(
            min(r["wall_seconds"] for r in runs["wrapper"]) / min(r["wall_seconds"] for r in runs["direct"]),
            3,
        ),
        "ratio_cpu_seconds": round(wrapper_cpu / direct_cpu, 3),
        "wrapper_python_overhead_seconds_median": statistics.median(
            r["python_overhead_seconds"] for r in runs["wrapper"]
        ),
        "wrapper_report": report,
    }


# ------------------------------------------------------------------------------------- 2. search
def load_queries(count: int) -> list[str]:
    if not NQ_DEV.is_file():
        raise SystemExit(f"NQ dev questions not found: {NQ_DEV}")
    topics = read_topics(NQ_DEV, "dpr")
    if len(topics) < count:
        raise SystemExit(f"{NQ_DEV} has {len(topics)} questions, fewer than {count}")
    return [t.text for t in topics[:count]]


def load_corpus(collection: Path) -> tuple[list[str], list[str]]:
    ids, texts = [], []
    for part in sorted(collection.glob("*.jsonl")):
        with open(part, encoding="utf-8") as handle:
            for line in handle:
                record = json.loads(line)
                ids.append(record["id"])
                texts.append(record["contents"])
    return ids, texts


def bench_ours(index_dir: Path, queries: list[str], k: int) -> tuple[dict[str, Any], dict[str, list[str]]]:
    qids = [str(i) for i in range(len(queries))]
    started = time.perf_counter()
    searcher = Bm25Searcher(index_dir, Bm25Settings.from_params().replace(heap=HEAP))
    open_seconds = time.perf_counter() - started
    searcher.batch_search_ids(queries[:200], qids[:200], k=k, threads=THREADS)  # JIT warm-up
    timings: dict[str, float] = {}
    results: dict[str, Any] = {}
    for label, with_text in (("ids_scores", False), ("with_text", True)):
        started = time.perf_counter()
        results[label] = searcher.batch_search_ids(queries, qids, k=k, threads=THREADS, with_text=with_text)
        timings[label] = time.perf_counter() - started
        log(f"  ours ({label}): {len(queries) / timings[label]:,.1f} QPS")
    num_docs = searcher.num_docs
    searcher.close()
    top10 = {qid: [h.passage_id for h in hits[:10]] for qid, hits in results["ids_scores"].items()}
    assert all(
        [h.passage_id for h in results["with_text"][q]] == [h.passage_id for h in results["ids_scores"][q]]
        for q in qids
    )
    return {
        "engine": f"Anserini {anserini_version()} via pyserini LuceneSearcher (in-process JVM)",
        "num_docs": num_docs,
        "open_seconds": round(open_seconds, 2),
        "seconds_ids_scores": round(timings["ids_scores"], 2),
        "qps_ids_scores": round(len(queries) / timings["ids_scores"], 1),
        "seconds_with_text": round(timings["with_text"], 2),
        "qps_with_text": round(len(queries) / timings["with_text"], 1),
        "mean_hits": statistics.fmean(len(h) for h in results["ids_scores"].values()),
    }, top10


def bench_search_collection(index_dir: Path, queries: list[str], k: int) -> dict[str, Any]:
    """Anserini's own batch tool (SearchCollection subprocess, TREC run file): a Java-only reference."""
    topics = INDEX_WORK / "nq-dev-topics.tsv"
    topics.write_text("".join(f"{i}\t{q}\n" for i, q in enumerate(queries)))
    output = INDEX_WORK / "search-collection.trec"
    args = [
        "-index",
        str(index_dir),
        "-topics",
        str(topics),
        "-topicReader",
        "TsvString",
        "-output",
        str(output),
        "-bm25",
        "-bm25.k1",
        "0.9",
        "-bm25.b",
        "0.4",
        "-hits",
        str(k),
        "-threads",
        str(THREADS),
    ]
    run = run_anserini("io.anserini.search.SearchCollection", args, heap=HEAP)
    rate = next((line.rsplit("~", 1)[-1] for line in run.lines if "q/s" in line), "")
    return {"wall_seconds_including_jvm_start": round(run.seconds, 2), "anserini_reported": rate.strip()}


def bench_bm25s(collection: Path, queries: list[str], k: int) -> tuple[dict[str, Any], dict[str, list[str]]]:
    import bm25s
    import Stemmer
    from bm25s.tokenization import Tokenizer

    ids, texts = load_corpus(collection)
    stemmer = Stemmer.Stemmer("english")
    tokenizer = Tokenizer(stopwords="en", stemmer=stemmer)
    started = time.perf_counter()
    corpus_tokens = tokenizer.tokenize(texts, show_progress=False)
    retriever = bm25s.BM25(k1=0.9, b=0.4)
    retriever.index(corpus_tokens, show_progress=False)
    index_seconds = time.perf_counter() - started
    del corpus_tokens, texts
    warm = tokenizer.tokenize(queries[:200], update_vocab=False, show_progress=False)
    retriever.retrieve(warm, k=k, n_threads=THREADS, show_progress=False)
    started = time.perf_counter()
    query_tokens = tokenizer.tokenize(queries, update_vocab=False, show_progress=False)
    documents, _scores = retriever.retrieve(query_tokens, k=k, n_threads=THREADS, show_progress=False)
    seconds = time.perf_counter() - started
    log(f"  bm25s: {len(queries) / seconds:,.1f} QPS")
    top10 = {str(i): [ids[d] for d in row[:10]] for i, row in enumerate(documents)}
    return {
        "engine": f"bm25s {bm25s.__version__} (numpy backend, PyStemmer english, stopwords en)",
        "num_docs": len(ids),
        "index_seconds": round(index_seconds, 2),
        "seconds": round(seconds, 2),
        "qps": round(len(queries) / seconds, 1),
    }, top10


def canonical(passage_id: str) -> str:
    """The original passage of a replica's copy (copy k of page W has page id W + k * stride)."""
    page, _, ordinal = passage_id.rpartition("-")
    return f"{int(page) % PAGE_ID_STRIDE}-{ordinal}"


def overlap_at_10(ours: dict[str, list[str]], theirs: dict[str, list[str]]) -> dict[str, float]:
    """Mean |top-10 ∩ top-10| / 10 by passage id, and tie-aware by original passage.

    In a replicated corpus each passage exists ``copies`` times with identical scores, and the two
    engines break those exact ties differently (Anserini by docid, bm25s by array order): the
    by-id overlap then mostly measures tie-breaking. The tie-aware figure compares the multisets
    of original passages (copy suffix removed).
    """
    by_id, by_original, top1 = [], [], []
    for qid, mine in ours.items():
        other = theirs[qid]
        by_id.append(len(set(mine[:10]) & set(other[:10])) / 10)
        common = Counter(map(canonical, mine[:10])) & Counter(map(canonical, other[:10]))
        by_original.append(sum(common.values()) / 10)
        top1.append(bool(mine) and bool(other) and canonical(mine[0]) == canonical(other[0]))
    return {
        "mean_top10_overlap": round(statistics.fmean(by_id), 4),
        "mean_top10_overlap_tie_aware": round(statistics.fmean(by_original), 4),
        "same_top1_original": round(statistics.fmean(top1), 4),
    }


def compare_search(collection: Path, index_dir: Path, queries: list[str], k: int, *, reference: bool) -> dict:
    ours, ours_top10 = bench_ours(index_dir, queries, k)
    result: dict[str, Any] = {"ours": ours}
    if reference:
        result["anserini_search_collection"] = bench_search_collection(index_dir, queries, k)
    theirs, theirs_top10 = bench_bm25s(collection, queries, k)
    result["bm25s"] = theirs
    result.update(overlap_at_10(ours_top10, theirs_top10))
    return result


# ------------------------------------------------------------------------------------- main
def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=40)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("-k", type=int, default=100)
    return parser


def _print_report(
    passages: int,
    data: dict[str, Any],
    args: Any,
    indexing: Any,
    search: Any,
    search_x1: Any,
    queries: Any,
    path: Path,
) -> None:
    """The indexing, search and overlap tables."""
    print(f"\nBM25 on {passages:,} passages ({data['xml_bytes'] / 1e6:,.0f} MB XML, x{args.copies})\n")
    rows = [
        [name, f"{indexing[f'{name}_median_seconds']:.1f}",
         ", ".join(f"{r['wall_seconds']:.1f}" for r in indexing["runs"][name])]
        for name in ("direct", "wrapper")
    ]  # fmt: skip
    rows.append(
        ["ratio wrapper/direct (medians)", f"{indexing['ratio_wrapper_over_direct']:.3f}", "target <= 1.2"]
    )
    rows.append(["ratio of minimum walls", f"{indexing['ratio_of_minimums']:.3f}", ""])
    rows.append(["ratio of median CPU seconds", f"{indexing['ratio_cpu_seconds']:.3f}", ""])
    rows.append(
        [
            "wrapper's Python time (s)",
            f"{indexing['wrapper_python_overhead_seconds_median']:.2f}",
            "outside Anserini",
        ]
    )
    print(format_table(["indexing (2 threads)", "median wall s", "runs (s)"], rows))
    print()
    rows = []
    for label, block in ((f"x{args.copies}", search), ("x1", search_x1)):
        ours, theirs = block["ours"], block["bm25s"]
        rows.append(
            [f"{label} ours: batch_search ids+scores", ours["qps_ids_scores"], ours["seconds_ids_scores"]]
        )
        rows.append(
            [f"{label} ours: batch_search with text", ours["qps_with_text"], ours["seconds_with_text"]]
        )
        if "anserini_search_collection" in block:
            ref = block["anserini_search_collection"]
            rows.append([f"{label} Anserini SearchCollection", ref["anserini_reported"], ""])
        rows.append([f"{label} bm25s tokenize + retrieve", theirs["qps"], theirs["seconds"]])
    print(format_table([f"search ({len(queries):,} NQ q, k={args.k}, {THREADS} threads)", "QPS", "s"], rows))
    print()
    rows = [
        [
            label,
            block["mean_top10_overlap"],
            block["mean_top10_overlap_tie_aware"],
            block["same_top1_original"],
        ]
        for label, block in ((f"x{args.copies}", search), ("x1", search_x1))
    ]
    print(format_table(["top-10 overlap vs bm25s", "by id", "tie-aware", "same top-1"], rows))
    print(f"\nresults: {repo_path(path)}")


def main() -> None:
    args = _parser().parse_args()

    runtime = java_runtime()
    paths, data = ensure_passages(args.copies)
    collection = paths.passages_collection
    passages = json.loads(paths.passages_report.read_text())["passages"]
    log(f"{passages:,} passages in {collection}")

    indexing = bench_indexing(collection, passages, args.repeats)
    queries = load_queries(args.queries)
    log(f"searching {len(queries):,} NQ dev questions, k={args.k}, {THREADS} threads (x{args.copies})")
    search = compare_search(collection, INDEX_WORK / "wrapper-index", queries, args.k, reference=True)

    log("unique passages (x1): overlap without replica ties")
    paths_x1, data_x1 = ensure_passages(1)
    index_x1 = INDEX_WORK / "x1-index"
    build_bm25_index(paths_x1.passages_collection, index_x1, threads=THREADS, heap=HEAP, progress=False)
    search_x1 = compare_search(paths_x1.passages_collection, index_x1, queries, args.k, reference=False)

    payload = {
        "benchmark": "bm25",
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": machine_info(),
        "java": {
            "version": ".".join(map(str, runtime.version)),
            "source": runtime.source,
            "vector_module": runtime.has_vector_module,
            "anserini": anserini_version(),
        },
        "code": code_fingerprint(
            [REPO_ROOT / "assets/indexes/bm25" / name for name in ("index.py", "java.py", "searcher.py")]
        ),
        "note": "shared 2-core machine (other sessions' load varies): indicative figures",
        "load_average_at_end": list(os.getloadavg()),
        "input": {**data, "copies": args.copies},
        "indexing": indexing,
        "search": {
            "queries": len(queries),
            "k": args.k,
            "threads": THREADS,
            "queries_source": str(NQ_DEV.relative_to(REPO_ROOT.parent)),
            f"x{args.copies}": search,
            "x1": {"passages": data_x1["passages"], **search_x1},
        },
    }
    path = write_results("bm25", payload)

    _print_report(passages, data, args, indexing, search, search_x1, queries, path)


if __name__ == "__main__":
    main()
