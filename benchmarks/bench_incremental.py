"""Incremental rebuild of a later snapshot vs a full build of it, on the real enwiki excerpt.

Snapshot A (``enwiki-20160501``) is the excerpt, built in full. Snapshot B (``enwiki-20160601``) is
derived in code from it (:func:`support.dump_variants.later_snapshot`): one article in ten has a prose
paragraph duplicated or dropped, one article is removed and one added. B is then built twice, the
same stages each time: knowledge source, passages, BM25 index, dense encode + FAISS ``Flat`` index:

* full: in a fresh data dir, nothing to reuse;
* incremental: next to A, with ``reuse_from = previous_snapshot(data_dir, B)`` (= A) for the passages
  and the dense embeddings (BM25 re-indexes B's whole collection).

Target: incremental wall time <= 0.25 x full. Checks: the passage files are byte-identical; BM25 and
dense top-10 passage ids agree on ~100 queries (first sentences of sampled B passages). The encoder
is loaded once before the timed builds (its load time is reported apart) and A is built first, so
neither B build pays a warm-up the other does not.

    .venv/bin/python benchmarks/bench_incremental.py [--backend torch] [--every 10] [--queries 100]
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from assets import params
from assets.incremental import previous_snapshot
from assets.indexes import IndexSettings, Retriever
from assets.indexes.bm25 import build_bm25
from assets.indexes.dense import Embeddings, build_dense
from assets.indexes.dense.encoders import load_encoder
from assets.indexes.evaluation import first_sentence, sample_passages
from assets.params import KnowledgeSourceParams, PassagesParams
from assets.storage import SnapshotPaths
from assets.wikipedia.pages import build_knowledge_source
from assets.wikipedia.passages import build_passages
from benchmarks.common import code_fingerprint, format_table, locate_excerpt, machine_info, write_results
from support.dump_variants import later_snapshot, read_xml, write_dump
from support.workspace import REPO_ROOT, WORK_DIR, log

A_ID, B_ID = "enwiki-20160501", "enwiki-20160601"
BENCH_WORK = WORK_DIR / "incremental"
STAGES = ("knowledge_source", "passages", "bm25", "dense")


def load_now() -> float:
    return round(os.getloadavg()[0], 2)


def timed(stages: dict[str, float], name: str, step: Callable[[], Any]) -> Any:
    started = time.perf_counter()
    result = step()
    stages[name] = round(time.perf_counter() - started, 3)
    log(f"  {name}: {stages[name]:.1f} s")
    return result


def build_snapshot(
    dump: Path,
    data_dir: Path,
    snapshot_id: str,
    settings: IndexSettings,
    encoder: Any,
    reuse: Callable[[], SnapshotPaths | None] | None = None,
) -> dict[str, Any]:
    """Every stage of one snapshot, timed; ``reuse`` finds the snapshot to reuse (timed with the passages)."""
    section = params.load_params()
    ks, passages = section.knowledge_source, section.passages
    paths = SnapshotPaths(data_dir, snapshot_id)
    stages: dict[str, float] = {}
    timed(
        stages,
        "knowledge_source",
        lambda: build_knowledge_source(
            dump,
            data_dir,
            KnowledgeSourceParams(
                snapshot=snapshot_id, workers=int(ks.workers), rows_per_shard=int(ks.rows_per_shard)
            ),
            progress=False,
        ),
    )
    started = time.perf_counter()
    source = reuse() if reuse else None
    lookup = time.perf_counter() - started
    report = timed(
        stages,
        "passages",
        lambda: build_passages(
            paths,
            PassagesParams(
                max_words=int(passages.max_words), mode=str(passages.mode), workers=int(passages.workers)
            ),
            progress=False,
            reuse_from=source,
        ),
    )
    stages["passages"] = round(stages["passages"] + lookup, 3)
    bm25 = timed(stages, "bm25", lambda: build_bm25(paths, settings.bm25))
    dense = timed(
        stages, "dense", lambda: build_dense(paths, settings.dense, encoder=encoder, reuse_from=source)
    )
    return {
        "paths": paths,
        "stages": stages,
        "total_seconds": round(sum(stages.values()), 3),
        "reuse_source": source.snapshot_id if source else None,
        "passages": report,
        "bm25_documents": bm25.documents_indexed,
        "encode": dense.encode,
    }


def passage_files(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and p.name not in ("report.json", "report.run.json")  # reuse counts, timings
    }


def same_up_to_ties(got: list[Any], want: list[Any], atol: float = 1e-5) -> bool:
    """Same passages with the same scores position by position: only exactly tied passages (e.g. the two
    copies of a duplicated paragraph, whose vectors differ by float noise once one is copied) swapped."""
    return {h.passage_id for h in got} == {h.passage_id for h in want} and bool(
        np.allclose([h.score for h in got], [h.score for h in want], atol=atol)
    )


def compare_rankings(
    full: SnapshotPaths, incremental: SnapshotPaths, settings: IndexSettings, queries: list[str]
) -> dict[str, Any]:
    """Top-10 passage ids of both snapshots' BM25 and dense indices on the same queries."""
    out: dict[str, Any] = {}
    with Retriever(full, settings) as left, Retriever(incremental, settings) as right:
        for index in ("bm25", "dense"):
            want = left.batch_search(index, queries, 10)
            got = right.batch_search(index, queries, 10)
            pairs = list(zip(got, want, strict=True))
            identical = [[h.passage_id for h in a] == [h.passage_id for h in b] for a, b in pairs]
            gaps = [abs(a.score - b.score) for x, y in pairs for a, b in zip(x, y, strict=True)]
            out[index] = {
                "queries": len(queries),
                "identical_top10": sum(identical),
                "tied_passages_swapped_only": sum(
                    not same and same_up_to_ties(a, b) for same, (a, b) in zip(identical, pairs, strict=True)
                ),
                "differing": [
                    {"query": q, "incremental": [h.passage_id for h in a], "full": [h.passage_id for h in b]}
                    for q, same, (a, b) in zip(queries, identical, pairs, strict=True)
                    if not same
                ],
                "max_score_difference": float(max(gaps, default=0.0)),
            }
    return out


