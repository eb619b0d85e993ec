"""Stage 1's work: pages of the dump turned into KILT rows (wikitext conversion in worker processes) and
written to sharded Parquet, for one file read in order or for groups of bz2 streams."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pyarrow.parquet as pq

from assets.compressed import CompressedInputError, decompress_range
from assets.limits import HtmlLimits
from assets.skips import SkipLog
from assets.wikipedia.articles import DEFAULT_TEXT_STYLE, ParsedArticle
from assets.wikipedia.dump import DumpFormatError, DumpReader, RawPage, SiteInfo
from assets.wikipedia.pages.reuse import reusable_pages
from assets.wikipedia.schema import RESIDUAL_SAMPLE_SIZE, STAGE1_SCHEMA, KnowledgeSourceReport
from assets.wikipedia.wikitext import (
    has_residual_markup,
    link_target_key,
    normalize_title,
    parse_wikitext,
    split_fragment,
)

SIDE_ROWS = 1 << 16
"""Rows a parse step's side files (redirects, QIDs) hold before they are written, a row group at a time: a
row group a batch keeps ~1.7 kB of metadata in the writer's memory for every batch of the dump (0.5 GB at
enwiki's 140k batches)."""


@dataclass(frozen=True, slots=True)
class ConversionSettings:
    """What a worker needs to know about the wiki to convert its pages."""

    case: str
    server: str
    file_prefixes: frozenset[str]
    category_prefixes: frozenset[str]
    text_style: str = DEFAULT_TEXT_STYLE
    reuse_from: str | None = None  # an earlier snapshot's converted pages (:mod:`.page_reuse`)
    html_limits: HtmlLimits = field(default_factory=HtmlLimits)  # what one article's HTML may hold

    def parse_wikitext(self, title: str, wikitext: str) -> ParsedArticle:
        """One page's wikitext in this wiki's namespaces and this text style."""
        return parse_wikitext(
            title,
            wikitext,
            file_prefixes=self.file_prefixes,
            category_prefixes=self.category_prefixes,
            style=self.text_style,
        )

    @classmethod
    def of(
        cls, site: SiteInfo, text_style: str = DEFAULT_TEXT_STYLE, html_limits: HtmlLimits | None = None
    ) -> ConversionSettings:
        return cls(
            case=site.case,
            server=site.server,
            file_prefixes=site.prefixes_of(6) | site.prefixes_of(-2),
            category_prefixes=site.prefixes_of(14),
            text_style=text_style,
            html_limits=html_limits or HtmlLimits(),
        )


@dataclass(slots=True)
class BatchResult:
    """A converted batch: Arrow IPC bytes of stage-1 rows plus counters."""

    ipc: bytes
    rows: int
    paragraphs: int = 0
    residual_paragraphs: int = 0
    anchors: int = 0
    skips: SkipLog = field(default_factory=lambda: SkipLog(listed=RESIDUAL_SAMPLE_SIZE))
    """Pages left out by reason, the first named by id and title."""
    residual_examples: list[dict[str, Any]] = field(default_factory=list)
    redirects: list[dict[str, Any]] = field(default_factory=list)  # parallel (fragment) mode only
    pages_read: int = 0
    input_bytes: int = 0
    max_timestamp: str | None = None
    reused: list[tuple[int, int, int, int]] = field(default_factory=list)  # (ord, page id, shard, row)


def page_text_sha1(text: list[str]) -> str:
    """Content hash of a page's KILT text (what incremental rebuilds compare)."""
    return hashlib.sha1("".join(text).encode("utf-8")).hexdigest()


@lru_cache(maxsize=1 << 16)
def _href_and_key(target: str, case: str) -> tuple[str, str]:
    """KILT's URL-quoted ``href`` and the lookup key of a link target (link targets repeat a lot)."""
    return quote(target), link_target_key(target, case=case)


def page_url(server: str, title: str, revid: int | None) -> str:
    """A revision's URL as KILT's ``history.url`` writes it: the title URL-quoted (``%20``, not ``_``)."""
    url = f"{server}/w/index.php?title={quote(title)}"
    return f"{url}&oldid={revid}" if revid is not None else url


def count_paragraphs(result: BatchResult, page_id: str, text: list[str]) -> None:
    """Count a page's paragraphs (``text`` without its title) and those with residual markup (examples
    kept) into ``result``."""
    body = text[1:]
    result.paragraphs += len(body)
    residual = has_residual_markup("".join(body))  # one scan per page; per paragraph only on a hit
    for paragraph_id, paragraph in enumerate(body if residual else (), start=1):
        if has_residual_markup(paragraph):
            result.residual_paragraphs += 1
            if len(result.residual_examples) < RESIDUAL_SAMPLE_SIZE:
                result.residual_examples.append(
                    {"wikipedia_id": page_id, "paragraph_id": paragraph_id, "text": paragraph[:300]}
                )


