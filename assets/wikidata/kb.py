"""The knowledge base of a snapshot, queried: an entity with its statements, its ``kb`` passages, the
shortest paths between two entities, and the mentions of a text.

:class:`KnowledgeBase` reads the provenance store's KB tables when it has them (indexed lookups:
:func:`create_kb_tables` adds them as the store is built) and else views over the Parquet tables
(``wikidata/``, ``kb_facts/``), never writing. Paths come from the KB graph (:mod:`assets.wikidata.graph`),
each step given by its statement id, the property and both ends with their labels, and the whole path as
text (``Angola —member of→ African Union ←member of— Algeria``); mentions from the entity linker.

Pure module: no Dagster import.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.parquet as pq

from assets.limits import DEFAULT_HOPS, LimitExceeded, WikidataLimits
from assets.storage import SnapshotPaths, sql_literal
from assets.wikidata.graph import KbPath, PathFinder, PathSearch
from assets.wikidata.linker import EntityLinker
from assets.wikidata.values import is_entity_id, render_value, row_value

__all__ = ["KB_PARQUET", "KB_TABLES", "KnowledgeBase", "create_kb_tables", "kb_sources"]

KB_TABLES = ("kb_entities", "kb_statements", "kb_passages")
KB_PARQUET: dict[str, Callable[[SnapshotPaths], Path]] = {
    "kb_passages": lambda paths: paths.kb_facts / "parquet",
    "kb_entities": lambda paths: paths.wikidata / "entities",
    "kb_statements": lambda paths: paths.wikidata / "statements",
}
"""The folder of each KB table's Parquet files in a snapshot (the passages first)."""
STATEMENT_FIELDS = (
    "statement_id, subject, property, rank, datatype, kind, value, object, precision, unit, language, "
    "point_in_time, start_time, end_time, row"
)


