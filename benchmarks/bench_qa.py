"""The QA-pair KB (RePAQ) measured: on real questions, and at scale on KBs derived from them.

**Real questions**, RePAQ's protocol (a KB of one set of pairs, queries from another; a query that is a
stored question, as KILT normalises it, is left out): NQ (the built snapshot's KB, ``make demo``'s: DPR's
NQ dev topics, 8,757 questions of Natural Questions' *train* split) asked NQ-open dev (3,610 questions of
NQ's *dev* split) and EfficientQA dev (1,800, also NQ dev data); TriviaQA (DPR's TriviaQA dev topics cut in
two: a KB of the first half built into a copy of the snapshot, asked the second half). For each: EM of the
top answer matched by dense and by BM25 over the stored questions (RePAQ's sparse baseline, the peer); the
coverage–accuracy curve of the abstention threshold (share answered against EM on them); the test–train
overlap (share of queries whose answer is an answer of the KB, share with a near-duplicate stored
question: dense cosine >= 0.95); the answer recall@5 of the passages BM25 and hybrid retrieve for the
questions the dense answer abstains on (threshold 0.9).

**Scale** (``--pairs``): KBs of N pairs derived in code from the real questions
(:mod:`support.generator.qa_pairs`: the snapshot's titles and numbers substituted), built into a copy of
the snapshot: build seconds per pair (reading, grouping, provenance by BM25; then the indices, the dense
one with the int8 ONNX encoder); query throughput of batched questions (NQ-open dev, answers with
provenance, int8 encoder, FAISS; top 5 and top 1), the encoder alone on them (the ceiling), asked-before
questions (stored ones asked again: found by their text) and p50 of one question (targets: >= 1,000
questions/s, p50 <= 20 ms); exact-duplicate questions found at rank 1 by the answerer (its lookup by text
first) and by FAISS factories alone over the same vectors (Flat, IVF-SQ8, and the PQ that 65M pairs in
500 MB get); bytes per pair of each and of the lookup file; a stored question's row by id from the lookup
file against pyserini's ``doc()`` over the questions' BM25 index (same run); and the 65M-pair row of the
capacity plan. Figures to ``benchmarks/results/qa.json``.

    .venv/bin/python benchmarks/bench_qa.py [--data-dir data] [--snapshot ID] [--pairs 100000 ...]
    .venv/bin/python benchmarks/bench_qa.py --pairs        # the real questions only
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from assets.indexes import IndexSettings, build_collection_indexes
from assets.indexes.dense import budget_factory, factory_bytes
from assets.indexes.evaluation import normalize_answer
from assets.params import Params, load_params
from assets.params import data_dir as default_data_dir
from assets.provenance_store import PassageRows
from assets.qa import (
    answer_pattern,
    build_qa_pairs,
    embedded_qa_files,
    iter_qa_pairs,
)
from assets.reading import Snapshot
from assets.storage import SnapshotPaths, resolve_snapshot
from benchmarks.common import format_table, lookup_latencies, machine_info, pyserini_doc_lookup, write_results
from orchestration.cli.arguments import positive_int
from support.generator.qa_pairs import derived_pairs, write_pairs
from support.real_data import real_file
from support.workspace import REPO_ROOT, log

THRESHOLDS = [round(0.05 * step, 2) for step in range(21)]
ABSTAIN_AT = 0.9
NEAR_DUPLICATE = 0.95
DUPLICATES_SAMPLED = 2000
SINGLE_QUESTIONS = 300
PAQ_PAIRS = 65_000_000
WORK = REPO_ROOT / "benchmarks" / "work" / "qa"


def _pairs(*parts: str, lines: slice = slice(None)) -> tuple[list[str], list[list[str]]]:
    """The questions and answers of a real QA file (``lines``: a slice of its pairs)."""
    pairs = list(iter_qa_pairs(real_file(*parts)))[lines]
    return [p.question for p in pairs], [list(p.answers) for p in pairs]


def _queries() -> tuple[list[str], list[list[str]]]:
    return _pairs("original", "nq_open", "NQ-open.dev.jsonl")


def _em(answer: str | None, gold: list[str]) -> bool:
    return answer is not None and normalize_answer(answer) in {normalize_answer(g) for g in gold}


def _curve(confidence: list[float], correct: list[bool]) -> list[dict[str, float]]:
    rows = []
    for threshold in THRESHOLDS:
        kept = [c for conf, c in zip(confidence, correct, strict=True) if conf >= threshold]
        rows.append(
            {
                "threshold": threshold,
                "answered": round(len(kept) / len(correct), 4),
                "em_answered": round(sum(kept) / len(kept), 4) if kept else 0.0,
            }
        )
    return rows


def protocol(paths: SnapshotPaths, kb: str, queries: str, asked: list[str], gold: list[list[str]]) -> dict:
    """RePAQ's protocol on the QA KB of ``paths`` (described as ``kb``): the ``asked`` questions (described
    as ``queries``; any that is a stored question, as KILT normalises it, left out: no query is in its own
    KB) answered by dense and by BM25 over the stored questions."""
    table = pq.read_table(paths.qa_pairs / "parquet", columns=["answers", "question_norm"])
    stored = table.column("answers").to_pylist()
    norms = set(table.column("question_norm").to_pylist())
    kept = [i for i, q in enumerate(asked) if normalize_answer(q) not in norms]
    questions, gold = [asked[i] for i in kept], [gold[i] for i in kept]
    kb_answers = {normalize_answer(a) for answers in stored for a in answers}
    out: dict[str, Any] = {"kb": kb, "kb_questions": len(stored), "queries": queries}
    out["queries_asked"], out["queries_in_kb_left_out"] = len(questions), len(asked) - len(questions)
    with Snapshot(paths) as opened:
        answerer = opened.answerer
        per_index = {}
        for index in ("dense", "bm25"):
            log(f"{queries}: {index}")
            started = time.perf_counter()
            records = answerer.answer(questions, index=index, k=1)
            seconds = time.perf_counter() - started
            top = [r["answers"][0]["answer"] if r["answers"] else None for r in records]
            correct = [_em(a, g) for a, g in zip(top, gold, strict=True)]
            confidence = [r["confidence"] for r in records]
            per_index[index] = {
                "em": round(sum(correct) / len(correct), 4),
                "questions_per_s": round(len(questions) / seconds, 1),
                "curve": _curve(confidence, correct),
                "confidence": confidence,
            }
        dense_conf = per_index["dense"].pop("confidence")
        per_index["bm25"].pop("confidence")
        out["indexes"] = per_index
        out["em_dense_vs_bm25"] = round(per_index["dense"]["em"] / max(per_index["bm25"]["em"], 1e-9), 2)
        out["answer_overlap"] = round(
            sum(any(normalize_answer(a) in kb_answers for a in g) for g in gold) / len(gold), 4
        )
        out["question_overlap"] = round(sum(c >= NEAR_DUPLICATE for c in dense_conf) / len(dense_conf), 4)
        abstained = [i for i, c in enumerate(dense_conf) if c < ABSTAIN_AT]
        out["abstained_at"] = ABSTAIN_AT
        out["abstained_share"] = round(len(abstained) / len(questions), 4)
        recall = {}
        for index in ("bm25", "hybrid"):
            hits = opened.retriever.batch_search(index, [questions[i] for i in abstained], 5, with_text=True)
            found = [
                any(
                    (pattern := answer_pattern(a)) is not None and pattern.search(h.text or "")
                    for h in ranked
                    for a in gold[i]
                )
                for i, ranked in zip(abstained, hits, strict=True)
            ]
            recall[index] = round(sum(found) / len(found), 4) if found else 0.0
        out["abstained_passage_recall_at_5"] = recall
        answerer.close()
    return out


def real_questions(paths: SnapshotPaths) -> dict[str, Any]:
    """Every protocol on real questions: NQ (the demo snapshot's KB, DPR's NQ dev topics: questions of NQ's
    train split) asked NQ-open dev and EfficientQA dev (both of NQ's dev data); TriviaQA (DPR's TriviaQA dev
    topics cut in two: the first half the KB, built into a copy of the snapshot, the second half asked)."""
    kb = "DPR NQ dev topics (NQ train questions)"
    out = {
        "nq_open_dev": protocol(paths, kb, "NQ-open dev", *_queries()),
        "efficientqa_dev": protocol(
            paths, kb, "EfficientQA dev", *_pairs("original", "nq_open", "NQ-open.efficientqa.dev.1.1.jsonl")
        ),
    }
    trivia = real_file("original", "dpr_topics", "topics.dpr.trivia.dev.txt")
    lines = trivia.read_text(encoding="utf-8").splitlines(keepends=True)
    half = len(lines) // 2
    WORK.mkdir(parents=True, exist_ok=True)
    kb_file = WORK / "trivia-first-half.txt"
    kb_file.write_text("".join(lines[:half]), encoding="utf-8")
    work = _scale_copy(paths)
    _build_kb(work, kb_file, IndexSettings.from_params(load_params().indexes))
    asked, gold = _pairs("original", "dpr_topics", "topics.dpr.trivia.dev.txt", lines=slice(half, None))
    out["triviaqa_dev_halves"] = protocol(
        work, f"DPR TriviaQA dev topics, lines 1-{half:,}", f"the same, lines {half + 1:,}-", asked, gold
    )
    return out


def _onnx_params() -> Params:
    """params.yaml's, the dense encoder on its ONNX backend."""
    params = load_params()
    dense = params.indexes.dense.model_copy(update={"backend": "onnx"})
    return params.model_copy(update={"indexes": params.indexes.model_copy(update={"dense": dense})})


