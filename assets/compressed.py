"""One opener for the compressed inputs of the project: XML dumps and SQL tables, entity and label files,
QA-pair and DPR passage files, dataset, topics and run files, KILT JSON lines; and one decoder of a byte
range of a multistream file (a bz2 stream group of a multistream dump, found by its index).

The codec is chosen by the file's magic bytes, never by its name (bz2, gzip, xz, or none). Every stream it
hands out ends in one of two ways: at the codec's own end (every member or stream closed by its end marker
and checksum) or with :class:`CompressedInputError`, which names the file, the decompressed offset reached,
the compressed offset where the bytes stopped making sense, and the next command. A stream that is cut short
is never a short, silent success, whatever the decoder underneath does:

- **gzip** is inflated by zlib, in a thread of its own that runs ahead of the reader (zlib releases the GIL,
  so decoding overlaps the parse on another core), member after member; zlib checks every member's CRC-32
  and ISIZE, and a file that ends inside a member is truncation. (rapidgzip decodes in parallel but reaches
  a silent end of file on some truncated streams: rapidgzip issue #71; it is not used.)
- **bz2** is decoded in parallel inside the file by ``indexed_bzip2`` (every block's CRC and the stream's
  end marker checked); its C++ errors (``RuntimeError: std::exception``) become the named error. On one
  thread it reads through a counting file, so the compressed offset is known (progress bars, errors).
- **xz** by Python's ``lzma`` (end-of-stream marker and check).

The decoded stream is a buffered binary file (``read``, ``readline``, iteration) that also tells its
:attr:`DecodedStream.compressed_offset`; :func:`open_text` gives it as text (UTF-8, a BOM dropped).
Memory is bounded by the read-ahead (:data:`READ_AHEAD` pieces of at most :data:`PIECE_BYTES`), never by
the file or by what one compressed block expands to.

Pure module: no Dagster import.
"""

from __future__ import annotations

import bz2
import io
import lzma
import os
import queue
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

__all__ = [
    "EVERY_CORE",
    "CompressedCheck",
    "CompressedInputError",
    "DecodedStream",
    "bounded_lines",
    "check_compressed",
    "compression_of",
    "decompress_range",
    "open_compressed",
    "open_text",
    "range_pieces",
    "text_lines",
]

MAGIC = {"bz2": b"BZh", "gzip": b"\x1f\x8b", "xz": b"\xfd7zXZ\x00"}
"""The first bytes of each codec's files."""
PIECE_BYTES = 1 << 20
"""Compressed bytes read, and decompressed bytes handed on, per piece."""
READ_AHEAD = 8
"""Decompressed pieces the gzip thread may hold ready ahead of the reader."""
BUFFER_BYTES = 1 << 20
"""The buffer of the stream handed out (``readline`` looks this far at a time)."""
EVERY_CORE = 0
"""A thread count meaning one thread per core."""


class CompressedInputError(ValueError):
    """A compressed input that ends before its codec's end, or whose bytes are damaged: names the file,
    the offsets and the next command."""


def compression_of(path: Path) -> str:
    """``bz2``, ``gzip``, ``xz`` or ``none``, by the file's first bytes."""
    with open(path, "rb") as handle:
        head = handle.read(6)
    return next((kind for kind, magic in MAGIC.items() if head.startswith(magic)), "none")


def _problem(path: Path, kind: str, decompressed: int, compressed: int | None, why: str) -> str:
    size = os.path.getsize(path)
    where = (
        f", near compressed byte {compressed:,} of {size:,}"
        if compressed is not None
        else f", a file of {size:,} bytes"
    )
    return (
        f"{Path(path).absolute()}: the {kind} stream {why} after {decompressed:,} decompressed bytes{where}; "
        "the file is incomplete or damaged: fetch it again (kiltpipe fetch verifies its checksum)"
    )


