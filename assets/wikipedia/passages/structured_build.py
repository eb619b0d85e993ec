"""The structured passages of a snapshot: every table and infobox of its articles as passages
(:mod:`assets.wikipedia.passages.structured`), beside the text passages and apart from them.

The knowledge source keeps no wikitext, so this stage reads the snapshot's dump again (the files the dump
registry lists, the revision the knowledge source chose with its ``as_of``), one page at a time, and keeps the
pages the knowledge source published. An Enterprise HTML dump's records are read from their Parsoid HTML
(:mod:`assets.wikipedia.html.structures`: every template expanded, the offsets into the HTML), a record
without HTML from its wikitext, as the knowledge source converted them. It writes
``<snapshot>/structured_passages/`` atomically: ``parquet/part-*.parquet`` (:data:`STRUCTURED_SCHEMA`),
``collection/part-*.jsonl`` (pyserini's ``{"id", "contents"}``, the title on the first line, as the text
passages') and ``report.json`` (counts per kind, tables left unclosed or skipped, pages whose structures could
not be read, each named with its id and the reason: a bad page is a counted skip, never a failed build).
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.parquet as pq

from assets import charts
from assets.files import publish, temp_sibling
from assets.input_forms import ENTERPRISE_FORM, recorded_route
from assets.limits import StructureLimits
from assets.params import MAX_RECORD_BYTES, PassagesParams
from assets.storage import SnapshotPaths, registered_dump, write_report_json
from assets.wikipedia.articles import Structures
from assets.wikipedia.dump import DumpReader, read_enterprise_dump
from assets.wikipedia.html import html_structures
from assets.wikipedia.passages.structured import (
    STRUCTURED_FIELDS,
    STRUCTURED_VERSION,
    StructuredPassage,
    structured_passages,
)
from assets.wikipedia.wikitext import find_structures

__all__ = [
    "STRUCTURED_SCHEMA",
    "StructuredReport",
    "build_structured_passages",
    "structured_dump_files",
    "structured_preview",
]

log = logging.getLogger(__name__)

STRUCTURED_SCHEMA = pa.schema(
    [
        ("passage_id", pa.string()),
        ("wikipedia_id", pa.string()),
        ("title", pa.string()),
        ("kind", pa.string()),
        ("structure_index", pa.int32()),
        ("section", pa.string()),
        ("first_row", pa.int32()),
        ("last_row", pa.int32()),
        ("start_character", pa.int64()),
        ("end_character", pa.int64()),
        ("text", pa.string()),
        ("word_count", pa.int32()),
    ]
)
assert tuple(STRUCTURED_SCHEMA.names) == STRUCTURED_FIELDS
ROWS_PER_PART = 100_000
FAILED_LISTED = 100  # pages named in the report (all are counted)


@dataclass(slots=True)
class StructuredReport:
    """What the structured-passages stage read and wrote."""

    snapshot_id: str
    max_words: int
    version: int = STRUCTURED_VERSION
    pages: int = 0  # knowledge-source pages read from the dump
    pages_with_structures: int = 0
    tables: int = 0
    infoboxes: int = 0
    passages: dict[str, int] = field(default_factory=dict)  # per kind
    words: int = 0
    unclosed_tables: int = 0
    skipped_tables: int = 0
    skipped_values: int = 0  # cells and infobox values over limits.structures.max_value_bytes
    skipped_structures: int = 0  # structures of a page after its first limits.structures.max_structures
    failed_pages: int = 0
    failures: list[dict[str, str]] = field(default_factory=list)  # the first FAILED_LISTED
    missing_pages: int = 0  # knowledge-source pages not found in the dump
    parts: int = 0
    seconds: float = 0.0
    html_pages: int = 0  # pages read from their Parsoid HTML (an Enterprise dump's records that have it)

    def add_page(self, structures: Structures, passages: list[StructuredPassage]) -> None:
        """Count what one page's structures held and the passages made of them."""
        self.tables += len(structures.tables)
        self.infoboxes += len(structures.infoboxes)
        self.unclosed_tables += structures.unclosed_tables
        self.skipped_tables += structures.skipped_tables
        self.skipped_values += structures.skipped_values
        self.skipped_structures += structures.skipped_structures
        if passages:
            self.pages_with_structures += 1
            for passage in passages:
                self.passages[passage.kind] = self.passages.get(passage.kind, 0) + 1
                self.words += passage.word_count

    def to_dict(self) -> dict[str, Any]:
        report = asdict(self)
        if not self.html_pages:  # an XML dump's report keeps the shape it always had
            report.pop("html_pages")
        return report


