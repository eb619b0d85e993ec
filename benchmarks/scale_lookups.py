"""Lookups and serving on a scale build (issue 28, part 5), measured in a process of their own.

* ``page`` (by id and by title), ``passage`` (by id) and ``span`` (the drawn dataset's provenance
  coordinates): 10,000 random lookups each through :class:`ProvenanceStore`, the store ``kiltpipe page``,
  ``passage`` and ``span`` open; p50/p99/max in ms (targets: p50 <= 2 ms, p99 <= 20 ms). The peer, in the
  same run: pyserini's ``LuceneSearcher.doc(id)`` fetching the same passages from the BM25 index, as a user
  of pyserini's prebuilt indexes looks a passage up.
* ``kiltpipe serve`` with the BM25 index: real NQ dev questions from one client on one keep-alive
  connection (target: p50 <= 20 ms).

    .venv/bin/python benchmarks/scale_lookups.py --data-dir DATA --snapshot ID --dataset DIR
"""

from __future__ import annotations

import argparse
import json
import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.common import lookup_latencies
from support.generator.scale_runs import read_jsonl
from support.workspace import REPO_ROOT, log

LOOKUPS = 10_000
SERVE_QUERIES = 1_000
P50_TARGET_MS, P99_TARGET_MS, SERVE_P50_TARGET_MS = 2.0, 20.0, 20.0


def _latencies(call: Callable[[Any], Any], keys: list[Any]) -> dict[str, Any]:
    """:func:`~benchmarks.common.lookup_latencies` with whether the targets are met."""
    found = lookup_latencies(call, keys)
    found["targets_met"] = found["p50_ms"] <= P50_TARGET_MS and found["p99_ms"] <= P99_TARGET_MS
    return found


def _sample_keys(paths: Any, dataset_dir: Path, count: int, seed: int) -> dict[str, list[Any]]:
    """Random page ids and titles, passage ids, and dataset spans of the snapshot."""
    import polars as pl

    rng = random.Random(seed)
    pages = pl.scan_parquet(sorted(paths.pages_dir.glob("*.parquet"))).select(
        "wikipedia_id", "wikipedia_title"
    )
    pages = pages.collect().sample(count, seed=seed, with_replacement=True)
    passage_ids = (
        pl.scan_parquet(paths.passages_glob)
        .select("passage_id")
        .collect()["passage_id"]
        .sample(count, seed=seed, with_replacement=True)
        .to_list()
    )
    spans = [
        (str(e["wikipedia_id"]), e["start_paragraph_id"], e["start_character"], e["end_paragraph_id"],
         e["end_character"])
        for task in ("nq", "fever", "hotpotqa")
        for record in read_jsonl(dataset_dir / f"{task}-dev-kilt.jsonl")
        for e in record["output"][0]["provenance"]
    ]  # fmt: skip
    return {
        "page_by_id": pages["wikipedia_id"].to_list(),
        "page_by_title": pages["wikipedia_title"].to_list(),
        "passage": passage_ids,
        "span": rng.sample(spans, min(count, len(spans))),
    }


def measure_lookups(paths: Any, dataset_dir: Path, *, count: int = LOOKUPS, seed: int = 0) -> dict[str, Any]:
    """Latency of ``count`` random lookups of each kind, and of the pyserini peer's passage fetch."""
    from assets.indexes.bm25 import Bm25Searcher
    from assets.reading import Snapshot

    keys = _sample_keys(paths, dataset_dir, count, seed)
    results: dict[str, Any] = {}
    with Snapshot(paths) as opened:
        store = opened.store
        results["page_by_id"] = _latencies(lambda k: store.page(k, by="id"), keys["page_by_id"])
        results["page_by_title"] = _latencies(lambda k: store.page(k, by="title"), keys["page_by_title"])
        results["passage"] = _latencies(store.passage, keys["passage"])
        results["span"] = _latencies(lambda k: store.span(*k), keys["span"])
    searcher = Bm25Searcher(paths.bm25_index)
    lucene = searcher._searcher  # pyserini's own LuceneSearcher over our index
    peer = _latencies(lambda k: lucene.doc(k).raw(), keys["passage"])
    peer.pop("targets_met")
    results["peer_pyserini_doc"] = peer
    results["passage_p50_ratio_to_pyserini"] = round(results["passage"]["p50_ms"] / peer["p50_ms"], 2)
    log("lookups: " + ", ".join(f"{k} p50 {v['p50_ms']} ms p99 {v['p99_ms']} ms"
                                 for k, v in results.items() if isinstance(v, dict)))  # fmt: skip
    return results


def measure_serve(data_dir: Path, snapshot: str, *, queries: int = SERVE_QUERIES) -> dict[str, Any]:
    """``kiltpipe serve --index bm25`` (this process's environment) answering NQ dev questions from one
    client."""
    import signal

    from benchmarks.common import load_test, nq_questions, start_server

    command = [str(REPO_ROOT / ".venv" / "bin" / "kiltpipe"), "serve", "--data-dir", str(data_dir),
               "--snapshot", snapshot, "--index", "bm25", "--port", "0"]  # fmt: skip
    process, port, startup = start_server(command)
    try:
        questions = nq_questions(None)
        load_test(port, "bm25", questions[:50], 1, 50)  # warm-up: the JVM's first queries
        run = load_test(port, "bm25", questions[50:], 1, queries)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    run.update(startup_seconds=round(startup, 1), target_met=run["p50_ms"] <= SERVE_P50_TARGET_MS)
    log(f"serve bm25, 1 client: p50 {run['p50_ms']} ms, p99 {run['p99_ms']} ms")
    return run


def main() -> None:
    from assets.storage import SnapshotPaths

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--snapshot", required=True)
    parser.add_argument("--dataset", type=Path, required=True, help="the drawn dataset's folder")
    parser.add_argument("--lookups", type=int, default=LOOKUPS)
    parser.add_argument("--serve-queries", type=int, default=SERVE_QUERIES)
    args = parser.parse_args()
    paths = SnapshotPaths(args.data_dir, args.snapshot)
    result = {
        "lookups": measure_lookups(paths, args.dataset, count=args.lookups),
        "serve_bm25_one_client": measure_serve(args.data_dir, args.snapshot, queries=args.serve_queries),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