def _build_kb(work: SnapshotPaths, source: Path, params: Params) -> tuple[Any, float, Any, float]:
    """The QA KB of ``source`` built into ``work`` (the provenance step, then the indices anew): its report
    and seconds, and the indices' result and seconds."""
    with Snapshot(work, params) as opened:
        started = time.perf_counter()
        report = build_qa_pairs(
            work,
            [source],
            opened.store,
            lambda qs, k: opened.retriever.batch_search("bm25", qs, k, with_text=True),
        )
        build_seconds = time.perf_counter() - started
    shutil.rmtree(work.root / "indexes" / "qa", ignore_errors=True)  # encoded anew: no shard reused
    started = time.perf_counter()
    built = build_collection_indexes(work, "qa", IndexSettings.from_params(params.indexes))
    return report, build_seconds, built, time.perf_counter() - started


def _scale_copy(paths: SnapshotPaths) -> SnapshotPaths:
    """A copy of the snapshot under the work folder (its QA KB is rebuilt there, never the original's)."""
    target = WORK / "data"
    if not (target / "snapshots" / paths.snapshot_id / "provenance.duckdb").is_file():
        shutil.rmtree(target, ignore_errors=True)
        (target / "snapshots").mkdir(parents=True)
        shutil.copytree(paths.root, target / "snapshots" / paths.snapshot_id, symlinks=True)
        for extra in ("builds",):
            if (paths.data_dir / extra).is_dir():
                shutil.copytree(paths.data_dir / extra, target / extra, symlinks=True)
    return SnapshotPaths(target, paths.snapshot_id)


