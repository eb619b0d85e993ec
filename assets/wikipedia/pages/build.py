"""Dump -> KILT knowledge source: sharded Parquet pages, a redirects table and a build report.

Stage 1 is cut into parse steps (:func:`plan_dump_parts`): one per part file of a multi-part dump, or one
per group of bz2 streams of a multistream file. A step (:func:`parse_dump_part`) decompresses and parses
its XML, has worker processes turn wikitext into KILT paragraphs/anchors, and writes its own stage-1
Parquet shards and redirects under ``snapshots/.parse/``; a finished step is kept for a retry. Dagster runs
the steps on any executor (Dask included); :func:`build_knowledge_source` runs them one after the other.
Stage 2 (:func:`assemble_knowledge_source`, DuckDB, out-of-core) takes the parts in page order, follows
redirect chains and resolves every anchor to its target page, and publishes the snapshot with one rename.

The parts: :mod:`.page_schema` (schemas and the report), :mod:`.conversion` (stage 1's page conversion
and Parquet writing), :mod:`.dump_parts` (parse steps), :mod:`.resolve` (stage 2's SQL); this module
assembles and publishes, and runs the whole build in one process.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from tqdm import tqdm

from assets.files import publish
from assets.input_forms import ENTERPRISE_FORM
from assets.languages import LANGUAGE_SAMPLE_CHARS, LanguageCheck, check_language
from assets.params import KnowledgeSourceParams
from assets.segmentation import script_counts
from assets.storage import current_paths, snapshot_writer, work_dir, write_report_json
from assets.wikipedia.dump import (
    ABSENT,
    SideTables,
    SiteInfo,
    dump_date_from_name,
    side_tables_beside,
    snapshot_id_for,
    write_redirect_table,
    write_wikidata_ids,
)
from assets.wikipedia.pages.enterprise_steps import QID_FILE, record_qids
from assets.wikipedia.pages.parse_steps import parse_dump_part, remove_empty_parse_dirs
from assets.wikipedia.pages.plan import (
    PARSER_VERSION,
    DumpPart,
    DumpPlan,
    ParsedPart,
    ParseSettings,
    plan_dump_parts,
    read_parsed_part,
)
from assets.wikipedia.pages.readers import CONVERSION_MODULES
from assets.wikipedia.pages.resolve import resolve_pages
from assets.wikipedia.pages.reuse import conversion_identity, target_snapshot_id
from assets.wikipedia.pages.stage1 import add_counts, add_examples
from assets.wikipedia.schema import KnowledgeSourceReport
from assets.worker_pools import worker_pool

log = logging.getLogger(__name__)

__all__ = [  # the build, and the names of the modules it is made of that callers use
    "DumpPart",
    "DumpPlan",
    "KnowledgeSourceReport",
    "ParseSettings",
    "assemble_knowledge_source",
    "build_knowledge_source",
    "merge_part_reports",
    "parse_dump_part",
    "plan_dump_parts",
    "progress_bar",
    "read_parsed_part",
    "replacement_problem",
]


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
        input_bytes=0,
        dbname=site.dbname,
        language=site.language,
        dump_files=[str(dump) for dump in dumps],
    )
    summed = (
        "pages_read",
        "articles",
        "redirects",
        "input_bytes",
        "paragraphs",
        "residual_markup_paragraphs",
        "anchors",
        "pages_reused",
    )
    for part in parsed:
        for name in summed:
            setattr(report, name, getattr(report, name) + part.report[name])
        add_counts(report.skipped, part.report["skipped"])
        add_examples(report.skipped_examples, part.report["skipped_examples"])
        add_examples(report.residual_markup_examples, part.report["residual_markup_examples"])
        report.reuse = report.reuse or part.report.get("reuse")
    return report


def replacement_problem(
    data_dir: Path | str,
    snapshot_id: str,
    dumps: Sequence[Path | str],
    as_of: str | None,
    page_props: Path | str | None = None,
) -> str | None:
    """Why building ``snapshot_id`` from ``dumps`` (with ``as_of`` and the ``page_props`` table) would
    replace a knowledge source built from other dump files, another ``as_of`` or another page_props table
    (None when it would not: a rebuild of the same dump)."""
    manifest_file = current_paths(data_dir, snapshot_id).manifest_file
    if not manifest_file.is_file():
        return None
    manifest = json.loads(manifest_file.read_text())
    names = [Path(d).name for d in dumps]
    table = Path(page_props).name if page_props else None
    built_table = (manifest.get("wikidata") or {}).get("page_props")
    how = "another snapshot id, or replace it on purpose with --force (knowledge_source config force: true)"
    if manifest.get("dump_files") != names or manifest.get("as_of") != as_of:
        return (
            f"snapshot {snapshot_id} was built from {', '.join(manifest.get('dump_files') or ['?'])} "
            f"(as_of {manifest.get('as_of')}); this build reads {', '.join(names)} (as_of {as_of}). Choose "
            + how
        )
    if "wikidata" in manifest and built_table != table:
        return (
            f"snapshot {snapshot_id} was built with the page_props table {built_table or '(none)'}; this "
            f"build reads {table or '(none)'}. Choose " + how
        )
    return None


def _parsed_parts(plan: DumpPlan) -> list[ParsedPart]:
    """What each part of ``plan`` parsed; a RuntimeError naming a part that was not parsed."""
    parsed = []
    for part in plan.parts:
        done = read_parsed_part(part)
        if done is None:
            raise RuntimeError(
                f"{part.path}: part {part.index} (bytes {part.start}-{part.end}) was not parsed"
            )
        parsed.append(done)
    return parsed


def _manifest(
    plan: DumpPlan, report: KnowledgeSourceReport, site: SiteInfo, max_timestamp: str | None
) -> dict[str, Any]:
    """The knowledge source's ``manifest.json``: its dump, its wiki, its conversion rules, its counts."""
    as_of = plan.parts[0].settings.section.as_of
    route = plan.route
    return {
        "snapshot_id": report.snapshot_id,
        "dump_files": [path.name for path in plan.dumps],  # where they were: manifest.run.json
        "dump_paths": [str(path.resolve()) for path in plan.dumps],
        "dump_bytes": report.dump_bytes,
        "route": route,
        "dbname": site.dbname,
        "language": site.language,
        "sitename": site.sitename,
        "case": site.case,
        "server": site.server,
        "namespaces": {str(k): v for k, v in site.namespaces.items()},
        "max_revision_timestamp": max_timestamp,
        "as_of": as_of,
        "text_style": plan.parts[0].settings.section.text_style,
        "conversion": conversion_identity(
            site, plan.parts[0].settings.section.text_style, PARSER_VERSION, route
        ),
        "articles": report.articles,
        "redirects": report.redirects,
        "wikidata": {
            "page_props": report.wikidata.get("page_props"),
            "pages_with_qid": report.pages_with_qid,
            "redirects_with_qid": report.redirects_with_qid,
            **({"status": ABSENT} if report.wikidata.get("status") == ABSENT else {}),
            **({"source": report.wikidata["source"]} if "source" in report.wikidata else {}),
        },
        "built_at": datetime.now(UTC).isoformat(),
    }


