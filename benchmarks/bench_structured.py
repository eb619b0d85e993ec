"""Structured passages (tables and infoboxes) at scale: count, build time and peak memory per size.

For each ``--articles`` size, the enwiki-shaped generator's snapshot (``support/generator``: its
articles, infoboxes and tables come from real articles) gets a knowledge source (built once, cached under
``benchmarks/work/structured``), then the ``structured_passages`` stage runs on it in a process of its own
(its peak RSS is that process's). Printed per size: pages read, tables, infoboxes, passages, seconds,
seconds per 1,000 articles and their ratio to the smallest size (issue 38's scale target: at most 1.25x per
article), peak RSS (target at most 4 GiB), and the structured passages per text passage. The ``bm25`` stage
then builds the structured passages' BM25 index (``structured_indexes`` with ``indexes.build: [bm25]``; the
dense one is left out at these sizes, as in the scale tables: encoding is the capacity plan's subject), also
in a process of its own. ``--stages`` runs some stages only; the other sizes' and stages' figures of
``results/structured_scale.json`` are kept (each row says when it was measured).

    .venv/bin/python benchmarks/bench_structured.py --articles 10000 100000 1000000 [--stages bm25]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from assets.params import KnowledgeSourceParams, PassagesParams, load_params
from benchmarks.common import format_table, machine_info, write_results
from support.workspace import RESULTS_DIR, WORK_DIR, log

WORK = WORK_DIR / "structured"


def snapshot_paths(articles: int) -> tuple[Path, Any, Path]:
    """``(dump, snapshot paths, data dir)`` of the generated snapshot of ``articles`` articles."""
    from assets.storage import SnapshotPaths
    from benchmarks.scale_build import dump_file_name, snapshot_of
    from support.generator.dump import default_out, generate

    stats = generate(articles, default_out(articles, 0))
    data_dir = WORK / f"n{articles}"
    dump = default_out(articles, 0) / dump_file_name(stats)
    return dump, SnapshotPaths(data_dir, snapshot_of(stats)), data_dir


def stage_knowledge_source(articles: int) -> dict[str, Any]:
    from assets.wikipedia.pages import build_knowledge_source
    from assets.wikipedia.passages import build_passages

    dump, paths, data_dir = snapshot_paths(articles)
    if not paths.passages_report.is_file():
        build_knowledge_source(dump, data_dir, KnowledgeSourceParams(workers=2), progress=False)
        build_passages(paths, PassagesParams(workers=2), progress=False)
    report = json.loads(paths.passages_report.read_text())
    return {"text_passages": report["passages"], "pages": report["pages"]}


def stage_structured(articles: int) -> dict[str, Any]:
    from assets.wikipedia.passages import build_structured_passages

    dump, paths, _ = snapshot_paths(articles)
    started = time.perf_counter()
    report = build_structured_passages(paths, paths.structured_passages, dump_files=[dump])
    return {
        "seconds": round(time.perf_counter() - started, 2),
        "pages": report.pages,
        "pages_with_structures": report.pages_with_structures,
        "tables": report.tables,
        "infoboxes": report.infoboxes,
        "passages": report.passages,
        "failed_pages": report.failed_pages,
        "unclosed_tables": report.unclosed_tables,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }


def stage_bm25(articles: int) -> dict[str, Any]:
    from assets.indexes import IndexSettings, build_collection_indexes

    _, paths, _ = snapshot_paths(articles)
    started = time.perf_counter()
    report = build_collection_indexes(
        paths, "structured", IndexSettings.from_params(load_params().indexes), ["bm25"]
    )
    return {
        "bm25_seconds": round(time.perf_counter() - started, 2),
        "bm25_documents": report.documents.get("bm25", 0),
        "bm25_peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        + resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024,  # this process and the JVM
    }


STAGES = {"knowledge_source": stage_knowledge_source, "structured": stage_structured, "bm25": stage_bm25}


def in_child(stage: str, articles: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--stage", stage, "--articles", str(articles)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--articles", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--stages", nargs="+", choices=["structured", "bm25"], default=["structured", "bm25"])
    parser.add_argument("--stage", choices=list(STAGES), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stage:  # a child: one stage of one size, its result as the last line
        print(json.dumps(STAGES[args.stage](args.articles[0])))
        return
    earlier = RESULTS_DIR / "structured_scale.json"
    rows: dict[int, dict[str, Any]] = {
        int(k): v for k, v in (json.loads(earlier.read_text())["sizes"] if earlier.is_file() else {}).items()
    }
    for articles in sorted(args.articles):
        log(f"{articles:,} articles: knowledge source and text passages (cached)")
        text = in_child("knowledge_source", articles)
        row = rows.setdefault(articles, {})
        for stage in args.stages:
            log(f"{articles:,} articles: {stage}")
            row.update(in_child(stage, articles), text_passages=text["text_passages"])
            row[f"{stage}_measured"] = time.strftime("%Y-%m-%d %H:%M")
        log(f"{articles:,}: {row}")
    rows = {a: rows[a] for a in sorted(rows)}
    measured = {a: r for a, r in rows.items() if "seconds" in r}
    base = min(measured)
    for articles, row in measured.items():
        row["seconds_per_1000_articles"] = round(1000 * row["seconds"] / articles, 3)
        row["per_article_ratio_to_smallest"] = round(
            row["seconds"] / articles / (rows[base]["seconds"] / base), 3
        )
        row["structured_per_text_passage"] = round(sum(row["passages"].values()) / row["text_passages"], 4)
    results = {
        "machine": machine_info(),
        "sizes": {str(k): v for k, v in rows.items()},
        "targets": {"per_article_ratio_max": 1.25, "peak_rss_max_bytes": 4 << 30},
        "targets_met": all(
            r["per_article_ratio_to_smallest"] <= 1.25
            and max(r["peak_rss_bytes"], r.get("bm25_peak_rss_bytes", 0)) <= 4 << 30
            for r in measured.values()
        ),
    }
    write_results("structured_scale", results)
    print(
        format_table(
            ["articles", "tables", "infoboxes", "passages", "per text passage", "s", "s / 1k articles",
             "x smallest", "peak RSS MiB", "BM25 s", "BM25 RSS MiB"],
            [
                [f"{a:,}", r["tables"], r["infoboxes"], sum(r["passages"].values()),
                 r["structured_per_text_passage"], r["seconds"], r["seconds_per_1000_articles"],
                 r["per_article_ratio_to_smallest"], r["peak_rss_bytes"] >> 20, r.get("bm25_seconds", "-"),
                 r.get("bm25_peak_rss_bytes", 0) >> 20 or "-"]
                for a, r in measured.items()
            ],
        )
    )  # fmt: skip


if __name__ == "__main__":
    main()
