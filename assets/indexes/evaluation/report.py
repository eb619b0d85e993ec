"""The KILT evaluation of a snapshot's indices: every remapped dataset split searched on every index and
scored with KILT's page-level metrics (:func:`evaluate_indexes`), written as JSON, Markdown and a chart.

Pure module: no Dagster import.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

from assets import charts, params
from assets.files import atomic_path
from assets.indexes.collections import DEFAULT_COLLECTION, collection_built, searcher_key, split_searcher_key
from assets.indexes.evaluation.kilt_metrics import RetrievalMeans
from assets.indexes.evaluation.scoring import KS, add_guesses, has_provenance, scores_of
from assets.indexes.retriever import Retriever
from assets.iterables import batched
from assets.params import EVALUATION_CHUNK
from assets.storage import SnapshotPaths, write_report_json

__all__ = [
    "NO_EVALUATION",
    "EvalQueries",
    "asked",
    "eval_queries",
    "evaluate_indexes",
    "retrieval_reports_dir",
]


@dataclass(slots=True)
class EvalQueries:
    """One remapped dataset split (its JSONL file), read chunk by chunk: every gold record counts, as in
    KILT's evaluation; the queries are the records with an input."""

    dataset: str
    split: str
    path: Path
    records: int = 0  # in the file

    def chunks(
        self, size: int = EVALUATION_CHUNK, limit: int | None = None
    ) -> Iterator[list[dict[str, Any]]]:
        """The records ``size`` at a time (the first ``limit`` of them, when given)."""
        with open(self.path, encoding="utf-8") as handle:
            records = (json.loads(line) for line in handle if line.strip())
            yield from batched(records if limit is None else islice(records, limit), size)

    @property
    def gold(self) -> list[dict[str, Any]]:
        """Every record (read whole: for small splits and tests)."""
        return [record for chunk in self.chunks() for record in chunk]

    @property
    def queried(self) -> list[dict[str, Any]]:
        return asked(self.gold)