def _first_text(shards: list[Path], limit: int) -> str:
    """The body text of the first pages of ``shards``, ``limit`` characters at most."""
    pieces: list[str] = []
    size = 0
    for shard in shards:
        for batch in pq.ParquetFile(shard).iter_batches(batch_size=64, columns=["text"]):
            for paragraphs in batch.column(0).to_pylist():
                for paragraph in paragraphs[1:]:
                    pieces.append(paragraph[: limit - size])
                    size += len(pieces[-1])
                    if size >= limit:
                        return "\n".join(pieces)
    return "\n".join(pieces)


def _language_check(plan: DumpPlan, site: SiteInfo, shards: list[Path]) -> LanguageCheck:
    """The language the snapshot is built as: the dump's label checked against the scripts of its first
    pages (:data:`LANGUAGE_SAMPLE_CHARS` characters), ``knowledge_source.language`` overriding; a mismatch
    is logged once."""
    scripts = script_counts(_first_text(shards, LANGUAGE_SAMPLE_CHARS))
    where = f"{_dumps_label(plan.dumps)} ({site.dbname or 'no dbname'})"
    check = check_language(site.language, scripts, plan.parts[0].settings.section.language, where)
    if check.warning:
        log.warning("knowledge source: %s", check.warning)
    return check


def assemble_knowledge_source(
    plan: DumpPlan,
    data_dir: Path | str,
    *,
    snapshot_id: str | None = None,
    parse_seconds: float = 0.0,
    replace: bool = False,
    side_tables: SideTables | None = None,
    on_progress: Callable[[str], None] | None = None,
) -> KnowledgeSourceReport:
    """Merge the parsed parts (in page order), resolve redirects and anchors over all of them, and
    publish ``<data_dir>/snapshots/<id>/knowledge_source``; the parts' scratch folder is removed.
    A snapshot built from other dump files or another ``as_of`` is replaced only with ``replace``.
    ``side_tables``: the page_props table (QIDs for pages and redirects) and the redirect table (compared
    with the XML's redirects), read streaming."""
    data_dir = Path(data_dir)
    parsed = _parsed_parts(plan)
    report = merge_part_reports(plan.dumps, plan.parts, parsed)
    report.route = plan.route
    html = plan.route == ENTERPRISE_FORM
    site = parsed[0].site
    max_timestamp = max((p.max_timestamp for p in parsed if p.max_timestamp), default=None)
    if report.articles == 0:
        raise ValueError(f"{_dumps_label(plan.dumps)}: no article could be built ({_why_none(report, html)})")
    as_of = plan.parts[0].settings.section.as_of
    name_date = dump_date_from_name(plan.dumps[0])
    report.snapshot_id = snapshot_id or snapshot_id_for(site, name_date, as_of, max_timestamp)
    table = side_tables.page_props if side_tables is not None else None
    if not replace and (
        problem := replacement_problem(data_dir, report.snapshot_id, plan.dumps, as_of, table)
    ):
        raise ValueError(problem)
    report.parse_seconds = parse_seconds
    resolve_started = time.perf_counter()
    work = work_dir(data_dir, report.snapshot_id)
    side = work / ".side_tables"
    try:
        side.mkdir(parents=True)
        tables = side_tables or SideTables()
        wikidata_ids, redirect_table = _read_side_tables(tables, side, report, on_progress)
        if wikidata_ids is None:  # an Enterprise dump's records name their QIDs themselves
            wikidata_ids = record_qids([Path(part.out_dir) / QID_FILE for part in plan.parts], side, report)
        part_dirs = [Path(part.out_dir) for part in plan.parts]
        resolve_pages(
            [shard for folder in part_dirs for shard in sorted((folder / "stage1").glob("*.parquet"))],
            [folder / "redirects.parquet" for folder in part_dirs],
            work / "pages",
            work / "redirects.parquet",
            report,
            wikidata_ids=wikidata_ids,
            redirect_table=redirect_table,
            namespaces=site.namespaces,
        )
        shutil.rmtree(side)
        if tables.redirect_table is not None:
            report.redirect_table = {"file": tables.redirect_table.name, **report.redirect_table}
        report.resolve_seconds = time.perf_counter() - resolve_started
        shards = sorted((work / "pages").glob("*.parquet"))
        report.shards = len(shards)
        report.parquet_bytes = (
            sum(p.stat().st_size for p in shards) + (work / "redirects.parquet").stat().st_size
        )
        report.seconds = report.parse_seconds + report.resolve_seconds
        language = _language_check(plan, site, shards)
        report.language = language.language
        write_report_json(work / "report.json", report.to_dict())
        manifest = _manifest(plan, report, site, max_timestamp)
        manifest["language"] = language.language
        manifest["language_check"] = language.to_dict()
        write_report_json(work / "manifest.json", manifest)
        with snapshot_writer(data_dir, report.snapshot_id, "knowledge_source") as target:
            publish(work, target.knowledge_source)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        with contextlib.suppress(OSError):
            work.parent.rmdir()  # snapshots/.work, unless another build is using it
    shutil.rmtree(Path(plan.parts[0].out_dir).parent, ignore_errors=True)
    remove_empty_parse_dirs(Path(plan.parts[0].out_dir))
    return report


