"""Passage lookups by id, the point path and the batch path, against pyserini's ``LuceneSearcher.doc``.

On a built snapshot (default: the newest in the data dir, ``make demo``'s), ``--lookups`` random passage
ids of every kind the store holds (text, tables and infoboxes, KB facts; the peer fetches the text
passages, the only ones in the BM25 index it opens):

* ``passage`` one id at a time through :class:`~assets.provenance_store.ProvenanceStore` (what ``kiltpipe
  passage``, an answer's provenance and ``/search`` hits read), from ``passages.sqlite``; and the same
  through the DuckDB store alone (the path before it), for the record;
* ``passages`` ids 100 at a time (``ProvenanceStore.passages``: one call per batch);
* the peer, in the same run: ``LuceneSearcher.doc(id).raw()`` of pyserini over the snapshot's own BM25
  index, as a user of pyserini's prebuilt indexes fetches a passage.

Target: our point lookup at least the peer's throughput (p50 no higher). Figures to
``benchmarks/results/lookups.json``.

    .venv/bin/python benchmarks/bench_lookups.py [--data-dir data] [--snapshot ID] [--lookups 10000]
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path
from typing import Any

from assets.indexes import passage_kind
from assets.params import data_dir as default_data_dir
from assets.reading import Snapshot
from assets.storage import resolve_snapshot
from benchmarks.common import format_table, lookup_latencies, machine_info, pyserini_doc_lookup, write_results
from support.workspace import log

BATCH = 100


def measure(data_dir: Path, snapshot: str | None, lookups: int, seed: int = 0) -> dict[str, Any]:
    paths = resolve_snapshot(data_dir, snapshot)
    rng = random.Random(seed)
    with Snapshot(paths) as opened:
        store = opened.store
        if store.rows is None:
            raise SystemExit(f"{paths.passage_rows} is missing: rebuild the store (kiltpipe restore-stores)")
        ids = store.rows.ids()
        keys = [rng.choice(ids) for _ in range(lookups)]
        text_keys = [key for key in keys if passage_kind(key) == "text"]
        result: dict[str, Any] = {"snapshot": paths.snapshot_id, "passages": len(ids), "lookups": lookups}
        result["passage"] = lookup_latencies(store.passage, keys)
        result["passage_text_kind"] = lookup_latencies(store.passage, text_keys)
        batches = [keys[i : i + BATCH] for i in range(0, len(keys), BATCH)]
        batch = lookup_latencies(store.passages, batches)
        result["passages_batch"] = {"per_s": round(batch["per_s"] * BATCH, 1), "batch": BATCH}
        rows, store.rows = store.rows, None  # the DuckDB path, as every lookup was before
        result["duckdb_point"] = lookup_latencies(store.passage, keys[: min(2000, len(keys))])
        store.rows = rows
    result["peer_pyserini_doc"] = lookup_latencies(pyserini_doc_lookup(paths.bm25_index), text_keys)
    peer = result["peer_pyserini_doc"]
    result["point_vs_peer_throughput"] = round(result["passage_text_kind"]["per_s"] / peer["per_s"], 2)
    result["batch_vs_peer_throughput"] = round(result["passages_batch"]["per_s"] / peer["per_s"], 2)
    result["duckdb_vs_peer_p50"] = round(result["duckdb_point"]["p50_ms"] / peer["p50_ms"], 1)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--snapshot", default=None)
    parser.add_argument("--lookups", type=int, default=10_000)
    args = parser.parse_args()
    log("passage lookups")
    result = measure(args.data_dir or Path(default_data_dir()), args.snapshot, args.lookups)
    write_results("lookups", {"machine": machine_info(), **result})
    rows = [
        [name, result[name].get("p50_ms", "-"), result[name].get("p99_ms", "-"), result[name]["per_s"]]
        for name in ("passage", "passage_text_kind", "passages_batch", "duckdb_point", "peer_pyserini_doc")
    ]
    print(format_table(["path", "p50 ms", "p99 ms", "lookups/s"], rows))
    print(
        f"point lookups {result['point_vs_peer_throughput']}x pyserini doc()'s throughput, batches "
        f"{result['batch_vs_peer_throughput']}x; the DuckDB point query was {result['duckdb_vs_peer_p50']}x "
        "its p50"
    )


if __name__ == "__main__":
    main()
