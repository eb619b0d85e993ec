"""Dump -> KILT knowledge source: sharded Parquet pages, a redirects table and a build report.

Stage 1 is cut into parse steps (:func:`plan_dump_parts`): one per part file of a multi-part dump, or one
per group of bz2 streams of a multistream file. A step (:func:`parse_dump_part`) decompresses and parses
its XML, has worker processes turn wikitext into KILT paragraphs/anchors, and writes its own stage-1
Parquet shards and redirects under ``snapshots/.parse/``; a finished step is kept for a retry. Dagster runs
the steps on any executor (Dask included); :func:`build_knowledge_source` runs them one after the other.
Stage 2 (:func:`assemble_knowledge_source`, DuckDB, out-of-core) takes the parts in page order, follows
redirect chains and resolves every anchor to its target page, and publishes the snapshot with one rename.
"""

from __future__ import annotations

import bz2
import contextlib
import hashlib
import json
import logging
import os
import shutil
import sys
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from itertools import pairwise
from pathlib import Path
from typing import Any
from urllib.parse import quote

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from assets.storage import (
    SnapshotPaths,
    publish,
    sql_list,
    sql_literal,
    temp_sibling,
    write_json_atomic,
    write_report_json,
)
from assets.wikipedia.dump_reader import (
    DumpFormatError,
    DumpReader,
    RawPage,
    SiteInfo,
    dump_date_from_name,
    find_bz2_streams,
)
from assets.wikipedia.naming import snapshot_id_for
from assets.wikipedia.titles import link_target_key, normalize_title, split_fragment
from assets.wikipedia.wikitext import has_residual_markup, parse_wikitext
from assets.worker_pools import worker_pool

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


def convert_batch(pages: list[tuple], settings: ConversionSettings) -> BatchResult:
    """Convert ``(ord, page_id, title, text, revid, parentid, timestamp)`` tuples to stage-1 rows."""
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


def convert_fragment(task: FragmentTask, settings: ConversionSettings) -> BatchResult:
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
    if reader.stats.replaced_invalid_bytes:
        result.skipped["invalid_bytes_replaced"] += reader.stats.replaced_invalid_bytes
    result.skipped_examples.extend(examples)
    return result


def _fragment_tasks(part: DumpPart, siteinfo: SiteInfo) -> list[FragmentTask]:
    """The conversion tasks of a stream group part (worker processes decompress and convert each)."""
    settings = part.settings
    groups = _stream_groups(part.streams or [part.start], part.end, settings.fragment_bytes)
    return [
        FragmentTask(part.path, i, streams[0], end, siteinfo, settings.as_of, settings.invalid_bytes)
        for i, (streams, end) in enumerate(groups)
    ]


def _read_siteinfo(dump: Path, header: list[int], invalid_bytes: str) -> SiteInfo:
    """``<siteinfo>`` from the first bz2 stream ``[start, end)`` (Wikipedia puts the header alone in it)."""
    with open(dump, "rb") as handle:
        handle.seek(header[0])
        data = bz2.decompress(handle.read(header[1] - header[0]))
    end = data.find(b"</siteinfo>")
    if end < 0:
        cut = data.find(b"<page>")
        header_xml = data[: cut if cut >= 0 else len(data)]
    else:
        header_xml = data[: end + len(b"</siteinfo>")]
    reader = DumpReader(dump, invalid_bytes=invalid_bytes)
    reader.parse_bytes(header_xml + b"</mediawiki>")
    return reader.siteinfo


def _in_order(
    function: Callable[[Any, ConversionSettings], BatchResult],
    items: Iterable[Any],
    settings: ConversionSettings,
    pool: ProcessPoolExecutor | None,
    window: int,
) -> Iterator[tuple[Any, BatchResult]]:
    """``function(item, settings)`` for every item, in the pool's worker processes when there is one, with
    at most ``window`` items in flight (memory does not grow); results come back in input order."""
    if pool is None:
        for item in items:
            yield item, function(item, settings)
        return
    in_flight: deque[tuple[Any, Future[BatchResult]]] = deque()
    for item in items:
        in_flight.append((item, pool.submit(function, item, settings)))
        if len(in_flight) >= window:
            done, future = in_flight.popleft()
            yield done, future.result()
    while in_flight:
        done, future = in_flight.popleft()
        yield done, future.result()


