"""Building the provenance store: ``provenance.duckdb`` from a snapshot's pages, passages, redirects and KB
tables, and ``passages.sqlite`` from its passage tables.

Built from the Parquet outputs into temp files and swapped in with one rename each, so a build succeeds
while other processes hold the previous store open read-only, and no reader sees a half-built store.

Pure module: no Dagster import.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import duckdb

from assets.files import atomic_path
from assets.provenance_store.passage_rows import write_passage_rows
from assets.provenance_store.tables import stored_passages
from assets.storage import SnapshotPaths, spilling_duckdb, sql_literal
from assets.wikipedia.passages import ABSTRACT_SECTION

__all__ = ["StoreReport", "build_store"]


@dataclass(slots=True)
class StoreReport:
    snapshot_id: str
    pages: int
    paragraphs: int
    passages: int
    redirects: int
    bytes: int
    seconds: float
    collections: dict[str, int] = field(default_factory=dict)
    """Rows of every other table of passages it holds (``structured_passages``, ``kb_passages``, ...)."""


_KILT_FIELDS = """
    '_id': wikipedia_id, 'wikipedia_id': wikipedia_id, 'wikipedia_title': wikipedia_title,
    'text': text, 'anchors': anchors, 'categories': array_to_string(categories, ','),
    'history': {'revid': history.revid, 'parentid': history.parentid, 'pageid': history.pageid,
                'timestamp': history.timestamp, 'url': history.url, 'pre_dump': history.pre_dump},
    'is_disambiguation': is_disambiguation"""
"""A page row as KILT's knowledge-source record (``wikidata_info`` is added when the page has a QID)."""


def _has_column(con: duckdb.DuckDBPyConnection, parquet: Any, column: str) -> bool:
    names = [
        row[0]
        for row in con.execute(f"DESCRIBE SELECT * FROM read_parquet({sql_literal(str(parquet))})").fetchall()
    ]
    return column in names


PASSAGES_PER_RANGE = 500_000

_PARAGRAPHS_SQL = """
    WITH covering AS (
        SELECT p.wikipedia_id, g.paragraph_id,
               list(struct_pack(passage_id := p.passage_id, page_start := p.page_start,
                                page_end := p.page_end, start_paragraph_id := p.start_paragraph_id,
                                start_character := p.start_character,
                                end_paragraph_id := p.end_paragraph_id,
                                end_character := p.end_character) ORDER BY p.page_start) AS passages
        FROM passages p, range(p.start_paragraph_id, p.end_paragraph_id + 1) g(paragraph_id)
        WHERE p.wikipedia_id BETWEEN $1 AND $2
        GROUP BY ALL)
    SELECT b.wikipedia_id, b.paragraph_id, b.wikipedia_id || ':' || b.paragraph_id AS paragraph_key,
           b.text, b.section, b.page_offset, coalesce(c.passages, []) AS passages
    FROM paragraph_base b
    LEFT JOIN covering c ON c.wikipedia_id = b.wikipedia_id AND c.paragraph_id = b.paragraph_id
    WHERE b.wikipedia_id BETWEEN $1 AND $2
    ORDER BY b.wikipedia_id, b.paragraph_id
"""


