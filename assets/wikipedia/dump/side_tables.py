"""Wikidata ids (QIDs) and the redirect table from the wiki's own SQL tables, beside the XML dump.

* ``{wiki}-{date}-page_props.sql.gz``: its ``wikibase_item`` rows give every page's QID; the build
  writes them to a Parquet table joined into the pages (``wikidata_info: {wikidata_id}``, KILT's layout)
  and the redirects (``wikidata_id``).
* ``{wiki}-{date}-redirect.sql.gz``: the redirects MediaWiki stored, compared with those parsed from
  the XML; disagreements are counted with examples in the knowledge source's report.

Both are optional: without them a build works as before and its report says QIDs are absent.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from assets.snapshot_ids import snapshot_of_dump_name
from assets.storage import sql_literal
from assets.wikipedia.dump.sql_tables import TableReadReport, iter_redirect_rows, iter_wikidata_ids

PAGE_PROPS_SUFFIX = "-page_props.sql.gz"
REDIRECT_SUFFIX = "-redirect.sql.gz"
WIKIDATA_SCHEMA = pa.schema([("page_id", pa.int64()), ("wikidata_id", pa.string())])
REDIRECT_TABLE_SCHEMA = pa.schema(
    [
        ("rd_from", pa.int64()),
        ("rd_namespace", pa.int32()),
        ("rd_title", pa.string()),
        ("rd_interwiki", pa.string()),
        ("rd_fragment", pa.string()),
    ]
)
ABSENT = "absent: no page_props table was given or found beside the dump, so pages have no QIDs"
BATCH_ROWS = 200_000
EXAMPLES = 20


@dataclass(frozen=True, slots=True)
class SideTables:
    """The SQL tables a build reads beside its XML dump (None: not there)."""

    page_props: Path | None = None
    redirect_table: Path | None = None

    @classmethod
    def of(cls, details: dict[str, Any]) -> SideTables:
        """From a dump handle's details (``page_props``, ``redirect_table``: paths or absent)."""
        return cls(
            *(Path(details[key]) if details.get(key) else None for key in ("page_props", "redirect_table"))
        )

    def to_details(self) -> dict[str, str]:
        return {
            key: str(path.resolve())
            for key, path in (("page_props", self.page_props), ("redirect_table", self.redirect_table))
            if path is not None
        }

    def missing(self) -> list[str]:
        return [str(p) for p in (self.page_props, self.redirect_table) if p is not None and not p.is_file()]


def side_tables_beside(dump_files: list[str] | tuple[str, ...]) -> SideTables:
    """``{snap}-page_props.sql.gz`` and ``{snap}-redirect.sql.gz`` in the folder of the first dump file,
    ``{snap}`` being the ``{dbname}-{YYYYMMDD}`` its name starts with (none for other names)."""
    if not dump_files:
        return SideTables()
    first = Path(dump_files[0])
    snap = snapshot_of_dump_name(first.name)
    if snap is None:
        return SideTables()
    found = [first.parent / f"{snap}{suffix}" for suffix in (PAGE_PROPS_SUFFIX, REDIRECT_SUFFIX)]
    return SideTables(*(path if path.is_file() else None for path in found))


def _write_batches(rows: Any, out: Path, schema: pa.Schema) -> None:
    """Stream ``rows`` (tuples in ``schema``'s column order) into one Parquet file, a batch at a time."""

    def table(batch: list[tuple[Any, ...]]) -> pa.Table:
        return pa.Table.from_arrays([list(column) for column in zip(*batch, strict=True)], schema=schema)

    with pq.ParquetWriter(out, schema, compression="zstd") as writer:  # an empty table when no rows
        batch: list[tuple[Any, ...]] = []
        for row in rows:
            batch.append(row)
            if len(batch) >= BATCH_ROWS:
                writer.write_table(table(batch))
                batch.clear()
        if batch:
            writer.write_table(table(batch))


