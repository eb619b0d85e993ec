"""Replicated multistream dumps: the real excerpt copied ``k`` times under new page ids, revision ids and
titles (:func:`replicate_dump`), cached under ``benchmarks/work/`` with a ``.json`` sidecar."""

from __future__ import annotations

import bz2
import html
import json
import os
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from assets.files import sha256_of
from assets.worker_pools import in_order, worker_pool
from benchmarks.common import locate_excerpt
from support.workspace import WORK_DIR, log

REPLICA_FORMAT = 1  # bump when the replication rules change (invalidates the cache)
PAGE_ID_STRIDE = 10_000_000  # page id of copy k = original + k * stride (enwiki excerpt ids < 30,303)
REVISION_ID_STRIDE = 1_000_000_000  # revision ids are ~7e8: a larger stride keeps them distinct


_TITLE_RE = re.compile(r"(<title>)([^<]*)(</title>)")
_PAGE_ID_RE = re.compile(r"(<id>)(\d+)(</id>)")  # the page's own <id> is the first one in <page>
_REVISION_ID_RE = re.compile(r"(<revision>\s*<id>)(\d+)(</id>)")
_PARENT_ID_RE = re.compile(r"(<parentid>)(\d+)(</parentid>)")
_REDIRECT_ATTR_RE = re.compile(r'(<redirect title=")([^"]*)(")')
_REDIRECT_TEXT_RE = re.compile(r"(<text[^>]*>\s*#\s*REDIRECT\s*:?\s*\[\[)([^\]|#]+)", re.IGNORECASE)
_NS_RE = re.compile(r"<ns>\s*(-?\d+)\s*</ns>")


@dataclass(slots=True)
class ReplicatedDump:
    """A cached replicated dump and what it holds (read from its ``.json`` sidecar)."""

    path: str
    index_path: str
    source: str
    source_sha256: str
    copies: int
    pages: int
    articles: int  # main-namespace pages that are not redirects
    redirects: int
    xml_bytes: int
    compressed_bytes: int
    streams: int
    pages_per_stream: int
    generation_seconds: float
    format: int = REPLICA_FORMAT

    @property
    def xml_mb(self) -> float:
        return self.xml_bytes / 1e6


def split_dump(source: Path) -> tuple[str, list[str], str]:
    """Stream a (bz2/plain) dump into header (through ``</siteinfo>``), ``<page>`` blocks and footer."""
    with open(source, "rb") as probe:
        opener = bz2.open if probe.read(3) == b"BZh" else open
    header: list[str] = []
    pages: list[str] = []
    footer: list[str] = []
    current: list[str] | None = None
    with opener(source, "rt", encoding="utf-8") as stream:
        for line in stream:
            stripped = line.strip()
            if current is not None:
                current.append(line)
                if stripped == "</page>":
                    pages.append("".join(current))
                    current = None
            elif stripped == "<page>":
                current = [line]
            elif pages:
                footer.append(line)
            else:
                header.append(line)
    if current is not None or not pages:
        raise ValueError(f"{source}: no complete <page> element found")
    return "".join(header), pages, "".join(footer)


def copy_page(page: str, k: int) -> str:
    """Copy ``k`` of a ``<page>`` block: distinct page/revision ids and title, redirects kept consistent."""
    if k == 0:
        return page
    suffix = f" (copy {k})"

    def add_suffix(match: re.Match[str]) -> str:
        return f"{match[1]}{match[2].rstrip()}{suffix}{match[3] if match.lastindex == 3 else ''}"

    def shift(stride: int) -> Any:
        return lambda m: f"{m[1]}{int(m[2]) + k * stride}{m[3]}"

    page = _TITLE_RE.sub(add_suffix, page, count=1)
    page = _PAGE_ID_RE.sub(shift(PAGE_ID_STRIDE), page, count=1)
    page = _REVISION_ID_RE.sub(shift(REVISION_ID_STRIDE), page)
    page = _PARENT_ID_RE.sub(shift(REVISION_ID_STRIDE), page)
    page = _REDIRECT_ATTR_RE.sub(add_suffix, page, count=1)
    return _REDIRECT_TEXT_RE.sub(add_suffix, page, count=1)


def _namespace(page: str) -> int | None:
    match = _NS_RE.search(page)
    return int(match[1]) if match else None


_SOURCE_PAGES: list[str] = []


def _init_replica_worker(pages: list[str]) -> None:
    global _SOURCE_PAGES
    _SOURCE_PAGES = pages


