"""Fetching a dump release into the landing folder: resumed after any drop, verified, then published.

Every file of a :class:`~assets.wikipedia.fetch.releases.Release` is downloaded into a hidden staging
folder of the landing folder (``landing/.fetch/<snapshot>/``, which the landing sensor never reads), as
``<name>.part`` beside a ``<name>.part.json`` that records what the bytes are (URL, size, ETag):

* a drop, a 5xx or 429 answer, or a stall (no byte for ``stall_seconds``, or fewer than
  ``limits.fetch.min_bytes_per_second`` over that long) resumes with an HTTP ``Range`` request from the
  bytes on disk (``If-Range`` with the ETag, so a file changed on the server is never spliced), after a
  backoff, from the next source of the release when it has mirrors; so does a killed fetch run again;
* nothing is trusted beyond what is verified (:mod:`assets.limits`, ``limits.fetch``): index pages and
  ``dumpstatus.json`` are read up to ``max_listing_bytes``; a file's body stops at the size the status
  lists; redirects are followed only on the same source (``max_redirects`` at most); a permanent error (a
  4xx other than 429, a size other than the status's, a redirect loop or off the source) is not retried on
  that source: the file goes on to the next source, or the fetch fails naming it;
* a server that ignores ``Range``, a file whose ETag or size differs from what the part holds or what
  ``dumpstatus.json`` says, and a checksum that does not match restart that file only, and say why;
* each file is verified (size, then sha1, else md5, as the status lists them; a run that publishes no
  checksum, as the Enterprise HTML runs: every gzip member's CRC-32 and length, the file read through)
  before it is moved into the landing folder; ``{snap}-sha1sums.txt`` (or ``md5sums``; the sha1 computed of
  what was verified where none is published) is written last, so the landing sensor sees the dump only once
  every file is there and verified;
* at most ``connections_per_host`` connections (Wikimedia asks for two), a descriptive User-Agent with a
  contact, an optional rate limit over all files; the free space the files need is checked first.

requests and urllib3 do the protocol; this module decides what to resume. Pure module: no Dagster import.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

from assets.disk_space import DiskFull, exception_disk_full_line, require_free
from assets.files import write_json_atomic
from assets.limits import FetchLimits
from assets.params import ReleasesParams
from assets.wikipedia.fetch.end_checks import file_digest
from assets.wikipedia.fetch.files import (
    Digest,
    FetchReport,
    FileReport,
    Pace,
    ProgressBars,
    RateLimit,
    Sources,
    bytes_of,
    holds,
    range_start,
    total_size,
    verified,
    verify,
    write_checksums,
)
from assets.wikipedia.fetch.releases import Release, ReleaseFile, on_source

__all__ = [
    "STAGING",
    "FetchError",
    "FetchSettings",
    "Fetcher",
    "user_agent",
]

log = logging.getLogger(__name__)

STAGING = ".fetch"
"""The landing folder's hidden folder where files are downloaded and verified (never scanned)."""
PROJECT_URL = "https://github.com/kilt-pipeline/kilt-pipeline"
_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


class FetchError(RuntimeError):
    """A file could not be fetched and verified (the message names it, its URL and the last reason);
    ``resumable``: the bytes fetched so far are kept, and the same command resumes them."""

    def __init__(self, message: str, resumable: bool = True) -> None:
        super().__init__(message)
        self.resumable = resumable


@dataclass(frozen=True, slots=True)
class FetchSettings:
    """How files are fetched: ``snapshots.releases`` and ``limits.fetch`` of params.yaml as they are, and the
    pace of retries and reads."""

    releases: ReleasesParams = field(default_factory=ReleasesParams)
    limits: FetchLimits = field(default_factory=FetchLimits)
    backoff_seconds: float = 1.0
    """The first wait after a failed attempt; it doubles, up to a minute."""
    chunk_bytes: int = 1 << 20
    """Bytes read at a time at most (each read returns what has arrived: a drop loses nothing received)."""

    @classmethod
    def from_params(
        cls, section: ReleasesParams | None = None, limits: FetchLimits | None = None
    ) -> FetchSettings:
        """The settings of ``snapshots.releases`` and ``limits.fetch`` (default: the models' defaults)."""
        return cls(section or ReleasesParams(), limits or FetchLimits())

    @classmethod
    def of(cls, **values: Any) -> FetchSettings:
        """Settings with ``values`` in place, each given to the section that holds a field of its name
        (``FetchSettings.of(retries=2, connect_seconds=5.0, backoff_seconds=0.01)``)."""
        sections = {"releases": ReleasesParams, "limits": FetchLimits}
        unknown = [
            name
            for name in values
            if name not in cls.__dataclass_fields__
            and not any(name in m.model_fields for m in sections.values())
        ]
        if unknown:
            raise TypeError(f"FetchSettings has no setting {unknown[0]!r}")
        parts = {
            key: model.model_validate({k: v for k, v in values.items() if k in model.model_fields})
            for key, model in sections.items()
        }
        return cls(**parts, **{k: v for k, v in values.items() if k in cls.__dataclass_fields__})


