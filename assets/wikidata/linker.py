"""An entity linker aligned to a snapshot: mentions in a text, each with the snapshot's pages and Wikidata's
entities it may name, scored by how the snapshot itself names them.

The mention dictionary (:func:`build_mentions`, ``<snapshot>/wikidata/mentions.parquet``) is built from
the snapshot: every anchor's text and the page it links to (counted: p(entity | mention) is the share of
a mention's links that go to that page), every title (without its disambiguating brackets too), every
redirect, and Wikidata's labels and aliases in the snapshot's language and English (one count each, the
entity's page when it has one in the snapshot). Mentions are normalised as :func:`normalise` does
(lowercase, runs of what is not a letter, digit or mark as one space), sorted, so a lookup reads only the
row groups that can hold its keys.

:class:`EntityLinker` tries every run of up to ``limits.wikidata.max_mention_words`` words of a text
(at most ``max_text_chars`` characters), keeps the longest matches that do not overlap (a one-word
mention that is a function word of the language, or one or two characters, is not tried), and returns each
with its span and its candidates, best first.

Pure module: no Dagster import.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assets.files import atomic_path
from assets.limits import LimitExceeded, WikidataLimits
from assets.storage import SnapshotPaths

__all__ = ["Candidate", "EntityLinker", "Mention", "build_mentions", "normalise"]

CANDIDATES = 5
"""Candidates returned per mention."""
WORD = re.compile(r"[^\W_]+|_", re.UNICODE)
FUNCTION_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "i",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "the",
        "this",
        "to",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "whose",
        "why",
        "will",
        "with",
    ]
)
"""English function words that are never a one-word mention (questions begin with them)."""
UNBRACKETED = "regexp_replace(wikipedia_title, ' \\([^)]*\\)$', '')"
"""A title without its disambiguating brackets (``Mercury (planet)`` -> ``Mercury``)."""
SQL_NORMALISE = "trim(regexp_replace(lower({}), '[^\\pL\\pN\\pM]+', ' ', 'g'))"


def normalise(text: str) -> str:
    """``"Alabama's"`` -> ``"alabama s"``: lowercase words joined by one space."""
    return " ".join(WORD.findall(text.lower()))


def build_mentions(paths: SnapshotPaths, out: Path | None = None, entities: Path | None = None) -> int:
    """Write the mention dictionary of ``paths`` (its pages, redirects and Wikidata entities: ``entities``,
    default ``wikidata/entities``) to ``out`` (default ``wikidata/mentions.parquet``); returns its rows."""
    import duckdb

    out = out or paths.wikidata / "mentions.parquet"
    entities = entities or paths.wikidata / "entities"
    norm = SQL_NORMALISE.format
    pages = f"read_parquet('{paths.pages_glob}')"
    sources = [
        f"""SELECT {norm("a.text")} AS mention, a.wikipedia_id AS wikipedia_id, 'anchor' AS source
            FROM (SELECT unnest(anchors) AS a FROM {pages})
            WHERE a.wikipedia_id IS NOT NULL""",
        f"""SELECT {norm("wikipedia_title")}, wikipedia_id, 'title' FROM {pages}""",
        f"""SELECT {norm(UNBRACKETED)}, wikipedia_id, 'title' FROM {pages} WHERE wikipedia_title LIKE '%)'""",
    ]
    if paths.redirects_file.is_file():
        sources.append(
            f"""SELECT {norm("source_title")}, target_wikipedia_id, 'redirect'
                FROM read_parquet('{paths.redirects_file}') WHERE target_wikipedia_id IS NOT NULL"""
        )
    has_entities = any(entities.glob("*.parquet"))
    qids = "SELECT NULL::VARCHAR AS wikipedia_id, NULL::VARCHAR AS qid WHERE false"
    page_qids = f"""SELECT wikipedia_id, wikidata_info.wikidata_id AS qid FROM {pages}
                    WHERE wikidata_info.wikidata_id IS NOT NULL"""
    ents = "SELECT NULL::VARCHAR AS id WHERE false"
    if has_entities:
        glob = f"read_parquet('{entities}/*.parquet')"
        # an entity without a sitelink (a label file's, an object the dump names without its sitelinks) is
        # one candidate with the page titled exactly as its English label, when only it has that label and
        # no other entity or QID holds the page: one candidate per entity, not a page and its entity
        ents = f"""WITH e AS (SELECT *, coalesce(label_en, label) AS name FROM {glob}),
            lone AS (SELECT name FROM e WHERE wikipedia_id IS NULL GROUP BY name HAVING count(*) = 1),
            matched AS (SELECT e.id, p.wikipedia_id AS page FROM e JOIN lone USING (name)
                JOIN {pages} p ON p.wikipedia_title = e.name
                WHERE e.wikipedia_id IS NULL AND p.wikidata_info.wikidata_id IS NULL
                AND p.wikipedia_id NOT IN (SELECT wikipedia_id FROM e WHERE wikipedia_id IS NOT NULL))
            SELECT e.* REPLACE (coalesce(e.wikipedia_id, m.page) AS wikipedia_id)
            FROM e LEFT JOIN matched m USING (id)"""
        items = "FROM ents WHERE type <> 'property'"  # a property's label ("capital") names no entity
        for column in ("label", "label_en"):
            sources.append(f"SELECT {norm(column)}, coalesce(wikipedia_id, id), 'wikidata' {items}")
        for column in ("aliases", "aliases_en"):
            sources.append(
                f"""SELECT {norm("alias")}, coalesce(wikipedia_id, id), 'wikidata'
                    FROM (SELECT unnest({column}) AS alias, wikipedia_id, id {items})"""
            )
        qids = "SELECT wikipedia_id, id AS qid FROM ents WHERE wikipedia_id IS NOT NULL"
    union = " UNION ALL ".join(f"({source})" for source in sources)
    with atomic_path(out) as temp:
        con = duckdb.connect()
        try:
            con.execute("SET preserve_insertion_order = false")
            con.execute(
                f"""COPY (
                WITH ents AS ({ents}),
                named AS ({union}),
                counted AS (
                    SELECT mention, wikipedia_id, count(*) AS count,
                        string_agg(DISTINCT source, ',' ORDER BY source) AS sources
                    FROM named WHERE mention <> '' AND wikipedia_id IS NOT NULL GROUP BY ALL),
                qids AS (
                    SELECT wikipedia_id, min(qid) AS qid FROM ({page_qids} UNION ALL {qids}) GROUP BY ALL),
                titles AS (SELECT wikipedia_id, wikipedia_title AS title FROM {pages})
                SELECT c.mention,
                       CASE WHEN c.wikipedia_id LIKE 'Q%' THEN NULL ELSE c.wikipedia_id END AS wikipedia_id,
                       t.title,
                       CASE WHEN c.wikipedia_id LIKE 'Q%' THEN c.wikipedia_id ELSE q.qid END AS qid,
                       c.count, sum(c.count) OVER (PARTITION BY c.mention) AS total, c.sources
                FROM counted c LEFT JOIN qids q USING (wikipedia_id) LEFT JOIN titles t USING (wikipedia_id)
                ORDER BY c.mention, c.count DESC, c.wikipedia_id
                ) TO '{temp}' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 100000)"""
            )
            rows = con.execute(f"SELECT count(*) FROM read_parquet('{temp}')").fetchone()[0]
        finally:
            con.close()
    return int(rows)


@dataclass(frozen=True, slots=True)
class Candidate:
    """An entity a mention may name: its page in the snapshot (None: a Wikidata entity without one), its
    QID (None: a page without one), and p(entity | mention) with the counts behind it."""

    wikipedia_id: str | None
    title: str | None
    qid: str | None
    score: float
    count: int
    sources: str


@dataclass(slots=True)
class Mention:
    text: str
    start: int
    end: int
    candidates: list[Candidate] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "start": self.start,
            "end": self.end,
            "candidates": [
                {
                    "wikipedia_id": c.wikipedia_id,
                    "title": c.title,
                    "qid": c.qid,
                    "score": round(c.score, 4),
                    "count": c.count,
                    "sources": c.sources,
                }
                for c in self.candidates
            ],
        }


class EntityLinker:
    """Mentions and their candidates in a text, by the mention dictionary of a snapshot."""

    def __init__(self, mentions: Path, limits: WikidataLimits | None = None) -> None:
        import duckdb

        if not mentions.is_file():
            raise FileNotFoundError(
                f"{mentions} does not exist: build the snapshot's wikidata_entities (kiltpipe build) first"
            )
        self.path = mentions
        self.limits = limits or WikidataLimits()
        self.con = duckdb.connect()
        self.con.execute(f"CREATE VIEW mentions AS SELECT * FROM read_parquet('{mentions}')")

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> EntityLinker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def link(self, text: str, candidates: int = CANDIDATES) -> list[Mention]:
        """The mentions of ``text``, in order, each with up to ``candidates`` entities, best first."""
        if len(text) > self.limits.max_text_chars:
            raise LimitExceeded(
                f"a text of {len(text):,} characters (at most {self.limits.max_text_chars:,})",
                "wikidata.max_text_chars",
            )
        words = [(m.group(0).lower(), m.start(), m.end()) for m in WORD.finditer(text)]
        spans: dict[str, list[tuple[int, int]]] = {}
        longest = self.limits.max_mention_words
        for first in range(len(words)):
            for last in range(first, min(first + longest, len(words))):
                if first == last and (words[first][0] in FUNCTION_WORDS or len(words[first][0]) < 3):
                    continue
                key = " ".join(word for word, _, _ in words[first : last + 1])
                spans.setdefault(key, []).append((first, last))
        if not spans:
            return []
        rows = self.con.execute(
            "SELECT mention, wikipedia_id, title, qid, count, total, sources FROM mentions "
            "WHERE mention IN (SELECT unnest(?::VARCHAR[])) ORDER BY mention, count DESC, wikipedia_id",
            [sorted(spans)],
        ).fetchall()
        found: dict[str, list[Candidate]] = {}
        for mention, wikipedia_id, title, qid, count, total, sources in rows:
            found.setdefault(mention, []).append(
                Candidate(wikipedia_id, title, qid, count / total if total else 0.0, int(count), sources)
            )
        matches = sorted(
            ((first, last, key) for key in found for first, last in spans[key]),
            key=lambda m: (-(m[1] - m[0]), -found[m[2]][0].count, m[0]),
        )
        taken: set[int] = set()
        chosen: list[Mention] = []
        for first, last, key in matches:
            if taken.intersection(range(first, last + 1)):
                continue
            taken.update(range(first, last + 1))
            start, end = words[first][1], words[last][2]
            chosen.append(Mention(text[start:end], start, end, found[key][:candidates]))
        return sorted(chosen, key=lambda m: m.start)
