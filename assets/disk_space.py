"""A full disk, said in one line: checked before a stage writes (:func:`require_free`) and recognised in
whatever a library raises when a write fails for want of space (:func:`disk_full_line`): Python's
``[Errno 28]``, numpy's short writes, DuckDB's, polars', pyarrow's and FAISS's messages (each produced on
a real full filesystem by ``tests/integration/test_disk_full.py``).

Pure module: no Dagster import.
"""

from __future__ import annotations

import errno
import re
import shutil
from pathlib import Path

__all__ = [
    "DISK_FULL",
    "GROWTH",
    "DiskFull",
    "disk_full_line",
    "exception_disk_full_line",
    "free_bytes",
    "is_disk_full",
    "require_free",
    "require_room",
    "tree_bytes",
]

DISK_FULL = "disk full"
"""How every line about a full disk starts (the build record and ``kiltpipe build`` match on it)."""

_NO_SPACE = re.compile(
    r"No space left on device|\bENOSPC\b|os error 28\b|\[Errno 28\]|\b\d+ requested and \d+ written\b"
)
_PATH_PATTERNS = (
    re.compile(r"\[Errno 28\] No space left on device: '(?P<path>[^']+)'"),  # Python
    re.compile(r"(?:file|write to|writing|open|in) \"(?P<path>/[^\"]+)\""),  # DuckDB
    re.compile(r"write error in (?P<path>/\S+?):"),  # FAISS
    re.compile(r"'(?P<path>/[^']+)'"),
    re.compile(r"\"(?P<path>/[^\"]+)\""),
)


class DiskFull(OSError):
    """Not enough free space for what a stage is about to write (``errno.ENOSPC``); the message is the
    one line a user sees."""

    def __init__(self, message: str, path: Path | str | None = None) -> None:
        super().__init__(errno.ENOSPC, message, str(path) if path is not None else None)

    def __str__(self) -> str:
        return str(self.strerror)


def free_bytes(folder: Path | str) -> int:
    """Free bytes (for this user) on the filesystem of ``folder`` (or of its nearest existing parent)."""
    folder = Path(folder).absolute()
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return shutil.disk_usage(folder).free


def _size(count: int) -> str:
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if count >= scale:
            return f"{count / scale:,.1f} {unit}"
    return f"{count:,} bytes"


def require_free(folder: Path | str, needed: int, what: str) -> None:
    """Raise :class:`DiskFull` naming ``folder`` and both sizes when fewer than ``needed`` bytes are free
    there (``what``: the stage, e.g. "the provenance store")."""
    free = free_bytes(folder)
    if free < needed:
        raise DiskFull(
            f"{DISK_FULL}: {what} needs about {_size(needed)} under {Path(folder).absolute()}, and only "
            f"{_size(free)} is free there; free space (or point data_dir elsewhere) and build again",
            folder,
        )


GROWTH = {
    "knowledge_source": 1.0,
    "passages": 3.0,
    "structured_passages": 0.2,
    "provenance_store": 5.0,
    "bm25_index": 1.0,
    "structured_indexes": 1.0,
    "wikidata": 0.5,
    "kb_indexes": 1.0,
    "qa_indexes": 1.0,
}
"""Bytes a stage writes per byte of its input, at least (its input: the compressed dump, the knowledge
source, the knowledge source again for the structured passages, the knowledge source and passages Parquet,
the passage collection, the structured passages' collection, the compressed entity dump, the kb passages'
collection, the QA KB's questions). Measured on the embedded excerpt and the
generated 1M-article builds (docs/scale.md: 0.9-1.0x, 4.6x, 5.6x, 1.5x there; structured passages 0.21x on
the excerpt): a stage refused here would have failed writing."""


def tree_bytes(*paths: Path | str) -> int:
    """Bytes of the files at ``paths`` (files, or folders walked)."""
    total = 0
    for path in map(Path, paths):
        if path.is_file():
            total += path.stat().st_size
        elif path.is_dir():
            total += sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return total


def require_room(stage: str, inputs: list[Path] | list[str], where: Path | str) -> int:
    """Check, before ``stage`` (a key of :data:`GROWTH`) writes under ``where``, that the space it will
    need (its growth times the bytes of ``inputs``) is free; :class:`DiskFull` otherwise. Returns it."""
    needed = int(GROWTH[stage] * tree_bytes(*inputs))
    require_free(where, needed, f"the {stage} stage")
    return needed


def is_disk_full(message: str) -> bool:
    """Whether an error message (any library's) says that a write failed for want of space."""
    return bool(_NO_SPACE.search(message))


def disk_full_line(message: str, where: Path | str | None = None) -> str | None:
    """One line for an error ``message`` that says the disk is full (None for any other): the file it
    names, else ``where`` (the folder being written), with the space left there."""
    said = message.find(f"{DISK_FULL}:")  # already one line (a DiskFull, maybe behind its class name)
    if said >= 0:
        return message[said:].splitlines()[0]
    if not is_disk_full(message):
        return None
    path = next((m["path"] for p in _PATH_PATTERNS if (m := p.search(message))), None)
    path = path.rstrip("\\\"'.,;") if path else None  # a quote escaped in the message it came in
    target = path or (str(Path(where).absolute()) if where is not None else None)
    place = f"cannot write {target}" if target else "cannot write"
    free = ""
    if target:
        try:
            free = f"; {_size(free_bytes(Path(target).parent if path else target))} free there"
        except OSError:
            free = ""
    return f"{DISK_FULL}: {place} (No space left on device{free}); free space and build again"


def exception_disk_full_line(error: BaseException, where: Path | str | None = None) -> str | None:
    """:func:`disk_full_line` of an exception and the exceptions it was raised from."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno == errno.ENOSPC:
            if isinstance(current, DiskFull):
                return str(current)
            named = f": '{current.filename}'" if current.filename else ""
            return disk_full_line(f"[Errno 28] No space left on device{named}", where)
        line = disk_full_line(str(current), where)
        if line:
            return line
        current = current.__cause__ or current.__context__
    return None
