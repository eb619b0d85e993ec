"""Streaming reader of MediaWiki XML export dumps (schemas 0.3 to 0.11).

Memory stays flat in dump size: the file is decompressed and parsed in fixed-size chunks with
expat, and only the page being read (plus its best revision so far) is held.
"""

from __future__ import annotations

import codecs
import io
import re
import xml.parsers.expat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from assets.compressed import CompressedInputError, open_compressed
from assets.params import INVALID_BYTES, MAX_PAGE_BYTES
from assets.skips import SkipLog
from assets.snapshot_ids import date_in_file_name

EXAMPLES = 20
"""Skipped pages named one by one in the reader's examples, at most."""

CHUNK_BYTES = 1 << 20

# English namespace names, used when a dump has no <siteinfo>.
DEFAULT_NAMESPACES: dict[int, str] = {
    -2: "Media",
    -1: "Special",
    0: "",
    1: "Talk",
    2: "User",
    3: "User talk",
    4: "Wikipedia",
    5: "Wikipedia talk",
    6: "File",
    7: "File talk",
    8: "MediaWiki",
    9: "MediaWiki talk",
    10: "Template",
    11: "Template talk",
    12: "Help",
    13: "Help talk",
    14: "Category",
    15: "Category talk",
    100: "Portal",
    101: "Portal talk",
    118: "Draft",
    119: "Draft talk",
    710: "TimedText",
    711: "TimedText talk",
    828: "Module",
    829: "Module talk",
}
NAMESPACE_ALIASES: dict[str, int] = {"image": 6, "image talk": 7, "wp": 4, "project": 4}

# "#REDIRECT [[Target]]" in a few languages (schema 0.3 dumps have no <redirect> element).
_REDIRECT_TEXT_RE = re.compile(
    r"^\s*#\s*(?:redirect|redirection|weiterleitung|redirección|rinvia|перенаправление|doorverwijzing|"
    r"przekieruj|転送|重定向)\s*:?\s*\[\[([^\]|]+)",
    re.IGNORECASE,
)


class DumpFormatError(ValueError):
    """The input is not a readable MediaWiki export; the message names file and position."""


class FragmentNotAligned(ValueError):
    """A bz2 stream group of a dump does not hold whole pages (read the dump sequentially instead)."""


BZ2_STREAM_RE = re.compile(rb"BZh[1-9]1AY&SY")
"""A bz2 stream header (magic, block size, block magic): where each stream of a multistream file starts."""


def find_bz2_streams(path: Path, chunk_bytes: int = 1 << 24) -> list[int]:
    """Offsets of the bz2 streams of a (multistream) bz2 file, found by their header magic.

    Wikipedia's ``*-multistream.xml.bz2`` dumps hold 100 pages per stream, so stream groups can be
    decompressed and parsed in parallel. A single-stream file gives ``[0]``.
    """
    offsets = []
    with open(path, "rb") as handle:
        position = 0
        tail = b""
        while chunk := handle.read(chunk_bytes):
            data = tail + chunk
            base = position - len(tail)
            offsets.extend(base + m.start() for m in BZ2_STREAM_RE.finditer(data))
            tail = data[-9:]
            position += len(chunk)
    return sorted(set(offsets))


@dataclass(slots=True)
class SiteInfo:
    """What ``<siteinfo>`` says about the wiki (defaults when the dump has none)."""

    sitename: str = "Wikipedia"
    dbname: str | None = None
    base: str | None = None
    generator: str | None = None
    case: str = "first-letter"
    language: str | None = None
    namespaces: dict[int, str] = field(default_factory=lambda: dict(DEFAULT_NAMESPACES))
    from_dump: bool = False

    def namespace_of(self, title: str) -> int:
        """Namespace key of a title by its prefix (for pages without ``<ns>``)."""
        prefix, sep, _ = title.partition(":")
        if not sep:
            return 0
        key = prefix.strip().replace("_", " ").lower()
        for ns_key, name in self.namespaces.items():
            if name and name.lower() == key:
                return ns_key
        return NAMESPACE_ALIASES.get(key, 0)

    def prefixes_of(self, ns_key: int) -> frozenset[str]:
        """Lowercased names (and English aliases) of one namespace, for link classification."""
        names = {self.namespaces.get(ns_key, "").lower(), DEFAULT_NAMESPACES.get(ns_key, "").lower()}
        names.update(alias for alias, key in NAMESPACE_ALIASES.items() if key == ns_key)
        return frozenset(n for n in names if n)

    @property
    def server(self) -> str:
        """``https://en.wikipedia.org`` from ``<base>``; guessed from dbname otherwise."""
        if self.base:
            match = re.match(r"(https?://[^/]+)", self.base)
            if match:
                return match.group(1)
        lang = self.language or (self.dbname[:-4] if self.dbname and self.dbname.endswith("wiki") else "en")
        return f"https://{lang}.wikipedia.org"


