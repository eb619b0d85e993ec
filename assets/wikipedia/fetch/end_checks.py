"""Whether a file in the landing folder is whole, by its end: a dump ends with ``</mediawiki>`` (bz2: an
end-of-stream marker, the last stream decoded), a SQL table with mysqldump's ``-- Dump completed``, an
Enterprise HTML dump with every gzip member checked and the tar's end; a run of zero bytes anywhere is a
hole that a preallocating downloader leaves. What :mod:`assets.wikipedia.fetch.landing` asks of a file
that no checksum list names, and the digest it asks of one that a list names. Pure module."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import BinaryIO

from assets.compressed import CompressedInputError, check_compressed, open_compressed, range_pieces
from assets.wikipedia.dump import BZ2_STREAM_RE

__all__ = [
    "BZ2_TAIL_SCAN_BYTES",
    "ZERO_RUN_BYTES",
    "dump_end_problem",
    "file_digest",
    "html_dump_end_problem",
    "sql_dump_end_problem",
    "zero_run_offset",
]

BZ2_TAIL_SCAN_BYTES = 32 << 20
"""How far from the end of a bz2 file the last stream is looked for, to decompress it."""
_TAR_END = bytes(1024)
"""A tar archive ends with two 512-byte blocks of zeros."""
_SQL_END = b"-- Dump completed"
_BZ2_EOS_MAGIC = 0x177245385090
_END_TAG = b"</mediawiki>"
_CHUNK = 1 << 20


def file_digest(path: Path, algorithm: str) -> str:
    """Hex digest of a file (``sha1`` or ``md5``), read in 1 MiB chunks."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, algorithm).hexdigest()


def _read_tail(stream: BinaryIO, keep: int = 4096) -> bytes:
    tail = b""
    while chunk := stream.read(_CHUNK):
        tail = (tail + chunk)[-keep:]
    return tail


def _ends_with_end_tag(tail: bytes, what: str) -> str | None:
    if tail.rstrip().endswith(_END_TAG):
        return None
    return f"{what} does not end with {_END_TAG.decode()} (still being written or truncated)"


def _has_bz2_end_marker(handle: BinaryIO, size: int) -> bool:
    """A bz2 stream ends with the 48-bit end-of-stream magic, a 32-bit CRC and 0-7 padding bits."""
    if size < 11:
        return False
    handle.seek(size - 11)
    value = int.from_bytes(handle.read(11), "big")  # 88 bits >= 48 + 32 + 7
    return any((value >> (32 + pad)) & ((1 << 48) - 1) == _BZ2_EOS_MAGIC for pad in range(8))


def _last_bz2_stream(handle: BinaryIO, size: int, limit: int) -> int | None:
    """Offset of the last bz2 stream header within ``limit`` bytes of the end; None if farther."""
    end = size
    lowest = max(0, size - limit)
    while end > lowest:
        start = max(lowest, end - _CHUNK)
        handle.seek(start)
        data = handle.read(min(end + 9, size) - start)  # overlap: a header cut by the chunk border
        found = [m.start() for m in BZ2_STREAM_RE.finditer(data)]
        if found:
            return start + found[-1]
        end = start
    return None


def _bz2_end_problem(path: Path, size: int) -> str | None:
    with open(path, "rb") as handle:
        if not _has_bz2_end_marker(handle, size):
            return "bz2 data does not end with an end-of-stream marker (still being copied or truncated)"
        start = _last_bz2_stream(handle, size, BZ2_TAIL_SCAN_BYTES)
        if start is None:
            return None  # one stream longer than the scan limit: its end marker is the check
    tail = b""
    try:  # the last stream group decoded to its end marker, a piece at a time: only its tail is kept
        for piece in range_pieces(path, start, size):
            tail = (tail + piece)[-4096:]
    except CompressedInputError as error:
        return f"the last bz2 stream, at byte {start}: {error}"
    return _ends_with_end_tag(tail, "decompressed data")


def _stream_end_problem(path: Path, what: str) -> str | None:
    try:
        with open_compressed(path, threads=1) as stream:
            tail = _read_tail(stream)
    except CompressedInputError as error:  # it names the codec, the file and the offsets
        return f"still being copied? {error}"
    return _ends_with_end_tag(tail, f"decompressed {what} data")