def generated_pair(articles: int) -> tuple[Path, Path, str, str, dict[str, Any]]:
    """Snapshot N of the enwiki-shaped generator and its month N+1 (cached under benchmarks/work/scale):
    ``(dump N, dump N+1, id N, id N+1, what the month changed)``."""
    from benchmarks.scale_build import dump_file_name, snapshot_of
    from support.generator.dump import default_out, generate

    stats_a = generate(articles, default_out(articles, 0))
    stats_b = generate(articles, default_out(articles, 0, 1), month=1)
    dump_a = default_out(articles, 0) / dump_file_name(stats_a)
    dump_b = default_out(articles, 0, 1) / dump_file_name(stats_b)
    changes = stats_b.get("changes") or {}  # truth.jsonl's counts per kind of change
    summary = {
        "changed": [None] * int(changes.get("edits", 0)),
        "removed": sum(v for k, v in changes.items() if "delete" in k),
        "added": int(changes.get("new_article", 0)),
        "changes": changes,
    }
    return dump_a, dump_b, snapshot_of(stats_a), snapshot_of(stats_b), summary


def _compare_builds(
    b_full: SnapshotPaths, b_incremental: SnapshotPaths, settings: Any, args: Any
) -> dict[str, Any]:
    """The incremental build against the full one: passage files byte for byte, the vectors, the rankings."""
    expected, produced = passage_files(b_full.passages), passage_files(b_incremental.passages)
    identical_files = sorted(name for name in expected if produced.get(name) == expected[name])
    emb_full, emb_incremental = (
        Embeddings.open(b_full.dense_embeddings),
        Embeddings.open(b_incremental.dense_embeddings),
    )
    queries = [first_sentence(text) for _, text in sample_passages(b_full, args.queries, args.seed)]
    return {
        "passage_files_byte_identical": sorted(produced) == sorted(expected) == identical_files,
        "passage_files_compared": len(expected),
        "embedding_ids_identical": emb_full.ids() == emb_incremental.ids(),
        "max_abs_vector_difference": float(np.abs(emb_full.load() - emb_incremental.load()).max()),
        "rankings": compare_rankings(b_full, b_incremental, settings, queries),
    }


