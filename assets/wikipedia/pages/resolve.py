"""Stage 2: redirect chains followed and every anchor resolved to its target page, over all parsed
parts at once (DuckDB, out of core)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from assets.skips import SkipLog
from assets.storage import (
    spilling_duckdb,
    sql_list,
    sql_literal,
)
from assets.wikipedia.dump import compare_redirects
from assets.wikipedia.schema import RESIDUAL_SAMPLE_SIZE, KnowledgeSourceReport


def _drop_redirects_named_like_articles(con: Any, report: KnowledgeSourceReport) -> None:
    """A redirect whose own title is an article's (an Enterprise record listing another article's title
    among its redirects) cannot be both: the article stays, the redirect is dropped, counted and named
    (``redirect_named_like_an_article``)."""
    clash = "FROM red WHERE source_title IN (SELECT title FROM art)"
    (count,) = con.execute(f"SELECT count(*) {clash}").fetchone()
    if not count:
        return
    first = con.execute(
        f"SELECT source_title, target_title {clash} ORDER BY red_ord LIMIT {RESIDUAL_SAMPLE_SIZE}"
    ).fetchall()
    con.execute(f"DELETE {clash}")
    report.redirects -= count
    skips = SkipLog(RESIDUAL_SAMPLE_SIZE)
    skips.skip("redirect_named_like_an_article", count=count - len(first))
    for source, target in first:
        skips.skip(
            "redirect_named_like_an_article", f"redirect {source!r} -> {target!r}: {source!r} is an article"
        )
    report.add_skips(skips)


def _resolve_redirects(con: Any, out_redirects: Path, report: KnowledgeSourceReport) -> None:
    """Redirect chains followed hop by hop (at most 8), written to ``out_redirects`` and counted."""
    max_hops = 8
    for _ in range(max_hops):
        # one hop: a redirect whose current target is itself a redirect moves on to that redirect's target
        changed = con.execute(
            """
            UPDATE red SET cur = nxt.target_title, hops = red.hops + 1
            FROM red AS nxt
            WHERE nxt.source_title = red.cur AND red.cur NOT IN (SELECT title FROM art)
              AND red.status IS NULL AND nxt.source_title <> red.source_title
            """
        ).fetchone()[0]
        if not changed:
            break
    con.execute(
        """
        CREATE TABLE red_final AS
        SELECT r.source_title, r.source_id, r.target_title, r.target_fragment,
               a.title AS target_wikipedia_title, a.id AS target_wikipedia_id, r.hops + 1 AS hops,
               CASE WHEN a.id IS NOT NULL THEN 'resolved'
                    WHEN r.cur IN (SELECT source_title FROM red) THEN 'loop_or_too_long'
                    ELSE 'missing_target' END AS status,
               wd.qid AS wikidata_id
        FROM red r LEFT JOIN art a ON a.title = r.cur LEFT JOIN wd ON wd.id = r.source_id
        ORDER BY r.red_ord
        """
    )
    con.execute(f"COPY red_final TO {sql_literal(out_redirects)} (FORMAT parquet, COMPRESSION zstd)")
    for status, count in con.execute("SELECT status, count(*) FROM red_final GROUP BY status").fetchall():
        if status == "resolved":
            report.redirects_resolved = count
        else:
            report.redirects_unresolved[status] = count


def _resolve_anchors(con: Any, stage1_shards: list[Path], out_pages_dir: Path) -> int:
    """Each stage-1 shard's anchors resolved to their target pages, written as a page shard; the anchors
    resolved."""
    resolved = 0
    for number, shard in enumerate(stage1_shards):
        target = out_pages_dir / f"part-{number:05d}.parquet"
        con.execute(
            f"""
            COPY (
              WITH p AS (SELECT * FROM read_parquet({sql_literal(shard)})),
              flat AS (SELECT ord, unnest(anchors) AS a, generate_subscripts(anchors, 1) AS i FROM p),
              res AS (
                SELECT flat.ord, list(struct_pack(
                    paragraph_id := a.paragraph_id, start := a.start, "end" := a."end", text := a.text,
                    href := a.href, wikipedia_title := k.wt, wikipedia_id := k.wid) ORDER BY i) AS anchors
                FROM flat LEFT JOIN keys k ON k.key = a.target_key GROUP BY flat.ord)
              SELECT p.wikipedia_id, p.wikipedia_title, p.text,
                     coalesce(res.anchors, []) AS anchors,
                     p.categories, p.history, p.is_disambiguation, p.text_sha1, p.wikitext_bytes,
                     CASE WHEN wd.qid IS NULL THEN NULL
                          ELSE struct_pack(wikidata_id := wd.qid) END AS wikidata_info
              FROM p LEFT JOIN res USING (ord) LEFT JOIN wd ON wd.id = p.wikipedia_id ORDER BY p.ord
            ) TO {sql_literal(target)} (FORMAT parquet, COMPRESSION zstd)
            """
        )
        resolved += con.execute(
            f"SELECT count(*) FROM (SELECT unnest(anchors) AS a FROM read_parquet({sql_literal(target)})) "
            "WHERE a.wikipedia_id IS NOT NULL"
        ).fetchone()[0]
    return resolved


def resolve_pages(
    stage1_shards: list[Path],
    redirect_files: list[Path],
    out_pages_dir: Path,
    out_redirects: Path,
    report: KnowledgeSourceReport,
    *,
    wikidata_ids: Path | None = None,
    redirect_table: Path | None = None,
    namespaces: dict[int, str] | None = None,
) -> None:
    """Follow redirect chains and resolve anchors to target titles/ids, shard by shard; the shards of all
    parts, in page order, become ``part-00000.parquet``, ``part-00001.parquet``...

    ``wikidata_ids`` (Parquet ``page_id, wikidata_id``) gives pages their ``wikidata_info`` and redirects
    their ``wikidata_id``; ``redirect_table`` (Parquet of the redirect table dump) is compared with the
    redirects of the XML into ``report.redirect_table``."""
    out_pages_dir.mkdir(parents=True, exist_ok=True)
    con = spilling_duckdb(":memory:", out_pages_dir.parent / ".duckdb_tmp")
    con.execute(
        f"CREATE TABLE art AS SELECT wikipedia_title AS title, wikipedia_id AS id "
        f"FROM read_parquet({sql_list(stage1_shards)})"
    )
    con.execute(
        "CREATE TABLE red AS SELECT * EXCLUDE (file_row_number), target_title AS cur, 0 AS hops, "
        "NULL::VARCHAR AS status, (part::BIGINT << 40) + file_row_number AS red_ord FROM ("
        + " UNION ALL ".join(  # red_ord: the redirect's place in the dump (part, row), whatever the threads
            f"SELECT *, {part} AS part FROM read_parquet({sql_literal(path)}, file_row_number = true)"
            for part, path in enumerate(redirect_files)
        )
        + ")"
    )
    if wikidata_ids is not None:
        con.execute(
            f"CREATE TABLE wd AS SELECT CAST(page_id AS VARCHAR) AS id, any_value(wikidata_id) AS qid "
            f"FROM read_parquet({sql_literal(wikidata_ids)}) GROUP BY page_id"
        )
    else:
        con.execute("CREATE TABLE wd (id VARCHAR, qid VARCHAR)")
    _drop_redirects_named_like_articles(con, report)
    if redirect_table is not None:
        report.redirect_table = compare_redirects(con, redirect_table, namespaces or {})
    _resolve_redirects(con, out_redirects, report)
    con.execute(
        """
        CREATE TABLE keys AS
        SELECT title AS key, title AS wt, id AS wid FROM art
        UNION ALL
        SELECT source_title, target_wikipedia_title, target_wikipedia_id FROM red_final
        WHERE status = 'resolved' AND source_title NOT IN (SELECT title FROM art)
        """
    )
    resolved = _resolve_anchors(con, stage1_shards, out_pages_dir)
    report.anchors_resolved = resolved
    if wikidata_ids is not None:
        shards = sql_list(sorted(out_pages_dir.glob("*.parquet")))
        report.pages_with_qid = con.execute(
            f"SELECT count(*) FROM read_parquet({shards}) WHERE wikidata_info IS NOT NULL"
        ).fetchone()[0]
        report.redirects_with_qid = con.execute(
            "SELECT count(*) FROM red_final WHERE wikidata_id IS NOT NULL"
        ).fetchone()[0]
    con.close()
    shutil.rmtree(out_pages_dir.parent / ".duckdb_tmp", ignore_errors=True)