def _count(con: duckdb.DuckDBPyConnection, table: str) -> int:
    return con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def _page_ranges(passages: int) -> int:
    """How many page ranges the paragraph table is built in (one per :data:`PASSAGES_PER_RANGE`)."""
    return max(1, -(-passages // PASSAGES_PER_RANGE))


def _compressed_tables(con: Any, paths: SnapshotPaths, redirect_qid: str) -> None:
    """The redirects, and the passages with page-level character offsets (compressed tables)."""
    pages_parquet = sql_literal(paths.pages_glob)
    con.execute(
        f"""
        CREATE TEMP TABLE paragraph_base AS
        WITH flat AS (
            SELECT wikipedia_id, unnest(text) AS text, generate_subscripts(text, 1) - 1 AS paragraph_id
            FROM read_parquet({pages_parquet}))
        SELECT wikipedia_id, paragraph_id::INTEGER AS paragraph_id, text,
               coalesce(
                   last_value(CASE WHEN starts_with(text, 'Section::::') THEN rtrim(text, chr(10)) END
                              IGNORE NULLS) OVER w,
                   {sql_literal(ABSTRACT_SECTION)}) AS section,
               coalesce(sum(length(text)) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING),
                        0)::BIGINT AS page_offset
        FROM flat
        WINDOW w AS (PARTITION BY wikipedia_id ORDER BY paragraph_id)
        """
    )
    con.execute(
        f"""
        CREATE TABLE redirects AS
        SELECT *{redirect_qid} FROM read_parquet({sql_literal(str(paths.redirects_file))})
        """
    )
    con.execute(
        f"""
        CREATE TABLE passages AS
        SELECT p.*, s.page_offset + p.start_character AS page_start,
               e.page_offset + p.end_character AS page_end
        FROM read_parquet({sql_literal(paths.passages_glob)}) p
        JOIN paragraph_base s ON s.wikipedia_id = p.wikipedia_id AND s.paragraph_id = p.start_paragraph_id
        JOIN paragraph_base e ON e.wikipedia_id = p.wikipedia_id AND e.paragraph_id = p.end_paragraph_id
        """
    )
    con.execute("CHECKPOINT")


def _lookup_tables(con: Any, pages_parquet: str, page_qid: str) -> None:
    """The pages and the paragraphs, stored uncompressed for point lookups."""
    # 2. Point lookups fetch long strings (a KILT record, a paragraph): from a compressed segment
    # DuckDB decompresses a whole vector (~50 ms for a large page); stored uncompressed, ~1 ms.
    # Each paragraph row also lists the passages overlapping it, so a span lookup is a few point
    # queries (a conjunction with a range would make DuckDB scan instead of using the index).
    con.execute("SET force_compression = 'uncompressed'")
    con.execute(
        f"""
        CREATE TABLE pages AS
        WITH p AS (SELECT *, {page_qid} AS qid FROM read_parquet({pages_parquet}))
        SELECT wikipedia_id, wikipedia_title, lower(wikipedia_title) AS title_lower, text_sha1,
               qid AS wikidata_id,
               CASE WHEN qid IS NULL THEN to_json({{{_KILT_FIELDS}}})
                    ELSE to_json({{{_KILT_FIELDS}, 'wikidata_info': {{'wikidata_id': qid}}}})
               END::VARCHAR AS kilt_record
        FROM p
        """
    )
    # the passages covering each paragraph, gathered page range by page range: a list aggregate over
    # the whole snapshot does not spill, and ran out of DuckDB's memory at a million articles
    ranges = con.execute(
        f"""
        SELECT min(wikipedia_id), max(wikipedia_id) FROM (
            SELECT wikipedia_id, ntile({_page_ranges(_count(con, "passages"))})
                   OVER (ORDER BY wikipedia_id) AS part FROM pages)
        GROUP BY part ORDER BY 1
        """
    ).fetchall()
    con.execute(f"CREATE TABLE paragraphs AS {_PARAGRAPHS_SQL} LIMIT 0", [None, None])
    for low, high in ranges:
        con.execute(f"INSERT INTO paragraphs {_PARAGRAPHS_SQL}", [low, high])


def _indexed(con: Any, paths: SnapshotPaths, manifest: dict[str, Any]) -> tuple[str, ...]:
    """The meta table, every index and the tables of every registered collection (:mod:`.tables`); the
    store's tables."""
    con.execute("CHECKPOINT")
    con.execute("RESET force_compression")
    con.execute(
        "CREATE TABLE meta AS SELECT ? AS snapshot_id, ? AS manifest",
        [paths.snapshot_id, json.dumps(manifest)],
    )
    con.execute("CREATE UNIQUE INDEX pages_id ON pages (wikipedia_id)")
    con.execute("CREATE INDEX pages_title ON pages (wikipedia_title)")
    con.execute("CREATE INDEX pages_title_lower ON pages (title_lower)")
    con.execute("CREATE INDEX pages_wikidata ON pages (wikidata_id)")
    con.execute("CREATE INDEX redirects_wikidata ON redirects (wikidata_id)")
    con.execute("CREATE UNIQUE INDEX paragraphs_key ON paragraphs (paragraph_key)")
    con.execute("CREATE UNIQUE INDEX passages_id ON passages (passage_id)")
    con.execute("CREATE INDEX passages_page ON passages (wikipedia_id)")
    con.execute("CREATE INDEX redirects_source ON redirects (source_title)")
    stored = tuple(table for passages in stored_passages() for table in passages.build(con, paths))
    return ("pages", "paragraphs", "passages", "redirects", *stored)


def _passage_row_selects(tables: tuple[str, ...]) -> list[str]:
    """``(passage_id, row as JSON)`` of every passage table, each row as ``ProvenanceStore.passage``
    returns it."""
    return [
        f"SELECT passage_id, CAST(to_json(p) AS VARCHAR) FROM (SELECT {stored.row} FROM {stored.table}) p"
        for stored in stored_passages()
        if stored.table in tables
    ]


def build_store(paths: SnapshotPaths) -> StoreReport:
    """(Re)build ``provenance.duckdb`` of a snapshot from its pages, passages and redirects, in the memory
    of :func:`spilling_duckdb` whatever the snapshot's size (the joins and the index builds spill), and
    ``passages.sqlite`` from its passage tables (:mod:`.passage_rows`)."""
    started = time.perf_counter()
    if not paths.passages_parquet.is_dir():
        raise FileNotFoundError(f"snapshot {paths.snapshot_id} has no passages; build them first")
    manifest = json.loads(paths.manifest_file.read_text())
    with atomic_path(paths.provenance_store) as temp:
        con = spilling_duckdb(temp, str(temp) + ".tmp")
        con.execute("SET enable_progress_bar = false")
        pages_parquet = sql_literal(paths.pages_glob)
        # snapshots built before QIDs existed have no wikidata columns: they read as NULL
        redirect_qid = (
            "" if _has_column(con, paths.redirects_file, "wikidata_id") else ", NULL::VARCHAR AS wikidata_id"
        )
        page_qid = (
            "wikidata_info.wikidata_id" if _has_column(con, paths.pages_glob, "wikidata_info") else "NULL"
        )
        _compressed_tables(con, paths, redirect_qid)
        _lookup_tables(con, pages_parquet, page_qid)
        tables = _indexed(con, paths, manifest)
        counts = {table: _count(con, table) for table in tables}
        con.execute("CHECKPOINT")
        write_passage_rows(con, _passage_row_selects(tables), paths.passage_rows)
        con.close()
    return StoreReport(
        paths.snapshot_id,
        counts["pages"],
        counts["paragraphs"],
        counts["passages"],
        counts["redirects"],
        paths.provenance_store.stat().st_size,
        time.perf_counter() - started,
        {stored.table: counts[stored.table] for stored in stored_passages()[1:] if stored.table in counts},
    )