def _pairs_file(paths: SnapshotPaths, count: int) -> Path:
    path = WORK / f"pairs-{count}.jsonl"
    if path.is_file():
        return path
    seed = [(p.question, list(p.answers)) for p in iter_qa_pairs(embedded_qa_files()[0])]
    titles = pq.read_table(paths.pages_dir, columns=["wikipedia_title"]).column(0).to_pylist()
    WORK.mkdir(parents=True, exist_ok=True)
    write_pairs(path, derived_pairs(seed, titles, count))
    return path


def _dup_at_1(vectors: np.ndarray, factory: str, sample: np.ndarray) -> tuple[float, int]:
    """Rank-1 self-retrieval of the ``sample`` rows among ``vectors`` with a FAISS ``factory`` alone (no
    lookup of the question's text: what the index itself finds); its bytes."""
    import faiss

    index = faiss.index_factory(vectors.shape[1], factory, faiss.METRIC_INNER_PRODUCT)
    if not index.is_trained:
        train = vectors[np.random.default_rng(0).choice(len(vectors), min(len(vectors), 100_000), False)]
        index.train(train)
    index.add(vectors)
    if hasattr(index, "nprobe"):
        index.nprobe = 16
    _, found = index.search(vectors[sample], 1)
    hits = int((found[:, 0] == sample).sum())
    size = faiss.serialize_index(index).nbytes
    return hits / len(sample), int(size)


