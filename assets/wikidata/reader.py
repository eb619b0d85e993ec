"""Wikidata's entity files, read as a stream of typed entities.

The layouts Wikimedia and the Wikibase API write, told apart by their first bytes:

- the JSON dump (``wikidata-YYYYMMDD-all.json``): a ``[`` line, one entity per line ending in ``,``
  (the last without it), a ``]`` line;
- one entity per line without the array (what dump filters and ``wbgetentities`` scrapers write);
- one JSON document: ``{"entities": {"Q42": {...}, ...}}`` (``wbgetentities``, ``Special:EntityData``), a
  single entity, or an array of entities.

Compressed files are opened by the project's one opener (:mod:`assets.compressed`: the codec by magic bytes,
bz2 decoded in parallel inside the file, gzip in a thread ahead of the reader, truncation always an error).
Each line is decoded by ``msgspec`` into typed structs (:class:`Entity`): only the fields a stage asks for
are built (a pass that only needs sitelinks decodes :class:`EntityHead`; labels, aliases and sitelinks per
language or site only when asked for), never a dict of the whole entity; the structs are left out of
Python's cycle collector (``gc=False``: they hold no cycles), which would otherwise scan the millions of
objects a dump makes. Nothing holds the file: memory is one line (bounded by
``limits.wikidata.max_entity_bytes``), except a one-document file (``max_document_bytes``).

A line that is not an entity (bad JSON, no id, over the limits) is a counted skip named by file and byte
offset (:class:`ReadReport`); a truncated compressed stream is an error naming the file and the offset it
reached.

Pure module: no Dagster import.
"""

from __future__ import annotations

import io
import itertools
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeVar

import msgspec

from assets.compressed import CompressedInputError, bounded_lines, open_compressed
from assets.limits import WikidataLimits
from assets.params import DECODE_THREADS
from assets.skips import SkipCounts
from assets.wikidata.values import ID_DIGITS, is_entity_id

__all__ = [
    "Entity",
    "EntityHead",
    "EntityTerms",
    "ReadReport",
    "Sitelink",
    "Snak",
    "Statement",
    "Term",
    "WikidataReadError",
    "aliases",
    "iter_entities",
    "mapping",
    "qualifier_snaks",
    "sitelink_title",
    "term",
]

log = logging.getLogger(__name__)


class WikidataReadError(ValueError):
    """A Wikidata file that cannot be read on: names the file and the byte offset."""


class Term(msgspec.Struct, frozen=True, gc=False):
    language: str
    value: str


class Sitelink(msgspec.Struct, frozen=True, gc=False):
    site: str
    title: str


class DataValue(msgspec.Struct, frozen=True, gc=False):
    type: str
    value: msgspec.Raw
    """The value's JSON, decoded when read (:func:`~assets.wikidata.values.snak_value`)."""


class Snak(msgspec.Struct, frozen=True, gc=False):
    snaktype: str
    property: str
    datavalue: DataValue | None = None
    datatype: str | None = None


class Statement(msgspec.Struct, frozen=True, gc=False):
    mainsnak: Snak
    rank: str = "normal"
    id: str = ""
    qualifiers: dict[str, msgspec.Raw] | list[Any] = {}
    """Each property's qualifier snaks, undecoded until asked for (:func:`qualifier_snaks`)."""


Lazy = dict[str, msgspec.Raw] | list[Any]
"""A map of an entity decoded only for the keys asked for: labels, descriptions and aliases per language,
sitelinks per site hold hundreds of entries of which a build reads two (an empty map may come as
``[]``, as PHP writes it)."""


class EntityHead(msgspec.Struct, frozen=True, gc=False):
    """What a scoping pass reads of an entity: its id, type and sitelinks."""

    id: str
    type: str = "item"
    sitelinks: Lazy = {}


class EntityTerms(msgspec.Struct, frozen=True, gc=False):
    """An entity's labels, descriptions and aliases (a labelling pass: no statements decoded)."""

    id: str
    type: str = "item"
    labels: Lazy = {}
    descriptions: Lazy = {}
    aliases: Lazy = {}
    sitelinks: Lazy = {}
    datatype: str | None = None


class Entity(msgspec.Struct, frozen=True, gc=False):
    """A whole entity: statements decoded into structs, the per-language and per-site maps lazily
    (:func:`term`, :func:`aliases`, :func:`sitelink_title`)."""

    id: str
    type: str = "item"
    labels: Lazy = {}
    descriptions: Lazy = {}
    aliases: Lazy = {}
    claims: dict[str, list[Statement]] | list[Any] = {}
    sitelinks: Lazy = {}
    datatype: str | None = None


