"""Parse steps: a dump cut into parts (one per part file, or per group of bz2 streams of a multistream
file), each parsed into its own stage-1 shards and kept for a retry (:data:`PARSER_VERSION` says when a
kept part is stale)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from dataclasses import replace as dataclass_replace
from itertools import pairwise
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from tqdm import tqdm

from assets.compressed import CompressedInputError, range_pieces
from assets.files import publish, temp_sibling, write_json_atomic
from assets.limits import HtmlLimits
from assets.params import PART_BYTES, KnowledgeSourceParams
from assets.skips import SkipLog
from assets.wikipedia.dump import (
    ENTERPRISE_FORM,
    DumpFormatError,
    DumpReader,
    RawPage,
    SiteInfo,
    dump_date_from_name,
    dump_form,
    find_bz2_streams,
)
from assets.wikipedia.pages.conversion import (
    SIDE_ROWS,
    BatchResult,
    ConversionSettings,
    FragmentTask,
    ShardedParquetWriter,
    convert_batch,
    convert_fragment,
    count_paragraphs,
    page_batches,
    read_siteinfo,
)
from assets.wikipedia.pages.enterprise_steps import drop_superseded, read_enterprise_part
from assets.wikipedia.pages.reuse import ReusedRows, conversion_identity, prepare_reuse, reuse_problem
from assets.wikipedia.schema import (
    HTML_ROUTE,
    REDIRECT_STAGE1_SCHEMA,
    RESIDUAL_SAMPLE_SIZE,
    STAGE1_SCHEMA,
    WIKITEXT_ROUTE,
    KnowledgeSourceReport,
)
from assets.worker_pools import in_order, worker_pool

log = logging.getLogger(__name__)


def _fragment_tasks(part: DumpPart, siteinfo: SiteInfo) -> list[FragmentTask]:
    """The conversion tasks of a stream group part (worker processes decompress and convert each)."""
    settings = part.settings
    groups = _stream_groups(part.streams or [part.start], part.end, settings.fragment_bytes)
    return [
        FragmentTask(
            part.path,
            i,
            streams[0],
            end,
            siteinfo,
            settings.section.as_of,
            settings.section.invalid_bytes,
            settings.section.max_page_bytes,
            settings.section.max_group_bytes,
        )
        for i, (streams, end) in enumerate(groups)
    ]


PARSER_VERSION = 2  # 2: text styles (kilt, clean), KILT history (url %20, pre_dump)
"""Version of the rules that turn dump XML into stage-1 rows (``dump_reader``, ``wikitext``, ``titles``,
this module): bump it when they change what a page parses to, so parsed parts of earlier code are not
reused. Moving code between files changes nothing."""


PART_FILE = "part.json"
SHARD_BYTES = 16_000_000
"""Text bytes of a stage-1 shard, at most (beside ``rows_per_shard`` pages)."""
BATCH_BYTES = 2_000_000
"""Wikitext bytes per conversion batch (file parts)."""
FRAGMENT_BYTES = 4_000_000
"""Compressed bytes per conversion task (stream groups of a multistream dump)."""


@dataclass(frozen=True, slots=True)
class ParseSettings:
    """How pages are read and cut into stage-1 shards: the ``knowledge_source`` section as it is, and the
    sizes of the work (a parsed part is reused only for equal settings)."""

    section: KnowledgeSourceParams = field(default_factory=KnowledgeSourceParams)
    html_limits: HtmlLimits = field(default_factory=HtmlLimits)  # limits.html: one article's Parsoid HTML
    bytes_per_shard: int = SHARD_BYTES
    batch_bytes: int = BATCH_BYTES
    fragment_bytes: int = FRAGMENT_BYTES

    def to_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "section": self.section.model_dump(mode="json"),
            "html_limits": self.html_limits.model_dump(mode="json"),
        }

    def identity(self) -> dict[str, Any]:
        """What decides a part's output (which dump, its snapshot id and the processes that convert it
        do not)."""
        return {**self.to_dict(), "section": self.section.model_dump(mode="json", exclude=NOT_OUTPUT)}

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> ParseSettings:
        return cls(
            **{
                **values,
                "section": KnowledgeSourceParams.model_validate(values["section"]),
                "html_limits": HtmlLimits.model_validate(values.get("html_limits") or {}),
            }
        )


NOT_OUTPUT = {"dump", "snapshot", "workers", "part_bytes", "language"}
"""Fields of ``knowledge_source`` that change no parsed part (``part_bytes``: its bounds are in its key)."""


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
    reuse_from: str | None = None  # an earlier snapshot's converted pages (:mod:`.page_reuse`)
    route: str = WIKITEXT_ROUTE  # the dump's input form, decided once by the plan (:func:`route_of_form`)

    def to_dict(self) -> dict[str, Any]:
        return {**{f: getattr(self, f) for f in self.__slots__}, "settings": self.settings.to_dict()}

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> DumpPart:
        return cls(**{**values, "settings": ParseSettings.from_dict(values["settings"])})


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

    @property
    def route(self) -> str:
        """How its pages are read: ``wikitext`` (a MediaWiki XML dump) or ``parsoid-html`` (an Enterprise
        HTML dump), as the plan decided from the first file's head."""
        return self.parts[0].route


