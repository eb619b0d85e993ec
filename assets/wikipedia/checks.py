"""Integrity checks of a built knowledge source (DuckDB over the Parquet shards, no Dagster)."""

from __future__ import annotations

import json

import duckdb
import pyarrow.dataset as pads

from assets.check_outcome import CheckOutcome
from assets.params import PASSAGE_UNIT
from assets.segmentation import count_words
from assets.storage import SnapshotPaths, sql_literal

EXAMPLES = 5
CHECK_BATCH = 8192
"""Passages recounted per batch (memory: one batch of texts)."""


def _connect(paths: SnapshotPaths) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute(f"CREATE VIEW pages AS SELECT * FROM read_parquet({sql_literal(paths.pages_glob)})")
    con.execute(f"CREATE VIEW redirects AS SELECT * FROM read_parquet({sql_literal(paths.redirects_file)})")
    return con


def unique_ids_and_titles(paths: SnapshotPaths) -> CheckOutcome:
    with _connect(paths) as con:
        rows, ids, titles = con.execute(
            "SELECT count(*), count(DISTINCT wikipedia_id), count(DISTINCT wikipedia_title) FROM pages"
        ).fetchone()
        dup_ids = con.execute(
            "SELECT wikipedia_id FROM pages GROUP BY 1 HAVING count(*) > 1 LIMIT ?", [EXAMPLES]
        ).fetchall()
        dup_titles = con.execute(
            "SELECT wikipedia_title FROM pages GROUP BY 1 HAVING count(*) > 1 LIMIT ?", [EXAMPLES]
        ).fetchall()
    passed = rows == ids == titles
    return CheckOutcome(
        passed,
        f"{rows} pages, {rows - ids} duplicate ids, {rows - titles} duplicate titles",
        {
            "pages": rows,
            "duplicate_ids": rows - ids,
            "duplicate_titles": rows - titles,
            "examples": [r[0] for r in dup_ids + dup_titles],
        },
    )


def no_empty_article(paths: SnapshotPaths) -> CheckOutcome:
    with _connect(paths) as con:
        empty = con.execute(
            """
            SELECT wikipedia_id FROM pages
            WHERE len(text) < 2 OR list_count(list_filter(text[2:], lambda t: trim(t) = '')) > 0
            """
        ).fetchall()
    return CheckOutcome(
        not empty,
        f"{len(empty)} pages without body text or with an empty paragraph",
        {"empty_pages": len(empty), "examples": [r[0] for r in empty[:EXAMPLES]]},
    )


_ANCHOR_OK = """
    an.paragraph_id >= 1 AND an.paragraph_id < len(text)
    AND an.start >= 0 AND an.start < an."end"
    AND an."end" <= length(text[an.paragraph_id + 1])
    AND substring(text[an.paragraph_id + 1], an.start + 1, an."end" - an.start) = an.text
"""


def anchors_inside_paragraphs(paths: SnapshotPaths) -> CheckOutcome:
    """Every anchor names an existing paragraph and ``text[p][start:end] == anchor.text``."""
    flat = "WITH flat AS (SELECT wikipedia_id, text, unnest(anchors) AS an FROM pages)"
    with _connect(paths) as con:
        total, bad = con.execute(
            f"{flat} SELECT count(*), count(*) FILTER (WHERE NOT ({_ANCHOR_OK})) FROM flat"
        ).fetchone()
        examples = con.execute(
            f'{flat} SELECT wikipedia_id, an.paragraph_id, an.start, an."end", an.text FROM flat '
            f"WHERE NOT ({_ANCHOR_OK}) LIMIT ?",
            [EXAMPLES],
        ).fetchall()
    return CheckOutcome(
        bad == 0,
        f"{total} anchors, {bad} outside their paragraph or not matching its text",
        {"anchors": total, "bad_anchors": bad, "examples": [list(e) for e in examples]},
    )