def scale(paths: SnapshotPaths, count: int, queries: int | None = None) -> dict[str, Any]:
    """The scale row of a KB of ``count`` derived pairs, its throughput over the first ``queries`` NQ-open
    dev questions (all: None)."""
    work = _scale_copy(paths)
    source = _pairs_file(paths, count)
    params = _onnx_params()
    log(f"scale {count:,}: building the KB")
    report, build_seconds, built, index_seconds = _build_kb(work, source, params)
    questions = _queries()[0][:queries]
    meta = json.loads((work.root / "indexes" / "qa" / "dense" / "faiss" / "index.json").read_text())
    row: dict[str, Any] = {
        "pairs": count,
        "questions": report.questions,
        "with_provenance": report.to_dict()["with_provenance"],
        "build_s": round(build_seconds, 1),
        "build_us_per_pair": round(build_seconds / count * 1e6, 1),
        "index_s": round(index_seconds, 1),
        "index_s_per_kind": {k: round(v, 1) for k, v in built.seconds.items()},
        "factory": meta["factory"],
    }
    with Snapshot(work, params) as opened:
        answerer, retriever = opened.answerer, opened.retriever
        answerer.answer(questions[:10])  # the encoder and the index loaded
        row.update(_throughput(answerer, retriever, questions))
        stored = pq.read_table(work.qa_pairs / "parquet", columns=["passage_id", "text"]).to_pylist()
        rng = random.Random(0)
        sample = rng.sample(range(len(stored)), min(DUPLICATES_SAMPLED, len(stored)))
        asked = [stored[i]["text"] for i in sample]
        started = time.perf_counter()
        records = answerer.answer(asked, k=1)
        row["asked_before_per_s"] = round(len(asked) / (time.perf_counter() - started), 1)
        hits = [
            r["answers"][0]["question_id"] == stored[i]["passage_id"]
            for i, r in zip(sample, records, strict=True)
        ]
        row["duplicate_at_1_answerer"] = round(sum(hits) / len(hits), 4)
    row["lookups"] = _lookups(work, [stored[i]["passage_id"] for i in sample])
    row["lookup_bytes_per_pair"] = round(work.qa_lookup.stat().st_size / count, 1)
    from assets.indexes.dense import Embeddings

    embeddings = Embeddings.open(work.root / "indexes" / "qa" / "dense" / "embeddings")
    vectors = np.concatenate(list(embeddings.iter_batches(100_000))).astype("float32")
    picked = np.array(sample)
    dimension = vectors.shape[1]
    compressed = {}
    for factory in ("Flat", budget_factory("budget:500MB", PAQ_PAIRS, dimension), f"IVF{_lists(count)},SQ8"):
        found, size = _dup_at_1(vectors, factory, picked)
        compressed[factory] = {
            "duplicate_at_1_index_alone": round(found, 4),
            "bytes_per_pair": round(size / len(vectors), 2),
        }
    row["factories"] = compressed
    paq = budget_factory("budget:500MB", PAQ_PAIRS, dimension)
    row["paq_65m"] = {"factory": paq, "index_bytes": factory_bytes(paq, PAQ_PAIRS, dimension)}
    return row


