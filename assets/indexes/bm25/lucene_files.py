"""Byte-reproducible Lucene indexes: pin what Lucene takes from the clock, the host and chance.

Two builds of the same collection differ in three places, everything else being equal:

* the 16-byte segment and commit ids, drawn from ``/dev/urandom`` unless the JVM system property
  ``tests.seed`` is set (Lucene's ``StringHelper``): :func:`segment_id_seed` derives one from the
  collection, so different collections still get different ids;
* the diagnostics of each segment info file (``_N.si``): ``timestamp`` (the wall clock) and
  ``os.version`` (the host's kernel), and the order of its maps (Java salts it per run);
* the CRC32 footer of those files, which covers the diagnostics.

:func:`pin_segment_diagnostics` rewrites those diagnostic values and the footer in place, as
Debian's ``strip-nondeterminism`` does for the timestamps in jars, and returns the original values
for the run record. The timestamp becomes ``SOURCE_DATE_EPOCH`` (in milliseconds) when that is set,
else 0. Lucene reads diagnostics only to show them (``CheckIndex``, Luke).
"""

from __future__ import annotations

import hashlib
import os
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path

CODEC_MAGIC = 0x3FD76C17  # CodecUtil.CODEC_MAGIC, the first 4 bytes of every Lucene file
FOOTER_MAGIC = (~CODEC_MAGIC) & 0xFFFFFFFF  # CodecUtil.FOOTER_MAGIC, big-endian before the checksum
SEGMENT_INFO_CODEC = "Lucene90SegmentInfo"  # the .si format of Lucene 9 (pyserini 1.6: Lucene 9.9.1)
FOOTER_LENGTH = 16  # magic (4), algorithm id (4), CRC32 as a big-endian long (8)
UNRECORDED = "unrecorded"


class LuceneFileError(ValueError):
    """A segment info file that does not look like what this module knows how to rewrite."""


def segment_id_seed(files: Iterable[Path]) -> str:
    """A ``tests.seed`` value (hex, as Lucene parses it) from the collection's file names and sizes."""
    digest = hashlib.sha256()
    for path in sorted(Path(f) for f in files):
        digest.update(f"{path.name}\0{path.stat().st_size}\n".encode())
    return digest.hexdigest()[:16].upper()


def pinned_diagnostics(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The diagnostic values every build writes: the clock from ``SOURCE_DATE_EPOCH`` (or 0), no kernel."""
    epoch = (os.environ if environ is None else environ).get("SOURCE_DATE_EPOCH", "").strip()
    if epoch and not epoch.isdigit():
        raise ValueError(f"SOURCE_DATE_EPOCH must be whole seconds since 1970, got {epoch!r}")
    return {"timestamp": str(int(epoch or 0) * 1000), "os.version": UNRECORDED}


def _read_vint(data: bytes, offset: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if offset >= len(data):
            raise LuceneFileError("truncated variable-length integer")
        byte = data[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, offset
        shift += 7


def _vint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _string(text: str) -> bytes:
    raw = text.encode("utf-8")
    return _vint(len(raw)) + raw


def _check_footer(data: bytes, path: Path) -> None:
    if len(data) < FOOTER_LENGTH or int.from_bytes(data[-16:-12], "big") != FOOTER_MAGIC:
        raise LuceneFileError(f"{path}: no Lucene codec footer")
    if int.from_bytes(data[-8:], "big") != zlib.crc32(data[:-8]):
        raise LuceneFileError(f"{path}: CRC32 footer does not match the file")


def _read_string(data: bytes, offset: int) -> tuple[str, int]:
    length, offset = _read_vint(data, offset)
    if offset + length > len(data):
        raise LuceneFileError("string runs past the end of the file")
    return data[offset : offset + length].decode("utf-8"), offset + length


def _read_strings(data: bytes, offset: int, per_entry: int) -> tuple[list[tuple[str, ...]], int]:
    count, offset = _read_vint(data, offset)
    entries = []
    for _ in range(count):
        entry = []
        for _ in range(per_entry):
            text, offset = _read_string(data, offset)
            entry.append(text)
        entries.append(tuple(entry))
    return entries, offset


def _write_strings(entries: Iterable[tuple[str, ...]]) -> bytes:
    ordered = sorted(entries)
    return _vint(len(ordered)) + b"".join(_string(text) for entry in ordered for text in entry)


def pin_segment_info(path: Path, values: Mapping[str, str]) -> dict[str, str]:
    """Pin the diagnostics ``values`` (key -> new value) of one ``.si`` file; ``{key: old value}``.

    The file is parsed as Lucene 9's ``Lucene90SegmentInfo`` (header, versions, document count,
    compound flag, from Lucene 9.9 a blocks flag, then the diagnostics map, the file set and the
    attributes map). Those three are
    written back sorted: Lucene fills them from Java's immutable maps, whose iteration order is
    salted per JVM, so two runs list them in different orders. The CRC32 footer is recomputed. A
    file that fails its own checksum, or another format, is refused, never silently damaged.
    """
    path = Path(path)
    data = path.read_bytes()
    _check_footer(data, path)
    body = data[:-FOOTER_LENGTH]
    try:
        codec, offset = _read_string(body, 4)
        if int.from_bytes(body[:4], "big") != CODEC_MAGIC or codec != SEGMENT_INFO_CODEC:
            raise LuceneFileError(f"codec {codec!r}, this knows {SEGMENT_INFO_CODEC!r}")
        offset += 4 + 16  # format version, segment id
        offset += 1 + body[offset]  # suffix
        written_by = (
            int.from_bytes(body[offset : offset + 4], "little"),
            int.from_bytes(body[offset + 4 : offset + 8], "little"),
        )
        offset += 12  # version that wrote the segment: major, minor, bugfix
        offset += 1 + (12 if body[offset] == 1 else 0)  # min version
        offset += 4 + 1  # document count, compound-file flag
        if written_by >= (9, 9):
            offset += 1  # has-blocks flag (Lucene99SegmentInfoFormat, same codec name)
        fixed = body[:offset]
        diagnostics, offset = _read_strings(body, offset, 2)
        files, offset = _read_strings(body, offset, 1)
        attributes, offset = _read_strings(body, offset, 2)
    except (LuceneFileError, IndexError, UnicodeDecodeError) as error:
        raise LuceneFileError(f"{path}: not a segment info file this can rewrite ({error})") from error
    current = dict(diagnostics)
    originals = {key: current[key] for key in values if key in current}
    current |= {key: value for key, value in values.items() if key in current}
    body = (
        fixed
        + _write_strings(current.items())
        + _write_strings(files)
        + _write_strings(attributes)
        + body[offset:]  # index sort fields, kept as they are
    )
    footer_head = data[-FOOTER_LENGTH:-8]
    rewritten = body + footer_head + zlib.crc32(body + footer_head).to_bytes(8, "big")
    if rewritten != data:
        temp = path.with_name(path.name + ".pinning")
        temp.write_bytes(rewritten)
        os.replace(temp, path)
    return originals


def pin_segment_diagnostics(
    index_dir: Path, values: Mapping[str, str] | None = None
) -> dict[str, dict[str, str]]:
    """Pin the diagnostics of every segment of a Lucene index; ``{segment file: original values}``."""
    values = pinned_diagnostics() if values is None else values
    return {path.name: pin_segment_info(path, values) for path in sorted(Path(index_dir).glob("*.si"))}
