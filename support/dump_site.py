"""A dump site on 127.0.0.1 laid out as Wikimedia's is, with the faults real downloads meet.

``root/<wiki>/<date>/`` holds a run's files, named as Wikimedia names them; the server answers

* ``/<wiki>/``: the index page linking every run (``<a href="20160501/">``);
* ``/<wiki>/<date>/dumpstatus.json``: the run's status in Wikimedia's schema (``jobs`` -> ``status``,
  ``updated``, ``files`` -> ``size``, ``url``, ``md5``, ``sha1``; ``version`` 0.8), each file under the job
  that writes it, every job ``done`` unless a test says otherwise;
* ``/<wiki>/<date>/<file>``: the file, with ``Range``/``If-Range`` (206 and ``Content-Range``) and an
  ETag, like Wikimedia's web servers;
* ``/wikidatawiki/entities/`` and ``/wikidatawiki/entities/<date>/``: Wikidata's entity dump runs, listed
  with exact sizes, beside their md5/sha1 lists (:func:`write_entity_run`), as Wikimedia serves them;
* ``/other/enterprise_html/runs/`` and ``.../runs/<date>/``: the Enterprise HTML dump runs, listed with
  exact sizes and no checksum (:func:`write_html_run`), as Wikimedia serves them.

Faults (:class:`Faults`, changeable while the server runs): a connection cut after a byte offset, a burst
of 503s, a stall of some seconds at an offset, no ``Range`` support, a byte flipped in one answer, a wrong
checksum in the status, a run the index lists but the mirror lacks, a job still ``in-progress``, a file
replaced on the server (new ETag). Hostile ones, for the bounds of ``limits.fetch``: a status edited by
a function (file URLs on another host or up the tree, sizes negative or wrong, lists and strings where
Wikimedia writes objects), file bodies that never end, index and status bodies that never end, a byte every
few seconds, redirects (a loop, or to another host). Every byte of every file sent is counted (``sent``),
and the most connections open at once (``peak_connections``).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

JOBS = (
    (re.compile(r".*-pages-articles-multistream\.xml\.bz2"), "articlesmultistreamdump"),
    (re.compile(r".*-pages-articles\d+\.xml-p\d+p\d+\.bz2"), "articlesdump"),
    (re.compile(r".*-page_props\.sql\.gz"), "pagepropstable"),
    (re.compile(r".*-redirect\.sql\.gz"), "redirecttable"),
)
"""File name -> the dump job that writes it (what the status lists the file under)."""
CHUNK = 1 << 16
ENTITY_PARTS = ["wikidatawiki", "entities"]
"""Where the entity dump runs are (``/wikidatawiki/entities/<date>/wikidata-<date>-all.json.bz2``)."""
HTML_PARTS = ["other", "enterprise_html", "runs"]
"""Where the Enterprise HTML runs are (``/other/enterprise_html/runs/<date>/<wiki>-NS0-<date>-...``)."""
LISTED_FOLDERS = (ENTITY_PARTS, HTML_PARTS)
"""The trees served as listings with exact sizes (no ``dumpstatus.json``)."""


@dataclass
class Faults:
    """What the site does wrong; tests change it between (or during) fetches."""

    cut_at: dict[str, list[int]] = field(default_factory=dict)
    """File name -> byte offsets: each answer for the file closes the connection at the next offset."""
    unavailable: int = 0
    """The next this many file requests are answered 503."""
    stall_at: dict[str, tuple[int, float]] = field(default_factory=dict)
    """File name -> (offset, seconds): the next answer stops sending for that long at that offset."""
    no_range: bool = False
    """Answer every request with the whole file (200), as a server without Range support does."""
    corrupt_once: set[str] = field(default_factory=set)
    """Files whose next answer has one byte flipped (a bad transfer: the checksum fails once)."""
    corrupt_always: set[str] = field(default_factory=set)
    """Files whose every answer has one byte flipped (a mirror whose copy is damaged)."""
    wrong_checksum: set[str] = field(default_factory=set)
    """Files listed in the status with a sha1 and md5 that are not theirs."""
    missing_runs: set[str] = field(default_factory=set)
    """Run dates the index lists but whose folder the site lacks (a mirror behind the main site)."""
    job_status: dict[tuple[str, str], str] = field(default_factory=dict)
    """(date, job) -> status instead of ``done`` (``in-progress``, ``failed``...)."""
    version: dict[str, int] = field(default_factory=dict)
    """File name -> a version number in its ETag (bump it when a test replaces the file)."""
    edit_status: Callable[[dict[str, Any]], Any] | None = None
    """Called with each status before it is sent; what it returns is sent (any JSON value)."""
    endless: set[str] = field(default_factory=set)
    """Files whose body goes on after the file, without end (no Content-Length)."""
    endless_listings: bool = False
    """Index pages and statuses go on without end (no Content-Length)."""
    slow: dict[str, float] = field(default_factory=dict)
    """File name (or ``dumpstatus.json``) -> seconds between bytes: it comes one byte at a time."""
    redirect: dict[str, str] = field(default_factory=dict)
    """Request path -> a Location to redirect to (302); the path itself makes a loop."""


class DumpSite:
    """Serve ``root`` on 127.0.0.1 (a free port); use as a context manager."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.faults = Faults()
        self.sent: dict[str, int] = {}
        self.gets: dict[str, int] = {}
        """File name -> answers that began sending it (each GET of a file, ranged or not)."""
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.peak_connections = 0
        self._open = 0
        self._lock = threading.Lock()
        self._digests: dict[tuple[str, int, int], tuple[str, str]] = {}
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> DumpSite:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    # ------------------------------------------------------------------------------------ content
    def digests(self, path: Path) -> tuple[str, str]:
        """``(md5, sha1)`` of a file (cached by size and mtime)."""
        stat = path.stat()
        key = (str(path), stat.st_size, stat.st_mtime_ns)
        if key not in self._digests:
            md5, sha1 = hashlib.md5(), hashlib.sha1()
            with open(path, "rb") as handle:
                while block := handle.read(1 << 22):
                    md5.update(block)
                    sha1.update(block)
            self._digests[key] = (md5.hexdigest(), sha1.hexdigest())
        return self._digests[key]

    def status(self, wiki: str, date: str) -> dict[str, Any]:
        """The run's ``dumpstatus.json``."""
        jobs: dict[str, Any] = {}
        for path in sorted((self.root / wiki / date).iterdir()):
            job = next((name for pattern, name in JOBS if pattern.fullmatch(path.name)), None)
            if job is None:
                continue
            md5, sha1 = self.digests(path)
            if path.name in self.faults.wrong_checksum:
                md5, sha1 = md5[::-1], sha1[::-1]
            entry = jobs.setdefault(job, {"status": "done", "updated": f"{date[:4]}-{date[4:6]}-02 10:00:00"})
            entry["status"] = self.faults.job_status.get((date, job), "done")
            entry.setdefault("files", {})[path.name] = {
                "size": path.stat().st_size,
                "url": f"/{wiki}/{date}/{path.name}",
                "md5": md5,
                "sha1": sha1,
            }
        return {"jobs": jobs, "version": "0.8"}

    def etag(self, path: Path) -> str:
        return f'"{self.digests(path)[1][:16]}-{self.faults.version.get(path.name, 0)}"'

    def _count(self, change: int) -> None:
        with self._lock:
            self._open += change
            self.peak_connections = max(self.peak_connections, self._open)