def convert_batch(pages: list[tuple], settings: ConversionSettings) -> BatchResult:
    """Convert ``(ord, page_id, title, text, revid, parentid, timestamp)`` tuples to stage-1 rows; with
    ``settings.reuse_from``, pages an earlier snapshot converted are listed in ``reused`` instead."""
    rows = Stage1Rows()
    result = rows.result
    if settings.reuse_from is not None:  # pages an earlier snapshot converted: copied by the part's writer
        known = reusable_pages(settings.reuse_from, pages)
        result.reused = [(page[0], page[1], *known[page[1]]) for page in pages if page[1] in known]
        pages = [page for page in pages if page[1] not in known]
    for ord_, page_id, title, wikitext, revid, parentid, timestamp in pages:
        try:
            parsed = settings.parse_wikitext(title, wikitext)
        except Exception as exc:  # the converter must not take the build down: count and name it
            rows.skip(page_id, title, "conversion_error", f"{type(exc).__name__}: {exc}")
            continue
        page = (ord_, page_id, title, revid, parentid, timestamp)
        rows.add(page, parsed, len(wikitext.encode("utf-8")), settings)
    return rows.finish()


class Stage1Rows:
    """Stage-1 rows of one batch, whichever route parsed its pages (wikitext, Parsoid HTML), with the
    batch's counters; :meth:`finish` makes the :class:`BatchResult` a worker hands back."""

    def __init__(self) -> None:
        self.columns: dict[str, list] = {name: [] for name in STAGE1_SCHEMA.names}
        self.result = BatchResult(ipc=b"", rows=0)

    def skip(self, page_id: int, title: str, reason: str, detail: str) -> None:
        """A page left out for ``reason``, counted and (the first few) named."""
        self.result.skips.skip(reason, f"page id={page_id} {title!r}: {detail}")

    def add(
        self, page: tuple, parsed: ParsedArticle, source_bytes: int, settings: ConversionSettings
    ) -> None:
        """One page's row: ``page`` is ``(ord, page_id, title, revid, parentid, timestamp)``;
        ``source_bytes`` the size of the wikitext it was read from (``wikitext_bytes``)."""
        ord_, page_id, title, revid, parentid, timestamp = page
        result, columns = self.result, self.columns
        if len(parsed.text) <= 1:
            self.skip(page_id, title, "no_text_after_cleaning", "no text after cleaning")
            return
        count_paragraphs(result, str(page_id), parsed.text)
        anchors = []
        for anchor in parsed.anchors:
            href, key = _href_and_key(anchor.target, settings.case)
            anchors.append(
                {
                    "paragraph_id": anchor.paragraph_id,
                    "start": anchor.start,
                    "end": anchor.end,
                    "text": anchor.text,
                    "href": href,
                    "target_key": key,
                }
            )
        result.anchors += len(anchors)
        columns["ord"].append(ord_)
        columns["wikipedia_id"].append(str(page_id))
        columns["wikipedia_title"].append(title)
        columns["text"].append(parsed.text)
        columns["anchors"].append(anchors)
        columns["categories"].append(parsed.categories)
        columns["history"].append(
            {
                "revid": revid,
                "parentid": parentid,
                "pageid": page_id,
                "timestamp": timestamp,
                "url": page_url(settings.server, title, revid),
                "pre_dump": True,  # the revision is the dump's own, so it predates the dump
            }
        )
        columns["is_disambiguation"].append(parsed.is_disambiguation)
        columns["text_sha1"].append(page_text_sha1(parsed.text))
        columns["wikitext_bytes"].append(source_bytes)

    def finish(self) -> BatchResult:
        """The batch's rows as Arrow IPC bytes in its result."""
        table = pa.Table.from_pydict(self.columns, schema=STAGE1_SCHEMA)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, STAGE1_SCHEMA) as writer:
            writer.write_table(table)
        self.result.ipc = sink.getvalue().to_pybytes()
        self.result.rows = table.num_rows
        return self.result


class ShardedParquetWriter:
    """Appends tables to ``part-00000.parquet``, ``part-00001.parquet``... starting a new shard every
    ``rows_per_shard`` rows or once a shard holds ``bytes_per_shard`` bytes of (in-memory) data, so that
    shards are units of parallel work of similar size."""

    def __init__(
        self, directory: Path, schema: pa.Schema, rows_per_shard: int, bytes_per_shard: int | None = None
    ) -> None:
        self.directory = directory
        self.schema = schema
        self.rows_per_shard = rows_per_shard
        self.bytes_per_shard = bytes_per_shard
        self._bytes_in_shard = 0
        self.directory.mkdir(parents=True, exist_ok=True)
        self.paths: list[Path] = []
        self._writer: pq.ParquetWriter | None = None
        self._rows_in_shard = 0

    def write(self, table: pa.Table) -> None:
        offset = 0
        while offset < table.num_rows:
            if self._writer is None:
                path = self.directory / f"part-{len(self.paths):05d}.parquet"
                self.paths.append(path)
                self._writer = pq.ParquetWriter(path, self.schema, compression="zstd")
                self._rows_in_shard = 0
                self._bytes_in_shard = 0
            take = min(self.rows_per_shard - self._rows_in_shard, table.num_rows - offset)
            piece = table.slice(offset, take)
            self._writer.write_table(piece)
            self._rows_in_shard += take
            self._bytes_in_shard += piece.nbytes
            offset += take
            full = self.bytes_per_shard is not None and self._bytes_in_shard >= self.bytes_per_shard
            if self._rows_in_shard >= self.rows_per_shard or full:
                self.close()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