def _throughput(answerer: Any, retriever: Any, questions: list[str]) -> dict[str, float]:
    """Questions per second answered in one batch (top 5 and top 1, with provenance), the encoder alone
    on them (the ceiling), and the p50/p99 of one question at a time."""
    out = {}
    for k in (5, 1):
        started = time.perf_counter()
        answerer.answer(questions, k=k)
        out[f"questions_per_s{'' if k == 5 else '_k1'}"] = round(
            len(questions) / (time.perf_counter() - started), 1
        )
    encoder = retriever.searcher("dense@qa")
    started = time.perf_counter()
    encoder.encode_queries(questions)
    out["encoder_alone_per_s"] = round(len(questions) / (time.perf_counter() - started), 1)
    single = []
    for question in questions[:SINGLE_QUESTIONS]:
        started = time.perf_counter()
        answerer.answer([question], k=5)
        single.append((time.perf_counter() - started) * 1000)
    out["single_p50_ms"] = round(statistics.median(single), 2)
    out["single_p99_ms"] = round(float(np.percentile(single, 99)), 2)
    return out


def _lookups(paths: SnapshotPaths, ids: list[str]) -> dict[str, Any]:
    """A stored question's row by id from ``qa_pairs.sqlite`` (what each answer reads), one at a time,
    against pyserini's ``doc()`` over the same questions' BM25 index, in the same run."""
    rows = PassageRows(paths.qa_lookup)
    ours = lookup_latencies(rows.get, ids)
    rows.close()
    peer = lookup_latencies(pyserini_doc_lookup(paths.root / "indexes" / "qa" / "bm25"), ids)
    return {
        "row": ours,
        "peer_pyserini_doc": peer,
        "vs_peer_throughput": round(ours["per_s"] / peer["per_s"], 2),
    }


def _lists(count: int) -> int:
    return max(16, min(4096, int(4 * count**0.5)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--snapshot", default=None)
    parser.add_argument("--pairs", type=int, nargs="*", default=[100_000])
    parser.add_argument("--skip-real", action="store_true", help="only the scale rows")
    parser.add_argument(
        "--queries", type=positive_int, help="NQ-open dev questions the scale rows ask (default: all)"
    )
    args = parser.parse_args()
    paths = resolve_snapshot(args.data_dir or Path(default_data_dir()), args.snapshot)
    results_path = REPO_ROOT / "benchmarks" / "results" / "qa.json"
    results = json.loads(results_path.read_text()) if results_path.is_file() else {}
    results["machine"] = machine_info()
    if not args.skip_real:
        results["real"] = real_questions(paths)
        write_results("qa", results)
    rows = {row["pairs"]: row for row in results.get("scale", [])}
    for count in args.pairs:
        rows[count] = scale(paths, count, args.queries)
        results["scale"] = [rows[c] for c in sorted(rows)]
        write_results("qa", results)  # a row at a time: a later size that fails keeps the earlier ones
    for name, real in results.get("real", {}).items():
        rows = []
        for index, r in real["indexes"].items():
            at = next(c for c in r["curve"] if c["threshold"] == ABSTAIN_AT)
            rows.append([index, f"{r['em']:.3f}", r["questions_per_s"], at["answered"], at["em_answered"]])
        print(f"{name}: {real['queries_asked']:,} questions on a KB of {real['kb_questions']:,}")
        print(format_table(["index", "EM", "q/s", f"answered @{ABSTAIN_AT}", "EM answered"], rows))
        print(
            f"dense / bm25 EM: {real['em_dense_vs_bm25']}x; answer overlap {real['answer_overlap']:.3f}; "
            f"question overlap {real['question_overlap']:.3f}; abstained passages recall@5 "
            f"{real['abstained_passage_recall_at_5']}"
        )
    for row in results.get("scale", []):
        print(json.dumps({k: v for k, v in row.items()}, indent=None))


if __name__ == "__main__":
    main()
