"""The passages' point-lookup file (``passages.sqlite`` beside ``provenance.duckdb``): every passage of the
store (text, tables and infoboxes, KB facts) as one row keyed by its id, the row as JSON.

DuckDB answers a point query in 0.6-2 ms, a fixed cost of its planner and executor; a lookup of one
passage (an answer's provenance, a hit's text, ``kiltpipe passage``) should cost what a key-value read
costs, as pyserini's ``doc()`` does. SQLite's B-tree over a ``WITHOUT ROWID`` table reads one in a few
microseconds, and ``IN`` lists of :data:`LOOKUP_CHUNK` ids read a batch in one call. Built with the store
from its tables (the same rows ``ProvenanceStore.passage`` returns), into a temp file swapped in with one
rename; read through an immutable read-only connection per thread, so readers never write or lock.

The same file shape serves any Parquet whose rows are looked up by id (:func:`write_parquet_rows`: the
QA-pair KB's ``qa_pairs.sqlite``), with two optional extras: ``aliases``, another unique key naming a row
(a stored question's normalised text), and a ``stamp`` naming what the file was built from, so a reader
can tell a file left over from an earlier build.

Pure module: no Dagster import.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import duckdb

from assets.files import atomic_path
from assets.iterables import batched
from assets.storage import duckdb_memory_limit, sql_literal

__all__ = ["LOOKUP_CHUNK", "PassageRows", "report_stamp", "write_parquet_rows", "write_passage_rows"]

LOOKUP_CHUNK = 500
"""Ids per ``IN`` list of a batch lookup (SQLite's default bound on parameters is 32,766)."""
WRITE_BATCH = 50_000


def write_passage_rows(
    con: Any,
    selects: Iterable[str],
    target: Path,
    *,
    aliases: Iterable[str] = (),
    stamp: str | None = None,
) -> int:
    """Write ``target`` from the DuckDB connection ``con``: each of ``selects`` a query of
    ``(passage_id, row as JSON)``, each of ``aliases`` one of ``(alias, passage_id)`` (a unique second
    key), ``stamp`` what it was built from (:attr:`PassageRows.stamp`); returns the rows written."""
    written = 0
    with atomic_path(target) as temp:
        out = sqlite3.connect(temp)
        try:
            out.execute("PRAGMA journal_mode = OFF")
            out.execute("PRAGMA synchronous = OFF")
            out.execute(
                "CREATE TABLE passages (passage_id TEXT PRIMARY KEY, row TEXT NOT NULL) WITHOUT ROWID"
            )
            out.execute(
                "CREATE TABLE aliases (alias TEXT PRIMARY KEY, passage_id TEXT NOT NULL) WITHOUT ROWID"
            )
            out.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID")
            out.execute("INSERT INTO meta VALUES ('stamp', ?)", (stamp,))
            for table, queries in (("passages", selects), ("aliases", aliases)):
                for select in queries:
                    cursor = con.execute(select)
                    while rows := cursor.fetchmany(WRITE_BATCH):
                        out.executemany(f"INSERT INTO {table} VALUES (?, ?)", rows)
                        written += len(rows) if table == "passages" else 0
            out.commit()
            out.execute("VACUUM")
        finally:
            out.close()
    return written


def write_parquet_rows(
    parquet: Path, target: Path, *, alias: str | None = None, stamp: str | None = None
) -> int:
    """Write ``target`` from the Parquet files of the folder ``parquet`` (a ``passage_id`` column; the
    whole row as JSON), ``alias`` the column of a second unique key; returns the rows written."""
    source = f"read_parquet({sql_literal(str(parquet / '*.parquet'))}) AS t"
    con = duckdb.connect(config={"memory_limit": duckdb_memory_limit()})  # the rows stream through it
    try:
        return write_passage_rows(
            con,
            [f"SELECT passage_id, to_json(t) FROM {source}"],
            target,
            aliases=[f"SELECT {alias}, passage_id FROM {source}"] if alias else (),
            stamp=stamp,
        )
    finally:
        con.close()


def report_stamp(folder: Path) -> str | None:
    """The stamp of an output folder's build: the SHA-256 of its ``report.json`` (None: it has none)."""
    report = folder / "report.json"
    return hashlib.sha256(report.read_bytes()).hexdigest() if report.is_file() else None


class PassageRows:
    """Read-only lookups of ``passages.sqlite``: one passage, or many in one call."""

    def __init__(self, path: Path) -> None:
        if not path.is_file():
            raise FileNotFoundError(f"no passage lookup file {path}")
        self.uri = f"file:{path.absolute()}?mode=ro&immutable=1"
        self._local = threading.local()
        self._opened: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    def _con(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            con = sqlite3.connect(self.uri, uri=True, check_same_thread=False)
            self._local.con = con
            with self._lock:
                self._opened.append(con)
        return con

    def get(self, passage_id: str) -> dict[str, Any] | None:
        """The passage's row (None: no such passage)."""
        found = self._con().execute("SELECT row FROM passages WHERE passage_id = ?", (passage_id,)).fetchone()
        return json.loads(found[0]) if found else None

    def many(self, passage_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """``{passage_id: row}`` of the ids found (the others are absent)."""
        found: dict[str, dict[str, Any]] = {}
        con = self._con()
        for chunk in batched(list(dict.fromkeys(passage_ids)), LOOKUP_CHUNK):
            marks = ",".join("?" * len(chunk))
            for passage_id, row in con.execute(
                f"SELECT passage_id, row FROM passages WHERE passage_id IN ({marks})", chunk
            ):
                found[passage_id] = json.loads(row)
        return found

    def resolve(self, aliases: Iterable[str]) -> dict[str, str]:
        """``{alias: passage_id}`` of the aliases found (the others are absent)."""
        found: dict[str, str] = {}
        con = self._con()
        for chunk in batched(list(dict.fromkeys(aliases)), LOOKUP_CHUNK):
            marks = ",".join("?" * len(chunk))
            found.update(
                con.execute(f"SELECT alias, passage_id FROM aliases WHERE alias IN ({marks})", chunk)
            )
        return found

    @property
    def stamp(self) -> str | None:
        """What the file was built from (``write_passage_rows``' ``stamp``; None: not recorded)."""
        try:
            found = self._con().execute("SELECT value FROM meta WHERE key = 'stamp'").fetchall()
        except sqlite3.OperationalError:  # a file from before it recorded one
            return None
        return found[0][0] if found else None

    def ids(self) -> list[str]:
        """Every passage id, in key order."""
        return [row[0] for row in self._con().execute("SELECT passage_id FROM passages")]

    def close(self) -> None:
        with self._lock:
            for con in self._opened:
                con.close()
            self._opened.clear()
        self._local = threading.local()