def write_wikidata_ids(page_props: Path, out: Path) -> TableReadReport:
    """The ``(page_id, wikidata_id)`` rows of a page_props dump, streamed to ``out`` (Parquet)."""
    report = TableReadReport(str(page_props))
    _write_batches(iter_wikidata_ids(page_props, report), out, WIKIDATA_SCHEMA)
    return report


def write_redirect_table(redirect_table: Path, out: Path) -> TableReadReport:
    """The rows of a redirect table dump, streamed to ``out`` (Parquet)."""
    report = TableReadReport(str(redirect_table))
    _write_batches(iter_redirect_rows(redirect_table, report), out, REDIRECT_TABLE_SCHEMA)
    return report


def _namespace_prefix_sql(namespaces: dict[int, str]) -> str:
    """A SQL CASE giving the ``Namespace:`` prefix of ``rd_namespace`` (empty for the main namespace)."""
    cases = " ".join(
        f"WHEN {number} THEN {sql_literal(name + ':')}" for number, name in sorted(namespaces.items()) if name
    )
    return f"(CASE rd_namespace {cases} ELSE '' END)" if cases else "''"


def compare_redirects(
    con: duckdb.DuckDBPyConnection, table_parquet: Path, namespaces: dict[int, str]
) -> dict[str, Any]:
    """Compare the redirect table with the redirects parsed from the XML (tables ``red``: source_id,
    source_title, target_title; ``art``: id, title, on ``con``). Counted: agreeing redirects; targets
    that differ; XML redirects the table lacks; table redirects whose page the XML has as an article;
    table rows of pages outside this dump (expected for a partial dump); interwiki targets."""
    con.execute(
        f"""
        CREATE TEMP TABLE rd AS
        SELECT CAST(rd_from AS VARCHAR) AS source_id, rd_interwiki, rd_fragment,
               {_namespace_prefix_sql(namespaces)} || replace(rd_title, '_', ' ') AS target_title
        FROM read_parquet({sql_literal(table_parquet)})
        """
    )
    compared = """
        SELECT red.source_id, red.source_title, red.target_title AS xml_target,
               rd.target_title AS table_target, rd.rd_interwiki,
               CASE WHEN rd.source_id IS NULL THEN 'only_in_xml'
                    WHEN rd.rd_interwiki <> '' THEN 'interwiki'
                    WHEN rd.target_title = red.target_title THEN 'agree'
                    ELSE 'target_differs' END AS outcome
        FROM red LEFT JOIN rd USING (source_id)
    """
    counts: dict[str, int] = dict(
        con.execute(f"SELECT outcome, count(*) FROM ({compared}) GROUP BY outcome").fetchall()
    )
    examples = [
        f"{outcome}: page {sid} {title!r}: XML -> {xml!r}, table -> {table!r}"
        for sid, title, xml, table, outcome in con.execute(
            f"SELECT source_id, source_title, xml_target, table_target, outcome FROM ({compared}) "
            f"WHERE outcome IN ('only_in_xml', 'target_differs') ORDER BY outcome, source_id LIMIT {EXAMPLES}"
        ).fetchall()
    ]
    as_articles = "FROM rd JOIN art ON art.id = rd.source_id"
    counts["article_in_xml"] = con.execute(f"SELECT count(*) {as_articles}").fetchone()[0]
    examples += [
        f"article_in_xml: {sid} {title!r} is an article in the XML, a redirect to {target!r} in the table"
        for sid, title, target in con.execute(
            f"SELECT rd.source_id, art.title, rd.target_title {as_articles} ORDER BY rd.source_id "
            f"LIMIT {max(0, EXAMPLES - len(examples))}"
        ).fetchall()
    ]
    counts["outside_dump"] = con.execute(
        "SELECT count(*) FROM rd WHERE source_id NOT IN (SELECT source_id FROM red) "
        "AND source_id NOT IN (SELECT id FROM art)"
    ).fetchone()[0]
    disagreements = sum(counts.get(k, 0) for k in ("only_in_xml", "target_differs", "article_in_xml"))
    con.execute("DROP TABLE rd")
    return {
        "counts": {k: counts.get(k, 0) for k in sorted(counts)},
        "disagreements": disagreements,
        "examples": examples,
    }
