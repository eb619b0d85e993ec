"""Passages stage vs knowledge-source stage on the same >= 200 MB input, and store lookup latency.

Issue targets: passages time <= 0.3x the knowledge-source time on the same replicated input;
p50 <= 2 ms and p99 <= 20 ms for page, passage and span lookups through the Python API over
10,000 random keys on >= 200k passages, with the store opened read-only.

    .venv/bin/python benchmarks/bench_passages_store.py [--copies 40] [--lookups 10000]
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import duckdb

from assets.params import KnowledgeSourceParams, PassagesParams
from assets.provenance_store import build_store
from assets.reading import Snapshot
from assets.storage import SnapshotPaths
from assets.wikipedia.pages import build_knowledge_source
from assets.wikipedia.passages import build_passages
from benchmarks.common import format_table, machine_info, write_results
from benchmarks.replication import replicate_dump
from support.workspace import WORK_DIR, log


def _percentiles(samples_ns: list[int]) -> dict[str, float]:
    ordered = sorted(samples_ns)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1e6  # noqa: E731
    return {
        "p50_ms": pick(0.50),
        "p99_ms": pick(0.99),
        "mean_ms": statistics.fmean(ordered) / 1e6,
        "max_ms": ordered[-1] / 1e6,
    }


def _sample_keys(store_path: Path, count: int, seed: int) -> dict[str, list[Any]]:
    """Random page keys (titles and ids), passage ids and spans, read before timing starts."""
    rng = random.Random(seed)
    con = duckdb.connect(str(store_path), read_only=True)
    pages = con.execute("SELECT wikipedia_id, wikipedia_title FROM pages").fetchall()
    passages = con.execute(
        "SELECT passage_id, wikipedia_id, start_paragraph_id, start_character, end_paragraph_id, "
        "end_character FROM passages"
    ).fetchall()
    con.close()
    page_keys = [p[0] if rng.random() < 0.5 else p[1] for p in rng.choices(pages, k=count)]
    passage_keys = [p[0] for p in rng.choices(passages, k=count)]
    spans = []
    for _, wid, sp, sc, ep, ec in rng.choices(passages, k=count):
        if sp == ep and ec - sc > 10:  # a sub-span of the passage
            start = rng.randrange(sc, ec - 5)
            spans.append((wid, sp, start, ep, rng.randrange(start + 1, ec + 1)))
        else:
            spans.append((wid, sp, sc, ep, ec))
    return {"page": page_keys, "passage": passage_keys, "span": spans}


def measure_lookups(paths: SnapshotPaths, count: int, seed: int = 13) -> dict[str, dict[str, float]]:
    keys = _sample_keys(paths.provenance_store, count, seed)
    results = {}
    with Snapshot(paths) as opened:
        store = opened.store
        calls = {
            "page": lambda k: store.page(k),
            "passage": lambda k: store.passage(k),
            "span": lambda k: store.span(*k),
        }
        for kind, call in calls.items():
            for key in keys[kind][:200]:  # warm-up
                call(key)
            samples = []
            misses = 0
            for key in keys[kind]:
                started = time.perf_counter_ns()
                found = call(key)
                samples.append(time.perf_counter_ns() - started)
                misses += found is None
            results[kind] = {**_percentiles(samples), "lookups": len(samples), "not_found": misses}
    return results


def _print_report(
    ks: Any, passages: Any, dpr: Any, store: Any, lookups: dict[str, Any], ratio: float
) -> None:
    """The stage times and the lookup latencies."""
    print(
        format_table(
            ["stage", "seconds", "passages/s", "ratio to knowledge source (target <= 0.3)"],
            [
                ["knowledge source", f"{ks.seconds:.1f}", "", "1.00"],
                [
                    "passages (kilt)",
                    f"{passages.seconds:.1f}",
                    f"{passages.passages_per_second:,.0f}",
                    f"{ratio:.2f}",
                ],
                [
                    "passages (dpr)",
                    f"{dpr.seconds:.1f}",
                    f"{dpr.passages_per_second:,.0f}",
                    f"{dpr.seconds / ks.seconds:.2f}",
                ],
            ],
        )
    )
    print()
    print(
        format_table(
            ["lookup", "keys", "p50 ms (<= 2)", "p99 ms (<= 20)", "mean ms", "not found"],
            [
                [
                    k,
                    r["lookups"],
                    f"{r['p50_ms']:.3f}",
                    f"{r['p99_ms']:.3f}",
                    f"{r['mean_ms']:.3f}",
                    r["not_found"],
                ]
                for k, r in lookups.items()
            ],
        )
    )
    print(
        f"\nstore: {store.passages:,} passages, {store.bytes / 2**20:.0f} MiB, built in {store.seconds:.1f} s"
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--copies", type=int, default=40, help="excerpt copies (40 = about 245 MB of XML)")
    parser.add_argument("--lookups", type=int, default=10_000)
    parser.add_argument("--keep", action="store_true", help="keep the built snapshot")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)

    dump = replicate_dump(args.copies)
    log(f"input: {dump.path} ({dump.xml_mb:.0f} MB XML, {dump.articles} articles)")
    data_dir = WORK_DIR / "passages-bench-data"
    shutil.rmtree(data_dir, ignore_errors=True)
    try:
        ks = build_knowledge_source(
            dump.path, data_dir, KnowledgeSourceParams(snapshot="bench", workers=2), progress=False
        )
        paths = SnapshotPaths(data_dir, "bench")
        log(f"knowledge source: {ks.seconds:.1f} s")
        passages = build_passages(paths, PassagesParams(mode="kilt", workers=2), progress=False)
        log(f"passages (kilt): {passages.seconds:.1f} s, {passages.passages} passages")
        dpr = build_passages(paths, PassagesParams(mode="dpr", workers=2), progress=False)
        log(f"passages (dpr): {dpr.seconds:.1f} s")
        build_passages(
            paths, PassagesParams(mode="kilt", workers=2), progress=False
        )  # the store indexes kilt passages
        store = build_store(paths)
        log(f"store: {store.seconds:.1f} s, {store.bytes / 2**20:.0f} MiB")
        lookups = measure_lookups(paths, args.lookups)
    finally:
        if not args.keep:
            shutil.rmtree(data_dir, ignore_errors=True)

    ratio = passages.seconds / ks.seconds
    results = {
        "machine": machine_info(),
        "input": {"xml_mb": round(dump.xml_mb, 1), "articles": dump.articles, "copies": args.copies},
        "knowledge_source_seconds": round(ks.seconds, 2),
        "passages": {
            "kilt": {
                "seconds": round(passages.seconds, 2),
                "passages": passages.passages,
                "passages_per_second": round(passages.passages_per_second),
                "ratio_to_knowledge_source": round(ratio, 3),
            },
            "dpr": {
                "seconds": round(dpr.seconds, 2),
                "passages": dpr.passages,
                "passages_per_second": round(dpr.passages_per_second),
                "ratio_to_knowledge_source": round(dpr.seconds / ks.seconds, 3),
            },
        },
        "store": {"seconds": round(store.seconds, 2), "bytes": store.bytes, "passages": store.passages},
        "lookups": {
            k: {m: round(v, 3) if isinstance(v, float) else v for m, v in r.items()}
            for k, r in lookups.items()
        },
        "targets": {"passages_ratio_max": 0.3, "p50_ms_max": 2.0, "p99_ms_max": 20.0},
    }
    write_results("passages_store", results)
    _print_report(ks, passages, dpr, store, lookups, ratio)
    return 0


if __name__ == "__main__":
    sys.exit(main())