def _handler(site: DumpSite) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # quiet
            return

        def do_GET(self) -> None:
            site._count(+1)
            try:
                self._get()
            except (BrokenPipeError, ConnectionResetError):
                pass
            finally:
                site._count(-1)

        def _reply(self, code: int, body: bytes, kind: str = "text/plain") -> None:
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _get(self) -> None:
            with site._lock:
                site.requests.append((self.path, dict(self.headers)))
            parts = [p for p in self.path.split("?")[0].split("/") if p]
            location = site.faults.redirect.get(self.path)
            if location is not None:
                self.send_response(302)
                self.send_header("Location", location)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if site.faults.endless_listings and (len(parts) == 1 or parts[-1] == "dumpstatus.json"):
                self._endless(b'{"jobs": {"' + b"x" * CHUNK)
                return
            if parts == ["_stats"]:  # what a benchmark that serves from another process reads back
                stats = {"sent": site.sent, "peak_connections": site.peak_connections}
                self._reply(200, json.dumps(stats).encode(), "application/json")
                return
            for folder in LISTED_FOLDERS:
                if parts[: len(folder)] == folder and self._listed(folder, parts[len(folder) :]):
                    return
            if len(parts) == 1 and (site.root / parts[0]).is_dir():
                runs = sorted(p.name for p in (site.root / parts[0]).iterdir() if p.is_dir())
                links = "".join(f'<a href="{run}/">{run}/</a>\n' for run in runs)
                self._reply(200, f"<html><body><pre>\n{links}</pre></body></html>".encode(), "text/html")
                return
            if len(parts) != 3 or parts[1] in site.faults.missing_runs:
                self._reply(404, b"not found")
                return
            wiki, date, name = parts
            if name == "dumpstatus.json":
                if not (site.root / wiki / date).is_dir():
                    self._reply(404, b"not found")
                    return
                status: Any = site.status(wiki, date)
                if site.faults.edit_status is not None:
                    status = site.faults.edit_status(status)
                if name in site.faults.slow:
                    self._trickle(json.dumps(status).encode(), site.faults.slow[name])
                    return
                self._reply(200, json.dumps(status).encode(), "application/json")
                return
            path = site.root / wiki / date / name
            if not path.is_file():
                self._reply(404, b"not found")
                return
            with site._lock:
                busy = site.faults.unavailable > 0
                site.faults.unavailable -= busy
            if busy:
                self._reply(503, b"Service Temporarily Unavailable")
                return
            self._send_file(path)

        def _listed(self, top: list[str], rest: list[str]) -> bool:
            """Runs under ``top`` (``/wikidatawiki/entities/[<date>/[<file>]]``, the Enterprise runs):
            listings with exact sizes as Wikimedia's web server writes them, and the files; True when
            answered."""
            folder = site.root.joinpath(*top, *rest)
            if len(rest) == 2 and folder.is_file():
                with site._lock:
                    busy = site.faults.unavailable > 0
                    site.faults.unavailable -= busy
                if busy:
                    self._reply(503, b"Service Temporarily Unavailable")
                else:
                    self._send_file(folder)
                return True
            if len(rest) > 1 or not folder.is_dir():
                return False
            lines = "".join(
                f'<a href="{p.name}{"/" if p.is_dir() else ""}">{p.name}</a>   27-Nov-2026 02:00   '
                f"{'-' if p.is_dir() else p.stat().st_size}\n"
                for p in sorted(folder.iterdir())
            )
            self._reply(200, f"<html><body><pre>\n{lines}</pre></body></html>".encode(), "text/html")
            return True

        def _endless(self, head: bytes, filler: bytes = b"\0" * CHUNK) -> None:
            """A 200 without Content-Length whose body never ends (until the client goes)."""
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            self.wfile.write(head)
            while True:
                self.wfile.write(filler)

        def _trickle(self, body: bytes, seconds: float) -> None:
            """A 200 whose body comes a byte every ``seconds``."""
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            for byte in body:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(seconds)

        def _send_file(self, path: Path) -> None:
            size, etag, faults = path.stat().st_size, site.etag(path), site.faults
            with site._lock:
                site.gets[path.name] = site.gets.get(path.name, 0) + 1
            if path.name in faults.endless:
                self._endless(path.read_bytes())
                return
            if path.name in faults.slow:
                self._trickle(path.read_bytes(), faults.slow[path.name])
                return
            start = 0
            wanted = self.headers.get("Range", "")
            if_range = self.headers.get("If-Range")
            match = re.fullmatch(r"bytes=(\d+)-", wanted)
            if match and not faults.no_range and (if_range is None or if_range == etag):
                start = int(match[1])
                if start >= size:
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{size}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{size - 1}/{size}")
            else:
                self.send_response(200)
            self.send_header("Content-Length", str(size - start))
            self.send_header("ETag", etag)
            self.send_header("Accept-Ranges", "none" if faults.no_range else "bytes")
            self.end_headers()
            with site._lock:
                cuts = faults.cut_at.get(path.name) or []
                cut = next((c for c in cuts if c > start), None)  # used up when the answer reaches it
                stall = faults.stall_at.get(path.name)
                if stall is not None and start <= stall[0] < (size if cut is None else cut):
                    del faults.stall_at[path.name]  # this answer reaches it
                else:
                    stall = None
                corrupt = path.name in faults.corrupt_once or path.name in faults.corrupt_always
                faults.corrupt_once.discard(path.name)
            position = start
            with open(path, "rb") as handle:
                if cut is None and stall is None and not corrupt:
                    # no fault in this answer: the kernel copies the file (sendfile, as nginx serves
                    # dumps), so a benchmark measures the client, not this server's Python loop
                    self.wfile.flush()
                    self._count(path, self.connection.sendfile(handle, offset=start))
                    return
                handle.seek(start)
                while chunk := handle.read(CHUNK):
                    if cut is not None and position + len(chunk) > cut:
                        chunk = chunk[: cut - position]
                    if stall is not None and position <= stall[0] < position + len(chunk):
                        head = stall[0] - position
                        self._write(path, chunk[:head])
                        self.wfile.flush()
                        time.sleep(stall[1])
                        chunk, position = chunk[head:], stall[0]
                    if corrupt and chunk:
                        chunk = bytes([chunk[0] ^ 0xFF]) + chunk[1:]
                        corrupt = False
                    self._write(path, chunk)
                    position += len(chunk)
                    if cut is not None and position >= cut:
                        with site._lock:
                            faults.cut_at[path.name].remove(cut)
                        self.wfile.flush()
                        self.close_connection = True
                        self.connection.shutdown(2)  # the client sees a short body: a dropped connection
                        return

        def _write(self, path: Path, chunk: bytes) -> None:
            self.wfile.write(chunk)
            self._count(path, len(chunk))

        def _count(self, path: Path, sent: int) -> None:
            with site._lock:
                site.sent[path.name] = site.sent.get(path.name, 0) + sent

    return Handler