def route_of_form(form: str) -> str:
    """The route a dump's pages take for its form (:func:`~assets.wikipedia.dump.dump_form`): an
    Enterprise HTML dump's go through Parsoid's HTML, a MediaWiki XML dump's through the wikitext."""
    return HTML_ROUTE if form == ENTERPRISE_FORM else WIKITEXT_ROUTE


def read_parsed_part(part: DumpPart) -> ParsedPart | None:
    """The finished output of ``part`` (of this or an earlier run with the same key), else None."""
    record = Path(part.out_dir) / PART_FILE
    if not record.is_file():
        return None
    parsed = ParsedPart(**json.loads(record.read_text()))
    return parsed if parsed.key == part.key else None


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
    pbzip2 and other parallel compressors cut the XML anywhere), else None. The first piece of one stream
    is decompressed per start."""
    ends = dict(zip(offsets, [*offsets[1:], dump.stat().st_size], strict=True))
    for start in starts:
        pieces = range_pieces(dump, start, ends[start])
        try:  # its first piece is enough: a stream group starts with a page or it is misaligned
            head = next(pieces, b"").lstrip()
        except CompressedInputError:
            return start
        finally:
            pieces.close()
        if not head.startswith((b"<page>", b"<page ", b"</mediawiki>")):
            return start
    return None


def plan_dump_parts(
    dump: Path | str | Sequence[Path | str],
    data_dir: Path | str,
    settings: ParseSettings = ParseSettings(),
    *,
    part_bytes: int = PART_BYTES,
    reuse_for: str | None = None,
) -> DumpPlan:
    """Cut a dump into parse steps: one per part file of a multi-part dump; for one multistream bz2 file,
    groups of its streams of about ``part_bytes`` compressed bytes (when every group starts at a page);
    otherwise the file as one step. Outputs go under ``<data_dir>/snapshots/.parse/<dump key>/``.
    ``reuse_for``: the id of the snapshot being built, whose steps then copy the pages the previous
    snapshot of its wiki converted already (:mod:`.page_reuse`)."""
    dumps = _dump_files(dump)
    if len(dumps) > 1:
        _check_parts_agree(dumps, settings.section.invalid_bytes)
    identity = [[str(d.resolve()), d.stat().st_size, d.stat().st_mtime_ns] for d in dumps]
    parts_dir = Path(data_dir) / "snapshots" / ".parse" / _digest(identity)
    common = [identity, settings.identity(), f"parser-{PARSER_VERSION}"]

    reuse_from = prepare_reuse(Path(data_dir), reuse_for, parts_dir) if reuse_for else None
    route = route_of_form(dump_form(dumps[0], settings.section.input))  # the head read once per build

    def part(index: int, path: Path, start: int, end: int, streams: list[int] | None = None) -> DumpPart:
        header = None if streams is None else offsets[:2]
        key = _digest([common, index, start, end, streams is not None])  # reuse changes no output
        out_dir = str(parts_dir / f"part-{index:05d}")
        return DumpPart(
            index, str(path), start, end, streams, header, out_dir, key, settings, reuse_from, route
        )

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
        self.redirects: list[dict[str, Any]] = []  # taken, not written yet (SIDE_ROWS at a time)
        self.stage1 = ShardedParquetWriter(
            work / "stage1", STAGE1_SCHEMA, settings.section.rows_per_shard, settings.bytes_per_shard
        )
        self.part = part
        self.reused: ReusedRows | None = None

    def conversion(self, site: SiteInfo) -> ConversionSettings:
        """How the part's pages are converted: with the part's reuse source when its conversion rules are
        this part's (else every page is converted, and the report says why)."""
        settings = self.part.settings
        conversion = ConversionSettings.of(site, settings.section.text_style, settings.html_limits)
        if self.part.reuse_from is None:
            return conversion
        route = HTML_ROUTE if self.part.route == HTML_ROUTE else None  # the XML route's: as it always was
        identity = conversion_identity(site, self.part.settings.section.text_style, PARSER_VERSION, route)
        if problem := reuse_problem(self.part.reuse_from, identity):
            self.report.reuse = f"refused: {problem}"
            log.info(f"part {self.part.index}: every page converted ({problem})")
            return conversion
        self.reused = ReusedRows(self.part.reuse_from, site.case)
        self.report.reuse = self.reused.snapshot_id
        return dataclass_replace(conversion, reuse_from=self.part.reuse_from)

    def add(self, result: BatchResult, redirects: list[dict[str, Any]]) -> None:
        report = self.report
        with pa.ipc.open_stream(result.ipc) as stream:
            table = stream.read_all()
        if result.reused:
            assert self.reused is not None
            reused = self.reused.rows(result.reused)
            for page_id, text, anchors in zip(
                reused.column("wikipedia_id").to_pylist(),
                reused.column("text").to_pylist(),
                pc.list_value_length(reused.column("anchors")).to_pylist(),
                strict=True,
            ):
                count_paragraphs(result, page_id, text)
                result.anchors += anchors
            report.pages_reused += reused.num_rows
            result.rows += reused.num_rows
            table = same_buffers(pa.concat_tables([table, reused]).sort_by("ord"))
        self.stage1.write(table)
        report.articles += result.rows
        report.paragraphs += result.paragraphs
        report.residual_markup_paragraphs += result.residual_paragraphs
        report.anchors += result.anchors
        report.add_skips(result.skips)
        add_examples(report.residual_markup_examples, result.residual_examples)
        self.write_redirects(redirects)

    def write_redirects(self, redirects: list[dict[str, Any]]) -> None:
        """Take ``redirects`` (the caller's list is emptied); they are written :data:`SIDE_ROWS` at a time."""
        self.redirects.extend(redirects)
        self.report.redirects += len(redirects)
        redirects.clear()
        if len(self.redirects) >= SIDE_ROWS:
            self._flush_redirects()

    def _flush_redirects(self) -> None:
        if self.redirects:
            self.redirect_writer.write_table(
                pa.Table.from_pylist(self.redirects, schema=REDIRECT_STAGE1_SCHEMA)
            )
            self.redirects = []

    def close(self) -> None:
        self._flush_redirects()
        self.redirect_writer.close()
        self.stage1.close()


