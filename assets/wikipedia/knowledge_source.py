"""Dump -> KILT knowledge source: sharded Parquet pages, a redirects table and a build report.

Stage 1 streams the dump: the main process decompresses and parses XML, worker processes turn
wikitext into KILT paragraphs/anchors and send back Arrow batches that the main process appends to
Parquet shards. Stage 2 (DuckDB, out-of-core) follows redirect chains and resolves every anchor to
its target page. Everything is written under a temp directory that is renamed into place at the end.
"""

from __future__ import annotations

import bz2
import hashlib
import logging
import os
import shutil
import sys
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from multiprocessing import get_context
from pathlib import Path
from typing import Any
from urllib.parse import quote

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from assets.storage import SnapshotPaths, publish, sql_literal, temp_sibling, write_report_json
from assets.wikipedia.dump_reader import (
    DumpFormatError,
    DumpReader,
    FragmentNotAligned,
    RawPage,
    SiteInfo,
    dump_date_from_name,
    find_bz2_streams,
)
from assets.wikipedia.titles import link_target_key, normalize_title, split_fragment
from assets.wikipedia.wikitext import has_residual_markup, parse_wikitext

log = logging.getLogger(__name__)

_ANCHOR_FIELDS = [
    ("paragraph_id", pa.int32()),
    ("start", pa.int32()),
    ("end", pa.int32()),
    ("text", pa.string()),
    ("href", pa.string()),
]
ANCHOR_TYPE = pa.struct([*_ANCHOR_FIELDS, ("target_key", pa.string())])  # stage 1: target not resolved yet
RESOLVED_ANCHOR_TYPE = pa.struct(
    [*_ANCHOR_FIELDS, ("wikipedia_title", pa.string()), ("wikipedia_id", pa.string())]
)
HISTORY_TYPE = pa.struct(
    [
        ("revid", pa.int64()),
        ("parentid", pa.int64()),
        ("pageid", pa.int64()),
        ("timestamp", pa.string()),
        ("url", pa.string()),
    ]
)


def _page_fields(anchor_type: pa.DataType) -> list[tuple[str, pa.DataType]]:
    return [
        ("wikipedia_id", pa.string()),
        ("wikipedia_title", pa.string()),
        ("text", pa.list_(pa.string())),
        ("anchors", pa.list_(anchor_type)),
        ("categories", pa.list_(pa.string())),
        ("history", HISTORY_TYPE),
        ("is_disambiguation", pa.bool_()),
        ("text_sha1", pa.string()),
        ("wikitext_bytes", pa.int64()),
    ]


STAGE1_SCHEMA = pa.schema([("ord", pa.int64()), *_page_fields(ANCHOR_TYPE)])
REDIRECT_STAGE1_SCHEMA = pa.schema(
    [
        ("source_title", pa.string()),
        ("source_id", pa.string()),
        ("target_title", pa.string()),
        ("target_fragment", pa.string()),
    ]
)
PAGES_SCHEMA = pa.schema(_page_fields(RESOLVED_ANCHOR_TYPE))
"""Schema of the published ``pages/part-*.parquet`` shards (KILT's fields plus two of ours)."""
REDIRECT_FINAL_SCHEMA = pa.schema(
    [
        *REDIRECT_STAGE1_SCHEMA,
        ("target_wikipedia_title", pa.string()),
        ("target_wikipedia_id", pa.string()),
        ("hops", pa.int32()),
        ("status", pa.string()),
    ]
)
"""Schema of ``redirects.parquet``: status is resolved, missing_target or loop_or_too_long."""
RESIDUAL_SAMPLE_SIZE = 20


@dataclass(frozen=True, slots=True)
class ConversionSettings:
    """What a worker needs to know about the wiki to convert its pages."""

    case: str
    server: str
    file_prefixes: frozenset[str]
    category_prefixes: frozenset[str]

    @classmethod
    def of(cls, site: SiteInfo) -> ConversionSettings:
        return cls(
            case=site.case,
            server=site.server,
            file_prefixes=site.prefixes_of(6) | site.prefixes_of(-2),
            category_prefixes=site.prefixes_of(14),
        )