def user_agent(contact: str = "") -> str:
    """The User-Agent of every request: the tool, its version and where to reach its user (Wikimedia's
    User-Agent policy)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        release = version("kilt-pipeline")
    except PackageNotFoundError:
        release = "dev"
    reach = f"; {contact}" if contact else ""
    return f"kilt-pipeline/{release} (+{PROJECT_URL}{reach}) python-requests"


class _Retry(Exception):
    """An attempt that failed in a way another attempt may get past."""


class _Stalled(_Retry):
    """A transfer that made too little progress: another attempt goes to the next source, if any."""


class _Permanent(Exception):
    """An answer this source will give again (a 4xx, another size, a redirect off the source or in a
    loop): the file goes on to the next source, or the fetch fails."""


def _forget_if_empty(part: Path, meta: Path) -> bool:
    """Whether the bytes fetched so far are kept for the next fetch; with none, the part file and its
    record are removed (no ``.part.json`` is left to describe nothing)."""
    if bytes_of(part) > 0:
        return True
    part.unlink(missing_ok=True)
    meta.unlink(missing_ok=True)
    return False


class Fetcher:
    """Reads a dump site and fetches releases from it with ``settings``."""

    def __init__(self, settings: FetchSettings | None = None) -> None:
        self.settings = settings or FetchSettings()
        self.agent = user_agent(self.settings.releases.contact)
        self._local = threading.local()
        self._rate = RateLimit(self.settings.releases.rate_limit)

    # ------------------------------------------------------------------------------------ requests
    def _session(self) -> Any:
        """This thread's session: at most ``connections_per_host`` pooled connections per host."""
        session = getattr(self._local, "session", None)
        if session is None:
            import requests
            from requests.adapters import HTTPAdapter
            from urllib3.util.retry import Retry

            retry = Retry(
                total=min(3, self.settings.releases.retries),  # quick retries here; the fetch loop retries on
                backoff_factor=self.settings.backoff_seconds,
                status_forcelist=sorted(_RETRY_STATUSES),
                allowed_methods=frozenset({"GET", "HEAD"}),
                raise_on_status=False,
            )
            adapter = HTTPAdapter(
                pool_connections=1,
                pool_maxsize=self.settings.releases.connections_per_host,
                max_retries=retry,
            )
            session = requests.Session()
            session.mount("http://", adapter)
            session.mount("https://", adapter)
            session.headers["User-Agent"] = self.agent
            self._local.session = session
        return session

    def _request(self, url: str, headers: dict[str, str] | None = None) -> Any:
        """A streamed GET of ``url``, following redirects only while they stay on its scheme, host and
        port (``max_redirects`` at most); :class:`_Permanent` for a redirect loop or one off the source,
        another scheme or a bad URL; ``requests.RequestException`` for the network's failures."""
        import requests

        home = urlsplit(url)
        for _ in range(self.settings.limits.max_redirects + 1):
            if urlsplit(url).scheme not in ("http", "https"):
                raise _Permanent(f"{url}: not an http(s) URL")
            try:
                response = self._session().get(
                    url,
                    headers=headers or {},
                    stream=True,
                    allow_redirects=False,
                    timeout=(self.settings.limits.connect_seconds, self.settings.releases.stall_seconds),
                )
            except (requests.exceptions.InvalidURL, requests.exceptions.InvalidSchema) as error:
                raise _Permanent(f"{url}: {error}") from None
            if response.status_code not in _REDIRECTS:
                return response
            target = urljoin(url, response.headers.get("Location", ""))
            response.close()
            there = urlsplit(target)
            if (there.scheme, there.netloc.lower()) != (home.scheme, home.netloc.lower()):
                raise _Permanent(f"{url}: redirected off the source, to {there.scheme}://{there.netloc}")
            url = target
        raise _Permanent(
            f"{url}: more than {self.settings.limits.max_redirects} redirects (limits.fetch.max_redirects)"
        )

    def _read_capped(self, url: str) -> bytes:
        """The body of ``url`` (an index page or a status), at most ``max_listing_bytes`` of it."""
        import requests
        from urllib3.exceptions import HTTPError

        cap = self.settings.limits.max_listing_bytes
        try:
            response = self._request(url)
        except _Permanent as error:
            raise OSError(str(error)) from None
        except requests.RequestException as error:
            raise OSError(f"cannot read {url}: {error}") from None
        with response:
            if response.status_code == 404:
                raise FileNotFoundError(f"{url}: 404 Not Found")
            if response.status_code >= 400:
                raise OSError(f"{url}: HTTP {response.status_code}")
            declared = response.headers.get("Content-Length", "")
            if declared.isdigit() and int(declared) > cap:
                raise OSError(
                    f"{url}: {int(declared):,} bytes, over {cap:,} (limits.fetch.max_listing_bytes)"
                )
            body = bytearray()
            pace = Pace(self.settings.releases.stall_seconds, self.settings.limits.min_bytes_per_second)
            try:  # decoded bytes count (a gzip bomb stops at the cap too); read1: what has arrived, so a
                # trickle is seen as one
                while chunk := response.raw.read1(
                    min(self.settings.chunk_bytes, 1 << 16), decode_content=True
                ):
                    body += chunk
                    if len(body) > cap:
                        raise OSError(f"{url}: over {cap:,} bytes (limits.fetch.max_listing_bytes)")
                    if pace.stalled(len(chunk)):
                        raise OSError(
                            f"{url}: under {self.settings.limits.min_bytes_per_second:,} bytes/s for "
                            f"{self.settings.releases.stall_seconds:g}s (limits.fetch.min_bytes_per_second)"
                        )
            except (requests.RequestException, HTTPError, ConnectionError, TimeoutError) as error:
                raise OSError(f"cannot read {url}: {type(error).__name__}") from None
            return bytes(body)

    def read_text(self, url: str) -> str:
        return self._read_capped(url).decode("utf-8", errors="replace")

    def read_json(self, url: str) -> Any:
        try:
            return json.loads(self._read_capped(url))
        except (ValueError, RecursionError):
            raise ValueError(f"{url} is not JSON") from None

    # ------------------------------------------------------------------------------------ fetching
    def fetch(
        self,
        release: Release,
        landing_dir: Path | str,
        *,
        progress: bool = False,
        on_progress: Callable[[str], None] | None = None,
    ) -> FetchReport:
        """Fetch every file of ``release`` into ``landing_dir`` (verified, then published with its
        checksum list); files already there and verified are kept. :class:`FetchError` when a file cannot
        be fetched after ``retries`` attempts (the bytes fetched so far stay in the staging folder and the
        next fetch resumes them) or when no source's copy matches the listed checksum (each source's copy
        fetched at most twice; those bytes are deleted)."""
        started = time.perf_counter()
        landing = Path(landing_dir)
        staging = landing / STAGING / release.snapshot_id
        staging.mkdir(parents=True, exist_ok=True)
        say = on_progress or (lambda line: log.info("%s", line))
        reports = {f.name: FileReport(f.name, f.size) for f in release.files}
        todo = []
        for remote in release.files:
            if verified(landing / remote.name, remote):
                reports[remote.name].already_there, reports[remote.name].verified = True, "landing"
            else:
                todo.append(remote)
        on_disk = sum(bytes_of(staging / f"{f.name}.part") + bytes_of(staging / f.name) for f in todo)
        require_free(landing, sum(f.size for f in todo) - on_disk, f"the fetch of {release.snapshot_id}")
        bars = ProgressBars(progress, todo, on_disk)
        try:
            workers = max(1, min(self.settings.releases.connections_per_host, len(todo)))
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="fetch") as pool:
                futures = [
                    pool.submit(
                        self._fetch_file,
                        remote,
                        Sources([remote.url, *(on_source(release, remote, m) for m in release.mirrors)]),
                        staging,
                        reports[remote.name],
                        bars,
                        say,
                    )
                    for remote in todo
                ]
                for future in futures:
                    future.result()
        finally:
            bars.close()
        for remote in todo:  # every file is verified: publish them, then the checksum list
            os.replace(staging / remote.name, landing / remote.name)
        computed = {  # files the run publishes no checksum of: the sha1 of the copy verified
            f.name: reports[f.name].sha1 or file_digest(landing / f.name, "sha1")
            for f in release.files
            if not (f.sha1 or f.md5)
        }
        checksums = write_checksums(landing, release, computed)
        shutil.rmtree(staging, ignore_errors=True)
        with contextlib.suppress(OSError):
            (landing / STAGING).rmdir()  # when no other fetch has files there
        report = FetchReport(
            release.snapshot_id,
            release.source,
            release.form,
            str(landing),
            [reports[f.name] for f in release.files],
            str(checksums),
            time.perf_counter() - started,
            list(release.skipped),
        )
        say(
            f"fetched {release.snapshot_id} from {release.source}: {len(report.files)} files, "
            f"{report.size:,} bytes ({report.downloaded:,} downloaded) in {report.seconds:.1f}s"
        )
        return report

    def _fetch_file(
        self,
        remote: ReleaseFile,
        sources: Sources,
        staging: Path,
        report: FileReport,
        bars: ProgressBars,
        say: Callable[[str], None],
    ) -> None:
        started = time.perf_counter()
        done, part, meta = (
            staging / remote.name,
            staging / f"{remote.name}.part",
            staging / f"{remote.name}.part.json",
        )
        if done.is_file() and verified(done, remote):  # verified by an earlier, interrupted fetch
            report.verified = "staging"
            return
        if not holds(meta, remote):
            part.unlink(missing_ok=True)
        digest = Digest(remote)
        try:
            self._attempts(remote, sources, (done, part, meta), report, bars, say, digest, started)
        finally:
            digest.close()

    def _attempts(
        self,
        remote: ReleaseFile,
        sources: Sources,
        files: tuple[Path, Path, Path],
        report: FileReport,
        bars: ProgressBars,
        say: Callable[[str], None],
        digest: Digest,
        started: float,
    ) -> None:
        done, part, meta = files
        last = ""
        failed: dict[str, list[str]] = {}  # source -> what each whole copy fetched from it gave
        while report.attempts <= self.settings.releases.retries:
            report.attempts += 1
            try:
                self._download(remote, sources.url, part, meta, report, bars, say, digest)
            except _Permanent as error:
                last = str(error)
                if not sources.next():
                    kept = _forget_if_empty(part, meta)
                    raise FetchError(
                        f"{remote.name}: not fetched from {sources.tried()}: {last} (not retried: the "
                        "source will answer the same)",
                        resumable=kept,
                    ) from None
                say(f"{remote.name}: {last}; going on from {sources.url}")
                continue
            except _Retry as error:
                last = str(error)
                moved = isinstance(error, _Stalled) and sources.next()
                wait = min(60.0, self.settings.backoff_seconds * 2 ** (report.attempts - 1))
                where = f" from {sources.url}" if moved else ""
                say(f"{remote.name}: {last}; resuming from byte {bytes_of(part):,}{where} in {wait:.0f}s")
                time.sleep(wait)
                continue
            algorithm, last = verify(part, remote, digest)
            if algorithm is None:
                report.restarts.append(last)
                failed.setdefault(sources.url, []).append(last)
                bars.rewind(remote.name, bytes_of(part))
                part.unlink(missing_ok=True)
                if not sources.verify_next(failed):
                    meta.unlink(missing_ok=True)
                    raise FetchError(
                        f"{remote.name}: no source's copy matches "
                        + (
                            "the checksum the run lists ("
                            if remote.sha1 or remote.md5
                            else "its size and CRCs ("
                        )
                        + "; ".join(f"{url}: {', '.join(results)}" for url, results in failed.items())
                        + f"); fetched {sum(map(len, failed.values()))} times in all, at most twice from "
                        "each source; the bytes were deleted: try another mirror "
                        "(snapshots.releases.sources)",
                        resumable=False,
                    )
                say(f"{remote.name}: {last}; fetching it again from its start from {sources.url}")
                continue
            if not (remote.sha1 or remote.md5):  # for the checksum list: the sha1 of what was verified
                report.sha1 = digest.hexdigest(part)
            os.replace(part, done)
            meta.unlink(missing_ok=True)
            report.verified, report.seconds = algorithm, time.perf_counter() - started
            return
        raise FetchError(
            f"{remote.name}: not fetched after {report.attempts} attempts from {sources.tried()}: {last}",
            resumable=_forget_if_empty(part, meta),
        )

    def _write_body(
        self,
        response: Any,
        remote: ReleaseFile,
        part: Path,
        offset: int,
        report: FileReport,
        bars: ProgressBars,
        digest: Digest,
    ) -> None:
        """The answer's body from byte ``offset`` into ``part``, at most the status's size, at the pace
        ``limits.fetch`` asks for; :class:`_Stalled` or :class:`_Retry` when it stops."""
        import requests
        from urllib3.exceptions import HTTPError, ReadTimeoutError

        with open(part, "r+b" if offset else "wb") as handle:
            handle.seek(offset)
            handle.truncate()
            digest.at(offset)
            left = remote.size - offset  # the status's size is all a body may bring
            pace = Pace(self.settings.releases.stall_seconds, self.settings.limits.min_bytes_per_second)
            try:
                # read1: each read returns what has arrived, so a drop loses nothing already received
                while left > 0 and (chunk := response.raw.read1(min(self.settings.chunk_bytes, left))):
                    self._rate.take(len(chunk))
                    handle.write(chunk)
                    digest.update(chunk)
                    left -= len(chunk)
                    report.downloaded += len(chunk)
                    bars.update(remote.name, len(chunk))
                    if pace.stalled(len(chunk)):
                        raise _Stalled(
                            f"stalled: under {self.settings.limits.min_bytes_per_second:,} bytes/s for "
                            f"{self.settings.releases.stall_seconds:g}s after byte {handle.tell():,} "
                            "(limits.fetch.min_bytes_per_second)"
                        )
            except (requests.RequestException, HTTPError, ConnectionError, TimeoutError) as error:
                handle.flush()
                if isinstance(error, (TimeoutError, ReadTimeoutError, requests.Timeout)):  # no byte
                    quiet = self.settings.releases.stall_seconds
                    raise _Stalled(f"stalled: no byte for {quiet:g}s after byte {handle.tell():,}") from None
                lost = f"connection lost after byte {handle.tell():,} ({type(error).__name__})"
                raise _Retry(lost) from None
            except OSError as error:  # a local write failed: not the network's doing
                line = exception_disk_full_line(error, part)
                raise DiskFull(line, part) if line else error from None

    def _download(
        self,
        remote: ReleaseFile,
        url: str,
        part: Path,
        meta: Path,
        report: FileReport,
        bars: ProgressBars,
        say: Callable[[str], None],
        digest: Digest,
    ) -> None:
        """One attempt from ``url``: the rest of the file after the bytes ``part`` holds, and never more
        than the size the status lists. :class:`_Retry` when the connection fails or the answer says to
        try again (:class:`_Stalled`: too slow), :class:`_Permanent` when this source will answer the same."""
        import requests

        offset = bytes_of(part)
        if offset > remote.size:
            part.unlink()
            offset = 0
        if offset == remote.size:
            return
        recorded = json.loads(meta.read_text()) if meta.is_file() else {}
        headers = {"Accept-Encoding": "identity"}
        if offset:
            headers["Range"] = f"bytes={offset}-"
            if recorded.get("etag") and recorded.get("url") == url:  # another source: its own ETags
                headers["If-Range"] = recorded["etag"]
        try:
            response = self._request(url, headers)
        except requests.RequestException as error:
            raise _Retry(f"cannot connect ({type(error).__name__})") from None
        with response:
            if response.status_code in _RETRY_STATUSES:
                raise _Retry(f"HTTP {response.status_code}")
            if response.status_code == 416:
                part.unlink(missing_ok=True)
                raise _Retry("HTTP 416: the bytes on disk are not a prefix of the file")
            if response.status_code >= 400:
                raise _Permanent(f"HTTP {response.status_code} from {url}")
            etag = response.headers.get("ETag")
            total = total_size(response)
            if total is not None and total != remote.size:
                part.unlink(missing_ok=True)
                report.restarts.append(f"the server has {total:,} bytes, the run lists {remote.size:,}")
                raise _Permanent(f"size on the server {total:,} != {remote.size:,} that the run lists")
            if offset and response.status_code == 200:
                reason = (
                    "the file changed on the server (another ETag)"
                    if recorded.get("url") == url and recorded.get("etag") and etag != recorded["etag"]
                    else "the server ignored the Range request"
                )
                report.restarts.append(reason)
                say(f"{remote.name}: {reason}; fetching it from its start")
                bars.rewind(remote.name, offset)
                offset = 0
            elif offset:
                start = range_start(response)
                if start != offset:
                    part.unlink(missing_ok=True)
                    raise _Retry(f"asked for byte {offset:,}, the server sent from byte {start}")
                report.resumes += 1
            checksum = remote.sha1 or remote.md5
            write_json_atomic(meta, {"url": url, "size": remote.size, "checksum": checksum, "etag": etag})
            self._write_body(response, remote, part, offset, report, bars, digest)