ZERO_RUN_BYTES = 4096
"""A run of this many zero bytes is a hole (valid XML holds no NUL, in UTF-8 or UTF-16; compressed data
never has one this long): what a downloader that preallocates the file leaves where it has not written."""


def zero_run_offset(path: Path, run: int = ZERO_RUN_BYTES) -> int | None:
    """Offset of the first run of ``run`` zero bytes in ``path`` (None when there is none); one read."""
    zeros = bytes(run)
    carry, offset = b"", 0
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            data = carry + chunk
            found = data.find(zeros)
            if found >= 0:
                return offset - len(carry) + found
            carry = data[-(run - 1) :]
            offset += len(chunk)
    return None


def sql_dump_end_problem(path: Path) -> str | None:
    """Why a gzipped SQL table dump is not complete (None when it is): a truncated or corrupt gzip
    stream, or decompressed data that does not end with mysqldump's ``-- Dump completed`` line."""
    try:
        with open_compressed(path, threads=1) as stream:
            tail = _read_tail(stream)
    except CompressedInputError as error:
        return f"still being copied? {error}"
    if _SQL_END in tail[-200:]:
        return None
    return "the SQL dump does not end with '-- Dump completed' (still being written or truncated)"


def dump_end_problem(path: Path) -> str | None:
    """Why ``path`` is not a complete dump (None when it is): a hole, or an end that is not a dump's.

    A run of :data:`ZERO_RUN_BYTES` zero bytes anywhere is a hole left by a preallocating downloader (the
    whole file is read once for it). Then, by the magic bytes:

    * plain XML: the last bytes hold ``</mediawiki>``;
    * bz2: the file ends with a bz2 end-of-stream marker and, when the last stream starts within
      :data:`BZ2_TAIL_SCAN_BYTES` of the end (always so for multistream dumps, whose last stream is
      tiny), that stream decompresses to its end and ends with ``</mediawiki>``; a longer single
      stream is trusted on its end marker and the hole check (decompressing 20 GB of bz2 takes an
      hour);
    * gz and xz (not what Wikimedia publishes): the whole file is decompressed (no random access),
      once per file version thanks to the cache; xz fails fast on a missing stream footer.
    """
    size = path.stat().st_size
    hole = zero_run_offset(path)
    if hole is not None:
        return (
            f"{ZERO_RUN_BYTES} zero bytes at byte {hole}: a hole that a preallocating download leaves "
            "(still being downloaded, or broken)"
        )
    with open(path, "rb") as handle:
        magic = handle.read(6)
        if not magic.startswith((b"BZh", b"\x1f\x8b", b"\xfd7zXZ\x00")):
            handle.seek(max(0, size - 4096))
            return _ends_with_end_tag(handle.read(), "file")
        if magic.startswith(b"\xfd7zXZ\x00"):
            handle.seek(max(0, size - 2))
            if handle.read(2) != b"YZ":
                return "xz data does not end with a stream footer (still being copied or truncated)"
    if magic.startswith(b"BZh"):
        return _bz2_end_problem(path, size)
    if magic.startswith(b"\x1f\x8b"):
        return _stream_end_problem(path, "gzip")
    return _stream_end_problem(path, "xz")


def html_dump_end_problem(path: Path) -> str | None:
    """Why an Enterprise HTML dump (a gzip'd tar) is not complete (None when it is): a hole, a gzip member
    cut short or damaged (every member's CRC-32 and length checked: the whole file is read, once per file
    version thanks to the cache), or a tar that does not end with its two zero blocks."""
    hole = zero_run_offset(path)
    if hole is not None:
        return f"{ZERO_RUN_BYTES} zero bytes at byte {hole}: a hole (still being downloaded, or broken)"
    try:
        check = check_compressed(path, tail_bytes=len(_TAR_END))
    except CompressedInputError as error:
        return f"still being copied? {error}"
    if check.kind != "gzip":
        return f"not gzip'd ({check.kind}), as an Enterprise HTML dump is"
    if check.tail != _TAR_END:
        return "the tar does not end with its two zero blocks (still being written, or cut between members)"
    return None