@dataclass(slots=True)
class BatchResult:
    """A converted batch: Arrow IPC bytes of stage-1 rows plus counters."""

    ipc: bytes
    rows: int
    paragraphs: int = 0
    residual_paragraphs: int = 0
    anchors: int = 0
    skipped: Counter = field(default_factory=Counter)
    skipped_examples: list[str] = field(default_factory=list)
    residual_examples: list[dict[str, Any]] = field(default_factory=list)
    redirects: list[dict[str, Any]] = field(default_factory=list)  # parallel (fragment) mode only
    pages_read: int = 0
    xml_bytes: int = 0
    max_timestamp: str | None = None


@dataclass(slots=True)
class KnowledgeSourceReport:
    """Everything a build measured; saved as ``report.json`` and shown as Dagster metadata."""

    snapshot_id: str
    dump_path: str
    dump_bytes: int
    compression: str
    xml_bytes: int
    dbname: str | None
    language: str | None
    dump_files: list[str] = field(default_factory=list)  # every file read, parts in order
    pages_read: int = 0
    articles: int = 0
    redirects: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    skipped_examples: list[str] = field(default_factory=list)
    paragraphs: int = 0
    residual_markup_paragraphs: int = 0
    residual_markup_examples: list[dict[str, Any]] = field(default_factory=list)
    anchors: int = 0
    anchors_resolved: int = 0
    redirects_resolved: int = 0
    redirects_unresolved: dict[str, int] = field(default_factory=dict)
    shards: int = 0
    parquet_bytes: int = 0
    seconds: float = 0.0
    parse_seconds: float = 0.0
    resolve_seconds: float = 0.0

    @property
    def residual_markup_fraction(self) -> float:
        return self.residual_markup_paragraphs / self.paragraphs if self.paragraphs else 0.0

    @property
    def pages_per_second(self) -> float:
        return self.pages_read / self.seconds if self.seconds else 0.0

    @property
    def xml_mb_per_second(self) -> float:
        return self.xml_bytes / 1e6 / self.seconds if self.seconds else 0.0

    def to_dict(self) -> dict[str, Any]:
        payload = asdict(self)
        payload["residual_markup_fraction"] = self.residual_markup_fraction
        payload["pages_per_second"] = self.pages_per_second
        payload["xml_mb_per_second"] = self.xml_mb_per_second
        return payload


# ---------------------------------------------------------------------------------------- workers
_SETTINGS: ConversionSettings | None = None


def _init_worker(settings: ConversionSettings) -> None:
    global _SETTINGS
    _SETTINGS = settings


def page_text_sha1(text: list[str]) -> str:
    """Content hash of a page's KILT text (what incremental rebuilds compare)."""
    return hashlib.sha1("".join(text).encode("utf-8")).hexdigest()


@lru_cache(maxsize=1 << 16)
def _href_and_key(target: str, case: str) -> tuple[str, str]:
    """KILT's URL-quoted ``href`` and the lookup key of a link target (link targets repeat a lot)."""
    return quote(target), link_target_key(target, case=case)


def _page_url(server: str, title: str, revid: int | None) -> str:
    url = f"{server}/w/index.php?title={quote(title.replace(' ', '_'))}"
    return f"{url}&oldid={revid}" if revid is not None else url


def convert_batch(pages: list[tuple], settings: ConversionSettings | None = None) -> BatchResult:
    """Convert ``(ord, page_id, title, text, revid, parentid, timestamp)`` tuples to stage-1 rows."""
    settings = settings or _SETTINGS
    assert settings is not None, "worker not initialised"
    columns: dict[str, list] = {name: [] for name in STAGE1_SCHEMA.names}
    result = BatchResult(ipc=b"", rows=0)
    for ord_, page_id, title, wikitext, revid, parentid, timestamp in pages:
        try:
            parsed = parse_wikitext(
                title,
                wikitext,
                file_prefixes=settings.file_prefixes,
                category_prefixes=settings.category_prefixes,
            )
        except Exception as exc:  # the converter must not take the build down: count and name it
            result.skipped["conversion_error"] += 1
            result.skipped_examples.append(f"page id={page_id} {title!r}: {type(exc).__name__}: {exc}")
            continue
        if len(parsed.text) <= 1:
            result.skipped["no_text_after_cleaning"] += 1
            if len(result.skipped_examples) < RESIDUAL_SAMPLE_SIZE:
                result.skipped_examples.append(f"page id={page_id} {title!r}: no text after cleaning")
            continue
        body = parsed.text[1:]
        result.paragraphs += len(body)
        residual = has_residual_markup("".join(body))  # one scan per page; per paragraph only on a hit
        for paragraph_id, paragraph in enumerate(body if residual else (), start=1):
            if has_residual_markup(paragraph):
                result.residual_paragraphs += 1
                if len(result.residual_examples) < RESIDUAL_SAMPLE_SIZE:
                    result.residual_examples.append(
                        {"wikipedia_id": str(page_id), "paragraph_id": paragraph_id, "text": paragraph[:300]}
                    )
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
                "url": _page_url(settings.server, title, revid),
            }
        )
        columns["is_disambiguation"].append(parsed.is_disambiguation)
        columns["text_sha1"].append(page_text_sha1(parsed.text))
        columns["wikitext_bytes"].append(len(wikitext.encode("utf-8")))
    table = pa.Table.from_pydict(columns, schema=STAGE1_SCHEMA)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, STAGE1_SCHEMA) as writer:
        writer.write_table(table)
    result.ipc = sink.getvalue().to_pybytes()
    result.rows = table.num_rows
    return result


