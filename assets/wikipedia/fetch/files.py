"""The files of a fetch: checksums as bytes arrive, part files, verification and the shared pace.

What :mod:`assets.wikipedia.fetch.download` needs of each file: what it reports of it (and of the whole
fetch), the checksum computed as bytes arrive,
what a part file holds, the verification before a file is published, the checksum list written last, the
shared rate limit, the pace a transfer must keep, the sources a file is fetched from in turn, what an answer
says of the file's size, and the progress bars. Pure module: no Dagster import."""

from __future__ import annotations

import hashlib
import json
import queue
import threading
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from assets.compressed import CompressedInputError, check_compressed
from assets.files import atomic_path
from assets.wikipedia.fetch.end_checks import file_digest
from assets.wikipedia.fetch.releases import Release, ReleaseFile

__all__ = [
    "GZIP_CHECKED",
    "Digest",
    "FetchReport",
    "FileReport",
    "Pace",
    "ProgressBars",
    "RateLimit",
    "Sources",
    "bytes_of",
    "checksum_of",
    "holds",
    "range_start",
    "total_size",
    "verified",
    "verify",
    "write_checksums",
]


@dataclass(slots=True)
class FileReport:
    """What fetching one file took."""

    name: str
    size: int
    downloaded: int = 0
    """Bytes received on the wire for it (a resume adds what it fetches; a restart what was thrown away)."""
    attempts: int = 0
    resumes: int = 0
    restarts: list[str] = field(default_factory=list)
    """Why the file was fetched from its start again (server ignored Range, changed file, checksum)."""
    verified: str = ""
    """``sha1``/``md5`` (the checksum the run lists), or ``gzip`` (none published: every gzip member's
    CRC-32 and length)."""
    sha1: str = ""
    """The sha1 computed of a file the run publishes no checksum of (what the fetch's checksum list says)."""
    already_there: bool = False
    seconds: float = 0.0


@dataclass(slots=True)
class FetchReport:
    """A release fetched into the landing folder."""

    snapshot_id: str
    source: str
    form: str
    landing_dir: str
    files: list[FileReport]
    checksums_file: str
    seconds: float
    skipped: list[str] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def downloaded(self) -> int:
        return sum(f.downloaded for f in self.files)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "size": self.size, "downloaded": self.downloaded}

    def metadata(self) -> dict[str, Any]:
        """What the fetch asset shows in the Dagster UI (paths as ``Path``)."""
        return {
            "snapshot_id": self.snapshot_id,
            "source": self.source,
            "form": self.form,
            "landing_path": Path(self.landing_dir),
            "checksums_path": Path(self.checksums_file),
            "files": len(self.files),
            "bytes": self.size,
            "bytes_downloaded": self.downloaded,
            "resumes": sum(f.resumes for f in self.files),
            "restarts": sum(len(f.restarts) for f in self.files),
            "seconds": round(self.seconds, 2),
        }


class RateLimit:
    """A token bucket shared by every download of a fetch."""

    def __init__(self, per_second: int | None) -> None:
        self.per_second = per_second
        self.lock = threading.Lock()
        self.allowance = float(per_second or 0)
        self.last = time.monotonic()

    def take(self, count: int) -> None:
        if not self.per_second:
            return
        with self.lock:
            now = time.monotonic()
            self.allowance = min(float(self.per_second), self.allowance + (now - self.last) * self.per_second)
            self.last = now
            self.allowance -= count
            wait = -self.allowance / self.per_second if self.allowance < 0 else 0.0
        if wait:
            time.sleep(wait)


GZIP_CHECKED = "gzip"
"""How a file whose run publishes no checksum was verified: its size as listed, then read through to its
end, every gzip member's CRC-32 and length checked (:func:`~assets.compressed.check_compressed`)."""


def checksum_of(remote: ReleaseFile) -> tuple[str, str | None]:
    """``(algorithm, expected hex digest)``: sha1 when the run lists it, else md5; ``("sha1", None)`` when
    it publishes none (the fetch computes the sha1 of what it verified, for the checksum list it writes)."""
    if remote.sha1:
        return "sha1", remote.sha1.lower()
    return ("md5", remote.md5.lower()) if remote.md5 else ("sha1", None)