def _route_page(
    page: RawPage, ord_: int, redirects: list[dict[str, Any]], skips: SkipLog, case: str
) -> tuple | None:
    """Redirects go to ``redirects``, other namespaces and unusable pages to the skip counts; an
    article comes back as the tuple :func:`convert_batch` takes."""
    if page.ns != 0:
        skips.skip("non_main_namespace")
        return None
    if page.redirect_target is not None:
        target, fragment = split_fragment(page.redirect_target)
        redirects.append(
            {
                "source_title": page.title,
                "source_id": str(page.page_id),
                "target_title": normalize_title(target, case=case),
                "target_fragment": fragment,
            }
        )
        return None
    if not page.text.strip():
        skips.skip("empty_text", f"page id={page.page_id} {page.title!r}: empty text")
        return None
    if page.model not in (None, "wikitext"):
        skips.skip(f"content_model_{page.model}")
        return None
    return (ord_, page.page_id, page.title, page.text, page.revid, page.parentid, page.timestamp)


def page_batches(
    pages: Iterator[RawPage],
    report: KnowledgeSourceReport,
    redirects: list[dict[str, Any]],
    case: str,
    batch_bytes: int,
) -> Iterator[list[tuple]]:
    """Route pages (see :func:`_route_page`) and cut the articles into batches of about
    ``batch_bytes`` of wikitext for the workers."""
    batch: list[tuple] = []
    size = 0
    skips = SkipLog(listed=RESIDUAL_SAMPLE_SIZE)
    for page in pages:
        report.pages_read += 1
        article = _route_page(page, report.pages_read, redirects, skips, case)
        if article is None:
            continue
        batch.append(article)
        size += len(page.text)
        if size >= batch_bytes:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch
    report.add_skips(skips)


@dataclass(frozen=True, slots=True)
class FragmentTask:
    """A group of bz2 streams of a multistream dump: ``[start, end)`` compressed bytes."""

    path: str
    index: int
    start: int
    end: int
    siteinfo: SiteInfo
    as_of: str | None
    invalid_bytes: str
    max_page_bytes: int
    max_group_bytes: int


def convert_fragment(task: FragmentTask, settings: ConversionSettings) -> BatchResult:
    """Decompress, parse and convert one stream group (runs in a worker process)."""
    where = f"bz2 streams at compressed bytes {task.start}-{task.end}"
    try:
        data = decompress_range(task.path, task.start, task.end, max_bytes=task.max_group_bytes)
    except CompressedInputError as error:
        raise DumpFormatError(str(error)) from None
    reader = DumpReader(
        task.path, as_of=task.as_of, invalid_bytes=task.invalid_bytes, max_page_bytes=task.max_page_bytes
    )
    reader.siteinfo = task.siteinfo
    pages = reader.parse_fragment(data, where)
    redirects: list[dict[str, Any]] = []
    routed = SkipLog(listed=RESIDUAL_SAMPLE_SIZE)
    base = task.index * 1_000_000
    articles = [
        article
        for i, page in enumerate(pages)
        if (article := _route_page(page, base + i, redirects, routed, task.siteinfo.case)) is not None
    ]
    result = convert_batch(articles, settings)
    result.redirects = redirects
    result.pages_read = len(pages)
    result.input_bytes = len(data)
    result.max_timestamp = reader.stats.max_timestamp
    result.skips.merge(routed)
    result.skips.merge(reader.stats.skips)
    if reader.stats.replaced_invalid_bytes:
        result.skips.skip("invalid_bytes_replaced", count=reader.stats.replaced_invalid_bytes)
    return result


def read_siteinfo(dump: Path, header: list[int], invalid_bytes: str, max_bytes: int) -> SiteInfo:
    """``<siteinfo>`` from the first bz2 stream ``[start, end)`` (Wikipedia puts the header alone in it),
    of at most ``max_bytes`` decompressed."""
    try:
        data = decompress_range(dump, header[0], header[1], max_bytes=max_bytes)
    except CompressedInputError as error:
        raise DumpFormatError(str(error)) from None
    end = data.find(b"</siteinfo>")
    if end < 0:
        cut = data.find(b"<page>")
        header_xml = data[: cut if cut >= 0 else len(data)]
    else:
        header_xml = data[: end + len(b"</siteinfo>")]
    reader = DumpReader(dump, invalid_bytes=invalid_bytes)
    reader.parse_bytes(header_xml + b"</mediawiki>")
    return reader.siteinfo