def asked(gold: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records with an input to query with."""
    return [record for record in gold if (record.get("input") or "").strip()]


def eval_queries(paths: SnapshotPaths) -> list[EvalQueries]:
    """Every remapped split with page-level provenance on at least one record."""
    found = []
    for path in sorted(paths.datasets.glob("*-kilt.jsonl")):
        dataset, _, split = path.name.removesuffix("-kilt.jsonl").rpartition("-")
        queries = EvalQueries(dataset, split, path)
        with_provenance = False
        for chunk in queries.chunks():
            queries.records += len(chunk)
            with_provenance = with_provenance or any(has_provenance(record) for record in chunk)
        if with_provenance:
            found.append(queries)
    return found


NO_STRUCTURED = "the snapshot has no structured index for it (structured_indexes; passages.structured)"

NO_EVALUATION = (
    "no remapped dataset split has page-level provenance on this snapshot (set datasets.files to map "
    "datasets onto it)"
)


def retrieval_reports_dir(reports_dir: Path, snapshot_id: str) -> Path:
    return Path(reports_dir) / snapshot_id / "retrieval"


def _searched(paths: SnapshotPaths, settings: params.EvaluationParams) -> tuple[list[str], list[str]]:
    """The searcher keys the evaluation scores, and those left out (a collection without the index)."""
    keys, left_out = [], []
    for collection in settings.collections:
        for name in settings.indexes:
            if collection == DEFAULT_COLLECTION or collection_built(paths, name, collection):
                keys.append(searcher_key(name, collection))
            else:
                left_out.append(searcher_key(name, collection))
    return keys, left_out


def _score_split(
    retriever: Retriever,
    queries: Any,
    indexes: list[str],
    settings: params.EvaluationParams,
    ks: Sequence[int],
    chunk: int,
    progress: Callable[[str], None] | None,
) -> dict[str, Any]:
    """One split's metrics per searcher key, searched and scored ``chunk`` gold records at a time."""
    read = max(ks, default=0)  # the in-context metrics read the text of the first max(ks) passages only
    means = {name: RetrievalMeans(ks) for name in indexes}
    seconds = dict.fromkeys(indexes, 0.0)
    scored = without_provenance = 0
    for gold in queries.chunks(chunk, settings.max_queries):  # one read; memory stays one chunk's hits
        queried = asked(gold)
        for name in indexes:
            started = time.perf_counter()
            found = retriever.batch_search(name, [r["input"] for r in queried], settings.depth)
            texts = retriever.with_text([ranked[:read] for ranked in found])
            hits = {
                str(record["id"]): [*top, *ranked[read:]]
                for record, ranked, top in zip(queried, found, texts, strict=True)
            }
            add_guesses(means[name], gold, hits)
            seconds[name] += time.perf_counter() - started
            if progress is not None:
                kind, collection = split_searcher_key(name)
                progress(
                    f"{queries.dataset}-{queries.split}: {kind} (collection {collection}), "
                    f"{scored + len(gold):,} queries searched ({seconds[name]:.1f} s)"
                )
        scored += len(gold)
        without_provenance += sum(not has_provenance(record) for record in gold)
    return {
        "dataset": queries.dataset,
        "split": queries.split,
        "queries": scored,
        **({"records": queries.records} if settings.max_queries else {}),
        "indexes": {
            name: {**scores_of(means[name], without_provenance), "seconds": round(seconds[name], 3)}
            for name in indexes
        },
    }


def _table(results: dict[str, Any]) -> list[dict[str, Any]]:
    """A row per split and searcher key: the metrics rounded, without timings."""
    parts = {name: split_searcher_key(name) for name in results["indexes"]}  # (index type, collection)
    return [
        {
            "dataset": f"{s['dataset']}-{s['split']}",
            "index": parts[name][0],
            "collection": parts[name][1],
            "queries": s["queries"],
            **{
                key: round(value, 4) if isinstance(value, float) else value
                for key, value in metrics.items()
                if key not in ("queries", "without_provenance", "seconds")
            },
        }
        for s in results["splits"]
        for name, metrics in s["indexes"].items()
    ]


def _write_markdown(out: Path, results: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    """``retrieval.md``: the table of the main metrics, what was left out, the chart."""
    shown = ["dataset", "index", "collection", "queries", "Rprec", "precision@1", "recall@5", "recall@20"]
    shown += ["success_rate@5"]
    shown += ["answer_in_context@5", "entity_in_context@5"]
    max_queries = results.get("max_queries")
    markdown = (
        f"# Retrieval evaluation: {results['snapshot_id']}\n\n"
        f"KILT's page-level metrics by the rules of kilt/eval_retrieval.py (every record of a split counts); "
        f"{results['depth']} passages retrieved per query, in rank order. retrieval.json has every metric. "
        "Collection text: the text passages (KILT's knowledge source, comparable with KILT's figures); both: "
        "the text and the structured passages (tables and infoboxes), one ranking.\n\n"
        + "".join(f"Left out: {key} ({why}).\n\n" for key, why in results.get("left_out", {}).items())
        + (
            f"Only the first {max_queries:,} records of each split are scored (max_queries).\n\n"
            if max_queries
            else ""
        )
        + (
            charts.markdown_table([{k: r[k] for k in shown} for r in rows])
            if rows
            else f"Skipped: {NO_EVALUATION}."
        )
        + "\n\n![R-precision](r_precision.png)\n"
    )
    with atomic_path(out / "retrieval.md") as tmp:
        tmp.write_text(markdown, encoding="utf-8")


def evaluate_indexes(
    retriever: Retriever,
    reports_dir: Path,
    settings: params.EvaluationParams | None = None,
    *,
    ks: Sequence[int] = KS,
    chunk: int = EVALUATION_CHUNK,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """KILT metrics per dataset split, index and collection; ``retrieval.json``, ``retrieval.md`` and
    ``r_precision.png`` under ``reports/<snapshot>/retrieval/``. ``settings``: the ``indexes.evaluation``
    section (default its defaults): which index types (bm25, dense, hybrid: ``rerank`` needs its
    cross-encoder, so it is asked for), which collections (``text``: the text passages, the
    KILT-comparable figures; ``both``: text + structured passages; a collection is left out, and the
    report says why, where the snapshot has no index of it for an index type), how deep, and
    ``max_queries`` (only the first that many records of each split; the report gives the split's size
    beside the queries scored). Each split is searched and scored ``chunk`` gold records at a time.
    ``progress`` hears a line per split and index as each is scored."""
    settings = settings or params.EvaluationParams()
    paths = retriever.paths
    keys, left_out = _searched(paths, settings)
    results: dict[str, Any] = {
        "snapshot_id": paths.snapshot_id,
        "depth": settings.depth,
        "ks": list(ks),
        "indexes": keys,
        "collections": list(settings.collections),
        **({"max_queries": settings.max_queries} if settings.max_queries else {}),
        **({"left_out": {key: NO_STRUCTURED for key in left_out}} if left_out else {}),
        "splits": [],
    }
    for queries in eval_queries(paths):
        results["splits"].append(_score_split(retriever, queries, keys, settings, ks, chunk, progress))
    rows = _table(results)
    results["table"] = rows
    out = retrieval_reports_dir(reports_dir, paths.snapshot_id)
    write_report_json(out / "retrieval.json", results)
    chart = {f"{r['dataset']}/{searcher_key(r['index'], r['collection'])}": r["Rprec"] for r in rows}
    png = charts.bar_chart_png(
        chart or {"(no remapped dataset)": 0},
        title=f"KILT R-precision by dataset and index ({paths.snapshot_id})",
        xlabel="dataset/index",
        ylabel="R-precision",
    )
    charts.save_png(png, out / "r_precision.png")
    _write_markdown(out, results, rows)
    return results