def _why_none(report: KnowledgeSourceReport, html: bool) -> str:
    """Why a dump gave no article: what its pages (an Enterprise dump's records, with ``html``) were
    instead."""
    kinds = [f"{report.redirects} redirects"] if report.redirects else []
    kinds += [f"{count} {reason}" for reason, count in sorted(report.skipped.items())]
    if not report.pages_read:
        return "it holds no article record (an empty tar?)" if html else "it holds no <page>"
    read = f"{report.pages_read} {'records' if html else 'pages'} read"
    return (
        f"{read}: {', '.join(kinds) or 'none of them an article'}; a KILT knowledge source holds articles "
        "(namespace 0, not redirects)"
    )


def _read_side_tables(
    tables: SideTables, out: Path, report: KnowledgeSourceReport, on_progress: Callable[[str], None] | None
) -> tuple[Path | None, Path | None]:
    """Stream the page_props and redirect tables into Parquet under ``out``; their reports go into
    ``report`` (``wikidata`` says why QIDs are absent when there is no page_props table)."""
    if missing := tables.missing():
        raise FileNotFoundError(f"SQL table not found: {', '.join(missing)}")
    wikidata_ids = redirect_table = None
    if tables.page_props is None:
        report.wikidata = {"page_props": None, "status": ABSENT}
    else:
        started = time.perf_counter()
        wikidata_ids = out / "wikidata_ids.parquet"
        read = write_wikidata_ids(tables.page_props, wikidata_ids)
        report.wikidata = {"page_props": tables.page_props.name, "status": "read", **read.to_dict()}
        report.wikidata.pop("file")
        report.wikidata["seconds"] = round(time.perf_counter() - started, 3)
        if on_progress is not None:
            on_progress(f"{tables.page_props.name}: {read.kept:,} QIDs of {read.rows:,} page_props rows")
    if tables.redirect_table is not None:
        redirect_table = out / "redirect_table.parquet"
        read = write_redirect_table(tables.redirect_table, redirect_table)
        if read.skips.total:
            report.skipped_examples.extend(read.skips.named[:5])
            add_counts(report.skipped, {f"redirect_table_{k}": v for k, v in read.skips.by_reason.items()})
    return wikidata_ids, redirect_table


