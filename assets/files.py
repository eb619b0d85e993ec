"""Files: atomic publication (write beside the target, then rename over it, so that a crash never leaves
a half-written artifact where readers look) and content digests. Pure module: no project import."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def temp_sibling(final: Path) -> Path:
    """A fresh hidden path beside ``final`` (same filesystem, so a rename publishes it)."""
    final.parent.mkdir(parents=True, exist_ok=True)
    return final.parent / f".tmp-{final.name}-{uuid.uuid4().hex[:12]}"


def publish(temp: Path, final: Path) -> None:
    """Atomically replace ``final`` with ``temp`` (a file or a directory).

    A reader sees either the previous artifact or the new one, never a half-written one.
    Directories cannot be swapped in one syscall: the old one is renamed aside first and removed
    after the new one is in place.
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    if temp.is_dir() and final.exists():
        retired = final.parent / f".old-{final.name}-{uuid.uuid4().hex[:12]}"
        final.rename(retired)
        temp.rename(final)
        shutil.rmtree(retired, ignore_errors=True)
    else:
        os.replace(temp, final)


@contextlib.contextmanager
def atomic_path(final: Path) -> Iterator[Path]:
    """Yield a temp path to write; on success it replaces ``final``, on error it is removed."""
    temp = temp_sibling(final)
    try:
        yield temp
    except BaseException:
        if temp.is_dir():
            shutil.rmtree(temp, ignore_errors=True)
        else:
            temp.unlink(missing_ok=True)
        raise
    publish(temp, final)


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (a temp file beside it, then renamed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as temp:
        temp.write_bytes(data)


def write_json_atomic(path: Path, payload: Any) -> None:
    with atomic_path(path) as temp:
        temp.write_text(json.dumps(payload, indent=2, ensure_ascii=False, default=str) + "\n")


def sha256_of(path: Path) -> str:
    """The hex sha256 of a file's bytes (read in 1 MiB blocks)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
