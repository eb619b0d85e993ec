"""Search a snapshot's indices (bm25, dense, hybrid) and evaluate them with KILT's page-level metrics
on the datasets remapped onto the same snapshot."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assets import charts
from assets.indexes.evaluation import KS, evaluate
from assets.indexes.hybrid import reciprocal_rank_fusion
from assets.storage import SnapshotPaths, write_json_atomic

INDEXES = ("bm25", "dense", "hybrid")


@dataclass(frozen=True, slots=True)
class PassageHit:
    """One retrieved passage, as every index reports it."""

    passage_id: str
    wikipedia_id: str
    score: float
    title: str | None = None
    text: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"passage_id": self.passage_id, "wikipedia_id": self.wikipedia_id, "title": self.title,
                "score": self.score, "text": self.text}


BatchSearch = Callable[[Sequence[str], int], list[list[PassageHit]]]


def hybrid_batch(bm25: BatchSearch, dense: BatchSearch, *, depth: int = 100, constant: float = 60.0) -> BatchSearch:
    """Reciprocal-rank fusion of the two rankings of each query (see :mod:`assets.indexes.hybrid`)."""

    def search(queries: Sequence[str], k: int) -> list[list[PassageHit]]:
        fused = []
        for lexical, semantic in zip(bm25(queries, depth), dense(queries, depth), strict=True):
            by_id = {hit.passage_id: hit for hit in (*semantic, *lexical)}
            ranking = reciprocal_rank_fusion(
                [[h.passage_id for h in lexical], [h.passage_id for h in semantic]],
                depth=depth, constant=constant, k=k,
            )
            fused.append([
                PassageHit(pid, by_id[pid].wikipedia_id, score, by_id[pid].title, by_id[pid].text)
                for pid, score in ranking
            ])
        return fused

    return search


@dataclass(slots=True)
class EvalQueries:
    """Queries and gold provenance sets (page ids) of one remapped dataset split."""

    dataset: str
    split: str
    ids: list[str]
    texts: list[str]
    gold: dict[str, list[frozenset[str]]]


def eval_queries(paths: SnapshotPaths) -> list[EvalQueries]:
    """Every remapped split with page-level provenance: one query per record with an input."""
    found = []
    for path in sorted(paths.datasets.glob("*-kilt.jsonl")):
        dataset, _, split = path.name.removesuffix("-kilt.jsonl").partition("-")
        queries = EvalQueries(dataset, split, [], [], {})
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                record = json.loads(line)
                sets = [
                    frozenset(str(p["wikipedia_id"]) for p in output.get("provenance") or [])
                    for output in record.get("output") or []
                ]
                sets = [s for s in sets if s]
                if sets and (record.get("input") or "").strip():
                    queries.ids.append(str(record["id"]))
                    queries.texts.append(record["input"])
                    queries.gold[str(record["id"])] = sets
        if queries.ids:
            found.append(queries)
    return found


def evaluate_indexes(
    paths: SnapshotPaths,
    searchers: dict[str, BatchSearch],
    reports_dir: Path,
    *,
    depth: int = 100,
    ks: Sequence[int] = KS,
) -> dict[str, Any]:
    """KILT metrics per dataset split and index; JSON, Markdown and a bar chart under
    ``reports/<snapshot>/retrieval/``."""
    results: dict[str, Any] = {"snapshot_id": paths.snapshot_id, "depth": depth, "splits": []}
    for queries in eval_queries(paths):
        split_result = {"dataset": queries.dataset, "split": queries.split, "queries": len(queries.ids),
                        "indexes": {}}
        for name, search in searchers.items():
            hits = search(queries.texts, depth)
            runs = {qid: [h.wikipedia_id for h in ranked] for qid, ranked in zip(queries.ids, hits, strict=True)}
            split_result["indexes"][name] = evaluate(runs, queries.gold, ks).as_dict()
        results["splits"].append(split_result)
    out = reports_dir / paths.snapshot_id / "retrieval"
    write_json_atomic(out / "retrieval.json", results)
    rows = [
        {"dataset": f"{s['dataset']}-{s['split']}", "index": name, "queries": s["queries"],
         **{k: v for k, v in metrics.items() if k not in ("queries", "skipped_without_provenance")}}
        for s in results["splits"] for name, metrics in s["indexes"].items()
    ]
    chart = {f"{r['dataset']}/{r['index']}": r["R-precision"] for r in rows}
    png = charts.bar_chart_png(chart or {"(none)": 0}, title=f"R-precision ({paths.snapshot_id})",
                               xlabel="dataset/index", ylabel="R-precision")
    charts.save_png(png, out / "r_precision.png")
    (out / "retrieval.md").write_text(
        f"# Retrieval evaluation: {paths.snapshot_id}\n\nKILT page-level metrics, depth {depth} passages.\n\n"
        + charts.markdown_table(rows) + "\n\n![R-precision](r_precision.png)\n"
    )
    results["table"] = rows
    return results
