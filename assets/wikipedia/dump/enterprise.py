"""Wikimedia Enterprise HTML dumps (``<wiki>-NS0-<date>-ENTERPRISE-HTML.json.tar.gz``) read as a stream.

A dump is a gzip'd tar of ndjson files, one article record a line: ``name``, ``identifier`` (the page id),
``version.identifier`` (the revision), ``date_modified``, ``url``, ``namespace``, ``in_language``,
``is_part_of`` (the wiki's dbname), ``main_entity`` (its Wikidata QID), ``redirects`` (titles that
redirect to it), ``categories``, ``article_body.html`` (Parsoid) and ``article_body.wikitext``.

The file is read once, in order: gzip through the project's one opener (:mod:`assets.compressed`:
truncation and a bad CRC or length are errors naming the file and offset), tar members one after another
(a member is never held: its lines are read in bounded pieces), each line bounded by
``knowledge_source.max_record_bytes`` and decoded into a typed :class:`EnterpriseRecord` (msgspec: no dicts,
a bad line is one error). What cannot be read is a counted skip naming the member and line: a line over
the bound, a line that is not a record, a record of another namespace, a tar entry that is not a file.

Pure module: no Dagster import.
"""

from __future__ import annotations

import re
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import msgspec

from assets.compressed import CompressedInputError, bounded_lines, open_compressed
from assets.skips import SkipCounts
from assets.snapshot_ids import ENTERPRISE_NAME_PATTERN

__all__ = [
    "ENTERPRISE_NAME_RE",
    "EnterpriseDumpError",
    "EnterpriseRead",
    "EnterpriseRecord",
    "holds_records",
    "is_enterprise_dump",
    "read_enterprise_dump",
]

ENTERPRISE_NAME_RE = re.compile(rf"^{ENTERPRISE_NAME_PATTERN}$")
"""The file name Wikimedia gives an Enterprise HTML dump."""

_TAR_MAGIC = b"ustar"


class EnterpriseDumpError(ValueError):
    """The file is not a readable Enterprise HTML dump (the message names it and where it stopped)."""


class _Named(msgspec.Struct):
    name: str = ""
    url: str | None = None


PageNumber = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]
"""A page id or revision: what an int64 column holds (a larger one makes the line a counted skip)."""


class _Identified(msgspec.Struct):
    identifier: PageNumber | None = None


class _Keyed(msgspec.Struct):
    identifier: str | None = None
    url: str | None = None


class _Body(msgspec.Struct):
    html: str | None = None
    wikitext: str | None = None


class EnterpriseRecord(msgspec.Struct, kw_only=True):
    """One article record as the dump's ndjson line carries it (fields the build does not read are
    ignored; a field of the wrong type makes the line a counted skip)."""

    name: str
    identifier: PageNumber
    date_modified: str | None = None
    url: str | None = None
    version: _Identified | None = None
    namespace: _Identified | None = None
    in_language: _Keyed | None = None
    is_part_of: _Keyed | None = None
    main_entity: _Keyed | None = None
    redirects: list[_Named] = msgspec.field(default_factory=list)
    categories: list[_Named] = msgspec.field(default_factory=list)
    article_body: _Body | None = None

    @property
    def revision(self) -> int | None:
        return self.version.identifier if self.version is not None else None

    @property
    def html(self) -> str | None:
        return self.article_body.html if self.article_body is not None else None

    @property
    def wikitext(self) -> str | None:
        return self.article_body.wikitext if self.article_body is not None else None

    @property
    def qid(self) -> str | None:
        return self.main_entity.identifier if self.main_entity is not None else None


@dataclass(slots=True)
class EnterpriseRead(SkipCounts):
    """What a read of one dump saw: members, lines, records handed out, the wiki, and what was skipped."""

    members: int = 0
    lines: int = 0
    records: int = 0
    dbname: str | None = None
    language: str | None = None
    server: str | None = None
    member_names: list[str] = field(default_factory=list)


def is_enterprise_dump(path: Path) -> bool:
    """Whether ``path`` is an Enterprise HTML dump: its name, else a gzip'd tar whose first member is
    ndjson (a renamed copy)."""
    return bool(ENTERPRISE_NAME_RE.match(Path(path).name)) or holds_records(path)


def holds_records(path: Path) -> bool:
    """Whether ``path`` is a gzip'd tar whose first member is ndjson (by its first 512 bytes)."""
    try:
        with open(path, "rb") as handle:
            if handle.read(2) != b"\x1f\x8b":
                return False
        with open_compressed(Path(path), threads=1) as stream:
            head = stream.read(512)
    except (OSError, CompressedInputError):
        return False
    return len(head) == 512 and head[257:262] == _TAR_MAGIC and b".ndjson" in head[:100]


_DECODER = msgspec.json.Decoder(EnterpriseRecord)
TAIL_KEPT = 1 << 16
"""Bytes of a tar's decompressed stream kept to find its end-of-archive blocks (tarfile reads ahead at most
one 10 KiB record)."""
_END_BLOCKS = bytes(2 * tarfile.BLOCKSIZE)