def redirects_resolved_or_counted(paths: SnapshotPaths) -> CheckOutcome:
    """Each redirect is resolved to an article, or has a status that the build report counts."""
    report = json.loads(paths.report_file.read_text())
    with _connect(paths) as con:
        by_status = dict(
            con.execute("SELECT coalesce(status, 'null'), count(*) FROM redirects GROUP BY 1").fetchall()
        )
        dangling = con.execute(
            "SELECT count(*) FROM redirects WHERE status = 'resolved' AND target_wikipedia_id NOT IN "
            "(SELECT wikipedia_id FROM pages)"
        ).fetchone()[0]
    counted = {"resolved": report.get("redirects_resolved", 0), **report.get("redirects_unresolved", {})}
    unresolved = {k: v for k, v in by_status.items() if k != "resolved"}
    passed = (
        "null" not in by_status and dangling == 0 and by_status == {k: v for k, v in counted.items() if v}
    )
    return CheckOutcome(
        passed,
        f"{by_status.get('resolved', 0)} redirects resolved, unresolved by reason {unresolved}, "
        f"{dangling} resolved to a missing page",
        {"by_status": by_status, "report": counted, "resolved_to_missing_page": dangling},
    )


ALL_CHECKS = {
    "unique_ids_and_titles": unique_ids_and_titles,
    "no_empty_article": no_empty_article,
    "anchors_inside_paragraphs": anchors_inside_paragraphs,
    "redirects_resolved_or_counted": redirects_resolved_or_counted,
}


def _connect_passages(paths: SnapshotPaths) -> duckdb.DuckDBPyConnection:
    con = _connect(paths)
    con.execute(f"CREATE VIEW passages AS SELECT * FROM read_parquet({sql_literal(paths.passages_glob)})")
    return con


def no_empty_passage(paths: SnapshotPaths) -> CheckOutcome:
    with _connect_passages(paths) as con:
        total, empty = con.execute(
            "SELECT count(*), count(*) FILTER (WHERE trim(text) = '' OR word_count < 1) FROM passages"
        ).fetchone()
    return CheckOutcome(empty == 0, f"{total} passages, {empty} empty", {"passages": total, "empty": empty})


def no_passage_over_limit(paths: SnapshotPaths, max_words: int, unit: str = PASSAGE_UNIT) -> CheckOutcome:
    """No passage has more than ``max_words`` words, recounted from its text by the chunker's own counter
    (:func:`assets.segmentation.count_words`, in the passages' ``unit``), and every stored ``word_count``
    is that recount (a passage's count is never trusted)."""
    over = longest = miscounted = 0
    examples: list[str] = []
    dataset = pads.dataset(sorted(paths.passages_parquet.glob("*.parquet")), format="parquet")
    for batch in dataset.to_batches(columns=["passage_id", "text", "word_count"], batch_size=CHECK_BATCH):
        ids, texts, stored = (batch.column(i).to_pylist() for i in range(3))
        for passage_id, text, count in zip(ids, texts, stored, strict=True):
            words = count_words(text, unit)
            longest = max(longest, words)
            over += words > max_words
            if words != count:
                miscounted += 1
                if len(examples) < EXAMPLES:
                    examples.append(f"{passage_id}: {count} stored, {words} counted")
    return CheckOutcome(
        over == 0 and miscounted == 0,
        f"{over} passages over {max_words} {unit} (longest: {longest}), {miscounted} word counts that "
        f"differ from a recount" + (f" ({'; '.join(examples)})" if examples else ""),
        {
            "over_limit": over,
            "longest_words": longest,
            "max_words": max_words,
            "unit": unit,
            "miscounted": miscounted,
            "examples": examples,
        },
    )


def passage_ids_unique(paths: SnapshotPaths) -> CheckOutcome:
    with _connect_passages(paths) as con:
        total, distinct = con.execute("SELECT count(*), count(DISTINCT passage_id) FROM passages").fetchone()
    return CheckOutcome(
        total == distinct,
        f"{total - distinct} duplicate passage ids",
        {"passages": total, "duplicates": total - distinct},
    )


def every_page_has_passage(paths: SnapshotPaths, mode: str) -> CheckOutcome:
    """Every page with passage text (any non-header entry; in dpr mode, not a list item) has a passage."""
    eligible = "NOT starts_with(t, 'Section::::') AND trim(replace(t, 'BULLET::::- ', '')) <> ''"
    if mode == "dpr":
        eligible += " AND NOT starts_with(t, 'BULLET::::- ')"
    with _connect_passages(paths) as con:
        missing = con.execute(
            f"""
            SELECT wikipedia_id FROM pages
            WHERE len(list_filter(text[2:], lambda t: {eligible})) > 0
              AND wikipedia_id NOT IN (SELECT DISTINCT wikipedia_id FROM passages)
            """
        ).fetchall()
    return CheckOutcome(
        not missing,
        f"{len(missing)} pages with text but no passage",
        {"pages_without_passage": len(missing), "examples": [r[0] for r in missing[:EXAMPLES]]},
    )