@dataclass(slots=True)
class RawPage:
    """One page of the dump with the revision chosen for the snapshot."""

    page_id: int
    title: str
    ns: int
    redirect_target: str | None
    revid: int | None
    parentid: int | None
    timestamp: str | None
    text: str
    model: str | None
    byte_offset: int  # offset of <page> in the decompressed XML stream


@dataclass(slots=True)
class ReadStats:
    """Counters of what the reader saw and skipped (never a silent drop)."""

    pages: int = 0
    revisions: int = 0
    skips: SkipLog = field(default_factory=lambda: SkipLog(listed=EXAMPLES))
    """Pages skipped or changed here by reason, the first :data:`EXAMPLES` named with their id and why (a
    large page: its size; an external entity: its name), for the build's report."""
    max_timestamp: str | None = None
    replaced_invalid_bytes: int = 0


def dump_date_from_name(path: Path) -> str | None:
    """``20160501`` from ``enwiki-20160501-pages-articles.xml.bz2``; None when absent."""
    return date_in_file_name(path.name)


class DumpReader:
    """Iterate the pages of a MediaWiki XML dump, one revision per page.

    ``as_of`` (ISO timestamp prefix such as ``2016-05-01``) keeps, of several revisions, the latest
    at or before that instant; otherwise the latest revision. ``invalid_bytes="replace"`` decodes
    undecodable bytes as U+FFFD (counted) instead of failing.
    """

    def __init__(
        self,
        path: Path | str,
        *,
        as_of: str | None = None,
        invalid_bytes: str = INVALID_BYTES,
        max_page_bytes: int = MAX_PAGE_BYTES,
    ) -> None:
        if invalid_bytes not in ("error", "replace"):
            raise ValueError("invalid_bytes must be 'error' or 'replace'")
        self.path = Path(path)
        self.max_page_bytes = max_page_bytes
        self.as_of = as_of
        self.invalid_bytes = invalid_bytes
        self.siteinfo = SiteInfo()
        self.stats = ReadStats()
        self.compression = "none"
        self.compressed_size = self.path.stat().st_size
        self.compressed_position = 0
        self.xml_bytes = 0

    # ------------------------------------------------------------------ parsing state machine
    def _reset_page(self) -> None:
        self._page: dict = {"revisions": 0}
        self._best: dict | None = None
        self._text_chars = 0  # characters of the <text> being read (its buffer is dropped once too large)

    def _start(self, name: str, attrs: dict[str, str]) -> None:
        stack = self._stack
        if not stack:
            if name.rpartition(":")[2] != "mediawiki":
                raise DumpFormatError(
                    f"{self.path}: not a MediaWiki export: root element is <{name}>, expected <mediawiki>"
                )
            lang = attrs.get("xml:lang")
            if lang:
                self.siteinfo.language = lang
        stack.append(name)
        if name == "page":
            self._reset_page()
            self._page["offset"] = self._parser.CurrentByteIndex
        elif name == "revision":
            self._rev = {}
        elif name == "redirect" and len(stack) == 3:
            self._page["redirect"] = attrs.get("title", "")
        elif name == "siteinfo":
            self.siteinfo.namespaces = {}
            self.siteinfo.from_dump = True
        elif name == "namespace":
            self._ns_key = int(attrs.get("key", "0"))
        elif name == "text" and attrs.get("deleted"):
            self._rev["text_deleted"] = True
        if name == "text":
            self._text_chars = 0
        if name in self._collect_names:
            self._buffer = []
            self._collecting = True

    def _chars(self, data: str) -> None:
        if self._collecting:
            if self._stack[-1] == "text":  # a page over the limit is never held whole in memory
                self._text_chars += len(data)
                if self._text_chars > self.max_page_bytes:
                    self._buffer.clear()
                    return
            self._buffer.append(data)

    def _external_entity(
        self, context: str | None, base: str | None, system_id: str | None, public_id: str | None
    ) -> int:
        """An external entity reference (``<!ENTITY x SYSTEM "file:///...">``): never loaded; counted with
        the page it sits in."""
        del context, base
        self._page.setdefault("external_entities", []).append(system_id or public_id or "?")
        return 1

    def _end(self, name: str) -> None:
        stack = self._stack
        depth = len(stack)
        stack.pop()
        if self._collecting and name in self._collect_names:
            self._collecting = False
            value = "".join(self._buffer)
            parent = stack[-1] if stack else ""
            if name == "text" and self._text_chars > self.max_page_bytes:
                self._rev["too_large"] = self._text_chars
            if parent == "page":
                self._page[name] = value
            elif parent == "revision":
                self._rev[name] = value
            elif parent == "siteinfo":
                setattr(self.siteinfo, name, value.strip())
            elif name == "namespace":
                self.siteinfo.namespaces[self._ns_key] = value.strip()
            return
        if name == "revision" and depth == 3:
            self._end_revision()
        elif name == "page":
            self._end_page()

    def _end_revision(self) -> None:
        rev = self._rev
        self.stats.revisions += 1
        self._page["revisions"] += 1
        ts = rev.get("timestamp")
        if self.as_of and ts and ts[: len(self.as_of)] > self.as_of:
            self.stats.skips.skip("revision_after_as_of")
            return
        best = self._best
        if best is None or (ts or "") >= (best.get("timestamp") or ""):
            self._best = rev

    def _end_page(self) -> None:
        page = self._page
        self.stats.pages += 1
        best = self._best
        title = page.get("title", "").strip()
        try:
            page_id = int(page.get("id", ""))
        except ValueError:
            self.stats.skips.skip("bad_page_id")
            self._errors.append(f"page at byte {page.get('offset')} ({title!r}) has no numeric <id>")
            return
        for entity in page.get("external_entities", ()):
            self.stats.skips.skip(
                "external_entity_dropped",
                f"page id={page_id} {title!r}: external XML entity {entity!r} dropped (never loaded)",
            )
        if best is None:
            reason = "no_revision_before_as_of" if page["revisions"] else "no_revision"
            self.stats.skips.skip(reason)
            return
        text = best.get("text", "")
        if "too_large" in best:
            size = f"{best['too_large']:,} characters"
        elif len(text) * 4 > self.max_page_bytes and len(text.encode("utf-8")) > self.max_page_bytes:
            size = f"{len(text.encode('utf-8')):,} bytes"
        else:
            size = ""
        if size:
            self.stats.skips.skip(
                "page_too_large",
                f"page id={page_id} {title!r}: {size} of wikitext, over knowledge_source.max_page_bytes "
                f"({self.max_page_bytes:,} bytes); skipped",
            )
            return
        if best.get("text_deleted"):
            self.stats.skips.skip("text_deleted")
            return
        ns_text = page.get("ns")
        ns = (
            int(ns_text)
            if ns_text and ns_text.strip().lstrip("-").isdigit()
            else self.siteinfo.namespace_of(title)
        )
        redirect = page.get("redirect")
        if redirect == "" or (redirect is None and text[:1] in ("#", " ")):
            match = _REDIRECT_TEXT_RE.match(text)
            if match:
                redirect = match.group(1)
        ts = best.get("timestamp")
        if ts and (self.stats.max_timestamp is None or ts > self.stats.max_timestamp):
            self.stats.max_timestamp = ts
        self._ready.append(
            RawPage(
                page_id=page_id,
                title=title,
                ns=ns,
                redirect_target=redirect or None,
                revid=_int_or_none(best.get("id")),
                parentid=_int_or_none(best.get("parentid")),
                timestamp=ts,
                text=text,
                model=best.get("model"),
                byte_offset=page.get("offset", -1),
            )
        )

    # ------------------------------------------------------------------ driving the parser
    def __iter__(self) -> Iterator[RawPage]:
        with open_compressed(self.path, threads=1) as stream:  # one thread: parse workers need the others
            self.compression = stream.kind
            yield from self._parse(stream)

    def parse_fragment(self, data: bytes, where: str) -> list[RawPage]:
        """Pages of a decompressed piece of the dump holding whole ``<page>`` elements (one bz2
        stream group of a multistream dump). A ``<mediawiki>`` header or footer in it is cut off.
        Raises :class:`FragmentNotAligned` when the piece does not start and end between pages."""
        head = data.find(b"</siteinfo>")
        if head >= 0:
            data = data[head + len(b"</siteinfo>") :]
        elif data.lstrip()[:2] in (b"<?", b"<m"):
            data = data[data.index(b">", data.index(b"<mediawiki")) + 1 :]
        tail = data.rfind(b"</mediawiki>")
        if tail >= 0:
            data = data[:tail]
        body = data.strip()
        if body and not (body.startswith(b"<page>") and body.endswith(b"</page>")):
            raise FragmentNotAligned(f"{self.path}: {where} does not hold whole <page> elements")
        self.compression = "bz2"
        self._fragment_where = where
        return self.parse_bytes(b"<mediawiki>" + body + b"</mediawiki>")

    def parse_bytes(self, data: bytes) -> list[RawPage]:
        """Pages (and ``<siteinfo>``, into :attr:`siteinfo`) of a complete XML document in memory."""
        return list(self._parse(io.BytesIO(data), fragment=True))

    def _make_parser(self, encoding: str | None) -> xml.parsers.expat.XMLParserType:
        parser = xml.parsers.expat.ParserCreate(encoding)
        parser.buffer_text = True
        parser.buffer_size = 1 << 16
        parser.StartElementHandler = self._start
        parser.EndElementHandler = self._end
        parser.CharacterDataHandler = self._chars
        parser.ExternalEntityRefHandler = self._external_entity
        return parser

    def _parse(self, stream: BinaryIO, *, fragment: bool = False) -> Iterator[RawPage]:
        self._stack: list[str] = []
        self._ready: list[RawPage] = []
        self._errors: list[str] = []
        self._collecting = False
        self._buffer: list[str] = []
        self._collect_names = {
            "title",
            "ns",
            "id",
            "parentid",
            "timestamp",
            "text",
            "model",
            "sitename",
            "dbname",
            "base",
            "generator",
            "case",
            "namespace",
        }
        self._reset_page()
        decoder = None
        first = self._read(stream)
        if self.invalid_bytes == "replace":
            encoding = _sniff_encoding(first)
            decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
            self._parser = self._make_parser("UTF-8")
        else:
            self._parser = self._make_parser(None)
        chunk = first
        while True:
            final = not chunk
            data = chunk
            if decoder is not None:
                text = decoder.decode(chunk, final=final)
                self.stats.replaced_invalid_bytes += text.count("\ufffd")
                data = text.encode("utf-8")
                if first is chunk and data.startswith(b"<?xml"):
                    data = re.sub(rb"^<\?xml[^>]*\?>", b'<?xml version="1.0" encoding="UTF-8"?>', data)
            try:
                self._parser.Parse(data, final)
            except xml.parsers.expat.ExpatError as exc:
                raise self._xml_error(exc, truncated=final) from None
            if self._errors:
                raise DumpFormatError(f"{self.path}: {self._errors[0]}")
            if self._ready:
                yield from self._ready
                self._ready.clear()
            if final:
                break
            chunk = self._read(stream)
        if not fragment and not self.stats.pages and not self.siteinfo.from_dump:
            raise DumpFormatError(f"{self.path}: MediaWiki export holds no <page> and no <siteinfo>")

    def _read(self, stream: BinaryIO) -> bytes:
        try:
            chunk = stream.read(CHUNK_BYTES)
        except CompressedInputError as error:  # truncated or damaged: the opener names file and offsets
            raise DumpFormatError(
                f"{error} (read so far: {self.xml_bytes:,} bytes of XML, {self.stats.pages:,} pages)"
            ) from None
        offset = getattr(stream, "compressed_offset", None)
        self.compressed_position = offset if offset is not None else stream.tell()
        self.xml_bytes += len(chunk)
        return chunk

    def _xml_error(self, exc: xml.parsers.expat.ExpatError, *, truncated: bool) -> DumpFormatError:
        page = self._page
        where = ""
        if "page" in self._stack:
            where = f" inside page id={page.get('id', '?')} title={page.get('title', '?')!r}"
        kind = "XML ends before the document is complete (truncated file?)" if truncated else "malformed XML"
        if getattr(self, "_fragment_where", None):
            kind += f" in {self._fragment_where}"
        return DumpFormatError(
            f"{self.path}: {kind} at line {exc.lineno}, column {exc.offset} "
            f"(decompressed byte {self._parser.ErrorByteIndex}){where}: "
            f"{xml.parsers.expat.ErrorString(exc.code)}"
        )


def _sniff_encoding(head: bytes) -> str:
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    match = re.match(rb"<\?xml[^>]*encoding=[\"']([A-Za-z0-9._-]+)", head)
    return match.group(1).decode("ascii") if match else "utf-8"


def _int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None
