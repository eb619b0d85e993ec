"""The passage tables of the provenance store, one registration each.

Every collection whose passages the store holds is a :class:`StoredPassages`: the table its passages are
in, every table it brings (each from a folder of the snapshot's Parquet files), the columns of a passage
row as :meth:`~assets.provenance_store.ProvenanceStore.passage` returns it, and, when its tables need more
than their Parquet copied in and indexed, how they are made. The store's build makes the tables of every
registration (:func:`stored_passages`), its lookups read every passage table it holds, and the exports
publish every table (:mod:`assets.exports`): nothing else names them.

Built in: the text passages (``passages``, made with the store's pages and paragraphs), tables and
infoboxes (``structured_passages``) and the Wikidata KB (``kb_passages`` with ``kb_entities`` and
``kb_statements``, :func:`~assets.wikidata.create_kb_tables`). A collection registers its own with
:func:`~assets.indexes.collections.register_collection` (its ``stored``).

Pure module: no Dagster import.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any

from assets.storage import SnapshotPaths, sql_list
from assets.wikidata import KB_PARQUET, create_kb_tables
from assets.wikipedia.passages import STRUCTURED_FIELDS

__all__ = [
    "CORE_TABLES",
    "KB_PASSAGES",
    "STRUCTURED_PASSAGES",
    "TEXT_PASSAGES",
    "StoredPassages",
    "register_stored_passages",
    "stored_passages",
]

CORE_TABLES = ("pages", "paragraphs", "passages", "redirects", "meta")
"""The tables the store's build makes itself (the text passages among them)."""
TABLE_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")
"""What a registered table may be called (it is written into SQL as it is)."""


@dataclass(frozen=True, eq=False)
class StoredPassages:
    """A collection's passages (and any table beside them) as tables of the provenance store."""

    table: str
    """The table of its passages (``passage_id``, ``wikipedia_id``, ``title``, ``text``, ...)."""
    sources: Mapping[str, Callable[[SnapshotPaths], Path]]
    """Every table it brings, its passage table first, and the folder of that table's Parquet files."""
    row: str = "*"
    """The SELECT list of a passage row as the store's lookups return it."""
    order: str = "passage_id"
    """The ORDER BY of a page's passages (their order on the page)."""
    create: Callable[[Any, SnapshotPaths], tuple[str, ...]] | None = None
    """Makes its tables in a store being built and returns those made (none: the snapshot has none);
    default: each source's Parquet as a table, the passage table indexed by passage and page id."""
    descriptions: Mapping[str, str] = field(default_factory=dict)
    """One line per table for an export's dataset card."""

    def files(self, paths: SnapshotPaths, table: str) -> list[Path]:
        """The Parquet files of one of its tables in ``paths``' snapshot (none: it has none)."""
        folder = self.sources[table](paths)
        return sorted(folder.glob("*.parquet")) if folder.is_dir() else []

    def build(self, con: Any, paths: SnapshotPaths) -> tuple[str, ...]:
        """Its tables, made in the store ``con`` is building; the tables made."""
        if self.create is not None:
            return self.create(con, paths)
        if not self.files(paths, self.table):
            return ()
        made = []
        for table in self.sources:
            if files := self.files(paths, table):
                con.execute(f"CREATE TABLE {table} AS SELECT * FROM read_parquet({sql_list(files)})")
                made.append(table)
        con.execute(f"CREATE UNIQUE INDEX {self.table}_id ON {self.table} (passage_id)")
        con.execute(f"CREATE INDEX {self.table}_page ON {self.table} (wikipedia_id)")
        return tuple(made)


_STORED: dict[str, StoredPassages] = {}


def register_stored_passages(stored: StoredPassages) -> StoredPassages:
    """Add a passage table to every store built from now on (its tables' names must be new); returns it."""
    taken = {table for known in _STORED.values() for table in known.sources} | set(CORE_TABLES)
    if bad := [table for table in stored.sources if not TABLE_NAME.fullmatch(table)]:
        raise ValueError(f"store table names {bad} are not lowercase SQL identifiers ({TABLE_NAME.pattern})")
    if stored.table not in stored.sources or next(iter(stored.sources)) != stored.table:
        raise ValueError(f"the passage table {stored.table!r} must be the first of its sources")
    if taken & set(stored.sources):
        raise ValueError(f"store tables {sorted(taken & set(stored.sources))} are already registered")
    _STORED[stored.table] = stored
    return stored


def stored_passages() -> tuple[StoredPassages, ...]:
    """Every registered passage table, the text passages first, in the order registered."""
    return tuple(_STORED.values())


def _made_with_the_core(con: Any, paths: SnapshotPaths) -> tuple[str, ...]:
    return ()  # ``passages`` is one of the tables the store's build makes first (CORE_TABLES)


TEXT_PASSAGES = StoredPassages(
    "passages",
    {"passages": attrgetter("passages_parquet")},
    row="passage_id, wikipedia_id, title, section, start_paragraph_id, start_character, end_paragraph_id, "
    "end_character, text, word_count",
    create=_made_with_the_core,
)
_STORED[TEXT_PASSAGES.table] = TEXT_PASSAGES  # a core table: registered here, never again
STRUCTURED_PASSAGES = register_stored_passages(
    StoredPassages(
        "structured_passages",
        {"structured_passages": attrgetter("structured_parquet")},
        row=", ".join(STRUCTURED_FIELDS),
        order="start_character, passage_id",
        descriptions={
            "structured_passages": "the tables and infoboxes of the pages as passages (`kind`, the "
            "structure's index and rows, its wikitext offsets)"
        },
    )
)
KB_PASSAGES = register_stored_passages(
    StoredPassages(
        "kb_passages",
        KB_PARQUET,
        row="*, 'kb' AS kind",
        create=create_kb_tables,
        descriptions={
            "kb_passages": "each entity's statements written as text, citing its QID, properties and "
            "statement ids (the `kb` collection)",
            "kb_entities": "the Wikidata entities aligned to the snapshot (labels, descriptions, aliases, "
            "pages)",
            "kb_statements": "their typed statements",
        },
    )
)
