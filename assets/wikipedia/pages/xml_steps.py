"""The parse step of a MediaWiki XML dump: a whole file read in order by one reader, its batches of
articles converted by worker processes, or a group of a multistream file's bz2 streams that workers
decompress, parse and convert themselves (the plan checked that each group starts at a page)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assets.wikipedia.dump import DumpReader, RawPage, SiteInfo
from assets.wikipedia.pages.conversion import (
    FragmentTask,
    convert_batch,
    convert_fragment,
    page_batches,
    read_siteinfo,
)
from assets.wikipedia.pages.plan import DumpPart, stream_groups
from assets.wikipedia.pages.stage1 import Stage1Sink, StepWork, add_counts
from assets.worker_pools import in_order

__all__ = ["read_xml_part"]


def read_xml_part(
    part: DumpPart,
    sink: Stage1Sink,
    work: StepWork,
) -> tuple[SiteInfo, str | None, list[tuple[str, int]]]:
    """Read ``part`` of an XML dump into ``sink``: the wiki's :class:`SiteInfo` and the newest revision
    timestamp (an XML dump supersedes no revision: a page is read once)."""
    read = _read_file_part if part.streams is None else _read_stream_group
    site, max_timestamp = read(part, sink, work)
    return site, max_timestamp, []


def _fragment_tasks(part: DumpPart, siteinfo: SiteInfo) -> list[FragmentTask]:
    """The conversion tasks of a stream group part (worker processes decompress and convert each)."""
    settings = part.settings
    groups = stream_groups(part.streams or [part.start], part.end, settings.fragment_bytes)
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


def _read_file_part(
    part: DumpPart,
    sink: Stage1Sink,
    work: StepWork,
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
    for _, result in in_order(convert_batch, batches, work.pool, work.window, conversion):
        sink.add(result, redirects)
        if work.bar is not None:
            work.bar.update(reader.compressed_position - position)
        position = reader.compressed_position
        if work.on_progress and time.perf_counter() - last_logged > 10:
            last_logged = time.perf_counter()
            work.on_progress(
                f"{Path(part.path).name}: {report.pages_read:,} pages read, {report.articles:,} articles"
            )
    sink.write_redirects(redirects)
    if work.bar is not None:
        work.bar.update(reader.compressed_size - position)
    report.add_skips(reader.stats.skips)
    if reader.stats.replaced_invalid_bytes:
        add_counts(report.skipped, {"invalid_bytes_replaced": reader.stats.replaced_invalid_bytes})
    report.compression = reader.compression
    report.input_bytes = reader.xml_bytes
    return site, reader.stats.max_timestamp


def _read_stream_group(
    part: DumpPart,
    sink: Stage1Sink,
    work: StepWork,
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
    for task, result in in_order(convert_fragment, tasks, work.pool, work.window, conversion):
        report.pages_read += result.pages_read
        report.input_bytes += result.input_bytes
        if result.max_timestamp and (max_timestamp is None or result.max_timestamp > max_timestamp):
            max_timestamp = result.max_timestamp
        sink.add(result, result.redirects)
        if work.bar is not None:
            work.bar.update(task.end - task.start)
        if work.on_progress and time.perf_counter() - last_logged > 10:
            last_logged = time.perf_counter()
            work.on_progress(f"streams {part.start}-{part.end}: {report.pages_read:,} pages read")
    report.compression = "bz2 multistream"
    return site, max_timestamp