def _detail(line: bytes) -> str:
    return line[:120].decode("utf-8", "replace")


def read_enterprise_dump(
    path: Path, max_record_bytes: int, read: EnterpriseRead | None = None, namespace: int = 0
) -> Iterator[tuple[str, int, EnterpriseRecord]]:
    """``(member, line number, record)`` of every article record of namespace ``namespace`` in ``path``,
    in file order; ``read`` collects the counts and skips. A truncated or damaged file is an
    :class:`EnterpriseDumpError` naming it (and the member being read)."""
    path = Path(path)
    read = read if read is not None else EnterpriseRead()
    member_name = "(before the first member)"
    try:
        with open_compressed(path) as decompressed:
            stream = _TailKeeper(decompressed)
            try:
                archive = tarfile.open(fileobj=stream, mode="r|")  # noqa: SIM115 (streamed: closed below)
            except tarfile.TarError as error:
                raise EnterpriseDumpError(f"{path.absolute()}: not a tar archive ({error})") from None
            with archive:
                for member in archive:
                    member_name = member.name
                    read.members += 1
                    if not member.isfile():
                        read.count_skip(
                            "tar entry", path, ("member", read.members), "not_a_file", member.name
                        )
                        continue
                    read.member_names.append(member.name)
                    handle = archive.extractfile(member)
                    if handle is None:
                        continue
                    yield from _member_records(path, member.name, handle, max_record_bytes, read, namespace)
                if not stream.ends_archive_at(archive.offset):
                    raise EnterpriseDumpError(
                        f"{path.absolute()}: the tar archive stops after member {member_name!r} at byte "
                        f"{archive.offset:,} of its content without the two zero blocks that end a tar (a "
                        "download cut between members?); fetch the file again"
                    )
    except CompressedInputError as error:
        raise EnterpriseDumpError(f"{error} (in tar member {member_name!r})") from None
    except tarfile.TarError as error:
        raise EnterpriseDumpError(
            f"{path.absolute()}: the tar archive is damaged or cut in member {member_name!r} ({error}); "
            "fetch the file again"
        ) from None


class _TailKeeper:
    """A read-only stream that remembers the last :data:`TAIL_KEPT` bytes it gave, so that a tar read as a
    stream can be checked for its end-of-archive blocks once tarfile stops (tarfile ends silently when the
    data stops at a member boundary)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.total = 0
        self._tail = bytearray()

    def read(self, size: int = -1) -> bytes:
        data = self._stream.read(size)
        self.total += len(data)
        self._tail += data
        del self._tail[: max(0, len(self._tail) - TAIL_KEPT)]
        return data

    def ends_archive_at(self, offset: int) -> bool:
        """Whether the two zero blocks that end a tar stand at ``offset`` (the rest of the stream, the
        record padding, is read: at most :data:`TAIL_KEPT` bytes)."""
        while self.total - offset < len(_END_BLOCKS) and self.read(TAIL_KEPT):
            pass
        start = len(self._tail) - (self.total - offset)
        return start >= 0 and self._tail[start : start + len(_END_BLOCKS)] == _END_BLOCKS


def _member_records(
    path: Path, member: str, handle: Any, max_record_bytes: int, read: EnterpriseRead, namespace: int
) -> Iterator[tuple[str, int, EnterpriseRecord]]:
    where = f"{path.name}:{member}"
    for number, _, line in bounded_lines(handle, max_record_bytes):
        read.lines += 1
        if line is None:
            read.count_skip(
                "record", where, ("line", number), "record_too_large",
                f"over knowledge_source.max_record_bytes ({max_record_bytes:,} bytes)",
            )  # fmt: skip
            continue
        if not line.strip():
            continue
        try:
            record = _DECODER.decode(line)
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            read.count_skip("record", where, ("line", number), "not_a_record", f"{error}: {_detail(line)}")
            continue
        except UnicodeDecodeError as error:
            read.count_skip("record", where, ("line", number), "not_utf8", f"{error}: {_detail(line)}")
            continue
        except RecursionError:
            read.count_skip("record", where, ("line", number), "not_a_record", "nested too deeply")
            continue
        record_namespace = record.namespace.identifier if record.namespace is not None else 0
        if record_namespace != namespace:
            read.count_skip(
                "record", where, ("line", number), "other_namespace",
                f"{record.name!r} is in namespace {record_namespace}",
            )  # fmt: skip
            continue
        if read.dbname is None:
            read.dbname = record.is_part_of.identifier if record.is_part_of else None
            read.language = record.in_language.identifier if record.in_language else None
            read.server = _server(record.url)
        read.records += 1
        yield member, number, record


def _server(url: str | None) -> str | None:
    """``https://en.wikipedia.org`` of ``https://en.wikipedia.org/wiki/Title``."""
    if not url or "://" not in url:
        return None
    scheme, _, rest = url.partition("://")
    host = rest.split("/", 1)[0]
    return f"{scheme}://{host}" if host else None
