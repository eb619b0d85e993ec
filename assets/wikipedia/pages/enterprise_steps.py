"""The parse step of an Enterprise HTML dump: records -> stage-1 rows, redirects and QIDs, as the XML
route's steps write them, so stage 2 and everything downstream read one shape whatever the input.

Records are cut into batches of about ``batch_bytes`` of HTML; worker processes turn each article's Parsoid
HTML into KILT entries (:func:`convert_html_batch`); a record without HTML is converted from its wikitext
(counted: ``html_missing_wikitext_used``), one with neither is skipped. Each record's ``redirects`` become
redirect rows (their page ids are not in the dump), its ``main_entity`` the page's QID. A page id seen
twice keeps its newest revision: an older one that comes later is skipped, a newer one replaces the
earlier row once the step is read (:func:`drop_superseded`).

Pure module: no Dagster import.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from assets.skips import SkipLog
from assets.wikipedia.dump import (
    ENTERPRISE_NAME_RE,
    QID_RE,
    DumpFormatError,
    EnterpriseDumpError,
    EnterpriseRead,
    EnterpriseRecord,
    SiteInfo,
    read_enterprise_dump,
)
from assets.wikipedia.html import HtmlPageError, parse_parsoid_html
from assets.wikipedia.pages.conversion import SIDE_ROWS, BatchResult, ConversionSettings, Stage1Rows
from assets.wikipedia.pages.plan import DumpPart
from assets.wikipedia.pages.reuse import reusable_pages
from assets.wikipedia.pages.revisions import RevisionIndex
from assets.wikipedia.pages.stage1 import Stage1Sink, StepWork
from assets.wikipedia.schema import RESIDUAL_SAMPLE_SIZE
from assets.wikipedia.wikitext import normalize_title, title_problem
from assets.worker_pools import in_order

__all__ = [
    "QID_FILE",
    "convert_html_batch",
    "drop_superseded",
    "read_enterprise_part",
    "record_qids",
]

QID_FILE = "wikidata_ids.parquet"
"""The ``(page_id, wikidata_id)`` rows of a step's records (``main_entity``), beside its stage-1 shards."""
MAX_QID_DIGITS = 12
"""Digits of the longest QID a record may name (Wikidata's ids have 9 today)."""
QID_SCHEMA = pa.schema([("page_id", pa.int64()), ("wikidata_id", pa.string())])
STEP_QID_SCHEMA = pa.schema([*QID_SCHEMA, ("revision", pa.int64())])
"""A parse step's QID rows: each with the revision of the record that named it (the newest one wins)."""


def convert_html_batch(records: list[tuple], settings: ConversionSettings) -> BatchResult:
    """Stage-1 rows of ``(ord, page_id, title, html, wikitext, revid, timestamp)`` tuples (a worker's
    task): from the HTML, else from the wikitext (counted), else skipped."""
    rows = Stage1Rows()
    if settings.reuse_from is not None:  # pages the previous snapshot converted at the same revision
        shaped = [(o, p, t, w or "", r, None, ts) for o, p, t, _, w, r, ts in records]
        known = reusable_pages(settings.reuse_from, shaped)
        rows.result.reused = [
            (record[0], record[1], *known[record[1]]) for record in records if record[1] in known
        ]
        records = [record for record in records if record[1] not in known]
    for ord_, page_id, title, html, wikitext, revid, timestamp in records:
        try:
            if html:
                parsed = parse_parsoid_html(
                    title, html, style=settings.text_style, limits=settings.html_limits
                )
            elif wikitext:
                rows.result.skips.skip("html_missing_wikitext_used")
                parsed = settings.parse_wikitext(title, wikitext)
            else:
                rows.skip(page_id, title, "no_article_body", "neither HTML nor wikitext in the record")
                continue
        except HtmlPageError as error:
            rows.skip(page_id, title, "html_unreadable", str(error))
            continue
        except Exception as error:  # the converter must not take the build down: count and name it
            rows.skip(page_id, title, "conversion_error", f"{type(error).__name__}: {error}")
            continue
        source = len(wikitext.encode("utf-8", "surrogatepass")) if wikitext else 0
        rows.add((ord_, page_id, title, revid, None, timestamp), parsed, source, settings)
    return rows.finish()


