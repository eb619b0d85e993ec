"""Dataset lookups over a snapshot's stores, and the one place missing DuckDB stores are rebuilt.

``ProvenanceStore`` answers page, passage and span questions and knows nothing of datasets; the questions
about remapped records (which spans a record cites, which records cite a page) live here, over the
snapshot's ``datasets.duckdb`` attached read-only to the store's connection.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from assets.datasets.outputs import build_datasets_db
from assets.provenance_store import (
    PassageRows,
    ProvenanceStore,
    build_store,
    report_stamp,
    write_parquet_rows,
)
from assets.storage import SnapshotPaths, resolve_snapshot, sql_literal

log = logging.getLogger(__name__)


def missing_stores(paths: SnapshotPaths) -> list[str]:
    """The local stores of a snapshot that are missing (or, the QA lookup, stale) while the Parquet they are
    built from is there.

    The two DuckDB files are lookup indexes over versioned Parquet, and the only artifacts that are not
    byte-reproducible: DuckDB writes a random database id into the file header, and slack bytes of its
    string-compression segments (duckdb/duckdb#23382). So DVC versions the Parquet, not these files: after
    a ``dvc pull`` (or a deleted store) they are missing until ``kiltpipe restore-stores`` rebuilds them.
    The QA-pair KB's SQLite lookup (``qa_pairs.sqlite``) is local for the same reason (SQLite writes its
    library version into the header).
    """
    missing = []
    if (
        not paths.provenance_store.is_file()
        and paths.manifest_file.is_file()
        and paths.passages_parquet.is_dir()
    ):
        missing.append(paths.provenance_store.name)
    if not paths.datasets_db.is_file() and any((paths.datasets / "parquet").glob("*/*.parquet")):
        missing.append(paths.datasets_db.name)
    if (paths.qa_pairs / "parquet").is_dir() and not qa_lookup_current(paths):
        missing.append(paths.qa_lookup.name)
    return missing


def qa_lookup_current(paths: SnapshotPaths) -> bool:
    """Whether the QA-pair KB's lookup file is there and was built from the KB's current build (a
    ``dvc checkout`` of another build leaves an older one behind)."""
    if not paths.qa_lookup.is_file():
        return False
    rows = PassageRows(paths.qa_lookup)
    try:
        return rows.stamp == report_stamp(paths.qa_pairs)
    finally:
        rows.close()


def write_qa_lookup(paths: SnapshotPaths) -> int:
    """Write the QA-pair KB's lookup file (:attr:`SnapshotPaths.qa_lookup`): every stored question by its
    id, and its id by its normalised text; returns the questions written."""
    return write_parquet_rows(
        paths.qa_pairs / "parquet", paths.qa_lookup, alias="question_norm", stamp=report_stamp(paths.qa_pairs)
    )


def ensure_local_stores(paths: SnapshotPaths) -> list[str]:
    """Build the :func:`missing_stores` of ``paths`` (a build's staging folder: only a build writes);
    returns their names. A snapshot without the Parquet to build from is left to ``ProvenanceStore``."""
    missing = missing_stores(paths)
    for name in missing:
        log.info("snapshot %s: building %s from its Parquet", paths.snapshot_id, name)
        if name == paths.provenance_store.name:
            build_store(paths)
        elif name == paths.qa_lookup.name:
            write_qa_lookup(paths)
        else:
            build_datasets_db(paths)
    return missing


def open_store(data_dir: Path, snapshot_id: str | None) -> ProvenanceStore:
    """The store of a snapshot (default: the newest complete one), for reading: a read writes nothing, so
    DuckDB files that are missing (after a ``dvc pull``) are a :class:`LookupError` naming the command
    that rebuilds them."""
    paths = resolve_snapshot(data_dir, snapshot_id)
    require_stores(paths)
    return ProvenanceStore(paths)


def require_stores(paths: SnapshotPaths) -> None:
    """A :class:`LookupError` naming ``kiltpipe restore-stores`` when ``paths`` (a snapshot someone else
    publishes: read, never written) lacks local stores its Parquet could rebuild (or holds a stale one)."""
    missing = missing_stores(paths)
    if missing:
        what = " and ".join(
            f"{name} is stale (built from another build of qa_pairs)"
            if (paths.root / name).is_file()
            else f"{name} is missing"
            for name in missing
        )
        raise LookupError(
            f"snapshot {paths.snapshot_id} ({paths.root.resolve()}): {what} (DVC versions their Parquet, not "
            f"these lookup files); rebuild them with `kiltpipe restore-stores --snapshot {paths.snapshot_id}`"
        )


class DatasetQueries:
    """The remapped records of a store's snapshot: their provenance, and the records citing a page."""

    def __init__(self, store: ProvenanceStore) -> None:
        self.store = store
        self.paths = store.paths
        if not self.paths.datasets_db.is_file():
            raise LookupError(
                f"snapshot {self.paths.snapshot_id} has no remapped datasets; run `kiltpipe map`"
            )
        attached = {
            row[0] for row in store.con.execute("SELECT database_name FROM duckdb_databases()").fetchall()
        }
        if "datasets" not in attached:
            store.con.execute(f"ATTACH {sql_literal(str(self.paths.datasets_db))} AS datasets (READ_ONLY)")
        self.con = store.con

    def provenance(self, record_id: str, *, dataset: str | None = None) -> dict[str, Any] | None:
        """A dataset record with its provenance spans (their text) and the passages covering them."""
        sql = "SELECT dataset, split, kilt_json FROM datasets.records WHERE id = ?"
        params: list[Any] = [record_id]
        if dataset:
            sql += " AND dataset = ?"
            params.append(dataset)
        rows = self.con.execute(sql, params).fetchall()
        if not rows:
            return None
        if len(rows) > 1:
            found = ", ".join(f"{d}/{s}" for d, s, _ in rows)
            raise LookupError(f"record {record_id!r} is in several datasets ({found}); pass --dataset")
        dataset_name, split, kilt_json = rows[0]
        spans = self.con.execute(
            "SELECT output_index, provenance_index, wikipedia_id, title, section, start_paragraph_id, "
            "start_character, end_paragraph_id, end_character, bleu_score FROM datasets.provenance "
            "WHERE dataset = ? AND split = ? AND record_id = ? ORDER BY output_index, provenance_index",
            [dataset_name, split, record_id],
        ).fetchall()
        covering = self.con.execute(
            "SELECT output_index, provenance_index, passage_id, covered_fraction "
            "FROM datasets.provenance_passages WHERE dataset = ? AND split = ? AND record_id = ? "
            "ORDER BY output_index, provenance_index, passage_id",
            [dataset_name, split, record_id],
        ).fetchall()
        passages: dict[tuple[int, int], list[dict[str, Any]]] = {}
        for output_index, provenance_index, passage_id, fraction in covering:
            passages.setdefault((output_index, provenance_index), []).append(
                {"passage_id": passage_id, "covered_fraction": round(fraction, 6)}
            )
        out_spans = []
        for oi, pi, wid, title, section, sp, sc, ep, ec, bleu in spans:
            span = {
                "output_index": oi,
                "provenance_index": pi,
                "wikipedia_id": wid,
                "title": title,
                "section": section,
                "bleu_score": bleu,
            }
            if sp is not None:
                span.update(start_paragraph_id=sp, start_character=sc, end_paragraph_id=ep, end_character=ec)
                located = self.store.span(wid, sp, sc, ep, ec)
                span["text"] = located["text"] if located else None
                span["passages"] = passages.get((oi, pi), [])
            out_spans.append(span)
        return {"dataset": dataset_name, "split": split, "record": json.loads(kilt_json), "spans": out_spans}

    def cites(self, query: str) -> dict[str, Any] | None:
        """The dataset records whose provenance is on a page (by id or title, redirects followed)."""
        match = self.store.page(query)
        if match is None:
            return None
        wikipedia_id = match.record["wikipedia_id"]
        rows = self.con.execute(
            "SELECT DISTINCT r.dataset, r.split, r.id, r.input FROM datasets.provenance p "
            "JOIN datasets.records r ON r.dataset = p.dataset AND r.split = p.split AND r.id = p.record_id "
            "WHERE p.wikipedia_id = ? ORDER BY r.dataset, r.split, r.id",
            [wikipedia_id],
        ).fetchall()
        return {
            "wikipedia_id": wikipedia_id,
            "title": match.record["wikipedia_title"],
            "records": [{"dataset": d, "split": s, "id": i, "input": t} for d, s, i, t in rows],
        }