class _GzipPieces:
    """gzip members inflated by zlib in a thread, ahead of the reader; :meth:`read` hands out the pieces
    in order and raises the thread's error (truncation, a bad CRC or length) where it happened."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.compressed = 0
        self.members = 0
        """Members ended so far, each with its CRC-32 and length checked."""
        self._pieces: queue.Queue[bytes | BaseException | None] = queue.Queue(READ_AHEAD)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._inflate, name=f"gunzip {Path(path).name}", daemon=True)
        self._thread.start()

    def _put(self, item: bytes | BaseException | None) -> bool:
        while not self._stop.is_set():
            try:
                self._pieces.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _inflate(self) -> None:
        try:
            with open(self.path, "rb") as raw:
                self._members(raw)
        except BaseException as error:  # handed to the reader, raised there
            self._put(error)

    def _members(self, raw: IO[bytes]) -> None:
        inflate, started, produced = zlib.decompressobj(wbits=31), False, 0
        while chunk := raw.read(PIECE_BYTES):
            self.compressed = raw.tell()
            data, more = chunk, False
            while data or more:
                if not started and not data.strip(b"\x00"):
                    break  # zero padding after a member, as gzip allows
                started = True
                try:
                    piece = inflate.decompress(data, PIECE_BYTES)
                except zlib.error as error:
                    why = f"is damaged ({error})"
                    raise CompressedInputError(
                        _problem(self.path, "gzip", produced, raw.tell(), why)
                    ) from None
                produced += len(piece)
                if piece and not self._put(piece):
                    return
                if inflate.eof:  # a member ended, its CRC-32 and ISIZE checked by zlib: the next may begin
                    self.members += 1
                    data, more = inflate.unused_data, False
                    inflate, started = zlib.decompressobj(wbits=31), False
                else:  # a full piece: zlib may hold more output of the input it took
                    data, more = inflate.unconsumed_tail, len(piece) == PIECE_BYTES
        if started:
            why = "is truncated: it ends inside a member, before its end, CRC-32 and length"
            raise CompressedInputError(_problem(self.path, "gzip", produced, self.compressed, why))
        self._put(None)

    def read(self) -> bytes:
        item = self._pieces.get()
        if item is None:
            self._pieces.put(None)  # every later read: end of stream
            return b""
        if isinstance(item, BaseException):
            self._pieces.put(item)
            raise item
        return item

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


class _Counting(io.RawIOBase):
    """A file read through Python, keeping the furthest offset read: the compressed offset a decoder that
    reads ahead has reached."""

    def __init__(self, path: Path) -> None:
        self._file = open(path, "rb", buffering=0)  # noqa: SIM115 - closed in close()
        self.furthest = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        size = self._file.readinto(buffer) or 0
        self.furthest = max(self.furthest, self._file.tell())
        return size

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._file.seek(offset, whence)

    def tell(self) -> int:
        return self._file.tell()

    def close(self) -> None:
        self._file.close()
        super().close()


class _Decoded(io.RawIOBase):
    """The decompressed bytes of one file as a raw stream: errors of any decoder named, offsets counted."""

    def __init__(self, path: Path, kind: str, threads: int) -> None:
        self.path, self.kind, self.offset = Path(path), kind, 0
        self._rest, self._at = b"", 0  # the piece being handed out, and how far
        self._gzip: _GzipPieces | None = None
        self._handle: Any = None
        self._raw: _Counting | None = None
        if kind == "gzip":
            self._gzip = _GzipPieces(self.path)
        elif kind == "bz2":
            import indexed_bzip2

            if threads == 1:  # through Python: the compressed offset is known
                self._raw = _Counting(self.path)
                self._handle = indexed_bzip2.open(self._raw, parallelization=1)
            else:
                self._handle = indexed_bzip2.open(str(self.path), parallelization=threads)
        else:
            self._raw = _Counting(self.path)
            self._handle = lzma.open(self._raw, "rb")  # noqa: SIM115 - closed in close()

    @property
    def compressed_offset(self) -> int | None:
        """How far into the compressed file the decoder has read (None: a parallel decoder's, unknown)."""
        if self._gzip is not None:
            return self._gzip.compressed
        return self._raw.furthest if self._raw is not None else None

    @property
    def members(self) -> int | None:
        """gzip members read to their end so far (None for the other codecs)."""
        return self._gzip.members if self._gzip is not None else None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._at == len(self._rest):
            self._rest, self._at = self._next(), 0
        size = min(len(buffer), len(self._rest) - self._at)
        buffer[:size] = memoryview(self._rest)[self._at : self._at + size]
        self._at += size
        self.offset += size
        return size

    def _next(self) -> bytes:
        if self._gzip is not None:
            return self._gzip.read()
        try:
            return self._handle.read(PIECE_BYTES)
        except (EOFError, OSError, RuntimeError, lzma.LZMAError, ValueError) as error:
            decoder = "indexed_bzip2" if self.kind == "bz2" else self.kind
            why = (
                "is truncated: it ends before its end-of-stream marker"
                if isinstance(error, EOFError)
                else (f"is truncated or damaged ({decoder}: {str(error)[:200] or type(error).__name__})")
            )
            raise CompressedInputError(
                _problem(self.path, self.kind, self.offset, self.compressed_offset, why)
            ) from None

    def close(self) -> None:
        if not self.closed:
            if self._gzip is not None:
                self._gzip.close()
            if self._handle is not None:
                self._handle.close()
            if self._raw is not None:
                self._raw.close()
        super().close()


class DecodedStream(io.BufferedReader):
    """What :func:`open_compressed` hands out: the decompressed bytes, buffered, and how far into the
    compressed file they come from."""

    def __init__(self, raw: io.RawIOBase, kind: str) -> None:
        super().__init__(raw, BUFFER_BYTES)
        self.kind = kind
        """``bz2``, ``gzip``, ``xz`` or ``none``."""

    @property
    def compressed_offset(self) -> int | None:
        """The compressed bytes read so far (the file's offset for a plain file; None where a parallel
        decoder does not say)."""
        raw = self.raw
        return raw.compressed_offset if isinstance(raw, _Decoded) else raw.tell()


@dataclass(frozen=True, slots=True)
class CompressedCheck:
    """What reading a compressed file to its end verified: its codec, its gzip members (each member's
    CRC-32 and length checked; None for the other codecs), the bytes it decompresses to and their tail."""

    kind: str
    members: int | None
    decompressed: int
    tail: bytes


def check_compressed(path: Path, tail_bytes: int = 4096) -> CompressedCheck:
    """Read ``path`` through its codec to the end (memory: the read-ahead and ``tail_bytes``): every check
    the codec carries is made on the way, and a file cut short or damaged is :class:`CompressedInputError`."""
    tail = b""
    with open_compressed(path, threads=1) as stream:
        while chunk := stream.read(PIECE_BYTES):
            tail = (tail + chunk)[-tail_bytes:]
        raw = stream.raw
        members = raw.members if isinstance(raw, _Decoded) else None
        return CompressedCheck(
            stream.kind, members, stream.raw.offset if isinstance(raw, _Decoded) else stream.tell(), tail
        )


@contextmanager
def open_compressed(path: Path, threads: int = EVERY_CORE) -> Iterator[DecodedStream]:
    """The decompressed bytes of ``path`` (any codec, by magic bytes) as a buffered binary stream that ends
    at the codec's end or raises :class:`CompressedInputError`; bz2 decoded on ``threads`` threads inside
    the file (:data:`EVERY_CORE`: one per core), gzip in a thread ahead of the reader. Closed on exit."""
    threads = threads or os.cpu_count() or 1
    kind = compression_of(Path(path))
    raw: io.RawIOBase = (  # nothing to decode: the file itself
        io.FileIO(path) if kind == "none" else _Decoded(Path(path), kind, threads)
    )
    stream = DecodedStream(raw, kind)
    try:
        yield stream
    finally:
        stream.close()


@contextmanager
def open_text(path: Path, threads: int = 1) -> Iterator[IO[str]]:
    """:func:`open_compressed` as UTF-8 text (a BOM dropped); undecodable bytes are a ValueError."""
    with open_compressed(path, threads) as stream:
        yield io.TextIOWrapper(stream, encoding="utf-8-sig")


def range_pieces(path: Path, start: int, end: int) -> Iterator[bytes]:
    """The decompressed bytes of ``path``'s compressed bytes ``[start, end)``, whole bz2 streams one after
    another as a multistream file's index delimits them, in pieces of at most :data:`PIECE_BYTES` (memory
    stays bounded whatever a stream expands to); every stream must reach its end marker and the range must
    be in the file, else :class:`CompressedInputError` names the file and the range."""
    where = f"compressed bytes {start:,}-{end:,}"
    decoder, pending, fed, produced, left = bz2.BZ2Decompressor(), b"", False, 0, end - start
    with open(path, "rb") as handle:
        handle.seek(start)
        while True:
            if not pending and decoder.needs_input:
                pending = handle.read(min(PIECE_BYTES, left))
                left -= len(pending)
                if not pending:
                    break
            try:
                piece = decoder.decompress(pending, PIECE_BYTES)
            except (OSError, ValueError) as error:
                why = f"is damaged in {where} ({error})"
                raise CompressedInputError(_problem(path, "bz2", produced, end - left, why)) from None
            fed, pending, produced = fed or bool(pending), b"", produced + len(piece)
            if piece:
                yield piece
            if decoder.eof:  # a stream ended: the next one starts with what this one left over
                decoder, pending, fed = bz2.BZ2Decompressor(), decoder.unused_data, False
    if left or fed:
        why = f"is truncated: {where} end{'s' if left else ''} inside a stream"
        raise CompressedInputError(_problem(path, "bz2", produced, end - left, why))


def decompress_range(path: Path, start: int, end: int, *, max_bytes: int) -> bytes:
    """:func:`range_pieces` joined: a stream group read whole (its parse needs all of it), of at most
    ``max_bytes`` decompressed bytes (``knowledge_source.max_group_bytes``): past it, a bz2 bomb or a group
    of another size than a dump's, :class:`CompressedInputError` names the file, the range and the bound
    before more is held."""
    pieces, held = [], 0
    for piece in range_pieces(path, start, end):
        held += len(piece)
        if held > max_bytes:
            raise CompressedInputError(
                f"{Path(path).absolute()}: the bz2 streams of compressed bytes {start:,}-{end:,} expand past "
                f"{max_bytes:,} bytes (knowledge_source.max_group_bytes; {end - start:,} compressed bytes); "
                "the file is damaged or built to exhaust memory: fetch it again, or raise the setting"
            )
        pieces.append(piece)
    return b"".join(pieces)


def text_lines(path: Path, max_bytes: int, threads: int = 1) -> Iterator[tuple[int, str | None]]:
    """``(number, line)`` of every line of ``path`` (any codec, :func:`open_compressed`) as UTF-8 text
    without its line end (a BOM dropped from the first), read by :func:`bounded_lines`: None for a line
    over ``max_bytes`` (never held; the caller counts or refuses it). Bytes that are not UTF-8 are a
    ValueError naming the file and line."""
    with open_compressed(path, threads) as stream:
        for number, _, line in bounded_lines(stream, max_bytes):
            if line is None:
                yield number, None
                continue
            try:
                text = line.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as error:
                raise ValueError(f"{Path(path).absolute()}:{number}: not UTF-8 ({error})") from None
            yield number, text.rstrip("\r\n")


def strict_lines(
    path: Path, max_bytes: int, setting: str = "limits.input.max_line_bytes"
) -> Iterator[tuple[int, str]]:
    """:func:`text_lines` of a file whose every line must fit (a topics, run or KILT pages file, read
    whole): a longer line is a ValueError naming the file, the line and ``setting``."""
    for number, line in text_lines(path, max_bytes):
        if line is None:
            raise ValueError(f"{path}:{number}: a line over {max_bytes:,} bytes ({setting})")
        yield number, line


def bounded_lines(stream: IO[bytes], max_bytes: int) -> Iterator[tuple[int, int, bytes | None]]:
    """``(number, offset, line)`` of every line of ``stream``: its number (from 1), the decompressed offset
    of its first byte, and the line, or None for one over ``max_bytes`` (read on in bounded pieces, never
    held: the caller counts it as skipped). The one bounded line reader of every line-oriented input."""
    number = offset = 0
    while line := stream.readline(max_bytes + 1):
        number += 1
        start = offset
        offset += len(line)
        if len(line) > max_bytes and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):
                line = stream.readline(max_bytes + 1)
                offset += len(line)
            yield number, start, None
            continue
        yield number, start, line