class Digest:
    """The checksum of a part file, computed as its bytes arrive, in a thread of its own (hashlib releases
    the GIL: hashing overlaps the network and the disk); a resume in the same fetch goes on from where it
    stopped, and the file is read again only after a fetch that was killed."""

    def __init__(self, remote: ReleaseFile) -> None:
        self.algorithm = checksum_of(remote)[0]
        self.hasher: Any = None
        self.position = -1  # bytes handed to the hasher; -1: unknown (the file must be read)
        self.queue: queue.Queue[bytes | None] = queue.Queue(maxsize=32)
        self.worker: threading.Thread | None = None

    def _hash(self) -> None:
        while (chunk := self.queue.get()) is not None:
            self.hasher.update(chunk)

    def _drain(self) -> None:
        if self.worker is not None:
            self.queue.put(None)
            self.worker.join()
            self.worker = None

    def at(self, offset: int) -> None:
        """Bytes are about to be written from ``offset``."""
        self._drain()
        if offset == 0:
            self.hasher, self.position = hashlib.new(self.algorithm), 0
        elif offset != self.position:
            self.hasher, self.position = None, -1
        if self.hasher is not None:
            self.worker = threading.Thread(target=self._hash, name="fetch-hash", daemon=True)
            self.worker.start()

    def update(self, chunk: bytes) -> None:
        if self.hasher is not None:
            self.queue.put(chunk)
            self.position += len(chunk)

    def close(self) -> None:
        self._drain()

    def hexdigest(self, path: Path) -> str:
        self._drain()
        if self.hasher is not None and self.position == bytes_of(path):
            return self.hasher.hexdigest()
        return file_digest(path, self.algorithm)


def verify(path: Path, remote: ReleaseFile, digest: Digest | None = None) -> tuple[str | None, str]:
    """``(how path was verified, "")``, or ``(None, why not)``: the size, then the checksum the run lists
    (``sha1``/``md5``), else every gzip member's CRC-32 and length (:data:`GZIP_CHECKED`)."""
    size = bytes_of(path)
    if size != remote.size:
        return None, f"{size:,} bytes, the run lists {remote.size:,}"
    algorithm, expected = checksum_of(remote)
    if expected is None:
        try:
            check = check_compressed(path)
        except CompressedInputError as error:
            return None, str(error)
        if check.kind != "gzip":
            return None, f"it is not gzip'd ({check.kind}) and the run publishes no checksum of it"
        return GZIP_CHECKED, ""
    found = digest.hexdigest(path) if digest is not None else file_digest(path, algorithm)
    if found != expected:
        return None, f"{algorithm} {found} != {expected} that the run lists"
    return algorithm, ""


def verified(path: Path, remote: ReleaseFile, digest: Digest | None = None) -> str | None:
    """How ``path`` was verified (``sha1``, ``md5`` or ``gzip``), or None when it is not ``remote``."""
    return verify(path, remote, digest)[0] if path.is_file() else None


def bytes_of(path: Path) -> int:
    return path.stat().st_size if path.is_file() else 0


def holds(meta: Path, remote: ReleaseFile) -> bool:
    """Whether the part file beside ``meta`` holds the beginning of ``remote``: the same file (size and
    checksum) from any source; the checksum at the end tells a wrong splice."""
    if not meta.is_file():
        return False
    try:
        recorded = json.loads(meta.read_text())
    except ValueError:
        return False
    return recorded.get("size") == remote.size and recorded.get("checksum") == (remote.sha1 or remote.md5)