def run_files(xml: bytes, work: Path, form: str = "multistream") -> dict[str, bytes]:
    """A run's files made from a real dump's XML: the articles (one multistream file, or three part files)
    and the ``page_props`` and ``redirect`` tables (a display title for the first 50 pages; a row per
    redirect page), named without their ``<wiki>-<date>-`` prefix (for :func:`write_run`)."""
    from support.dump_variants import field, split_dump, write_multistream, write_parts
    from support.sql_dumps import PAGE_PROPS_DDL, REDIRECT_DDL, page_props_rows, sql_dump_text, write_gz

    _, pages, _ = split_dump(xml)
    work.mkdir(parents=True, exist_ok=True)
    files: dict[str, bytes] = {}
    if form == "multistream":
        files["pages-articles-multistream.xml.bz2"] = write_multistream(work / "ms.bz2", xml).read_bytes()
    else:
        for path in write_parts(work, xml, "x", parts=3):
            files[path.name.removeprefix("x-")] = path.read_bytes()
    ids = [int(field(page, "id")) for page in pages]
    props = page_props_rows([], [(page_id, "displaytitle", f"page {page_id}") for page_id in ids[:50]])
    redirects = sorted(
        (int(field(page, "id")), 0, target.group(1).decode().replace(" ", "_"), "", "")
        for page in pages
        if (target := re.search(rb'<redirect title="([^"]+)"', page))
    )
    for name, table, ddl, rows in (
        ("page_props", "page_props", PAGE_PROPS_DDL, props),
        ("redirect", "redirect", REDIRECT_DDL, redirects),
    ):
        files[f"{name}.sql.gz"] = write_gz(
            work / f"{name}.sql.gz", sql_dump_text(table, ddl, rows)
        ).read_bytes()
    return files