def same_buffers(table: pa.Table) -> pa.Table:
    """``table`` through Arrow IPC, as converted batches come from the workers: its in-memory size (which
    cuts stage-1 shards) is then what a full build's batch of the same rows has."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table.combine_chunks())
    with pa.ipc.open_stream(sink.getvalue()) as stream:
        return stream.read_all()


def add_counts(total: dict[str, int], counts: dict[str, int]) -> None:
    for reason, count in counts.items():
        total[reason] = total.get(reason, 0) + count


def add_examples(examples: list, more: list) -> None:
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
    reader = DumpReader(
        part.path,
        as_of=settings.section.as_of,
        invalid_bytes=settings.section.invalid_bytes,
        max_page_bytes=settings.section.max_page_bytes,
    )
    report = sink.report
    pages_iter = iter(reader)
    first = next(pages_iter, None)  # parses <siteinfo> before the workers need it
    site = reader.siteinfo

    def all_pages() -> Iterator[RawPage]:
        if first is not None:
            yield first
        yield from pages_iter

    redirects: list[dict[str, Any]] = []
    batches = page_batches(all_pages(), report, redirects, site.case, settings.batch_bytes)
    position = 0
    last_logged = time.perf_counter()
    conversion = sink.conversion(site)
    for _, result in in_order(convert_batch, batches, pool, window, conversion):
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
    report.add_skips(reader.stats.skips)
    if reader.stats.replaced_invalid_bytes:
        add_counts(report.skipped, {"invalid_bytes_replaced": reader.stats.replaced_invalid_bytes})
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
    section = part.settings.section
    site = read_siteinfo(Path(part.path), part.header, section.invalid_bytes, section.max_group_bytes)
    report = sink.report
    max_timestamp: str | None = None
    last_logged = time.perf_counter()
    tasks = _fragment_tasks(part, site)
    conversion = sink.conversion(site)
    for task, result in in_order(convert_fragment, tasks, pool, window, conversion):
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
    superseded: list[tuple[str, int]] = []
    try:
        if part.route == HTML_ROUTE:
            site, max_timestamp, superseded = read_enterprise_part(part, sink, pool, window, bar, on_progress)
        elif part.streams is None:
            site, max_timestamp = _read_file_part(part, sink, pool, window, bar, on_progress)
        else:
            site, max_timestamp = _read_stream_group(part, sink, pool, window, bar, on_progress)
    finally:
        sink.close()
    pages, redirects = drop_superseded(sink.stage1.paths, superseded, work / "redirects.parquet", site.case)
    sink.report.articles -= pages
    sink.report.redirects -= redirects
    if redirects:
        sink.report.add_skips(
            SkipLog(RESIDUAL_SAMPLE_SIZE, Counter({"redirect_of_a_superseded_revision": redirects}))
        )
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
        remove_empty_parse_dirs(out_dir)
        if own_pool and pool is not None:
            pool.shutdown(cancel_futures=True)


def remove_empty_parse_dirs(out_dir: Path) -> None:
    """Remove the dump's parts folder and ``.parse`` when nothing is in them (parts that were parsed stay
    for the next attempt)."""
    for folder in (out_dir.parent, out_dir.parent.parent):
        with contextlib.suppress(OSError):
            folder.rmdir()


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