def write_checksums(landing: Path, release: Release, computed: Mapping[str, str] | None = None) -> Path:
    """``{snap}-sha1sums.txt`` (md5sums when a file has only an md5) of the release, written atomically;
    ``computed``: the sha1 of each file the run publishes no checksum of, computed from what was verified."""
    computed = computed or {}
    algorithm = "sha1" if all(f.sha1 or f.name in computed for f in release.files) else "md5"
    digests = {
        f.name: (f.sha1 or computed.get(f.name)) if algorithm == "sha1" else f.md5 for f in release.files
    }
    lines = "".join(f"{str(digests[f.name]).lower()}  {f.name}\n" for f in release.files)
    path = landing / f"{release.snapshot_id}-{algorithm}sums.txt"
    with atomic_path(path) as temp:  # a hidden temp name the landing scan does not match
        temp.write_text(lines, encoding="utf-8")
    return path


class ProgressBars:
    """tqdm bars, one per file and one in total (or nothing without ``enabled``)."""

    def __init__(self, enabled: bool, files: list[ReleaseFile], done: int) -> None:
        self.lock = threading.Lock()
        self.bars: dict[str, Any] = {}
        self.total = None
        if not enabled or not files:
            return
        import sys

        from tqdm import tqdm

        size = sum(f.size for f in files)
        options = {"unit": "B", "unit_scale": True, "unit_divisor": 1024, "file": sys.stderr}
        self.total = tqdm(total=size, initial=done, desc="total", position=0, **options)
        for position, remote in enumerate(files, start=1):
            self.bars[remote.name] = tqdm(
                total=remote.size, desc=remote.name[-40:], position=position, **options
            )

    def update(self, name: str, count: int) -> None:
        if self.total is None:
            return
        with self.lock:
            self.bars[name].update(count)
            self.total.update(count)

    def rewind(self, name: str, count: int) -> None:
        self.update(name, -count)

    def close(self) -> None:
        for bar in [*self.bars.values(), *([self.total] if self.total is not None else [])]:
            bar.close()


VERIFY_TRIES = 2
"""Whole copies of one file fetched from one source that may fail verification before the source is given
up on (the second rules out a transfer damaged on the way)."""


class Sources:
    """Where one file is fetched from: its URL on the release's source, then on each mirror."""

    def __init__(self, urls: list[str]) -> None:
        self.urls, self.at = urls, 0

    @property
    def url(self) -> str:
        return self.urls[self.at]

    def next(self) -> bool:
        """Go on to the next source; False when there is none left."""
        if self.at + 1 >= len(self.urls):
            return False
        self.at += 1
        return True

    def tried(self) -> str:
        return ", ".join(self.urls[: self.at + 1])

    def verify_next(self, failed: dict[str, list[str]]) -> bool:
        """After a copy from the current source failed verification (``failed``: each source's failed
        copies): go on to the next source that has failed least, never to one that has failed twice (a
        verification failure is the source's copy, not the network); False when every source has."""
        order = self.urls[self.at + 1 :] + self.urls[: self.at + 1]
        fewest = min(order, key=lambda url: len(failed.get(url, [])))
        if len(failed.get(fewest, [])) >= VERIFY_TRIES:
            return False
        self.at = self.urls.index(fewest)
        return True


class Pace:
    """Whether a transfer keeps at least ``min_rate`` bytes a second over each ``window`` seconds."""

    def __init__(self, window: float, min_rate: int) -> None:
        self.window, self.need = window, min_rate * window
        self.since, self.got = time.monotonic(), 0

    def stalled(self, count: int) -> bool:
        self.got += count
        now = time.monotonic()
        if now - self.since < self.window:
            return False
        slow = self.got < self.need
        self.since, self.got = now, 0
        return slow


def total_size(response: Any) -> int | None:
    """The whole file's size as the answer gives it (``Content-Range: bytes a-b/total`` or the length of
    a 200), None when it does not say."""
    content_range = response.headers.get("Content-Range", "")
    if "/" in content_range and content_range.rsplit("/", 1)[1].isdigit():
        return int(content_range.rsplit("/", 1)[1])
    length = response.headers.get("Content-Length")
    return int(length) if response.status_code == 200 and length and length.isdigit() else None


def range_start(response: Any) -> int | None:
    content_range = response.headers.get("Content-Range", "")
    try:
        return int(content_range.split()[1].split("-")[0])
    except (IndexError, ValueError):
        return None
