"""Wikimedia's SQL table dumps (``{wiki}-{date}-page_props.sql.gz``, ``...-redirect.sql.gz``) read as a
stream of rows, without MySQL.

The files are ``mysqldump`` output: a ``CREATE TABLE`` naming the columns, then ``INSERT INTO `t` VALUES
(...),(...);`` statements with thousands of tuples each (usually one statement per line, but any
whitespace between tuples and statements is accepted). Strings are single-quoted byte strings with
MySQL's backslash escapes (``\\'``, ``\\\\``, ``\\n``, ``\\0``, ``\\Z``...) and ``''``; ``NULL`` and
numbers are bare. The reader decompresses (:mod:`assets.compressed`: gzip, bz2, xz or plain) and parses
in fixed-size chunks, so memory stays flat on multi-GB files; a malformed tuple, an unterminated statement
or a truncated or damaged stream is an error naming the file and the byte offset.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from assets.compressed import CompressedInputError, open_compressed
from assets.skips import SkipLog

CHUNK_BYTES = 1 << 20
MAX_TUPLE_BYTES = 64 << 20
"""A tuple longer than this (no closing parenthesis found) is malformed rather than unfinished."""

KNOWN_COLUMNS: dict[str, tuple[str, ...]] = {
    "page_props": ("pp_page", "pp_propname", "pp_value", "pp_sortkey"),
    "redirect": ("rd_from", "rd_namespace", "rd_title", "rd_interwiki", "rd_fragment"),
}
"""Column layouts of MediaWiki 1.35+ for dumps whose ``CREATE TABLE`` was cut off."""

_VALUE = rb"""(?:'((?:[^'\\]++|\\.|'')*+)'|(NULL)|([-+]?[0-9][0-9.eE+-]*))"""
_OPENING_RE = re.compile(rb"\s*\(")
_VALUE_RE = re.compile(rb"\s*" + _VALUE + rb"\s*")
_INSERT_RE = re.compile(rb"INSERT\s+INTO\s+`([^`]+)`\s+VALUES\s*")
_CREATE_RE = re.compile(rb"CREATE\s+TABLE\s+`([^`]+)`\s*\((.*?)\n\)", re.S)
_COLUMN_RE = re.compile(rb"^\s*`([^`]+)`\s+\w", re.M)
_ESCAPE_RE = re.compile(rb"\\(.)|''", re.S)
_ESCAPES = {b"0": b"\0", b"b": b"\b", b"n": b"\n", b"r": b"\r", b"t": b"\t", b"Z": b"\x1a"}
QID_RE = re.compile(r"Q[1-9][0-9]*")
"""A Wikidata item id (``Q42``), as ``page_props.wikibase_item`` and MKQA answers hold it."""


class SqlDumpError(ValueError):
    """A SQL dump that cannot be read: the message names the file and the byte offset."""


def unescape(raw: bytes) -> bytes:
    """A MySQL string literal's bytes without its escapes (``\\%`` and ``\\_`` keep their backslash)."""
    if b"\\" not in raw and b"''" not in raw:
        return raw

    def replace(match: re.Match[bytes]) -> bytes:
        char = match.group(1)
        if char is None:
            return b"'"
        if char in (b"%", b"_"):
            return b"\\" + char
        return _ESCAPES.get(char, char)

    return _ESCAPE_RE.sub(replace, raw)


def value(groups: tuple[bytes | None, ...], column: int) -> Any:
    """Column ``column`` of a raw row (:meth:`SqlDumpReader.raw_rows`): bytes, int, float or None."""
    text, null, number = groups[3 * column], groups[3 * column + 1], groups[3 * column + 2]
    if text is not None:
        return unescape(text)
    if null is not None:
        return None
    return float(number) if any(c in number for c in b".eE") else int(number)


def _tuple_pattern(arity: int) -> re.Pattern[bytes]:
    return re.compile(rb"\s*\(" + rb",".join([rb"\s*" + _VALUE + rb"\s*"] * arity) + rb"\)\s*([,;])")


@dataclass(slots=True)
class SqlTableStats:
    """What one read saw: tuples and statements, the table's columns, decompressed bytes."""

    table: str | None = None
    columns: tuple[str, ...] = ()
    rows: int = 0
    statements: int = 0
    bytes_read: int = 0
    other_tables: dict[str, int] = field(default_factory=dict)  # INSERTs into tables not asked for