def _compress_group(group: tuple[int, int]) -> tuple[bytes, int, list[tuple[int, str]]]:
    """Pages ``start..stop`` (``group``) of the flattened (copy, page) sequence as one bz2 stream."""
    start, stop = group
    n = len(_SOURCE_PAGES)
    parts = [copy_page(_SOURCE_PAGES[i % n], i // n) for i in range(start, stop)]
    data = "".join(parts).encode("utf-8")
    index = []
    for part in parts:
        page_id = _PAGE_ID_RE.search(part)
        title = _TITLE_RE.search(part)
        index.append((int(page_id[2]) if page_id else -1, html.unescape(title[2]) if title else ""))
    return bz2.compress(data, 9), len(data), index


def replicate_dump(
    copies: int, *, source: Path | None = None, pages_per_stream: int = 100, workers: int = 2
) -> ReplicatedDump:
    """The excerpt's pages ``copies`` times as a Wikipedia-style multistream bz2 dump (cached).

    Layout: header+siteinfo stream, then one bz2 stream per ``pages_per_stream`` pages, then a
    ``</mediawiki>`` stream; a ``offset:page_id:title`` index like ``*-multistream-index.txt.bz2``.
    Cached under ``benchmarks/work/replicas/`` keyed by source sha256 and ``copies``.
    """
    source = source or locate_excerpt()
    sha = sha256_of(source)
    stem = f"enwiki-bench-{sha[:12]}-x{copies}-v{REPLICA_FORMAT}"
    directory = WORK_DIR / "replicas"
    path = directory / f"{stem}-pages-articles-multistream.xml.bz2"
    index_path = directory / f"{stem}-pages-articles-multistream-index.txt.bz2"
    meta_path = directory / f"{stem}.json"
    if meta_path.is_file() and path.is_file() and index_path.is_file():
        meta = ReplicatedDump(**json.loads(meta_path.read_text()))
        if meta.compressed_bytes == path.stat().st_size and meta.source_sha256 == sha:
            log(f"reusing cached replica x{copies}: {path.name} ({meta.xml_mb:,.0f} MB XML)")
            return meta
    directory.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    header, pages, footer = split_dump(source)
    total = len(pages) * copies
    log(f"replicating {source.name}: {len(pages)} pages x {copies} copies -> {path.name}")
    articles = sum(1 for p in pages if _namespace(p) == 0 and "<redirect" not in p)
    redirects = sum(1 for p in pages if "<redirect" in p)
    tmp_path = path.with_name(path.name + ".tmp")
    tmp_index = index_path.with_name(index_path.name + ".tmp")
    xml_bytes = 0
    streams = 0
    with open(tmp_path, "wb") as sink, bz2.open(tmp_index, "wt", encoding="utf-8") as index_sink:

        def write_stream(blob: bytes) -> int:
            nonlocal streams
            offset = sink.tell()
            sink.write(blob)
            streams += 1
            return offset

        head = header.encode("utf-8")
        write_stream(bz2.compress(head, 9))
        xml_bytes += len(head)
        groups = ((s, min(s + pages_per_stream, total)) for s in range(0, total, pages_per_stream))
        with worker_pool(workers, _init_replica_worker, (pages,), preload=(__name__,)) as pool:
            for _, (blob, size, entries) in in_order(_compress_group, groups, pool, 2 * workers):
                offset = write_stream(blob)
                xml_bytes += size
                index_sink.writelines(f"{offset}:{page_id}:{title}\n" for page_id, title in entries)
                if streams % 200 == 0:
                    log(f"  {streams * pages_per_stream:,}/{total:,} pages, {xml_bytes / 1e6:,.0f} MB XML")
        tail = footer.encode("utf-8")
        write_stream(bz2.compress(tail, 9))
        xml_bytes += len(tail)
    os.replace(tmp_index, index_path)
    os.replace(tmp_path, path)
    meta = ReplicatedDump(
        path=str(path),
        index_path=str(index_path),
        source=str(source),
        source_sha256=sha,
        copies=copies,
        pages=total,
        articles=articles * copies,
        redirects=redirects * copies,
        xml_bytes=xml_bytes,
        compressed_bytes=path.stat().st_size,
        streams=streams,
        pages_per_stream=pages_per_stream,
        generation_seconds=round(time.perf_counter() - started, 2),
    )
    meta_path.write_text(json.dumps(asdict(meta), indent=2) + "\n")
    log(
        f"replica x{copies} written in {meta.generation_seconds:.1f} s: {meta.xml_mb:,.0f} MB XML, "
        f"{meta.compressed_bytes / 1e6:,.0f} MB bz2, {streams} streams"
    )
    return meta