_TERM = msgspec.json.Decoder(Term)
_TERMS = msgspec.json.Decoder(list[Term])
_SITELINK = msgspec.json.Decoder(Sitelink)
_SNAKS = msgspec.json.Decoder(list[Snak])


def term(terms: Lazy, language: str) -> str | None:
    """The label or description in ``language`` (None: none)."""
    raw = mapping(terms).get(language)
    return _TERM.decode(raw).value if raw is not None else None


def aliases(terms: Lazy, language: str) -> list[str]:
    """The aliases in ``language``."""
    raw = mapping(terms).get(language)
    return [alias.value for alias in _TERMS.decode(raw)] if raw is not None else []


def sitelink_title(sitelinks: Lazy, site: str) -> str | None:
    """The title of the entity's page on ``site`` (``enwiki``; None: no sitelink there)."""
    raw = mapping(sitelinks).get(site)
    return _SITELINK.decode(raw).title if raw is not None else None


def qualifier_snaks(statement: Statement, prop: str) -> list[Snak]:
    """A statement's qualifier snaks of the property ``prop``."""
    raw = mapping(statement.qualifiers).get(prop)
    return _SNAKS.decode(raw) if raw is not None else []


T = TypeVar("T", EntityHead, EntityTerms, Entity)


@dataclass(slots=True)
class ReadReport(SkipCounts):
    """What reading one or more entity files met (files by name: a report is the same wherever the files
    are; the log names their paths)."""

    files: list[str] = field(default_factory=list)
    layouts: dict[str, str] = field(default_factory=dict)
    entities: int = 0
    bytes: int = 0
    offset: int = 0
    """The byte offset of the entity last handed out: a build that cannot use it names it by this."""

    def skip(self, path: Path, offset: int, reason: str, detail: str) -> None:
        self.count_skip("entity", path, ("offset", offset), reason, detail)

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "layouts": self.layouts,
            "entities": self.entities,
            "bytes": self.bytes,
            **self.skip_counts(),
        }


def _lines(path: Path, handle: IO[bytes], max_bytes: int, report: ReadReport) -> Iterator[tuple[int, bytes]]:
    """``(offset, line)`` of the decompressed stream, the offset of the line's first byte; a line over
    ``max_bytes`` is read on in bounded pieces, never held, and counted as skipped; a stream that breaks
    off is a :class:`WikidataReadError` naming the file and the offsets."""
    try:
        for _, offset, line in bounded_lines(handle, max_bytes):
            if line is None:
                report.skip(path, offset, "too_large", f"a line over {max_bytes:,} bytes")
                continue
            yield offset, line
    except CompressedInputError as error:
        raise WikidataReadError(str(error)) from None


def _entity_line(line: bytes) -> bytes:
    """A dump line without its trailing ``,`` and the whitespace around it (one copy of the line)."""
    return line.strip().rstrip(b",") if line[:1].isspace() else line.rstrip(b" \t\r\n,")


def _document_entities(document: Any) -> list[Any]:
    """The entities of a one-document file (``{"entities": {...}}``, one entity, or a list of them)."""
    if isinstance(document, dict) and isinstance(document.get("entities"), dict):
        return [value for value in document["entities"].values() if isinstance(value, dict)]
    if isinstance(document, dict):
        return [document]
    if isinstance(document, list):
        return [value for value in document if isinstance(value, dict)]
    return []


def iter_entities(
    path: Path,
    kind: type[T] = Entity,  # type: ignore[assignment]
    *,
    limits: WikidataLimits | None = None,
    report: ReadReport | None = None,
    threads: int = DECODE_THREADS,
) -> Iterator[T]:
    """Every entity of ``path`` (any layout above, bz2, gzip or plain) decoded as ``kind``; what is not an
    entity is counted in ``report`` and skipped."""
    limits = limits or WikidataLimits()
    report = report if report is not None else ReadReport()
    path = Path(path)
    report.files.append(path.name)
    if not path.is_file():
        raise WikidataReadError(f"{path.absolute()}: not a file (wikidata.files in params.yaml)")
    before, skipped = report.entities, report.skipped
    yield from _file_entities(path, kind, limits, report, threads)
    if report.entities == before:
        skips = report.skipped - skipped
        raise WikidataReadError(
            f"{path.absolute()}: holds no entity ({skips:,} line(s) skipped, "
            f"{report.layouts.get(path.name, 'no')} layout): an empty or wrong entity file "
            "(wikidata.files in params.yaml)"
        )


