"""A remapped dataset as a BEIR benchmark folder (what BEIR's ``GenericDataLoader`` and MTEB's retrieval
tasks read).

Layout::

    corpus.jsonl            {"_id": passage id, "title", "text"}: every passage of the snapshot, in order;
                            with collection "both", then the passages of every other collection a search
                            of "both" ranks and the store holds (tables and infoboxes, the KB's, any
                            registered one), each with "metadata": {"kind": its kind ("table", "kb", ...)}
    queries.jsonl           {"_id": record id, "text": input, "metadata": {"split", "answers"}}: every split
    qrels/<split>.tsv       query-id, corpus-id, score: the passages a record's provenance spans overlap
                            (absent when the split's provenance names pages only, as FEVER's page qrels do)
    qrels-page/<split>.tsv  the same at page level: every passage of each provenance page (KILT's page-level
                            relevance, what its R-precision counts as a hit; with "both", the page's
                            passages of the other collections too)
    kilt_export.json        snapshot, dataset, splits, counts and the relevance rules

Relevance is 1 (binary). Record ids become query ids as they are; when the same id occurs in two splits
of the dataset, every query id is ``<split>:<id>`` (said in ``kilt_export.json``). Records whose every
output was dropped have a query but no qrels (BEIR's loader leaves them out). Everything streams through
DuckDB held to ``$KILT_DUCKDB_MEMORY``. Pure module: no Dagster import.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from assets.exports.huggingface import require_built
from assets.exports.target import ExportError, check_export_target, publish_export
from assets.files import temp_sibling
from assets.indexes import ALL, DEFAULT_COLLECTION, Collection, collection_names, get_collection
from assets.storage import SnapshotPaths, spilling_duckdb, sql_literal

BEIR_FORMAT = 1
BEIR_COLLECTIONS = (DEFAULT_COLLECTION, ALL)
"""A BEIR corpus: the text passages (KILT-comparable), or every collection a search of ``both`` ranks."""
QRELS_LEVELS = {"qrels": "passage", "qrels-page": "page"}


@dataclass(slots=True)
class BeirSplit:
    split: str
    queries: int
    queries_with_qrels: int
    qrels: int
    queries_with_page_qrels: int
    page_qrels: int


@dataclass(slots=True)
class BeirExportReport:
    snapshot_id: str
    dataset: str
    out_dir: str
    corpus: int
    queries: int
    query_ids: str  # "record id" or "<split>:<record id>"
    splits: list[BeirSplit]
    seconds: float
    collection: str = "text"
    added_corpus: dict[str, int] = field(default_factory=dict)
    """Passages of each collection beyond the text in corpus.jsonl (collection "both")."""

    @property
    def page_only_splits(self) -> list[str]:
        """Splits whose provenance names pages but no span: only ``qrels-page/`` judges them."""
        return [s.split for s in self.splits if s.qrels == 0]

    def metadata(self) -> dict[str, Any]:
        return {
            "snapshot_id": self.snapshot_id,
            "dataset": self.dataset,
            "out_dir": self.out_dir,
            "corpus": self.corpus,
            "collection": self.collection,
            **{f"corpus_{name}": count for name, count in self.added_corpus.items()},
            "queries": self.queries,
            "query_ids": self.query_ids,
            **{f"qrels_{s.split}": s.qrels for s in self.splits},
            **{f"page_qrels_{s.split}": s.page_qrels for s in self.splits},
            "page_level_only": ", ".join(self.page_only_splits) or "none",
            "seconds": round(self.seconds, 2),
        }


def _added_collections(con: Any, collection: str) -> list[Collection]:
    """The collections beyond the text whose passages a ``collection`` corpus adds: with ``both``, every
    one a search of ``both`` ranks whose passages the attached store holds."""
    if collection == DEFAULT_COLLECTION:
        return []
    query = "SELECT table_name FROM duckdb_tables() WHERE database_name = 'store'"
    held = {row[0] for row in con.execute(query).fetchall()}
    return [
        c
        for c in map(get_collection, (name for name in collection_names() if name not in BEIR_COLLECTIONS))
        if c.in_all and c.stored is not None and c.stored.table in held
    ]


def _write_corpus(con: Any, paths: SnapshotPaths, work: Path, added: list[Collection]) -> tuple[int, dict]:
    """``corpus.jsonl``: the text passages in file order, then the passages of each ``added`` collection in
    the store's order (their files'), each with its kind (its row's, else its collection's one kind, else
    the collection's name); the count of the text and of each added."""
    text_rows = (
        "SELECT passage_id AS _id, title, text FROM "
        f"read_parquet({sql_literal(paths.passages_parquet / '*.parquet')})"
    )
    corpus = _copy_json(  # in file order: preserve_insertion_order, shards named part-00000, ...
        con, text_rows, work / "corpus.jsonl"
    )
    counts = {}
    for collection in added:  # appended after the text passages, in their own order
        rows = f"SELECT {collection.stored.row} FROM store.{collection.stored.table}"
        names = {row[0] for row in con.execute(f"DESCRIBE {rows}").fetchall()}
        kinds = set(collection.kinds.values())
        kind = "kind" if "kind" in names else sql_literal(kinds.pop() if len(kinds) == 1 else collection.name)
        part = work / f"{collection.name}.jsonl"
        counts[collection.name] = _copy_json(
            con, f"SELECT passage_id AS _id, title, text, {{'kind': {kind}}} AS metadata FROM ({rows})", part
        )
        with open(work / "corpus.jsonl", "ab") as sink, open(part, "rb") as source:
            shutil.copyfileobj(source, sink)
        part.unlink()
    return corpus, counts


def _write_split(
    con: Any, dataset: str, split: str, qid: str, work: Path, added: list[Collection]
) -> BeirSplit:
    """The qrels of one split at every level; an :class:`ExportError` when no record has provenance."""
    counts = {}
    for folder, level in QRELS_LEVELS.items():
        counts[level] = _write_qrels(con, dataset, split, level, qid, work / folder / f"{split}.tsv", added)
    total = con.execute(
        "SELECT count(*) FROM ds.records r WHERE r.dataset = ? AND r.split = ?", [dataset, split]
    ).fetchone()[0]
    if counts["page"][1] == 0:
        raise ExportError(
            f"{dataset} {split}: no record has provenance on this snapshot, so there is nothing to "
            "judge relevant (BEIR needs qrels); export a dataset with provenance (e.g. a KILT file)"
        )
    return BeirSplit(split, total, *counts["passage"], *counts["page"])


def export_beir(
    paths: SnapshotPaths,
    dataset: str,
    out_dir: str | os.PathLike[str],
    *,
    splits: list[str] | None = None,
    collection: str = "text",
) -> BeirExportReport:
    """Write ``dataset`` (its mapped ``splits``, default all) of the snapshot into ``out_dir`` in BEIR's
    layout (see the module docstring). ``collection``: ``text`` (the text passages: KILT-comparable) or
    ``both`` (and the passages of every other collection a search of ``both`` ranks: tables and infoboxes,
    the KB's). Assembled beside ``out_dir`` and swapped in whole; an earlier export there is replaced, any
    other non-empty directory refused."""
    started = time.perf_counter()
    out = Path(out_dir)
    if collection not in BEIR_COLLECTIONS:
        raise ExportError(f"a BEIR corpus is the text passages or both, not {collection!r} (text | both)")
    check_export_target(out, "beir")
    require_built(paths, paths.datasets_db, paths.provenance_store, paths.passages_parquet)
    work = temp_sibling(out)
    (work / "spill").mkdir(parents=True)
    con = spilling_duckdb(":memory:", work / "spill")
    try:
        con.execute(f"ATTACH {sql_literal(paths.datasets_db)} AS ds (READ_ONLY)")
        con.execute(f"ATTACH {sql_literal(paths.provenance_store)} AS store (READ_ONLY)")
        chosen = _splits(con, dataset, splits)
        prefixed = _ids_collide(con, dataset, chosen)
        qid = "r.split || ':' || r.id" if prefixed else "r.id"
        where = f"r.dataset = {sql_literal(dataset)} AND r.split IN ({', '.join(map(sql_literal, chosen))})"
        added = _added_collections(con, collection)
        corpus, added_corpus = _write_corpus(con, paths, work, added)
        queries = _copy_json(
            con,
            f"""SELECT {qid} AS _id, coalesce(r.input, '') AS text,
                       {{'split': r.split, 'answers': coalesce(
                           (SELECT list(o.answer ORDER BY o.output_index) FROM ds.outputs o
                            WHERE o.dataset = r.dataset AND o.split = r.split AND o.record_id = r.id
                              AND o.answer IS NOT NULL), [])}} AS metadata
                FROM ds.records r WHERE {where} ORDER BY r.split, r.rowid""",
            work / "queries.jsonl",
        )
        report_splits = [_write_split(con, dataset, split, qid, work, added) for split in chosen]
        con.close()
        report = BeirExportReport(
            paths.snapshot_id, dataset, str(out), corpus + sum(added_corpus.values()), queries,
            "<split>:<record id>" if prefixed else "record id", report_splits, 0.0, collection,
            added_corpus,
        )  # fmt: skip
        shutil.rmtree(work / "spill")
        publish_export(work, out, _manifest(report))
    finally:
        con.close()
        shutil.rmtree(work, ignore_errors=True)
    report.seconds = time.perf_counter() - started
    return report


def _splits(con: Any, dataset: str, wanted: list[str] | None) -> list[str]:
    available = [row[0] for row in con.execute(
        "SELECT DISTINCT split FROM ds.records WHERE dataset = ? ORDER BY split", [dataset]
    ).fetchall()]  # fmt: skip
    if not available:
        datasets = [
            row[0] for row in con.execute("SELECT DISTINCT dataset FROM ds.records ORDER BY 1").fetchall()
        ]
        raise ExportError(
            f"no dataset {dataset!r} is mapped onto this snapshot (mapped: {', '.join(datasets)})"
        )
    missing = sorted(set(wanted or []) - set(available))
    if missing:
        raise ExportError(
            f"dataset {dataset!r} has no split {', '.join(missing)} (mapped: {', '.join(available)})"
        )
    return [s for s in available if not wanted or s in wanted]


def _ids_collide(con: Any, dataset: str, splits: list[str]) -> bool:
    placeholders = ", ".join("?" for _ in splits)
    total, distinct = con.execute(
        "SELECT count(*), count(DISTINCT id) FROM ds.records "
        f"WHERE dataset = ? AND split IN ({placeholders})",
        [dataset, *splits],
    ).fetchone()
    return total != distinct


def _copy_json(con: Any, query: str, path: Path) -> int:
    """``COPY (query) TO path`` as JSON lines; the rows written."""
    return int(con.execute(f"COPY ({query}) TO {sql_literal(path)} (FORMAT JSON)").fetchone()[0])


def _write_qrels(
    con: Any, dataset: str, split: str, level: str, qid: str, path: Path, added: list[Collection]
) -> tuple[int, int]:
    """qrels of one split at ``level`` (passage: passages overlapping a span; page: every passage of a
    provenance page, and its passages of the ``added`` collections) as BEIR's TSV with its header, when
    there is any; (queries with qrels, qrels)."""
    if level == "passage":
        pairs = """SELECT DISTINCT {qid} AS "query-id", pp.passage_id AS "corpus-id"
                   FROM ds.provenance_passages pp JOIN ds.records r
                     ON r.dataset = pp.dataset AND r.split = pp.split AND r.id = pp.record_id"""
    else:
        pairs = """SELECT DISTINCT {qid} AS "query-id", g.passage_id AS "corpus-id"
                   FROM ds.provenance p JOIN ds.records r
                     ON r.dataset = p.dataset AND r.split = p.split AND r.id = p.record_id
                   JOIN {pages} g ON g.wikipedia_id = p.wikipedia_id"""
    table = "pp" if level == "passage" else "p"
    pages = "store.passages"
    if added:
        tables = ["passages", *(c.stored.table for c in added)]
        pages = (
            "(" + " UNION ALL ".join(f"SELECT passage_id, wikipedia_id FROM store.{t}" for t in tables) + ")"
        )
    query = (
        pairs.format(qid=qid, pages=pages)
        + f" WHERE {table}.dataset = {sql_literal(dataset)} AND {table}.split = {sql_literal(split)}"
    )
    con.execute(f"CREATE OR REPLACE TEMP TABLE qrels AS {query}")
    queries, rows = con.execute('SELECT count(DISTINCT "query-id"), count(*) FROM qrels').fetchone()
    if rows:  # no file for no judgments: BEIR's loader fails on an empty one, and says a missing one
        path.parent.mkdir(parents=True, exist_ok=True)
        con.execute(
            f"""COPY (SELECT "query-id", "corpus-id", 1 AS score FROM qrels ORDER BY 1, 2)
                TO {sql_literal(path)} (FORMAT CSV, HEADER, DELIMITER '\t')"""
        )
    con.execute("DROP TABLE qrels")
    return int(queries), int(rows)


def _manifest(report: BeirExportReport) -> dict[str, Any]:
    return {
        "format": BEIR_FORMAT,
        "kind": "beir",
        "snapshot_id": report.snapshot_id,
        "dataset": report.dataset,
        "corpus": report.corpus,
        "collection": report.collection,
        "added_corpus": report.added_corpus,
        "queries": report.queries,
        "query_ids": report.query_ids,
        "splits": [asdict(s) for s in report.splits],
        "page_level_only": report.page_only_splits,
        "relevance": {
            "qrels": "1 for each passage that a provenance span of the record overlaps (datasets.duckdb "
            "provenance_passages)",
            "qrels-page": "1 for each passage of a page named by the record's provenance (KILT's page-level "
            "relevance)",
        },
    }
