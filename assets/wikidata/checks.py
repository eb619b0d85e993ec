"""What the KB's asset checks measure (DuckDB over its Parquet tables, no Dagster)."""

from __future__ import annotations

import duckdb

from assets.check_outcome import CheckOutcome
from assets.storage import SnapshotPaths, sql_literal

__all__ = ["CheckOutcome", "facts_consistent", "statements_consistent"]

EXAMPLES = 5


def _glob(folder) -> str:
    return sql_literal(str(folder / "*.parquet"))


def statements_consistent(paths: SnapshotPaths) -> CheckOutcome:
    """Every statement's subject is an entity row, statement ids are unique, none is deprecated."""
    entities, statements = paths.wikidata / "entities", paths.wikidata / "statements"
    with duckdb.connect() as con:
        con.execute(f"CREATE VIEW e AS SELECT * FROM read_parquet({_glob(entities)})")
        con.execute(f"CREATE VIEW s AS SELECT * FROM read_parquet({_glob(statements)})")
        rows, ids, deprecated = con.execute(
            "SELECT count(*), count(DISTINCT statement_id), count(*) FILTER (rank = 'deprecated') FROM s"
        ).fetchone()
        orphans = [
            row[0]
            for row in con.execute(
                "SELECT DISTINCT subject FROM s ANTI JOIN e ON s.subject = e.id ORDER BY 1 LIMIT ?",
                [EXAMPLES],
            ).fetchall()
        ]
    passed = rows == ids and not deprecated and not orphans
    return CheckOutcome(
        passed,
        f"{rows:,} statements, {ids:,} distinct ids, {deprecated} deprecated"
        + (f", subjects without an entity row: {', '.join(orphans)}" if orphans else ""),
        {"statements": rows, "distinct_ids": ids, "deprecated": deprecated, "orphan_subjects": orphans},
    )


def facts_consistent(paths: SnapshotPaths, max_words: int) -> CheckOutcome:
    """No kb passage is empty or over ``max_words`` words; each cites only statements of the table."""
    facts, statements = paths.kb_facts / "parquet", paths.wikidata / "statements"
    with duckdb.connect() as con:
        con.execute(f"CREATE VIEW f AS SELECT * FROM read_parquet({_glob(facts)})")
        passages, empty, over = con.execute(
            "SELECT count(*), count(*) FILTER (word_count = 0 OR text = ''), "
            "count(*) FILTER (word_count > ?) FROM f",
            [max_words],
        ).fetchone()
        unknown = 0
        if passages:
            con.execute(f"CREATE VIEW s AS SELECT * FROM read_parquet({_glob(statements)})")
            unknown = con.execute(
                "SELECT count(*) FROM (SELECT unnest(statement_ids) AS id FROM f) ANTI JOIN s "
                "ON id = s.statement_id"
            ).fetchone()[0]
    return CheckOutcome(
        not empty and not over and not unknown,
        f"{passages:,} kb passages: {empty} empty, {over} over {max_words} words, {unknown} citations of "
        "statements not in the table",
        {"passages": passages, "empty": empty, "over_limit": over, "unknown_statements": unknown},
    )