def _warm_encoder(settings: Any) -> tuple[Any, float]:
    """The dense encoder, loaded and run once (its load time is left out of the builds' times)."""
    started = time.perf_counter()
    encoder = load_encoder(settings.dense.model, settings.dense.backend, settings.dense.batch_size)
    encoder.encode(["warm-up"])
    encoder_seconds = round(time.perf_counter() - started, 2)
    log(f"encoder {encoder.spec} loaded in {encoder_seconds} s")
    return encoder, encoder_seconds


def _build_three(
    dump_a: Path, dump_b: Path, a_id: str, b_id: str, settings: Any, encoder: Any
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], Any, Any]:
    """A built in full, then B in full in a fresh data dir and B incrementally beside A; the load
    averages before and after."""
    incremental_dir, full_dir = BENCH_WORK / "incremental-data", BENCH_WORK / "full-data"
    load_start = load_now()
    log(f"A: full build of {a_id}")
    built_a = build_snapshot(dump_a, incremental_dir, a_id, settings, encoder)
    log(f"B: full build of {b_id} in a fresh data dir")
    full = build_snapshot(dump_b, full_dir, b_id, settings, encoder)
    log(f"B: incremental build of {b_id} next to A")
    incremental = build_snapshot(
        dump_b,
        incremental_dir,
        b_id,
        settings,
        encoder,
        reuse=lambda: previous_snapshot(incremental_dir, b_id),
    )
    load_end = load_now()
    return built_a, full, incremental, load_start, load_end


def _print_report(
    results: dict[str, Any],
    built_a: dict[str, Any],
    full: dict[str, Any],
    incremental: dict[str, Any],
    path: Path,
) -> None:
    """The stages of the three builds, the reuse and the checks."""
    reuse, checks, derived = results["reuse"], results["checks"], results["snapshots"]["b_derivation"]
    ratio, target = results["ratio_incremental_over_full"], results["target_ratio"]
    load = results["load_average"]
    print(
        f"\nB = {results['snapshots']['b']}: {len(derived['changed'])} articles edited, "
        f"{derived['removed']} removed"
    )
    print(
        format_table(
            ["stage", "A full s", "B full s", "B incremental s", "incremental/full"],
            [
                [stage, built_a["stages"][stage], full["stages"][stage], incremental["stages"][stage],
                 f"{incremental['stages'][stage] / full['stages'][stage]:.3f}"]
                for stage in STAGES
            ]
            + [["total", built_a["total_seconds"], full["total_seconds"], incremental["total_seconds"],
                f"{ratio:.3f}"]],
        )
    )  # fmt: skip
    print(
        f"\nwall time incremental/full: {ratio:.3f} (target <= {target}: "
        f"{'met' if ratio <= target else 'NOT met'}); load average {load['start']} -> {load['end']}"
    )
    print(
        f"reuse from {reuse['source']}: pages {reuse['reused_pages']}/{reuse['pages']} "
        f"({reuse['page_reuse_ratio']:.1%}), passages {reuse['reused_passages']}/{reuse['passages']} "
        f"({reuse['passage_reuse_ratio']:.1%}), "
        f"vectors {reuse['reused_vectors']}/{reuse['embedded_passages']} ({reuse['vector_reuse_ratio']:.1%}; "
        f"{reuse['encoded_vectors']} encoded vs {reuse['full_build_encoded_vectors']} in the full build)"
    )
    print(
        f"passage files byte-identical: {checks['passage_files_byte_identical']} "
        f"({checks['passage_files_compared']} files); embedding ids identical: "
        f"{checks['embedding_ids_identical']}; max |vector difference| "
        f"{checks['max_abs_vector_difference']:.2e}"
    )
    for index, outcome in checks["rankings"].items():
        print(
            f"{index}: identical top-10 on {outcome['identical_top10']}/{outcome['queries']} queries, "
            f"{outcome['tied_passages_swapped_only']} more differ only by the order of tied passages "
            f"(max score difference {outcome['max_score_difference']:.2e})"
        )
        for differing in outcome["differing"]:
            pairs = zip(differing["incremental"], differing["full"], strict=True)
            print(f"  swapped: {[(a, b) for a, b in pairs if a != b]} for {differing['query'][:60]!r}...")
    print(f"results: {path}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backend", help="dense backend (default: params.yaml's, torch)")
    parser.add_argument("--every", type=int, default=10, help="one article edited in this many")
    parser.add_argument("--queries", type=int, default=100, help="queries for the top-10 comparison")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--articles",
        type=int,
        help="instead of the excerpt: a generated dump of this many articles (N) and its month (N+1), "
        "support/generator (issue 37's month with the dense index; target 0.15x)",
    )
    return parser


