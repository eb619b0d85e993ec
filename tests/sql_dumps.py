"""Wikimedia SQL table dumps written in code, in the layout of the real ``page_props.sql.gz`` and
``redirect.sql.gz`` (mysqldump header, ``CREATE TABLE`` with MediaWiki's columns, extended INSERTs with
MySQL's backslash escapes), for rows taken from the real excerpt and real public records."""

from __future__ import annotations

import gzip
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
        tuples = ["(" + ",".join(sql_value(v) for v in row) + ")" for row in rows[start : start + per_insert]]
        lines.append(f"INSERT INTO `{table}` VALUES " + tuple_separator.join(tuples) + ";")
    lines += [
        f"/*!40000 ALTER TABLE `{table}` ENABLE KEYS */;",
        "",
        "-- Dump completed on 2016-05-02 11:22:33",
        "",
    ]
    return "\n".join(lines)


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