class _Pages:
    """Routes records into conversion batches, redirect rows and QIDs, keeping the newest revision of a
    page id that comes twice."""

    def __init__(
        self, report: Any, batch_bytes: int, case: str, qids: pq.ParquetWriter, wiki: str | None = None
    ) -> None:
        self.report, self.batch_bytes, self.case, self.qids = report, batch_bytes, case, qids
        self.wiki = wiki  # the dump's wiki: its file name's, else its first record's
        self.revisions = RevisionIndex()  # every page id's kept revision, 16 bytes a page
        self.superseded: list[tuple[str, int]] = []
        self.skips = SkipLog(RESIDUAL_SAMPLE_SIZE)  # older revisions of a page id, named
        self.redirects: list[dict[str, Any]] = []
        self.max_timestamp: str | None = None
        self.html_bytes = 0

    def _older(self, record: EnterpriseRecord, where: str) -> bool:
        """Whether ``record`` repeats a page id at a revision not newer than the one kept."""
        revision = record.revision or 0
        kept = self.revisions.get(record.identifier)
        if kept is None:
            self.revisions.set(record.identifier, revision)
            return False
        if revision <= kept:
            self.skips.skip(
                "older_revision_of_a_page",
                f"page id={record.identifier} {record.name!r} ({where}): revision {revision} after {kept}",
            )
            return True
        self.superseded.append((str(record.identifier), kept))
        self.revisions.set(record.identifier, revision)
        return False

    def _refused(self, record: EnterpriseRecord, where: str) -> bool:
        """Whether ``record`` claims what the dump cannot hold (counted and named): another wiki's page, or
        a title MediaWiki would not allow (:func:`~assets.wikipedia.wikitext.titles.title_problem`)."""
        wiki = record.is_part_of.identifier if record.is_part_of is not None else None
        if self.wiki is None:
            self.wiki = wiki
        elif wiki is not None and wiki != self.wiki:
            self.skips.skip(
                "other_wiki", f"page id={record.identifier} {record.name[:200]!r} ({where}): a {wiki} "
                f"record in a {self.wiki} dump",
            )  # fmt: skip
            return True
        problem = title_problem(record.name)
        if problem is not None:
            self.skips.skip(
                "invalid_title", f"page id={record.identifier} {record.name[:200]!r} ({where}): {problem}"
            )
            return True
        return False

    def _qid(self, record: EnterpriseRecord, where: str) -> str | None:
        """The record's QID when it is one (``Q`` and a number of at most :data:`MAX_QID_DIGITS` digits, no
        leading zero, nothing around it); anything else is counted, named and left out."""
        qid = record.qid
        if qid is None or (QID_RE.fullmatch(qid) and len(qid) <= MAX_QID_DIGITS + 1):
            return qid
        self.skips.skip("invalid_qid", f"page id={record.identifier} ({where}): main_entity {qid[:60]!r}")
        return None

    def batches(self, records: Iterator[tuple[str, int, EnterpriseRecord]]) -> Iterator[list[tuple]]:
        batch: list[tuple] = []
        size = 0
        qid_rows: list[tuple[int, str, int]] = []
        for member, number, record in records:
            self.report.pages_read += 1
            where = f"{member} line {number}"
            if self._refused(record, where) or self._older(record, where):
                continue
            title = " ".join(record.name.split())
            for redirect in record.redirects:
                if redirect.name.strip():
                    self.redirects.append(
                        {
                            "source_title": " ".join(redirect.name.split()),
                            "source_id": None,
                            "target_title": normalize_title(title, case=self.case),
                            "target_fragment": None,
                        }
                    )
            qid = self._qid(record, where)
            if qid:
                qid_rows.append((record.identifier, qid, record.revision or 0))
            if record.date_modified and (
                self.max_timestamp is None or record.date_modified > self.max_timestamp
            ):
                self.max_timestamp = record.date_modified
            html, wikitext = record.html, record.wikitext
            batch.append(
                (self.report.pages_read, record.identifier, title, html, wikitext, record.revision,
                 record.date_modified)
            )  # fmt: skip
            size += len(html or wikitext or "")
            self.html_bytes += len(html or "")
            if size >= self.batch_bytes:
                if len(qid_rows) >= SIDE_ROWS:
                    self._write_qids(qid_rows)
                yield batch
                batch, size = [], 0
        self._write_qids(qid_rows)
        if batch:
            yield batch

    def _write_qids(self, rows: list[tuple[int, str, int]]) -> None:
        if rows:
            ids, qids, revisions = zip(*rows, strict=True)
            self.qids.write_table(
                pa.table(
                    {"page_id": list(ids), "wikidata_id": list(qids), "revision": list(revisions)},
                    schema=STEP_QID_SCHEMA,
                )
            )
            rows.clear()