class SqlDumpReader:
    """Rows of one table of a (gzipped) ``mysqldump`` file, as tuples of ``bytes | int | float | None``.

    ``table`` is the table to read (default: the first one the file creates or inserts into). Iterate
    once; :attr:`stats` holds the counts afterwards.
    """

    def __init__(self, path: Path | str, table: str | None = None, *, chunk_bytes: int = CHUNK_BYTES) -> None:
        self.path = Path(path)
        self.table = table
        self.chunk_bytes = chunk_bytes
        self.stats = SqlTableStats(table=table)
        self._stream: BinaryIO | None = None
        self._buffer = b""
        self._base = 0  # decompressed offset of _buffer[0]
        self._eof = False

    # ------------------------------------------------------------------------------------ bytes
    def _decompressed_chunk(self) -> bytes:
        """The next bytes of the file's content (any codec: gzip members one after the other)."""
        assert self._stream is not None
        try:
            return self._stream.read(self.chunk_bytes)
        except CompressedInputError as error:  # the opener names the file and the offsets
            raise SqlDumpError(f"{error} (table rows read: {self.stats.rows:,})") from None

    def _fill(self) -> bool:
        """Append a chunk to the buffer; False at the end of the file."""
        if self._eof:
            return False
        chunk = self._decompressed_chunk()
        if not chunk:
            self._eof = True
            return False
        self.stats.bytes_read += len(chunk)
        self._buffer += chunk
        return True

    def _drop(self, upto: int) -> None:
        self._buffer = self._buffer[upto:]
        self._base += upto

    def _error(self, pos: int, what: str) -> SqlDumpError:
        sample = self._buffer[pos : pos + 80].decode("utf-8", "replace")
        return SqlDumpError(f"{self.path}: {what} at decompressed byte {self._base + pos:,}: {sample!r}")

    # ------------------------------------------------------------------------------------ rows
    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        for groups in self.raw_rows():
            yield tuple(value(groups, i) for i in range(len(groups) // 3))

    def raw_rows(self) -> Iterator[tuple[bytes | None, ...]]:
        """The rows as regex groups, three per column (string bytes still escaped, ``NULL``, number
        bytes): for readers that look at one column before converting the others (:func:`value`)."""
        with open_compressed(self.path, threads=1) as self._stream:
            yield from self._rows()

    def _next_statement(self) -> tuple[int, bytes] | None:
        """Skip to the next INSERT (reading CREATE TABLE on the way); its values' offset and table."""
        while True:
            insert = _INSERT_RE.search(self._buffer)
            create = _CREATE_RE.search(self._buffer, 0, insert.start() if insert else len(self._buffer))
            if create is not None:
                self._on_create(create.group(1).decode(), create.group(2))
                self._drop(create.end())
                continue
            if insert is not None:
                return insert.end(), insert.group(1)
            unfinished = self._buffer.find(b"CREATE TABLE")  # keep it until its column list is complete
            self._drop(unfinished if unfinished >= 0 else max(0, len(self._buffer) - 256))
            if not self._fill():
                return None

    def _on_create(self, table: str, body: bytes) -> None:
        if self.table is None:
            self.table = self.stats.table = table
        if table == self.table:
            self.stats.columns = tuple(c.decode() for c in _COLUMN_RE.findall(body))

    def _arity(self, pos: int) -> int:
        """The number of values of the tuple at ``pos`` (read when no CREATE TABLE named the columns)."""
        while True:
            opening = _OPENING_RE.match(self._buffer, pos)
            scan, count = (opening.end(), 0) if opening else (len(self._buffer), 0)
            while (match := _VALUE_RE.match(self._buffer, scan)) is not None:
                count += 1
                following = self._buffer[match.end() : match.end() + 1]
                if following == b")":
                    return count
                if following != b",":
                    break
                scan = match.end() + 1
            if len(self._buffer) - pos > MAX_TUPLE_BYTES or not self._fill():
                raise self._error(pos, "malformed tuple")

    def _rows(self) -> Iterator[tuple[bytes | None, ...]]:
        pattern: re.Pattern[bytes] | None = None
        arity = 0
        while (found := self._next_statement()) is not None:
            pos, table_bytes = found
            table = table_bytes.decode()
            if self.table is None:
                self.table = self.stats.table = table
            wanted = table == self.table
            if wanted:
                self.stats.statements += 1
            else:
                self.stats.other_tables[table] = self.stats.other_tables.get(table, 0) + 1
            if pattern is None or not wanted:
                arity = len(self.stats.columns) if wanted and self.stats.columns else self._arity(pos)
                if wanted and not self.stats.columns:
                    known = KNOWN_COLUMNS.get(table, ())
                    unnamed = tuple(f"c{i}" for i in range(arity))
                    self.stats.columns = known if len(known) == arity else unnamed
                current = _tuple_pattern(arity)
                if wanted:
                    pattern = current
            else:
                current = pattern
            while True:
                match = current.match(self._buffer, pos)
                if match is None:
                    if len(self._buffer) - pos > MAX_TUPLE_BYTES:
                        raise self._error(pos, f"malformed tuple (expected {arity} values)")
                    if not self._fill():
                        what = "unterminated INSERT (the file ends inside it)"
                        if self._buffer[pos:].strip():
                            what = f"malformed or truncated tuple (expected {arity} values)"
                        raise self._error(pos, what)
                    continue
                if wanted:
                    self.stats.rows += 1
                    yield match.groups()
                pos = match.end()
                if match.group(3 * arity + 1) == b";":
                    break
                if pos > self.chunk_bytes:
                    self._drop(pos)
                    pos = 0
            self._drop(pos)


# ================================================================================= typed readers
@dataclass(slots=True)
class TableReadReport:
    """Counts of one typed read (kept rows, rows of other kinds, problems with examples)."""

    path: str
    rows: int = 0
    kept: int = 0
    skips: SkipLog = field(default_factory=SkipLog)
    """Rows skipped by reason, the first named ``"<reason>: <row>"``."""
    bytes_read: int = 0

    def skip(self, reason: str, example: str) -> None:
        self.skips.skip(reason, f"{reason}: {example}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": Path(self.path).name,
            "rows": self.rows,
            "kept": self.kept,
            "skipped": dict(self.skips.by_reason),
            "examples": list(self.skips.named),
            "bytes_read": self.bytes_read,
        }


def _column_index(reader: SqlDumpReader, name: str) -> int:
    try:
        return reader.stats.columns.index(name)
    except ValueError:
        raise SqlDumpError(
            f"{reader.path}: table {reader.table!r} has no column {name!r} (columns: "
            f"{', '.join(reader.stats.columns) or 'none found'})"
        ) from None


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def iter_wikidata_ids(path: Path | str, report: TableReadReport) -> Iterator[tuple[int, str]]:
    """``(page id, QID)`` of every ``wikibase_item`` row of a ``page_props`` dump, in file order; other
    properties are counted as ``other_property``, malformed QIDs as ``invalid_qid``."""
    reader = SqlDumpReader(path, "page_props")
    columns: tuple[int, ...] = ()
    other = 0
    for groups in reader.raw_rows():
        if not columns:
            columns = tuple(_column_index(reader, c) for c in ("pp_page", "pp_propname", "pp_value"))
        if groups[3 * columns[1]] != b"wikibase_item":  # most rows: decided before decoding anything
            other += 1
            continue
        page, qid_value = value(groups, columns[0]), value(groups, columns[2])
        qid = _text(qid_value) if qid_value is not None else ""
        if not isinstance(page, int) or not QID_RE.fullmatch(qid):
            report.skip("invalid_qid", f"page {page!r}: {qid_value!r}")
            continue
        report.kept += 1
        yield page, qid
    report.rows = reader.stats.rows
    if other:
        report.skips.skip("other_property", count=other)
    report.bytes_read = reader.stats.bytes_read
    if reader.stats.statements == 0:
        raise SqlDumpError(f"{path}: no INSERT INTO `page_props` statement (is this a page_props dump?)")


def iter_redirect_rows(path: Path | str, report: TableReadReport) -> Iterator[tuple[int, int, str, str, str]]:
    """``(rd_from, namespace, target title with underscores, interwiki, fragment)`` of a ``redirect``
    table dump; titles that are not UTF-8 are counted as ``undecodable``."""
    reader = SqlDumpReader(path, "redirect")
    columns: tuple[int, ...] | None = None
    for row in reader:
        if columns is None:
            names = ("rd_from", "rd_namespace", "rd_title", "rd_interwiki", "rd_fragment")
            columns = tuple(_column_index(reader, c) for c in names)
        report.rows += 1
        source, namespace, title, interwiki, fragment = (row[i] for i in columns)
        try:
            decoded = (_text(title), _text(interwiki or b""), _text(fragment or b""))
        except UnicodeDecodeError:
            report.skip("undecodable", f"rd_from {source}: {title!r}")
            continue
        report.kept += 1
        yield int(source), int(namespace), *decoded
    report.bytes_read = reader.stats.bytes_read
    if reader.stats.statements == 0:
        raise SqlDumpError(f"{path}: no INSERT INTO `redirect` statement (is this a redirect table dump?)")