def main() -> None:
    args = _parser().parse_args()

    defaults = IndexSettings.from_params(params.load_params().indexes)
    settings = defaults.replace(dense=defaults.dense.replace(backend=args.backend))
    shutil.rmtree(BENCH_WORK, ignore_errors=True)
    BENCH_WORK.mkdir(parents=True)
    a_id, b_id, target = A_ID, B_ID, 0.25
    if args.articles:
        dump_a, dump_b, a_id, b_id, summary = generated_pair(args.articles)
        target = 0.15
    else:
        dump_a = locate_excerpt()
        xml, summary = later_snapshot(read_xml(dump_a), every=args.every)
        dump_b = write_dump(BENCH_WORK / f"{B_ID}-pages-articles.xml", xml)
    log(
        f"B = A with {len(summary['changed'])} articles edited, {summary['removed']} removed, "
        f"{summary['added']} added"
    )
    encoder, encoder_seconds = _warm_encoder(settings)

    built_a, full, incremental, load_start, load_end = _build_three(
        dump_a, dump_b, a_id, b_id, settings, encoder
    )
    if incremental["reuse_source"] != a_id:
        raise SystemExit(f"previous_snapshot found {incremental['reuse_source']!r}, expected {a_id}")

    checks = _compare_builds(full["paths"], incremental["paths"], settings, args)

    passages_report, encode_report = incremental["passages"], incremental["encode"]
    ratio = incremental["total_seconds"] / full["total_seconds"]
    results: dict[str, Any] = {
        "benchmark": "incremental rebuild vs full build of a later snapshot",
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "machine": machine_info(),
        "code": code_fingerprint(
            [
                REPO_ROOT / "assets/incremental.py",
                REPO_ROOT / "assets/wikipedia/passages/build.py",
                REPO_ROOT / "assets/indexes/dense",
                Path(__file__),
            ]
        ),
        "load_average": {"start": load_start, "end": load_end},
        "snapshots": {"a": a_id, "b": b_id, "b_derivation": summary, "every": args.every},
        "articles": args.articles,
        "settings": {
            "dense_model": encoder.name,
            "dense_backend": encoder.backend,
            "factory": settings.dense.factory,
            "encoder_load_seconds_excluded": encoder_seconds,
        },
        "a_full": {"stages": built_a["stages"], "total_seconds": built_a["total_seconds"]},
        "b_full": {"stages": full["stages"], "total_seconds": full["total_seconds"]},
        "b_incremental": {"stages": incremental["stages"], "total_seconds": incremental["total_seconds"]},
        "ratio_incremental_over_full": round(ratio, 4),
        "target_ratio": target,
        "target_met": ratio <= target,
        "reuse": {
            "source": incremental["reuse_source"],
            "pages": passages_report.pages,
            "reused_pages": passages_report.reused_pages,
            "page_reuse_ratio": round(passages_report.reuse_ratio, 4),
            "passages": passages_report.passages,
            "reused_passages": passages_report.reused_passages,
            "passage_reuse_ratio": round(passages_report.reused_passages / passages_report.passages, 4),
            "embedded_passages": encode_report.passages,
            "reused_vectors": encode_report.reused_passages,
            "encoded_vectors": encode_report.encoded_passages,
            "vector_reuse_ratio": round(encode_report.reused_passages / encode_report.passages, 4),
            "full_build_encoded_vectors": full["encode"].encoded_passages,
        },
        "checks": checks,
    }
    path = write_results(f"incremental_n{args.articles}" if args.articles else "incremental", results)

    _print_report(results, built_a, full, incremental, path)


if __name__ == "__main__":
    main()