def read_enterprise_part(
    part: DumpPart,
    sink: Stage1Sink,
    work: StepWork,
) -> tuple[SiteInfo, str | None, list[tuple[str, int]]]:
    """Read an Enterprise HTML dump (``part.path``, one parse step) into ``sink`` (the step's stage-1
    writer): the wiki's :class:`SiteInfo`, the newest ``date_modified`` and the ``(page id, revision)``
    rows a newer record of the same page superseded."""
    settings = part.settings
    path = Path(part.path)
    read = EnterpriseRead()
    records = read_enterprise_dump(path, settings.section.max_record_bytes, read)
    try:
        first = next(records, None)
    except EnterpriseDumpError as error:
        raise _dump_error(error) from None
    site = SiteInfo(dbname=read.dbname, language=read.language, base=read.server and f"{read.server}/wiki/")
    report = sink.report
    conversion = sink.conversion(site)

    def every() -> Iterator[tuple[str, int, EnterpriseRecord]]:
        if first is not None:
            yield first
        yield from records

    last_logged = time.perf_counter()
    with pq.ParquetWriter(Path(sink.stage1.directory).parent / QID_FILE, STEP_QID_SCHEMA) as qids:
        named = ENTERPRISE_NAME_RE.match(path.name)
        pages = _Pages(report, settings.batch_bytes, site.case, qids, named["dbname"] if named else None)
        try:
            for _, result in in_order(
                convert_html_batch, pages.batches(every()), work.pool, work.window, conversion
            ):
                sink.add(result, pages.redirects)
                if work.on_progress and time.perf_counter() - last_logged > 10:
                    last_logged = time.perf_counter()
                    work.on_progress(
                        f"{path.name}: {report.pages_read:,} records read, {report.articles:,} articles"
                    )
        except EnterpriseDumpError as error:
            raise _dump_error(error) from None
    sink.write_redirects(pages.redirects)
    if work.bar is not None:
        work.bar.update(part.end - part.start)
    report.add_skips(pages.skips)
    named = [f"{s['file']} {_place(s)}: {s['reason']}: {s['detail']}" for s in read.skips]
    report.add_skips(SkipLog(RESIDUAL_SAMPLE_SIZE, read.skip_log.by_reason, named))
    report.compression = f"gzip tar of ndjson ({read.members} members, Enterprise HTML)"
    report.input_bytes = pages.html_bytes
    return site, pages.max_timestamp, pages.superseded


def _place(skip: dict[str, Any]) -> str:
    """Where a skipped thing was: ``line 12`` of a member, ``member 3`` of the tar, ``offset 4096``."""
    for place in ("line", "member", "offset"):
        if place in skip:
            return f"{place} {skip[place]}"
    return "(no place)"


def _dump_error(error: EnterpriseDumpError) -> DumpFormatError:
    return DumpFormatError(str(error))


def drop_superseded(
    shards: list[Path], superseded: list[tuple[str, int]], redirects: Path | None, case: str
) -> tuple[int, int]:
    """Remove from the stage-1 ``shards`` the rows of ``(page id, revision)`` a newer record of the same
    page replaced, and from ``redirects`` (the step's stage-1 redirect rows) those pointing at a title only
    a replaced revision had (the page was renamed: what the old record listed leads nowhere now); returns
    ``(pages removed, redirects removed)``. A replaced record's QID loses to the newer one's in
    :func:`record_qids`."""
    if not superseded:
        return 0, 0
    ids = pa.array([page for page, _ in superseded], pa.string())
    revisions = pa.array([revision for _, revision in superseded], pa.int64())
    gone = pc.binary_join_element_wise(ids, pc.cast(revisions, pa.string()), "@")
    removed = 0
    old_titles: set[str] = set()
    kept_titles: set[str] = set()
    for shard in shards:
        table = pq.read_table(shard)
        keys = pc.binary_join_element_wise(
            table.column("wikipedia_id"),
            pc.cast(pc.struct_field(table.column("history"), "revid"), pa.string()),
            "@",
        )
        dropped = pc.is_in(keys, value_set=gone)
        old_titles.update(table.filter(dropped).column("wikipedia_title").to_pylist())
        kept = table.filter(pc.invert(dropped))
        same_pages = kept.filter(pc.is_in(kept.column("wikipedia_id"), value_set=ids))
        kept_titles.update(same_pages.column("wikipedia_title").to_pylist())
        if kept.num_rows != table.num_rows:
            removed += table.num_rows - kept.num_rows
            pq.write_table(kept, shard, compression="zstd")
    stale = {normalize_title(title, case=case) for title in old_titles - kept_titles}
    if redirects is None or not stale or not redirects.is_file():
        return removed, 0
    rows = pq.read_table(redirects)
    leads_nowhere = pc.is_in(rows.column("target_title"), value_set=pa.array(sorted(stale), pa.string()))
    dropped_redirects = pc.sum(leads_nowhere).as_py() or 0
    if dropped_redirects:
        pq.write_table(rows.filter(pc.invert(leads_nowhere)), redirects)
    return removed, dropped_redirects


def record_qids(files: list[Path], out: Path, report: Any) -> Path | None:
    """The steps' ``(page_id, wikidata_id)`` rows (:data:`QID_FILE`) in one Parquet file under ``out``
    (None when no step wrote any: not an Enterprise dump); ``report.wikidata`` says where they came from."""
    present = [file for file in files if file.is_file()]
    if not present:
        return None
    target = out / QID_FILE
    named = pa.concat_tables([pq.read_table(file, schema=STEP_QID_SCHEMA) for file in present])
    newest = named.sort_by([("page_id", "ascending"), ("revision", "descending")])
    page_ids = newest.column("page_id").to_numpy()
    first = np.ones(len(page_ids), dtype=bool)
    first[1:] = page_ids[1:] != page_ids[:-1]  # each page's newest revision: what its QID is
    table = newest.filter(pa.array(first)).select(QID_SCHEMA.names)
    rows = table.num_rows
    pq.write_table(table, target)
    report.wikidata = {
        "page_props": None,
        "status": "read",
        "source": "main_entity of the records",
        "kept": rows,
    }
    return target