def _parts(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.parquet")) if folder.is_dir() else []


def kb_sources(paths: SnapshotPaths) -> dict[str, str] | None:
    """The SELECT of each KB table over the snapshot's Parquet (None: no Wikidata tables built). A
    statement's ``row`` is its position in the statements table, the KB graph's reference to it."""
    entities = _parts(KB_PARQUET["kb_entities"](paths))
    statements = _parts(KB_PARQUET["kb_statements"](paths))
    if not entities:
        return None
    offsets, total = [], 0
    for part in statements:
        offsets.append(total)
        total += pq.ParquetFile(part).metadata.num_rows
    if statements:
        files = ", ".join(sql_literal(str(part)) for part in statements)
        row = "CASE filename " + " ".join(
            f"WHEN {sql_literal(str(part))} THEN {offset}"
            for part, offset in zip(statements, offsets, strict=True)
        )
        statement_sql = (
            f"SELECT * EXCLUDE (filename, file_row_number), {row} END + file_row_number AS row "
            f"FROM read_parquet([{files}], filename = true, file_row_number = true)"
        )
    else:
        statement_sql = "SELECT NULL::VARCHAR AS statement_id, NULL::BIGINT AS row WHERE false"
    facts = _parts(KB_PARQUET["kb_passages"](paths))
    facts_sql = (
        f"SELECT * FROM read_parquet([{', '.join(sql_literal(str(p)) for p in facts)}])"
        if facts
        else "SELECT NULL::VARCHAR AS passage_id, NULL::VARCHAR AS qid, NULL::VARCHAR AS wikipedia_id "
        "WHERE false"
    )
    entities_glob = sql_literal(str(KB_PARQUET["kb_entities"](paths) / "*.parquet"))
    return {
        "kb_entities": f"SELECT * FROM read_parquet({entities_glob})",
        "kb_statements": statement_sql,
        "kb_passages": facts_sql,
    }


def create_kb_tables(con: Any, paths: SnapshotPaths) -> tuple[str, ...]:
    """Add the KB tables of ``paths`` to a store being built, indexed for :class:`KnowledgeBase`'s
    lookups; the tables made (none without Wikidata tables)."""
    sources = kb_sources(paths)
    if sources is None:
        return ()
    for table, select in sources.items():
        con.execute(f"CREATE TABLE {table} AS {select}")
    con.execute("CREATE UNIQUE INDEX kb_entities_id ON kb_entities (id)")
    con.execute("CREATE INDEX kb_entities_page ON kb_entities (wikipedia_id)")
    con.execute("CREATE INDEX kb_entities_sitelink ON kb_entities (sitelink)")
    con.execute("CREATE INDEX kb_statements_subject ON kb_statements (subject)")
    con.execute("CREATE UNIQUE INDEX kb_statements_row ON kb_statements (row)")
    con.execute("CREATE UNIQUE INDEX kb_passages_id ON kb_passages (passage_id)")
    con.execute("CREATE INDEX kb_passages_qid ON kb_passages (qid)")
    return KB_TABLES


class KnowledgeBase:
    """Lookups in a snapshot's KB (``con``: an open store that holds the KB tables; None: views over the
    Parquet tables in a connection of its own)."""

    def __init__(self, paths: SnapshotPaths, con: Any = None, limits: WikidataLimits | None = None) -> None:
        self.paths = paths
        self.limits = limits or WikidataLimits()
        self.own = con is None or not _has_tables(con)
        if self.own:
            sources = kb_sources(paths)
            if sources is None:
                raise FileNotFoundError(
                    f"snapshot {paths.snapshot_id} has no Wikidata tables in {paths.wikidata}: set "
                    "wikidata.files in params.yaml and build wikidata_entities (kiltpipe build)"
                )
            con = duckdb.connect()
            for table, select in sources.items():
                con.execute(f"CREATE VIEW {table} AS {select}")
        self.con = con
        self._finder: PathFinder | None = None
        self._labels: dict[str, str] = {}

    def close(self) -> None:
        if self.own:
            self.con.close()

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _rows(self, sql: str, parameters: list[Any]) -> list[dict[str, Any]]:
        cursor = self.con.execute(sql, parameters)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def label(self, entity: str) -> str:
        """The label of an entity or property (its id when the KB has none)."""
        if entity not in self._labels:
            found = self.con.execute(
                "SELECT coalesce(label, label_en, sitelink) FROM kb_entities WHERE id = ?", [entity]
            ).fetchone()
            self._labels[entity] = (found[0] if found else None) or entity
        return self._labels[entity]

    def resolve(self, key: str) -> dict[str, Any] | None:
        """The entity row of a QID, a page id, a sitelink title or a label (case-insensitive; the entity
        with a page and the most statements first); a key over ``max_key_chars`` is :class:`LimitExceeded`."""
        key = key.strip()
        if len(key) > self.limits.max_key_chars:
            raise LimitExceeded(
                f"an entity key of {len(key):,} characters ({key[:20]!r}...); at most "
                f"{self.limits.max_key_chars:,}",
                "wikidata.max_key_chars",
            )
        if is_entity_id(key, "QP"):
            where, parameters = "id = ?", [key]
        elif key.isdigit():
            where, parameters = "wikipedia_id = ?", [key]
        else:
            where = "sitelink = ? OR lower(label) = lower(?) OR lower(label_en) = lower(?)"
            parameters = [key, key, key]
        rows = self._rows(
            f"SELECT * FROM kb_entities WHERE {where} ORDER BY sitelink = ? DESC NULLS LAST, "
            "wikipedia_id IS NULL, statements DESC, length(id), id LIMIT 1",
            [*parameters, key],
        )
        return rows[0] if rows else None

    def statement_text(self, row: dict[str, Any]) -> str:
        """A statements-table row's value as text, entities by their labels."""
        return render_value(row_value(row), self.label)

    def entity(self, key: str) -> dict[str, Any] | None:
        """An entity with its statements, each with its property's label and its value as text."""
        found = self.resolve(key)
        if found is None:
            return None
        statements = self._rows(
            f"SELECT {STATEMENT_FIELDS} FROM kb_statements WHERE subject = ? ORDER BY row", [found["id"]]
        )
        found["statements"] = [
            {
                "statement_id": row["statement_id"],
                "property": row["property"],
                "property_label": self.label(row["property"]),
                "rank": row["rank"],
                "value": self.statement_text(row),
                "object": row["object"],
                **{name: row[name] for name in ("point_in_time", "start_time", "end_time") if row[name]},
            }
            for row in statements
        ]
        return found

    def facts(self, key: str) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """An entity's row and its ``kb`` passages, in order."""
        found = self.resolve(key)
        if found is None:
            return None, []
        passages = self._rows(
            "SELECT * FROM kb_passages WHERE qid = ? ORDER BY length(passage_id), passage_id", [found["id"]]
        )
        return found, passages

    def finder(self) -> PathFinder:
        if self._finder is None:
            self._finder = PathFinder(self.paths.wikidata / "graph", self.limits)
        return self._finder

    def paths_between(
        self, source: str, target: str, max_hops: int | None = None, properties: list[str] | None = None
    ) -> dict[str, Any]:
        """Every shortest path between two entities (QIDs, titles or labels) of at most ``max_hops``
        statements (default :data:`~assets.wikidata.graph.DEFAULT_HOPS`, within ``limits.max_hops``), each
        step with its statement id and labels, and as text."""
        if max_hops is None:
            max_hops = min(DEFAULT_HOPS, self.limits.max_hops)
        ends = []
        for key in (source, target):
            found = self.resolve(key)
            ends.append(found["id"] if found else key)
        search = self.finder().shortest_paths(ends[0], ends[1], max_hops, properties)
        return self.describe(search)

    def describe(self, search: PathSearch) -> dict[str, Any]:
        rows = {p_row for path in search.paths for p_row in path.rows}
        ids = dict(
            self.con.execute(
                "SELECT row, statement_id FROM kb_statements WHERE row IN (SELECT unnest(?::BIGINT[]))",
                [sorted(rows)],
            ).fetchall()
        )
        return {
            "source": search.source,
            "target": search.target,
            "source_label": self.label(search.source),
            "target_label": self.label(search.target),
            "max_hops": search.max_hops,
            "hops": search.hops,
            "paths": [self._path(path, ids) for path in search.paths],
            "more_paths": search.more_paths,
            "visited": search.visited,
        }

    def _path(self, path: KbPath, ids: dict[int, str]) -> dict[str, Any]:
        steps, text = [], [self.label(path.entities[0])]
        for index, prop in enumerate(path.properties):
            here, there = path.entities[index], path.entities[index + 1]
            subject, obj = (here, there) if path.forward[index] else (there, here)
            steps.append(
                {
                    "statement_id": ids.get(path.rows[index]),
                    "subject": subject,
                    "property": prop,
                    "object": obj,
                    "subject_label": self.label(subject),
                    "property_label": self.label(prop),
                    "object_label": self.label(obj),
                }
            )
            arrow = f"—{self.label(prop)}→" if path.forward[index] else f"←{self.label(prop)}—"
            text += [arrow, self.label(there)]
        return {"entities": list(path.entities), "steps": steps, "text": " ".join(text)}

    def link(self, text: str, candidates: int = 5) -> list[dict[str, Any]]:
        """The mentions of ``text`` with their candidates (:class:`~assets.wikidata.linker.EntityLinker`)."""
        with EntityLinker(self.paths.wikidata / "mentions.parquet", self.limits) as linker:
            return [mention.to_dict() for mention in linker.link(text, candidates)]


def _has_tables(con: Any) -> bool:
    names = {row[0] for row in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    return set(KB_TABLES) <= names