def structured_dump_files(paths: SnapshotPaths) -> list[Path]:
    """The dump files the snapshot was built from (the dump registry), each checked to exist."""
    entry = registered_dump(paths.data_dir, paths.snapshot_id)
    if not entry or not entry.get("files"):
        raise FileNotFoundError(
            f"snapshot {paths.snapshot_id}: no dump registered under {paths.data_dir} (the structured "
            "passages read the dump again); build the knowledge source with `kiltpipe build` first"
        )
    files = [Path(f) for f in entry["files"]]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise FileNotFoundError(
            f"snapshot {paths.snapshot_id}: its dump file(s) {', '.join(missing)} are gone; the structured "
            "passages read the dump again: put them back, or set passages.structured: false"
        )
    return files


def _page_titles(paths: SnapshotPaths) -> dict[str, str]:
    """``{wikipedia_id: wikipedia_title}`` of the knowledge source's pages (its titles, as the text
    passages carry them)."""
    shards = sorted(paths.pages_dir.glob("*.parquet"))
    if not shards:
        raise FileNotFoundError(
            f"snapshot {paths.snapshot_id} has no knowledge-source pages in {paths.pages_dir}"
        )
    titles: dict[str, str] = {}
    for shard in shards:
        table = pq.read_table(shard, columns=["wikipedia_id", "wikipedia_title"])
        titles.update(zip(table.column(0).to_pylist(), table.column(1).to_pylist(), strict=True))
    return titles


def _manifest(paths: SnapshotPaths) -> dict[str, Any]:
    manifest = paths.manifest_file
    return json.loads(manifest.read_text()) if manifest.is_file() else {}


class _Parts:
    """Parquet and JSONL parts of :data:`ROWS_PER_PART` rows, written as they fill."""

    def __init__(self, out: Path) -> None:
        self.out = out
        (out / "parquet").mkdir(parents=True)
        (out / "collection").mkdir()
        self.rows: list[StructuredPassage] = []
        self.count = 0

    def add(self, passages: Iterable[StructuredPassage]) -> None:
        self.rows.extend(passages)
        if len(self.rows) >= ROWS_PER_PART:
            self.flush()

    def flush(self) -> None:
        if not self.rows and self.count:
            return
        columns = {name: [getattr(p, name) for p in self.rows] for name in STRUCTURED_FIELDS}
        table = pa.table(columns, schema=STRUCTURED_SCHEMA)
        name = f"part-{self.count:05d}"
        pq.write_table(table, self.out / "parquet" / f"{name}.parquet", compression="zstd")
        with open(self.out / "collection" / f"{name}.jsonl", "w", encoding="utf-8") as handle:
            for p in self.rows:
                contents = f"{p.title}\n{p.text}"
                handle.write(
                    json.dumps({"id": p.passage_id, "contents": contents}, ensure_ascii=False) + "\n"
                )
        self.count += 1
        self.rows = []


class _Page(NamedTuple):
    page_id: int
    title: str
    text: str
    html: bool  # text is the page's Parsoid HTML (else its wikitext)


def _dump_pages(dump: Path, as_of: str | None, max_record_bytes: int, html_route: bool) -> Iterator[_Page]:
    """The pages of a dump with their source: an XML dump's wikitext, or (``html_route``) an Enterprise HTML
    dump's records (their HTML, else their wikitext, as the knowledge source converted them)."""
    if html_route:
        for _, _, record in read_enterprise_dump(dump, max_record_bytes):
            if record.html:
                yield _Page(record.identifier, record.name, record.html, True)
            else:
                yield _Page(record.identifier, record.name, record.wikitext or "", False)
        return
    for page in DumpReader(dump, as_of=as_of):
        yield _Page(page.page_id, page.title, page.text, False)