DEFAULT_SECTION = KnowledgeSourceParams()


def build_knowledge_source(
    dump: Path | str | Sequence[Path | str],
    data_dir: Path | str,
    settings: KnowledgeSourceParams | ParseSettings | None = None,
    *,
    progress: bool = True,
    on_progress: Callable[[str], None] | None = None,
    replace: bool = False,
    side_tables: SideTables | None = None,
    incremental: bool = False,
) -> KnowledgeSourceReport:
    """Build (or rebuild) the knowledge source of one snapshot from a MediaWiki XML dump, in one process
    (with ``settings.workers`` conversion processes): the parse steps of :func:`plan_dump_parts` one after
    the other, then :func:`assemble_knowledge_source` — the steps the Dagster asset spreads over executors.

    ``settings`` is the ``knowledge_source`` section of params.yaml (default: its defaults; its ``dump`` is
    not read: ``dump`` is), or :class:`ParseSettings` (that section and the sizes of the work).
    ``dump`` is one dump file or the part files of a dump (``...-pages-articles1.xml-p1p41242.bz2``,
    ...): their pages are read in the order given into one snapshot, with ``<siteinfo>`` from the first
    part; parts of different wikis (``<dbname>``) or dates (file names) are an error naming the part.
    Returns the report; the snapshot (``settings.snapshot``, default named by the dump) appears under
    ``<data_dir>/snapshots/<id>/knowledge_source`` only when the whole build succeeded. Parts parsed by a
    failed earlier build are kept. A snapshot of that id built from other dump files or another ``as_of``
    is replaced only with ``replace``. ``side_tables`` default to the page_props and redirect tables beside
    the dump (:mod:`~assets.wikipedia.dump.side_tables`). ``incremental``: pages the previous snapshot of
    the wiki converted already are copied from it (:mod:`.reuse`; the result is the same).
    """
    started = time.perf_counter()
    parse = (
        settings
        if isinstance(settings, ParseSettings)
        else ParseSettings(settings or KnowledgeSourceParams())
    )
    section = parse.section
    snapshot_id = section.snapshot
    workers = section.workers
    dumps = [dump] if isinstance(dump, str | os.PathLike) else list(dump)
    reuse_for = target_snapshot_id([Path(d) for d in dumps], snapshot_id) if incremental else None
    plan = plan_dump_parts(dump, data_dir, parse, part_bytes=section.part_bytes, reuse_for=reuse_for)
    bar = progress_bar(plan.dumps, sum(part.end - part.start for part in plan.parts), progress)
    pool = worker_pool(workers, preload=CONVERSION_MODULES) if workers > 0 else None
    try:
        for part in plan.parts:
            parse_dump_part(part, workers=workers, pool=pool, bar=bar, on_progress=on_progress)
    finally:
        bar.close()
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    if side_tables is None:
        side_tables = side_tables_beside([str(d) for d in plan.dumps])
    return assemble_knowledge_source(
        plan,
        data_dir,
        snapshot_id=snapshot_id,
        parse_seconds=time.perf_counter() - started,
        replace=replace,
        side_tables=side_tables,
        on_progress=on_progress,
    )