def _file_entities(
    path: Path, kind: type[T], limits: WikidataLimits, report: ReadReport, threads: int
) -> Iterator[T]:
    decoder = msgspec.json.Decoder(kind)
    with open_compressed(path, threads) as handle:
        lines = _lines(path, handle, limits.max_entity_bytes, report)
        layout = "lines"
        for offset, line in lines:
            stripped = _entity_line(line)
            if stripped == b"[":
                layout = "dump"
                continue
            if not stripped:
                continue
            if _is_document_start(stripped):
                report.layouts[path.name] = "document"
                yield from _read_document(path, line, lines, kind, limits, report)
                return
            lines = itertools.chain([(offset, line)], lines)
            break
        report.layouts[path.name] = layout
        for offset, line in lines:
            report.bytes += len(line)
            stripped = _entity_line(line)
            if not stripped or stripped in (b"[", b"]"):
                continue
            try:
                entity = decoder.decode(stripped)
            except (msgspec.ValidationError, msgspec.DecodeError, RecursionError, ValueError) as error:
                # bad JSON, a field of another type, nesting past the decoder's depth, bytes not UTF-8
                report.skip(path, offset, "not_an_entity", str(error) or type(error).__name__)
                continue
            problem = _id_problem(entity)
            if problem is not None:
                report.skip(path, offset, "bad_id", problem)
                continue
            report.entities += 1
            report.offset = offset
            yield entity


def _id_problem(entity: Any) -> str | None:
    """What is wrong with the ids of an entity (its own, its statements' properties), or None: an id the
    KB cannot hold (``P`` and 500 digits, ``not-a-property``) skips the entity rather than fail the
    build's graph."""
    if not _bounded_name(entity.id):
        return f"an entity id {entity.id[:40]!r} that is not 1 to {ID_CHARS} ASCII letters, digits, - or _"
    for prop, statements in mapping(getattr(entity, "claims", None)).items():
        if not is_entity_id(prop, "P"):
            return f"{entity.id}: a property id {prop[:40]!r} that is not P and 1 to {ID_DIGITS} digits"
        for statement in statements:
            if statement.mainsnak.property != prop and not is_entity_id(statement.mainsnak.property, "P"):
                return f"{entity.id}: a snak of property {statement.mainsnak.property[:40]!r}"
    return None


ID_CHARS = 64
"""The longest entity id kept (``Q42``, a lexeme's form ``L1-F2``, a Wikibase's own); only item and
property ids of at most ``ID_DIGITS`` digits enter the KB graph (:mod:`.graph`)."""


def _bounded_name(text: str) -> bool:
    return 0 < len(text) <= ID_CHARS and text.isascii() and text.replace("-", "").replace("_", "").isalnum()


def _is_document_start(stripped: bytes) -> bool:
    """Whether a first line opens a JSON document spread over lines, or is a one-line
    ``{"entities": ...}`` or array of entities, rather than one entity of a line-per-entity file."""
    try:
        value = msgspec.json.decode(stripped)
    except (msgspec.DecodeError, RecursionError, ValueError):  # not JSON, too deep, not UTF-8
        return stripped in (b"{", b"[") or stripped.startswith((b'{"entities"', b"[{"))
    return (isinstance(value, dict) and "entities" in value and "id" not in value) or isinstance(value, list)


def _read_document(
    path: Path,
    first: bytes,
    lines: Iterator[tuple[int, bytes]],
    kind: type[T],
    limits: WikidataLimits,
    report: ReadReport,
) -> Iterator[T]:
    buffer = io.BytesIO()
    buffer.write(first)
    for _, line in lines:
        buffer.write(line)
        if buffer.tell() > limits.max_document_bytes:
            raise WikidataReadError(
                f"{path}: a JSON document over {limits.max_document_bytes:,} bytes (limit: "
                "limits.wikidata.max_document_bytes in params.yaml); a dump this large comes one entity "
                "per line"
            )
    data = buffer.getvalue()
    report.bytes += len(data)
    try:
        document = msgspec.json.decode(data)
    except msgspec.DecodeError as error:
        raise WikidataReadError(
            f"{path}: neither one entity per line nor one JSON document ({error})"
        ) from None
    decoder = msgspec.json.Decoder(kind)
    for position, value in enumerate(_document_entities(document)):
        try:  # as JSON again: the lazy maps keep their entries as undecoded JSON
            entity = decoder.decode(msgspec.json.encode(value))
        except msgspec.ValidationError as error:
            report.skip(path, position, "not_an_entity", f"entity {position} of the document: {error}")
            continue
        report.entities += 1
        yield entity


def mapping(value: Any) -> dict[str, Any]:
    """A map of an entity (``labels``, ``claims``, ...), ``{}`` when the dump wrote an empty one as ``[]``."""
    return value if isinstance(value, dict) else {}