def build_structured_passages(
    paths: SnapshotPaths,
    out_dir: Path,
    settings: PassagesParams | None = None,
    *,
    dump_files: list[Path] | None = None,
    limits: StructureLimits | None = None,
    max_record_bytes: int = MAX_RECORD_BYTES,
    progress: Callable[[str], None] | None = None,
) -> StructuredReport:
    """Read the tables and infoboxes of every knowledge-source page of ``paths`` from its dump and publish
    them as passages of at most ``settings.max_words`` words (the ``passages`` section) in ``out_dir``
    (atomically: a reader sees the previous folder or the new one); what is over ``limits``
    (``limits.structures``) is skipped and counted; an Enterprise HTML dump's records are bounded by
    ``max_record_bytes`` (``knowledge_source.max_record_bytes``)."""
    started = time.perf_counter()
    settings = settings or PassagesParams()
    max_words, unit = settings.max_words, settings.unit
    report = StructuredReport(paths.snapshot_id, max_words)
    wanted = _page_titles(paths)
    files = dump_files if dump_files is not None else structured_dump_files(paths)
    manifest = _manifest(paths)
    as_of, html_route = (
        manifest.get("as_of"),
        recorded_route(manifest) == ENTERPRISE_FORM,
    )  # as the pages were
    work = temp_sibling(out_dir)
    try:
        parts = _Parts(work)
        seen: set[str] = set()
        last_said = time.monotonic()
        for dump in files:
            for page in _dump_pages(dump, as_of, max_record_bytes, html_route):
                wikipedia_id = str(page.page_id)
                if wikipedia_id not in wanted or wikipedia_id in seen:
                    continue
                seen.add(wikipedia_id)
                report.pages += 1
                try:
                    read = html_structures if page.html else find_structures
                    structures = read(page.text, limits)
                    report.html_pages += page.html
                    title = wanted[wikipedia_id]
                    passages = structured_passages(wikipedia_id, title, structures, max_words, unit)
                except Exception as error:  # one bad page is a counted skip, named
                    report.failed_pages += 1
                    if len(report.failures) < FAILED_LISTED:
                        report.failures.append(
                            {"wikipedia_id": wikipedia_id, "title": page.title, "error": repr(error)[:300]}
                        )
                    log.warning("page %s (%s): tables/infoboxes skipped: %r", wikipedia_id, page.title, error)
                    continue
                report.add_page(structures, passages)
                if passages:
                    parts.add(passages)
                if progress is not None and time.monotonic() - last_said >= 10:
                    written = sum(report.passages.values())
                    progress(f"structured passages: {report.pages:,} pages, {written:,} passages")
                    last_said = time.monotonic()
        parts.flush()
        report.parts = parts.count
        report.missing_pages = len(wanted) - len(seen)
        report.seconds = round(time.perf_counter() - started, 3)
        write_report_json(work / "report.json", report.to_dict())  # seconds -> report.run.json
        publish(work, out_dir)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    if progress is not None:
        progress(
            f"structured passages: {report.pages:,} pages, {report.tables:,} tables, {report.infoboxes:,} "
            f"infoboxes -> {sum(report.passages.values()):,} passages in {report.seconds:.1f} s"
            + (
                f"; {report.failed_pages} pages skipped (report.json names them)"
                if report.failed_pages
                else ""
            )
        )
    return report


def structured_preview(parquet: Path, per_kind: int = 2) -> str:
    """Markdown of the first passages of each kind (a table's rows, an infobox's fields) as the indices
    hold them, with their provenance, for the Dagster UI; the text is the dump's, so it is shown as text
    (:func:`assets.charts.markdown_text`), never as markup."""
    import polars as pl

    files = sorted(Path(parquet).glob("*.parquet"))
    if not files:
        return "no tables or infoboxes"
    rows = pl.scan_parquet(files).group_by("kind", maintain_order=True).head(per_kind).collect()
    text = charts.markdown_text
    lines = []
    for row in rows.iter_rows(named=True):
        lines += [
            f"**{text(row['kind'])}** {text(row['passage_id'])} — {text(row['title'])}, section "
            f"{text(row['section'] or '-')}, rows {row['first_row']}–{row['last_row']}, wikitext "
            f"{row['start_character']:,}–{row['end_character']:,}",
            "",
            f"> {text(charts.shortened(row['text'], 500))}",
            "",
        ]
    return "\n".join(lines)
