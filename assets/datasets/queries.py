"""Dataset lookups over a snapshot's provenance store.

``ProvenanceStore`` answers page, passage and span questions and knows nothing of datasets; the questions
about remapped records (which spans a record cites, which records cite a page) live here, over the
snapshot's ``datasets.duckdb`` attached read-only to the store's connection. A snapshot is opened for
reading by :class:`assets.reading.Snapshot` (its ``datasets``).
"""

from __future__ import annotations

import json
from typing import Any

from assets.provenance_store import ProvenanceStore
from assets.storage import sql_literal

__all__ = ["DatasetQueries"]


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
