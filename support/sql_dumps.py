"""Wikimedia SQL table dumps written in code, in the layout of the real ``page_props.sql.gz`` and
``redirect.sql.gz`` (mysqldump header, ``CREATE TABLE`` with MediaWiki's columns, extended INSERTs with
MySQL's backslash escapes), for rows taken from the real excerpt and real public records."""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

PAGE_PROPS_DDL = """CREATE TABLE `page_props` (
  `pp_page` int(8) unsigned NOT NULL,
  `pp_propname` varbinary(60) NOT NULL,
  `pp_value` blob NOT NULL,
  `pp_sortkey` float DEFAULT NULL,
  PRIMARY KEY (`pp_page`,`pp_propname`),
  UNIQUE KEY `pp_propname_page` (`pp_propname`,`pp_page`),
  UNIQUE KEY `pp_propname_sortkey_page` (`pp_propname`,`pp_sortkey`,`pp_page`)
) ENGINE=InnoDB DEFAULT CHARSET=binary ROW_FORMAT=COMPRESSED;"""

REDIRECT_DDL = """CREATE TABLE `redirect` (
  `rd_from` int(8) unsigned NOT NULL DEFAULT 0,
  `rd_namespace` int(11) NOT NULL DEFAULT 0,
  `rd_title` varbinary(255) NOT NULL DEFAULT '',
  `rd_interwiki` varbinary(32) DEFAULT NULL,
  `rd_fragment` varbinary(255) DEFAULT NULL,
  PRIMARY KEY (`rd_from`),
  KEY `rd_ns_title` (`rd_namespace`,`rd_title`,`rd_from`)
) ENGINE=InnoDB DEFAULT CHARSET=binary ROW_FORMAT=COMPRESSED;"""

_ESCAPES = {"\\": "\\\\", "'": "\\'", '"': '\\"', "\n": "\\n", "\r": "\\r", "\0": "\\0", "\x1a": "\\Z"}


def sql_value(value: Any) -> str:
    """A value as mysqldump writes it."""
    if value is None:
        return "NULL"
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + "".join(_ESCAPES.get(c, c) for c in str(value)) + "'"


def sql_dump_text(
    table: str, ddl: str, rows: Sequence[Sequence[Any]], *, per_insert: int = 1000, tuple_separator: str = ","
) -> str:
    """The text of a table dump: header, DDL, INSERTs of ``per_insert`` tuples."""
    lines = [
        "-- MySQL dump 10.19  Distrib 10.3.38-MariaDB, for debian-linux-gnu (x86_64)",
        "--",
        "-- Host: db1206    Database: enwiki",
        "-- ------------------------------------------------------",
        "/*!40101 SET NAMES binary*/;",
        f"DROP TABLE IF EXISTS `{table}`;",
        ddl,
        "",
        "--",
        f"-- Dumping data for table `{table}`",
        "--",
        "",
        f"/*!40000 ALTER TABLE `{table}` DISABLE KEYS */;",
    ]
    for start in range(0, len(rows), per_insert):
        lines.append(insert_statement(table, rows[start : start + per_insert], tuple_separator))
    lines += [
        f"/*!40000 ALTER TABLE `{table}` ENABLE KEYS */;",
        "",
        "-- Dump completed on 2016-05-02 11:22:33",
        "",
    ]
    return "\n".join(lines)


def insert_statement(table: str, rows: Iterable[Sequence[Any]], tuple_separator: str = ",") -> str:
    """One extended INSERT of ``rows``."""
    tuples = ["(" + ",".join(sql_value(v) for v in row) + ")" for row in rows]
    return f"INSERT INTO `{table}` VALUES " + tuple_separator.join(tuples) + ";"


def write_gz(path: Path, text: str) -> Path:
    path.write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))
    return path


def page_props_rows(
    qids: Iterable[tuple[int, str]], extra: Iterable[tuple[int, str, str]] = ()
) -> list[tuple]:
    """``wikibase_item`` rows for ``(page id, QID)`` plus other properties, sorted like the real table."""
    rows = [(page, "wikibase_item", qid, None) for page, qid in qids]
    rows += [(page, name, value, None) for page, name, value in extra]
    return sorted(rows, key=lambda row: (row[0], row[1]))


def write_table_dump(
    path: Path, table: str, ddl: str, rows: Iterable[Sequence[Any]], per_insert: int = 1000
) -> int:
    """Stream a gzipped dump of ``rows`` (any number) to ``path``, INSERT by INSERT; the rows written."""
    empty = sql_dump_text(table, ddl, [])
    cut = empty.index(f"/*!40000 ALTER TABLE `{table}` ENABLE KEYS")
    written = 0
    with (
        open(path, "wb") as raw,
        gzip.GzipFile(filename="", mode="wb", compresslevel=6, fileobj=raw, mtime=0) as packed,
        io.TextIOWrapper(packed, encoding="utf-8") as out,
    ):  # no time stamp nor file name in the header: the same rows give the same bytes
        out.write(empty[:cut])
        batch: list[Sequence[Any]] = []
        for row in rows:
            batch.append(row)
            if len(batch) == per_insert:
                out.write(insert_statement(table, batch) + "\n")
                written, batch = written + len(batch), []
        if batch:
            out.write(insert_statement(table, batch) + "\n")
            written += len(batch)
        out.write(empty[cut:])
    return written