# ---------------------------------------------------------------------------------------- stage 2
def _resolve(
    stage1_shards: list[Path],
    redirect_files: list[Path],
    out_pages_dir: Path,
    out_redirects: Path,
    report: KnowledgeSourceReport,
) -> None:
    """Follow redirect chains and resolve anchors to target titles/ids, shard by shard; the shards of all
    parts, in page order, become ``part-00000.parquet``, ``part-00001.parquet``..."""
    out_pages_dir.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    con.execute("SET preserve_insertion_order = true")
    con.execute(f"SET memory_limit = '{os.environ.get('KILT_DUCKDB_MEMORY', '512MB')}'")
    con.execute(f"SET temp_directory = {sql_literal(out_pages_dir.parent / '.duckdb_tmp')}")
    con.execute(
        f"CREATE TABLE art AS SELECT wikipedia_title AS title, wikipedia_id AS id "
        f"FROM read_parquet({sql_list(stage1_shards)})"
    )
    con.execute(
        f"CREATE TABLE red AS SELECT *, target_title AS cur, 0 AS hops, NULL::VARCHAR AS status "
        f"FROM read_parquet({sql_list(redirect_files)})"
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
    for number, shard in enumerate(stage1_shards):
        target = out_pages_dir / f"part-{number:05d}.parquet"
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


# ---------------------------------------------------------------------------------------- parts
_PARSE_CODE = ("knowledge_source.py", "dump_reader.py", "wikitext.py", "titles.py")
PART_FILE = "part.json"


@dataclass(frozen=True, slots=True)
class ParseSettings:
    """How pages are read and cut into stage-1 shards (a parsed part is reused only for equal settings)."""

    as_of: str | None = None
    invalid_bytes: str = "error"
    rows_per_shard: int = 20_000
    bytes_per_shard: int = 16_000_000
    batch_bytes: int = 2_000_000  # wikitext per conversion batch (file parts)
    fragment_bytes: int = 4_000_000  # compressed bytes per conversion task (stream groups)


@dataclass(frozen=True, slots=True)
class DumpPart:
    """What one parse step reads: a whole file of the dump read in order (``streams`` is None), or a group
    of bz2 streams ``[start, end)`` of a multistream file (``header``: the byte range of the file's first
    stream, which holds ``<siteinfo>``). Its output goes to ``out_dir``; ``key`` says what it depends on."""

    index: int
    path: str
    start: int
    end: int
    streams: list[int] | None
    header: list[int] | None
    out_dir: str
    key: str
    settings: ParseSettings

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> DumpPart:
        return cls(**{**values, "settings": ParseSettings(**values["settings"])})


@dataclass(slots=True)
class ParsedPart:
    """What a parse step wrote into its ``out_dir``: stage-1 shards, ``redirects.parquet`` and this
    record (``part.json``) with the part's counters (:class:`KnowledgeSourceReport` fields)."""

    index: int
    key: str
    siteinfo: dict[str, Any]
    max_timestamp: str | None
    report: dict[str, Any]
    seconds: float = 0.0
    resumed: bool = False

    @property
    def site(self) -> SiteInfo:
        values = dict(self.siteinfo)
        values["namespaces"] = {int(k): v for k, v in values["namespaces"].items()}
        return SiteInfo(**values)


@dataclass(slots=True)
class DumpPlan:
    """The parse steps of a dump, in page order."""

    dumps: list[Path]
    parts: list[DumpPart]


def read_parsed_part(part: DumpPart) -> ParsedPart | None:
    """The finished output of ``part`` (of this or an earlier run with the same key), else None."""
    record = Path(part.out_dir) / PART_FILE
    if not record.is_file():
        return None
    parsed = ParsedPart(**json.loads(record.read_text()))
    return parsed if parsed.key == part.key else None


def _code_fingerprint() -> str:
    """Hash of the modules that turn XML into stage-1 rows: a parsed part of older code is not reused."""
    digest = hashlib.sha1()
    for name in _PARSE_CODE:
        digest.update((Path(__file__).parent / name).read_bytes())
    return digest.hexdigest()


def _stream_groups(offsets: list[int], end: int, min_bytes: int) -> list[tuple[list[int], int]]:
    """Consecutive bz2 streams (their offsets, the last one ending at ``end``) grouped until a group spans
    at least ``min_bytes`` compressed bytes: ``(stream offsets, end of the group)`` per group. Parse steps
    are such groups of a file's streams; conversion tasks are such groups of a step's streams."""
    bounds = [*offsets, end]
    groups: list[tuple[list[int], int]] = []
    current: list[int] = []
    for start, stop in pairwise(bounds):
        current.append(start)
        if stop - current[0] >= min_bytes or stop == end:
            groups.append((current, stop))
            current = []
    return groups


def _misaligned_stream(dump: Path, offsets: list[int], starts: list[int]) -> int | None:
    """The first of ``starts`` (stream offsets) whose stream does not begin with a ``<page>`` (streams of
    pbzip2 and other parallel compressors cut the XML anywhere), else None. One stream is decompressed
    per start."""
    ends = dict(zip(offsets, [*offsets[1:], dump.stat().st_size], strict=True))
    with open(dump, "rb") as handle:
        for start in starts:
            handle.seek(start)
            try:
                head = bz2.decompress(handle.read(ends[start] - start)).lstrip()
            except (OSError, EOFError, ValueError):
                return start
            if not head.startswith((b"<page>", b"<page ", b"</mediawiki>")):
                return start
    return None


def plan_dump_parts(
    dump: Path | str | Sequence[Path | str],
    data_dir: Path | str,
    settings: ParseSettings = ParseSettings(),
    *,
    part_bytes: int = 128_000_000,
) -> DumpPlan:
    """Cut a dump into parse steps: one per part file of a multi-part dump; for one multistream bz2 file,
    groups of its streams of about ``part_bytes`` compressed bytes (when every group starts at a page);
    otherwise the file as one step. Outputs go under ``<data_dir>/snapshots/.parse/<dump key>/``."""
    dumps = _dump_files(dump)
    if len(dumps) > 1:
        _check_parts_agree(dumps, settings.invalid_bytes)
    identity = [[str(d.resolve()), d.stat().st_size, d.stat().st_mtime_ns] for d in dumps]
    parts_dir = Path(data_dir) / "snapshots" / ".parse" / _digest(identity)
    common = [identity, asdict(settings), _code_fingerprint()]

    def part(index: int, path: Path, start: int, end: int, streams: list[int] | None = None) -> DumpPart:
        header = None if streams is None else offsets[:2]
        key = _digest([common, index, start, end, streams is not None])
        out_dir = str(parts_dir / f"part-{index:05d}")
        return DumpPart(index, str(path), start, end, streams, header, out_dir, key, settings)

    offsets: list[int] = []
    if len(dumps) == 1 and _is_bz2(dumps[0]):
        offsets = find_bz2_streams(dumps[0])
    if len(offsets) >= 3:
        size = dumps[0].stat().st_size
        groups = _stream_groups(offsets, size, part_bytes)
        task_starts = [
            task[0]
            for streams, end in groups
            for task, _ in _stream_groups(streams, end, settings.fragment_bytes)
        ]
        misaligned = _misaligned_stream(dumps[0], offsets, task_starts[1:])
        if misaligned is None:
            return DumpPlan(
                dumps,
                [part(i, dumps[0], streams[0], end, streams) for i, (streams, end) in enumerate(groups)],
            )
        log.warning(
            f"{dumps[0]}: the bz2 stream at byte {misaligned} does not start at a <page> (not a Wikipedia "
            "multistream file); it is read in order in one step"
        )
    return DumpPlan(dumps, [part(i, d, 0, d.stat().st_size) for i, d in enumerate(dumps)])


def _digest(value: Any) -> str:
    return hashlib.sha1(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


class _Stage1Sink:
    """Collects a part's converted batches: Arrow rows into its stage-1 shards, redirects, counters."""

    def __init__(self, work: Path, part: DumpPart) -> None:
        self.report = KnowledgeSourceReport(
            snapshot_id="",
            dump_path=part.path,
            dump_bytes=part.end - part.start,
            compression="",
            xml_bytes=0,
            dbname=None,
            language=None,
            dump_files=[part.path],
        )
        settings = part.settings
        self.redirect_writer = pq.ParquetWriter(work / "redirects.parquet", REDIRECT_STAGE1_SCHEMA)
        self.stage1 = ShardedParquetWriter(
            work / "stage1", STAGE1_SCHEMA, settings.rows_per_shard, settings.bytes_per_shard
        )

    def add(self, result: BatchResult, redirects: list[dict[str, Any]]) -> None:
        report = self.report
        with pa.ipc.open_stream(result.ipc) as stream:
            self.stage1.write(stream.read_all())
        report.articles += result.rows
        report.paragraphs += result.paragraphs
        report.residual_markup_paragraphs += result.residual_paragraphs
        report.anchors += result.anchors
        _add_counts(report.skipped, result.skipped)
        _add_examples(report.residual_markup_examples, result.residual_examples)
        _add_examples(report.skipped_examples, result.skipped_examples)
        self.write_redirects(redirects)

    def write_redirects(self, redirects: list[dict[str, Any]]) -> None:
        if redirects:
            self.redirect_writer.write_table(pa.Table.from_pylist(redirects, schema=REDIRECT_STAGE1_SCHEMA))
            self.report.redirects += len(redirects)
            redirects.clear()

    def close(self) -> None:
        self.redirect_writer.close()
        self.stage1.close()


def _add_counts(total: dict[str, int], counts: dict[str, int]) -> None:
    for reason, count in counts.items():
        total[reason] = total.get(reason, 0) + count


def _add_examples(examples: list, more: list) -> None:
    examples.extend(more[: max(RESIDUAL_SAMPLE_SIZE - len(examples), 0)])


def _read_file_part(
    part: DumpPart,
    sink: _Stage1Sink,
    pool: ProcessPoolExecutor | None,
    window: int,
    bar: tqdm | None,
    on_progress: Callable[[str], None] | None,
) -> tuple[SiteInfo, str | None]:
    """One reader streams the file; batches of articles are converted by the pool's workers."""
    settings = part.settings
    reader = DumpReader(part.path, as_of=settings.as_of, invalid_bytes=settings.invalid_bytes)
    report = sink.report
    pages_iter = iter(reader)
    first = next(pages_iter, None)  # parses <siteinfo> before the workers need it
    site = reader.siteinfo

    def all_pages() -> Iterator[RawPage]:
        if first is not None:
            yield first
        yield from pages_iter

    redirects: list[dict[str, Any]] = []
    batches = _batches(all_pages(), report, redirects, site.case, settings.batch_bytes)
    position = 0
    last_logged = time.perf_counter()
    for _, result in _in_order(convert_batch, batches, ConversionSettings.of(site), pool, window):
        sink.add(result, redirects)
        if bar is not None:
            bar.update(reader.compressed_position - position)
        position = reader.compressed_position
        if on_progress and time.perf_counter() - last_logged > 10:
            last_logged = time.perf_counter()
            on_progress(
                f"{Path(part.path).name}: {report.pages_read:,} pages read, {report.articles:,} articles"
            )
    sink.write_redirects(redirects)
    if bar is not None:
        bar.update(reader.compressed_size - position)
    _add_counts(report.skipped, reader.stats.skipped)
    if reader.stats.replaced_invalid_bytes:
        _add_counts(report.skipped, {"invalid_bytes_replaced": reader.stats.replaced_invalid_bytes})
    report.compression = reader.compression
    report.xml_bytes = reader.xml_bytes
    return site, reader.stats.max_timestamp


def _read_stream_group(
    part: DumpPart,
    sink: _Stage1Sink,
    pool: ProcessPoolExecutor | None,
    window: int,
    bar: tqdm | None,
    on_progress: Callable[[str], None] | None,
) -> tuple[SiteInfo, str | None]:
    """Workers decompress, parse and convert groups of about ``fragment_bytes`` of the part's streams
    (the plan checked that each group starts at a page)."""
    assert part.header is not None
    site = _read_siteinfo(Path(part.path), part.header, part.settings.invalid_bytes)
    report = sink.report
    max_timestamp: str | None = None
    last_logged = time.perf_counter()
    tasks = _fragment_tasks(part, site)
    for task, result in _in_order(convert_fragment, tasks, ConversionSettings.of(site), pool, window):
        report.pages_read += result.pages_read
        report.xml_bytes += result.xml_bytes
        if result.max_timestamp and (max_timestamp is None or result.max_timestamp > max_timestamp):
            max_timestamp = result.max_timestamp
        sink.add(result, result.redirects)
        if bar is not None:
            bar.update(task.end - task.start)
        if on_progress and time.perf_counter() - last_logged > 10:
            last_logged = time.perf_counter()
            on_progress(f"streams {part.start}-{part.end}: {report.pages_read:,} pages read")
    report.compression = "bz2 multistream"
    return site, max_timestamp


def _parse_into(
    part: DumpPart,
    work: Path,
    pool: ProcessPoolExecutor | None,
    window: int,
    bar: tqdm | None,
    on_progress: Callable[[str], None] | None,
) -> tuple[KnowledgeSourceReport, SiteInfo, str | None]:
    work.mkdir(parents=True)
    sink = _Stage1Sink(work, part)
    try:
        if part.streams is None:
            site, max_timestamp = _read_file_part(part, sink, pool, window, bar, on_progress)
        else:
            site, max_timestamp = _read_stream_group(part, sink, pool, window, bar, on_progress)
    finally:
        sink.close()
    return sink.report, site, max_timestamp


def parse_dump_part(
    part: DumpPart,
    *,
    workers: int = 0,
    pool: ProcessPoolExecutor | None = None,
    bar: tqdm | None = None,
    on_progress: Callable[[str], None] | None = None,
) -> ParsedPart:
    """Parse one part of a dump into ``part.out_dir`` (published whole, or not at all). Conversion runs in
    ``pool``, else in ``workers`` processes of its own (0: in this process). An output an earlier run left
    for the same key is kept (``resumed``)."""
    done = read_parsed_part(part)
    if done is not None:
        if bar is not None:
            bar.update(part.end - part.start)
        done.resumed = True
        return done
    started = time.perf_counter()
    own_pool = pool is None and workers > 0
    if own_pool:
        pool = worker_pool(workers)
    window = 2 * max(workers, 1)
    out_dir = Path(part.out_dir)
    work = temp_sibling(out_dir)
    try:
        report, site, max_timestamp = _parse_into(part, work, pool, window, bar, on_progress)
        site_values = asdict(site)
        site_values["namespaces"] = {str(k): v for k, v in site.namespaces.items()}
        parsed = ParsedPart(
            part.index,
            part.key,
            site_values,
            max_timestamp,
            asdict(report),
            seconds=time.perf_counter() - started,
        )
        write_json_atomic(work / PART_FILE, asdict(parsed))
        publish(work, out_dir)
        return parsed
    finally:
        shutil.rmtree(work, ignore_errors=True)
        _remove_empty_parse_dirs(out_dir)
        if own_pool and pool is not None:
            pool.shutdown(cancel_futures=True)


def _remove_empty_parse_dirs(out_dir: Path) -> None:
    """Remove the dump's parts folder and ``.parse`` when nothing is in them (parts that were parsed stay
    for the next attempt)."""
    for folder in (out_dir.parent, out_dir.parent.parent):
        with contextlib.suppress(OSError):
            folder.rmdir()


# ---------------------------------------------------------------------------------------- build
def _dumps_label(dumps: list[Path]) -> str:
    """How errors and logs name the input: the file, or the first part and how many more."""
    return str(dumps[0]) if len(dumps) == 1 else f"{dumps[0]} (+{len(dumps) - 1} more parts)"


def progress_bar(dumps: list[Path], total: int, progress: bool) -> tqdm:
    """The parse progress bar over ``total`` compressed bytes."""
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


def _dump_files(dump: Path | str | Sequence[Path | str]) -> list[Path]:
    """The dump as a list of files: one file, or the part files in the order given."""
    dumps = [Path(dump)] if isinstance(dump, str | os.PathLike) else [Path(part) for part in dump]
    if not dumps:
        raise ValueError("no dump file given (empty list of part files)")
    for path in dumps:
        if not path.is_file():
            raise FileNotFoundError(f"dump not found: {path}")
    return dumps


def _compression_label(parts: list[DumpPart], parsed: list[ParsedPart]) -> str:
    if parts[0].streams is not None:
        streams = sum(len(part.streams or []) for part in parts)
        return f"bz2 multistream ({streams} streams in {len(parts)} parse steps)"
    kinds = sorted({p.report["compression"] for p in parsed})
    return kinds[0] if len(parsed) == 1 else f"{'/'.join(kinds)} ({len(parsed)} parts)"


def merge_part_reports(
    dumps: list[Path], parts: list[DumpPart], parsed: list[ParsedPart]
) -> KnowledgeSourceReport:
    """The parts' counters summed into the report of the whole dump (site from the first part)."""
    site = parsed[0].site
    report = KnowledgeSourceReport(
        snapshot_id="",
        dump_path=str(dumps[0]),
        dump_bytes=sum(dump.stat().st_size for dump in dumps),
        compression=_compression_label(parts, parsed),
        xml_bytes=0,
        dbname=site.dbname,
        language=site.language,
        dump_files=[str(dump) for dump in dumps],
    )
    summed = (
        "pages_read",
        "articles",
        "redirects",
        "xml_bytes",
        "paragraphs",
        "residual_markup_paragraphs",
        "anchors",
    )
    for part in parsed:
        for name in summed:
            setattr(report, name, getattr(report, name) + part.report[name])
        _add_counts(report.skipped, part.report["skipped"])
        _add_examples(report.skipped_examples, part.report["skipped_examples"])
        _add_examples(report.residual_markup_examples, part.report["residual_markup_examples"])
    return report


def replacement_problem(
    data_dir: Path | str, snapshot_id: str, dumps: Sequence[Path | str], as_of: str | None
) -> str | None:
    """Why building ``snapshot_id`` from ``dumps`` (with ``as_of``) would replace a knowledge source built
    from other dump files or another ``as_of`` (None when it would not: a rebuild of the same dump)."""
    manifest_file = SnapshotPaths(Path(data_dir), snapshot_id).manifest_file
    if not manifest_file.is_file():
        return None
    manifest = json.loads(manifest_file.read_text())
    names = [Path(d).name for d in dumps]
    if manifest.get("dump_files") == names and manifest.get("as_of") == as_of:
        return None
    return (
        f"snapshot {snapshot_id} was built from {', '.join(manifest.get('dump_files') or ['?'])} "
        f"(as_of {manifest.get('as_of')}); this build reads {', '.join(names)} (as_of {as_of}). Choose "
        "another snapshot id, or replace it on purpose with --force (knowledge_source config force: true)"
    )


def assemble_knowledge_source(
    plan: DumpPlan,
    data_dir: Path | str,
    *,
    snapshot_id: str | None = None,
    parse_seconds: float = 0.0,
    replace: bool = False,
) -> KnowledgeSourceReport:
    """Merge the parsed parts (in page order), resolve redirects and anchors over all of them, and
    publish ``<data_dir>/snapshots/<id>/knowledge_source``; the parts' scratch folder is removed.
    A snapshot built from other dump files or another ``as_of`` is replaced only with ``replace``."""
    data_dir = Path(data_dir)
    parsed = []
    for part in plan.parts:
        done = read_parsed_part(part)
        if done is None:
            raise RuntimeError(
                f"{part.path}: part {part.index} (bytes {part.start}-{part.end}) was not parsed"
            )
        parsed.append(done)
    report = merge_part_reports(plan.dumps, plan.parts, parsed)
    site = parsed[0].site
    max_timestamp = max((p.max_timestamp for p in parsed if p.max_timestamp), default=None)
    if report.articles == 0:
        raise ValueError(
            f"{_dumps_label(plan.dumps)}: no article could be built "
            f"({report.pages_read} pages read, skipped: {report.skipped})"
        )
    as_of = plan.parts[0].settings.as_of
    name_date = dump_date_from_name(plan.dumps[0])
    report.snapshot_id = snapshot_id or snapshot_id_for(site, name_date, as_of, max_timestamp)
    if not replace and (problem := replacement_problem(data_dir, report.snapshot_id, plan.dumps, as_of)):
        raise ValueError(problem)
    report.parse_seconds = parse_seconds
    resolve_started = time.perf_counter()
    final = SnapshotPaths(data_dir, report.snapshot_id).knowledge_source
    work = temp_sibling(final)
    try:
        part_dirs = [Path(part.out_dir) for part in plan.parts]
        _resolve(
            [shard for folder in part_dirs for shard in sorted((folder / "stage1").glob("*.parquet"))],
            [folder / "redirects.parquet" for folder in part_dirs],
            work / "pages",
            work / "redirects.parquet",
            report,
        )
        report.resolve_seconds = time.perf_counter() - resolve_started
        shards = sorted((work / "pages").glob("*.parquet"))
        report.shards = len(shards)
        report.parquet_bytes = (
            sum(p.stat().st_size for p in shards) + (work / "redirects.parquet").stat().st_size
        )
        report.seconds = report.parse_seconds + report.resolve_seconds
        write_report_json(work / "report.json", report.to_dict())
        manifest: dict[str, Any] = {
            "snapshot_id": report.snapshot_id,
            "dump_files": [path.name for path in plan.dumps],  # where they were: manifest.run.json
            "dump_paths": [str(path.resolve()) for path in plan.dumps],
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
        write_report_json(work / "manifest.json", manifest)
        publish(work, final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(Path(plan.parts[0].out_dir).parent, ignore_errors=True)
    _remove_empty_parse_dirs(Path(plan.parts[0].out_dir))
    return report


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
    part_bytes: int = 128_000_000,
    invalid_bytes: str = "error",
    progress: bool = True,
    on_progress: Callable[[str], None] | None = None,
    replace: bool = False,
) -> KnowledgeSourceReport:
    """Build (or rebuild) the knowledge source of one snapshot from a MediaWiki XML dump, in one process
    (with ``workers`` conversion processes): the parse steps of :func:`plan_dump_parts` one after the
    other, then :func:`assemble_knowledge_source` — the steps the Dagster asset spreads over executors.

    ``dump`` is one dump file or the part files of a dump (``...-pages-articles1.xml-p1p41242.bz2``,
    ...): their pages are read in the order given into one snapshot, with ``<siteinfo>`` from the first
    part; parts of different wikis (``<dbname>``) or dates (file names) are an error naming the part.
    Returns the report; the snapshot appears under ``<data_dir>/snapshots/<id>/knowledge_source``
    only when the whole build succeeded. Parts parsed by a failed earlier build are kept. A snapshot of
    that id built from other dump files or another ``as_of`` is replaced only with ``replace``.
    """
    started = time.perf_counter()
    workers = min(os.cpu_count() or 1, 2) if workers is None else workers
    settings = ParseSettings(
        as_of, invalid_bytes, rows_per_shard, bytes_per_shard, batch_bytes, fragment_bytes
    )
    plan = plan_dump_parts(dump, data_dir, settings, part_bytes=part_bytes)
    bar = progress_bar(plan.dumps, sum(part.end - part.start for part in plan.parts), progress)
    pool = worker_pool(workers) if workers > 0 else None
    try:
        for part in plan.parts:
            parse_dump_part(part, workers=workers, pool=pool, bar=bar, on_progress=on_progress)
    finally:
        bar.close()
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    return assemble_knowledge_source(
        plan, data_dir, snapshot_id=snapshot_id, parse_seconds=time.perf_counter() - started, replace=replace
    )