def write_run(root: Path, wiki: str, date: str, files: dict[str, bytes]) -> Path:
    """A run folder ``root/<wiki>/<date>/`` holding ``files`` (names without the ``<wiki>-<date>-``
    prefix, e.g. ``pages-articles-multistream.xml.bz2``); returns it."""
    folder = root / wiki / date
    folder.mkdir(parents=True, exist_ok=True)
    for suffix, data in files.items():
        (folder / f"{wiki}-{date}-{suffix}").write_bytes(data)
    return folder


def write_entity_run(root: Path, date: str, files: dict[str, bytes]) -> Path:
    """An entity dump run ``root/wikidatawiki/entities/<date>/`` holding ``files`` (names without the
    ``wikidata-<date>-`` prefix, e.g. ``all.json.bz2``) and its md5 and sha1 checksum lists; returns it."""
    folder = root.joinpath(*ENTITY_PARTS, date)
    folder.mkdir(parents=True, exist_ok=True)
    names = {f"wikidata-{date}-{suffix}": data for suffix, data in files.items()}
    for name, data in names.items():
        (folder / name).write_bytes(data)
    for algorithm in ("md5", "sha1"):
        listed = "".join(
            f"{hashlib.new(algorithm, data).hexdigest()}  {name}\n" for name, data in names.items()
        )
        (folder / f"wikidata-{date}-{algorithm}sums.txt").write_text(listed)
    return folder


def write_html_run(root: Path, date: str, files: dict[str, bytes]) -> Path:
    """An Enterprise HTML run ``root/other/enterprise_html/runs/<date>/`` holding ``files`` (names without
    the ``-NS0-<date>-ENTERPRISE-HTML.json.tar.gz`` suffix: the wiki, e.g. ``enwiki``), and no checksum
    list, as Wikimedia publishes them; returns it."""
    folder = root.joinpath(*HTML_PARTS, date)
    folder.mkdir(parents=True, exist_ok=True)
    for wiki, data in files.items():
        (folder / f"{wiki}-NS0-{date}-ENTERPRISE-HTML.json.tar.gz").write_bytes(data)
    return folder


def main() -> None:
    """``python -m support.dump_site ROOT [--cut NAME:OFFSET ...]``: serve ``ROOT`` in this process (a
    benchmark's server must not share the measured client's interpreter), print the URL, serve until
    killed; ``/_stats`` answers the bytes sent per file."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(description=main.__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--cut", action="append", default=[], help="NAME:OFFSET, a cut once at OFFSET")
    args = parser.parse_args()
    site = DumpSite(args.root)
    for cut in args.cut:
        name, _, offset = cut.rpartition(":")
        site.faults.cut_at.setdefault(name, []).append(int(offset))
    print(site.url, flush=True)
    try:
        site.server.serve_forever()
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