# ---------------------------------------------------------------------------------------- writers
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
    page: RawPage,
    ord_: int,
    redirects: list[dict[str, Any]],
    skipped: Counter,
    examples: list[str],
    case: str,
) -> tuple | None:
    """Redirects go to ``redirects``, other namespaces and unusable pages to the skip counts; an
    article comes back as the tuple :func:`convert_batch` takes."""
    if page.ns != 0:
        skipped["non_main_namespace"] += 1
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
        skipped["empty_text"] += 1
        if len(examples) < RESIDUAL_SAMPLE_SIZE:
            examples.append(f"page id={page.page_id} {page.title!r}: empty text")
        return None
    if page.model not in (None, "wikitext"):
        skipped[f"content_model_{page.model}"] += 1
        return None
    return (ord_, page.page_id, page.title, page.text, page.revid, page.parentid, page.timestamp)


def _batches(
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
    skipped: Counter = Counter()
    for page in pages:
        report.pages_read += 1
        article = _route_page(page, report.pages_read, redirects, skipped, report.skipped_examples, case)
        if article is None:
            continue
        batch.append(article)
        size += len(page.text)
        if size >= batch_bytes:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch
    for reason, count in skipped.items():
        report.skipped[reason] = report.skipped.get(reason, 0) + count


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


def convert_fragment(task: FragmentTask, settings: ConversionSettings | None = None) -> BatchResult:
    """Decompress, parse and convert one stream group (runs in a worker process)."""
    with open(task.path, "rb") as handle:
        handle.seek(task.start)
        compressed = handle.read(task.end - task.start)
    where = f"bz2 streams at compressed bytes {task.start}-{task.end}"
    try:
        data = bz2.decompress(compressed)
    except (OSError, EOFError, ValueError) as exc:
        raise DumpFormatError(f"{task.path}: corrupt or truncated {where}: {exc}") from None
    reader = DumpReader(task.path, as_of=task.as_of, invalid_bytes=task.invalid_bytes)
    reader.siteinfo = task.siteinfo
    pages = reader.parse_fragment(data, where)
    redirects: list[dict[str, Any]] = []
    skipped: Counter = Counter()
    examples: list[str] = []
    base = task.index * 1_000_000
    articles = [
        article
        for i, page in enumerate(pages)
        if (article := _route_page(page, base + i, redirects, skipped, examples, task.siteinfo.case))
        is not None
    ]
    result = convert_batch(articles, settings)
    result.redirects = redirects
    result.pages_read = len(pages)
    result.xml_bytes = len(data)
    result.max_timestamp = reader.stats.max_timestamp
    result.skipped.update(skipped)
    result.skipped.update(reader.stats.skipped)
    result.skipped_examples.extend(examples)
    return result


def _fragment_tasks(
    dump: Path, offsets: list[int], siteinfo: SiteInfo, as_of: str | None, invalid_bytes: str, unit_bytes: int
) -> list[FragmentTask]:
    bounds = [*offsets, dump.stat().st_size]
    tasks = []
    start = bounds[0]
    for end in bounds[1:]:
        if end - start >= unit_bytes or end == bounds[-1]:
            tasks.append(FragmentTask(str(dump), len(tasks), start, end, siteinfo, as_of, invalid_bytes))
            start = end
    return tasks


def _read_siteinfo(dump: Path, offsets: list[int]) -> SiteInfo:
    """``<siteinfo>`` from the first bz2 stream (Wikipedia puts the header alone in it)."""
    with open(dump, "rb") as handle:
        data = bz2.decompress(handle.read(offsets[1] - offsets[0]))
    end = data.find(b"</siteinfo>")
    if end < 0:
        cut = data.find(b"<page>")
        header = data[: cut if cut >= 0 else len(data)]
    else:
        header = data[: end + len(b"</siteinfo>")]
    reader = DumpReader(dump)
    reader.parse_bytes(header + b"</mediawiki>")
    return reader.siteinfo


def _ordered_results(
    batches: Iterator[list[tuple]], settings: ConversionSettings, workers: int
) -> Iterator[BatchResult]:
    """Convert batches in worker processes with a bounded window (memory does not grow)."""
    if workers <= 0:
        for batch in batches:
            yield convert_batch(batch, settings)
        return
    context = get_context("spawn")
    with ProcessPoolExecutor(
        workers, mp_context=context, initializer=_init_worker, initargs=(settings,)
    ) as pool:
        window: deque[Future[BatchResult]] = deque()
        for batch in batches:
            window.append(pool.submit(convert_batch, batch))
            if len(window) >= 2 * workers:
                yield window.popleft().result()
        while window:
            yield window.popleft().result()


# ---------------------------------------------------------------------------------------- stage 2
def _resolve(
    stage1_dir: Path,
    redirects_raw: Path,
    out_pages_dir: Path,
    out_redirects: Path,
    report: KnowledgeSourceReport,
) -> None:
    """Follow redirect chains and resolve anchors to target titles/ids, shard by shard."""
    out_pages_dir.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    con.execute("SET preserve_insertion_order = true")
    con.execute(f"SET memory_limit = '{os.environ.get('KILT_DUCKDB_MEMORY', '512MB')}'")
    con.execute(f"SET temp_directory = {sql_literal(out_pages_dir.parent / '.duckdb_tmp')}")
    con.execute(
        f"CREATE TABLE art AS SELECT wikipedia_title AS title, wikipedia_id AS id "
        f"FROM read_parquet({sql_literal(stage1_dir / '*.parquet')})"
    )
    con.execute(
        f"CREATE TABLE red AS SELECT *, target_title AS cur, 0 AS hops, NULL::VARCHAR AS status "
        f"FROM read_parquet({sql_literal(redirects_raw)})"
    )
    max_hops = 8
    for _ in range(max_hops):
        # one hop: a redirect whose current target is itself a redirect moves on to that redirect's target
        changed = con.execute(
            """
            UPDATE red SET cur = nxt.target_title, hops = red.hops + 1
            FROM red AS nxt
            WHERE nxt.source_title = red.cur AND red.cur NOT IN (SELECT title FROM art)
              AND red.status IS NULL AND nxt.source_title <> red.source_title
            """
        ).fetchone()[0]
        if not changed:
            break
    con.execute(
        """
        CREATE TABLE red_final AS
        SELECT r.source_title, r.source_id, r.target_title, r.target_fragment,
               a.title AS target_wikipedia_title, a.id AS target_wikipedia_id, r.hops + 1 AS hops,
               CASE WHEN a.id IS NOT NULL THEN 'resolved'
                    WHEN r.cur IN (SELECT source_title FROM red) THEN 'loop_or_too_long'
                    ELSE 'missing_target' END AS status
        FROM red r LEFT JOIN art a ON a.title = r.cur
        """
    )
    con.execute(f"COPY red_final TO {sql_literal(out_redirects)} (FORMAT parquet, COMPRESSION zstd)")
    for status, count in con.execute("SELECT status, count(*) FROM red_final GROUP BY status").fetchall():
        if status == "resolved":
            report.redirects_resolved = count
        else:
            report.redirects_unresolved[status] = count
    con.execute(
        """
        CREATE TABLE keys AS
        SELECT title AS key, title AS wt, id AS wid FROM art
        UNION ALL
        SELECT source_title, target_wikipedia_title, target_wikipedia_id FROM red_final
        WHERE status = 'resolved' AND source_title NOT IN (SELECT title FROM art)
        """
    )
    resolved = 0
    for shard in sorted(stage1_dir.glob("*.parquet")):
        target = out_pages_dir / shard.name
        con.execute(
            f"""
            COPY (
              WITH p AS (SELECT * FROM read_parquet({sql_literal(shard)})),
              flat AS (SELECT ord, unnest(anchors) AS a, generate_subscripts(anchors, 1) AS i FROM p),
              res AS (
                SELECT flat.ord, list(struct_pack(
                    paragraph_id := a.paragraph_id, start := a.start, "end" := a."end", text := a.text,
                    href := a.href, wikipedia_title := k.wt, wikipedia_id := k.wid) ORDER BY i) AS anchors
                FROM flat LEFT JOIN keys k ON k.key = a.target_key GROUP BY flat.ord)
              SELECT p.wikipedia_id, p.wikipedia_title, p.text,
                     coalesce(res.anchors, []) AS anchors,
                     p.categories, p.history, p.is_disambiguation, p.text_sha1, p.wikitext_bytes
              FROM p LEFT JOIN res USING (ord) ORDER BY p.ord
            ) TO {sql_literal(target)} (FORMAT parquet, COMPRESSION zstd)
            """
        )
        resolved += con.execute(
            f"SELECT count(*) FROM (SELECT unnest(anchors) AS a FROM read_parquet({sql_literal(target)})) "
            "WHERE a.wikipedia_id IS NOT NULL"
        ).fetchone()[0]
    report.anchors_resolved = resolved
    con.close()
    shutil.rmtree(out_pages_dir.parent / ".duckdb_tmp", ignore_errors=True)


# ---------------------------------------------------------------------------------------- build
class _Stage1Sink:
    """Collects converted batches: Arrow rows into the stage-1 shards, redirects, counters."""

    def __init__(self, work: Path, dumps: list[Path], rows_per_shard: int, bytes_per_shard: int) -> None:
        self.report = KnowledgeSourceReport(
            snapshot_id="",
            dump_path=str(dumps[0]),
            dump_bytes=sum(dump.stat().st_size for dump in dumps),
            compression="",
            xml_bytes=0,
            dbname=None,
            language=None,
            dump_files=[str(dump) for dump in dumps],
        )
        self.redirect_writer = pq.ParquetWriter(work / "redirects_raw.parquet", REDIRECT_STAGE1_SCHEMA)
        self.stage1 = ShardedParquetWriter(work / "stage1", STAGE1_SCHEMA, rows_per_shard, bytes_per_shard)

    def add(self, result: BatchResult, redirects: list[dict[str, Any]]) -> None:
        report = self.report
        with pa.ipc.open_stream(result.ipc) as stream:
            self.stage1.write(stream.read_all())
        report.articles += result.rows
        report.paragraphs += result.paragraphs
        report.residual_markup_paragraphs += result.residual_paragraphs
        report.anchors += result.anchors
        for reason, count in result.skipped.items():
            report.skipped[reason] = report.skipped.get(reason, 0) + count
        room = RESIDUAL_SAMPLE_SIZE - len(report.residual_markup_examples)
        report.residual_markup_examples.extend(result.residual_examples[: max(room, 0)])
        report.skipped_examples.extend(result.skipped_examples[:RESIDUAL_SAMPLE_SIZE])
        self.write_redirects(redirects)

    def write_redirects(self, redirects: list[dict[str, Any]]) -> None:
        if redirects:
            self.redirect_writer.write_table(pa.Table.from_pylist(redirects, schema=REDIRECT_STAGE1_SCHEMA))
            self.report.redirects += len(redirects)
            redirects.clear()

    def close(self) -> None:
        self.redirect_writer.close()
        self.stage1.close()


def _dumps_label(dumps: list[Path]) -> str:
    """How errors and logs name the input: the file, or the first part and how many more."""
    return str(dumps[0]) if len(dumps) == 1 else f"{dumps[0]} (+{len(dumps) - 1} more parts)"


def _progress_bar(dumps: list[Path], total: int, progress: bool) -> tqdm:
    name = dumps[0].name if len(dumps) == 1 else f"{dumps[0].name} (+{len(dumps) - 1} parts)"
    return tqdm(
        total=total,
        unit="B",
        unit_scale=True,
        desc=f"parse {name}",
        disable=not progress,
        file=sys.stderr,
        mininterval=1.0,
    )


def _is_bz2(path: Path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(3) == b"BZh"


class _PartsReader:
    """The pages of one dump file, or of the part files of a dump one after the other."""

    def __init__(self, dumps: list[Path], as_of: str | None, invalid_bytes: str) -> None:
        self.readers = [DumpReader(dump, as_of=as_of, invalid_bytes=invalid_bytes) for dump in dumps]
        self.compressed_size = sum(reader.compressed_size for reader in self.readers)
        self._current = self.readers[0]
        self._done_bytes = 0

    @property
    def siteinfo(self) -> SiteInfo:
        """``<siteinfo>`` of the first file (parsed once its first page was read)."""
        return self.readers[0].siteinfo

    @property
    def compressed_position(self) -> int:
        return self._done_bytes + self._current.compressed_position

    def __iter__(self) -> Iterator[RawPage]:
        for reader in self.readers:
            self._current = reader
            yield from reader
            self._done_bytes += reader.compressed_size

    @property
    def compression(self) -> str:
        kinds = sorted({reader.compression for reader in self.readers})
        if len(self.readers) == 1:
            return kinds[0]
        return f"{'/'.join(kinds)} ({len(self.readers)} parts)"

    @property
    def xml_bytes(self) -> int:
        return sum(reader.xml_bytes for reader in self.readers)

    @property
    def max_timestamp(self) -> str | None:
        return max((r.stats.max_timestamp for r in self.readers if r.stats.max_timestamp), default=None)

    def skipped(self) -> Counter:
        """Reader-side skip counts summed over the files (invalid bytes replaced included)."""
        total: Counter = Counter()
        for reader in self.readers:
            total.update(reader.stats.skipped)
            if reader.stats.replaced_invalid_bytes:
                total["invalid_bytes_replaced"] += reader.stats.replaced_invalid_bytes
        return total


def _check_parts_agree(dumps: list[Path], invalid_bytes: str) -> None:
    """Part files must be distinct and come from one wiki (``<dbname>``) and one date (file names);
    only the head of each part is read."""
    seen: set[Path] = set()
    for dump in dumps:
        if dump.resolve() in seen:
            raise ValueError(f"{dump}: part file listed twice")
        seen.add(dump.resolve())
    first_date = dump_date_from_name(dumps[0])
    first_dbname: str | None = None
    for index, dump in enumerate(dumps):
        reader = DumpReader(dump, invalid_bytes=invalid_bytes)
        pages = iter(reader)
        next(pages, None)  # parses <siteinfo>
        pages.close()  # type: ignore[attr-defined]
        dbname = reader.siteinfo.dbname
        if index == 0:
            first_dbname = dbname
        elif dbname is not None and first_dbname is not None and dbname != first_dbname:
            raise DumpFormatError(
                f"{dump}: <dbname> is {dbname!r} but the first part {dumps[0].name} has {first_dbname!r}; "
                "the parts of a dump must come from one wiki"
            )
        date = dump_date_from_name(dump)
        if date is not None and first_date is not None and date != first_date:
            raise DumpFormatError(
                f"{dump}: dump date {date} in the file name differs from {first_date} of the first part "
                f"{dumps[0].name}; the parts of a dump must come from one snapshot"
            )


def _stage1_sequential(
    dumps: list[Path],
    work: Path,
    as_of: str | None,
    invalid_bytes: str,
    workers: int,
    rows_per_shard: int,
    bytes_per_shard: int,
    batch_bytes: int,
    progress: bool,
    on_progress: Callable[[str], None] | None,
) -> tuple[KnowledgeSourceReport, SiteInfo, str | None]:
    """One reader streams the dump (its parts one after the other); worker processes convert batches
    of articles."""
    reader = _PartsReader(dumps, as_of, invalid_bytes)
    sink = _Stage1Sink(work, dumps, rows_per_shard, bytes_per_shard)
    report = sink.report
    pages_iter = iter(reader)
    first = next(pages_iter, None)  # parses <siteinfo> before the workers need it
    site = reader.siteinfo
    settings = ConversionSettings.of(site)

    def all_pages() -> Iterator[RawPage]:
        if first is not None:
            yield first
        yield from pages_iter

    redirects: list[dict[str, Any]] = []
    bar = _progress_bar(dumps, reader.compressed_size, progress)
    last_position = 0
    last_logged = time.perf_counter()
    for result in _ordered_results(
        _batches(all_pages(), report, redirects, site.case, batch_bytes), settings, workers
    ):
        sink.add(result, redirects)
        bar.update(reader.compressed_position - last_position)
        last_position = reader.compressed_position
        if on_progress and time.perf_counter() - last_logged > 10:
            last_logged = time.perf_counter()
            on_progress(f"{report.pages_read:,} pages read, {report.articles:,} articles converted")
    sink.write_redirects(redirects)
    sink.close()
    bar.update(reader.compressed_size - last_position)
    bar.close()
    for reason, count in reader.skipped().items():
        report.skipped[reason] = report.skipped.get(reason, 0) + count
    report.compression = reader.compression
    report.xml_bytes = reader.xml_bytes
    return report, site, reader.max_timestamp


def _stage1_parallel(
    dump: Path,
    offsets: list[int],
    work: Path,
    as_of: str | None,
    invalid_bytes: str,
    workers: int,
    rows_per_shard: int,
    bytes_per_shard: int,
    progress: bool,
    on_progress: Callable[[str], None] | None,
    unit_bytes: int = 4_000_000,
) -> tuple[KnowledgeSourceReport, SiteInfo, str | None]:
    """Multistream bz2: worker processes decompress, parse and convert groups of streams."""
    site = _read_siteinfo(dump, offsets)
    settings = ConversionSettings.of(site)
    tasks = _fragment_tasks(dump, offsets, site, as_of, invalid_bytes, unit_bytes)
    sink = _Stage1Sink(work, [dump], rows_per_shard, bytes_per_shard)
    report = sink.report
    max_timestamp: str | None = None
    bar = _progress_bar([dump], dump.stat().st_size, progress)
    last_logged = time.perf_counter()
    context = get_context("spawn")
    with ProcessPoolExecutor(
        workers, mp_context=context, initializer=_init_worker, initargs=(settings,)
    ) as pool:
        window: deque[tuple[FragmentTask, Future[BatchResult]]] = deque()
        pending = iter(tasks)

        def submit() -> None:
            task = next(pending, None)
            if task is not None:
                window.append((task, pool.submit(convert_fragment, task)))

        for _ in range(2 * workers):
            submit()
        while window:
            task, future = window.popleft()
            result = future.result()
            submit()
            report.pages_read += result.pages_read
            report.xml_bytes += result.xml_bytes
            if result.max_timestamp and (max_timestamp is None or result.max_timestamp > max_timestamp):
                max_timestamp = result.max_timestamp
            sink.add(result, result.redirects)
            bar.update(task.end - task.start)
            if on_progress and time.perf_counter() - last_logged > 10:
                last_logged = time.perf_counter()
                on_progress(f"{report.pages_read:,} pages read, {report.articles:,} articles converted")
    sink.close()
    bar.close()
    report.compression = f"bz2 multistream ({len(offsets)} streams, read in parallel)"
    return report, site, max_timestamp


def default_snapshot_id(dump: Path, siteinfo: SiteInfo, max_timestamp: str | None) -> str:
    """``{dbname}-{YYYYMMDD}``: date from the file name, else the newest revision in the dump."""
    dbname = siteinfo.dbname or f"{siteinfo.language or 'en'}wiki"
    date = dump_date_from_name(dump)
    if date is None:
        date = (max_timestamp or datetime.now(UTC).isoformat())[:10].replace("-", "")
    return f"{dbname}-{date}"


def _dump_files(dump: Path | str | Sequence[Path | str]) -> list[Path]:
    """The dump as a list of files: one file, or the part files in the order given."""
    dumps = [Path(dump)] if isinstance(dump, str | os.PathLike) else [Path(part) for part in dump]
    if not dumps:
        raise ValueError("no dump file given (empty list of part files)")
    for path in dumps:
        if not path.is_file():
            raise FileNotFoundError(f"dump not found: {path}")
    return dumps


def build_knowledge_source(
    dump: Path | str | Sequence[Path | str],
    data_dir: Path | str,
    *,
    snapshot_id: str | None = None,
    as_of: str | None = None,
    workers: int | None = None,
    rows_per_shard: int = 20_000,
    bytes_per_shard: int = 16_000_000,
    batch_bytes: int = 2_000_000,
    fragment_bytes: int = 4_000_000,
    invalid_bytes: str = "error",
    progress: bool = True,
    on_progress: Callable[[str], None] | None = None,
) -> KnowledgeSourceReport:
    """Build (or rebuild) the knowledge source of one snapshot from a MediaWiki XML dump.

    ``dump`` is one dump file or the part files of a dump (``...-pages-articles1.xml-p1p41242.bz2``,
    ...): their pages are read in the order given into one snapshot, with ``<siteinfo>`` from the first
    part; parts of different wikis (``<dbname>``) or dates (file names) are an error naming the part.
    Returns the report; the snapshot appears under ``<data_dir>/snapshots/<id>/knowledge_source``
    only when the whole build succeeded.
    """
    dumps = _dump_files(dump)
    data_dir = Path(data_dir)
    if len(dumps) > 1:
        _check_parts_agree(dumps, invalid_bytes)
    first, single = dumps[0], len(dumps) == 1
    workers = min(os.cpu_count() or 1, 2) if workers is None else workers
    started = time.perf_counter()
    work = temp_sibling(data_dir / "snapshots" / ".build")
    work.mkdir(parents=True)
    try:
        offsets = find_bz2_streams(first) if single and workers > 0 and _is_bz2(first) else []
        outcome = None
        if len(offsets) >= 3:
            try:
                outcome = _stage1_parallel(
                    first,
                    offsets,
                    work,
                    as_of,
                    invalid_bytes,
                    workers,
                    rows_per_shard,
                    bytes_per_shard,
                    progress,
                    on_progress,
                    unit_bytes=fragment_bytes,
                )
            except FragmentNotAligned as exc:
                log.warning(f"{exc}; reading the dump sequentially")
                shutil.rmtree(work)
                work.mkdir(parents=True)
        if outcome is None:
            outcome = _stage1_sequential(
                dumps,
                work,
                as_of,
                invalid_bytes,
                workers,
                rows_per_shard,
                bytes_per_shard,
                batch_bytes,
                progress,
                on_progress,
            )
        report, site, max_timestamp = outcome
        report.snapshot_id = snapshot_id or ""
        if report.articles == 0:
            raise ValueError(
                f"{_dumps_label(dumps)}: no article could be built "
                f"({report.pages_read} pages read, skipped: {report.skipped})"
            )
        report.parse_seconds = time.perf_counter() - started
        report.dbname = site.dbname
        report.language = site.language
        report.snapshot_id = snapshot_id or default_snapshot_id(first, site, max_timestamp)

        resolve_started = time.perf_counter()
        ks_dir = work / "knowledge_source"
        _resolve(
            work / "stage1",
            work / "redirects_raw.parquet",
            ks_dir / "pages",
            ks_dir / "redirects.parquet",
            report,
        )
        report.resolve_seconds = time.perf_counter() - resolve_started
        shards = sorted((ks_dir / "pages").glob("*.parquet"))
        report.shards = len(shards)
        report.parquet_bytes = (
            sum(p.stat().st_size for p in shards) + (ks_dir / "redirects.parquet").stat().st_size
        )
        report.seconds = time.perf_counter() - started
        write_report_json(ks_dir / "report.json", report.to_dict())
        manifest: dict[str, Any] = {
            "snapshot_id": report.snapshot_id,
            "dump_files": [path.name for path in dumps],  # where they were: manifest.run.json
            "dump_paths": [str(path.resolve()) for path in dumps],
            "dump_bytes": report.dump_bytes,
            "dbname": site.dbname,
            "language": site.language,
            "sitename": site.sitename,
            "case": site.case,
            "server": site.server,
            "namespaces": {str(k): v for k, v in site.namespaces.items()},
            "max_revision_timestamp": max_timestamp,
            "as_of": as_of,
            "articles": report.articles,
            "redirects": report.redirects,
            "built_at": datetime.now(UTC).isoformat(),
        }
        write_report_json(ks_dir / "manifest.json", manifest)
        publish(ks_dir, SnapshotPaths(data_dir, report.snapshot_id).knowledge_source)
        return report
    finally:
        shutil.rmtree(work, ignore_errors=True)
