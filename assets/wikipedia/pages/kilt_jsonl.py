"""KILT knowledge-source JSONL: export a snapshot, or import KILT's own release as a snapshot."""

from __future__ import annotations

import gzip
import json
import shutil
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from assets.compressed import strict_lines
from assets.files import atomic_path, publish
from assets.limits import input_line_bytes
from assets.params import ROWS_PER_SHARD
from assets.storage import SnapshotPaths, check_output_target, snapshot_writer, work_dir, write_report_json
from assets.wikipedia.pages.conversion import ShardedParquetWriter, page_text_sha1
from assets.wikipedia.schema import PAGES_SCHEMA, REDIRECT_FINAL_SCHEMA, KnowledgeSourceReport


def iter_pages(paths: SnapshotPaths, batch_size: int = 256) -> Iterator[dict[str, Any]]:
    """Stream the pages of a snapshot as dicts, shard by shard, in dump order."""
    for shard in sorted(paths.pages_dir.glob("*.parquet")):
        for batch in pq.ParquetFile(shard).iter_batches(batch_size=batch_size):
            yield from batch.to_pylist()


def to_kilt_record(page: dict[str, Any]) -> dict[str, Any]:
    """A page row as KILT's knowledge-source JSON (``_id``, comma-joined categories, ``history`` with
    integer ids and ``pre_dump``, ``wikidata_info`` when the page has a QID, ...)."""
    history = dict(page["history"] or {})
    wikidata = page.get("wikidata_info")
    return {
        "_id": page["wikipedia_id"],
        "wikipedia_id": page["wikipedia_id"],
        "wikipedia_title": page["wikipedia_title"],
        "text": page["text"],
        "anchors": page["anchors"],
        "categories": ",".join(page["categories"] or []),
        "history": history,
        "is_disambiguation": page["is_disambiguation"],
        **({"wikidata_info": dict(wikidata)} if wikidata else {}),
    }


def export_kilt_jsonl(paths: SnapshotPaths, out: Path, *, progress: bool = True) -> int:
    """Write the snapshot as KILT JSONL (``.gz`` suffix compresses); returns the page count. ``out`` may not
    lie in a snapshot's own data (:func:`~assets.storage.check_output_target`)."""
    out = check_output_target(out, "export-ks")
    count = 0
    total = json.loads(paths.manifest_file.read_text())["articles"]
    with atomic_path(out) as temp:
        opener = gzip.open if out.suffix == ".gz" else open
        with opener(temp, "wt", encoding="utf-8") as handle:
            for page in tqdm(
                iter_pages(paths), total=total, desc="export", disable=not progress, file=sys.stderr
            ):
                handle.write(json.dumps(to_kilt_record(page), ensure_ascii=False))
                handle.write("\n")
                count += 1
    return count


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None


def _page_row(record: dict[str, Any], line_number: int, source: Path) -> dict[str, Any]:
    try:
        wikipedia_id = str(record["wikipedia_id"])
        title = record["wikipedia_title"]
        text = record["text"]
    except KeyError as exc:
        raise ValueError(f"{source}:{line_number}: KILT page record lacks field {exc}") from None
    if not isinstance(text, list) or not all(isinstance(t, str) for t in text):
        raise ValueError(f"{source}:{line_number}: page {wikipedia_id}: 'text' is not a list of strings")
    categories = record.get("categories") or ""
    if isinstance(categories, str):
        categories = [c for c in categories.split(",") if c]
    history = record.get("history") or {}
    anchors = [
        {
            "paragraph_id": int(a["paragraph_id"]),
            "start": int(a["start"]),
            "end": int(a["end"]),
            "text": a.get("text", ""),
            "href": a.get("href", ""),
            "wikipedia_title": a.get("wikipedia_title"),
            "wikipedia_id": None if a.get("wikipedia_id") is None else str(a["wikipedia_id"]),
        }
        for a in record.get("anchors") or []
    ]
    return {
        "wikipedia_id": wikipedia_id,
        "wikipedia_title": title,
        "text": text,
        "anchors": anchors,
        "categories": categories,
        "history": {
            "revid": _int_or_none(history.get("revid")),
            "parentid": _int_or_none(history.get("parentid")),
            "pageid": _int_or_none(history.get("pageid")) or _int_or_none(wikipedia_id),
            "timestamp": history.get("timestamp"),
            "url": history.get("url"),
            "pre_dump": history.get("pre_dump"),
        },
        "is_disambiguation": bool(record.get("is_disambiguation", False)),
        "text_sha1": page_text_sha1(text),
        "wikitext_bytes": None,
        "wikidata_info": _wikidata_info(record.get("wikidata_info")),
    }


def _wikidata_info(value: Any) -> dict[str, str] | None:
    """KILT's ``wikidata_info`` (labels, aliases, id) reduced to the id the pages carry."""
    qid = value.get("wikidata_id") if isinstance(value, dict) else None
    return {"wikidata_id": str(qid)} if qid else None


def _kilt_records(source: Path, progress: bool, max_line_bytes: int | None) -> Iterator[tuple[int, Any]]:
    """``(line number, record)`` of a KILT JSONL file, each line within ``limits.input.max_line_bytes``;
    a longer line or one that is not JSON is an error naming the file and line."""
    lines = strict_lines(source, input_line_bytes(max_line_bytes))
    for number, line in tqdm(lines, desc="import", disable=not progress, file=sys.stderr):
        if line.strip():
            try:
                yield number, json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{source}:{number}: not valid JSON: {exc}") from None


def import_kilt_jsonl(
    source: Path,
    data_dir: Path,
    snapshot_id: str,
    *,
    rows_per_shard: int = ROWS_PER_SHARD,
    progress: bool = True,
    max_line_bytes: int | None = None,
) -> KnowledgeSourceReport:
    """Read a KILT knowledge-source JSONL (KILT's 2019 release format, optionally gzipped) as a snapshot,
    each line within ``max_line_bytes`` (``limits.input``'s).

    Malformed lines are an error naming the line; the snapshot is published only when complete.
    """
    started = time.perf_counter()
    report = KnowledgeSourceReport(
        snapshot_id=snapshot_id,
        dump_path=str(source),
        dump_bytes=source.stat().st_size,
        compression="",
        input_bytes=0,
        dbname=None,
        language=None,
    )
    work = work_dir(data_dir, snapshot_id)
    writer = ShardedParquetWriter(work / "pages", PAGES_SCHEMA, rows_per_shard)
    try:
        batch: list[dict[str, Any]] = []
        for line_number, record in _kilt_records(source, progress, max_line_bytes):
            row = _page_row(record, line_number, source)
            report.pages_read += 1
            report.paragraphs += len(row["text"]) - 1
            report.anchors += len(row["anchors"])
            report.anchors_resolved += sum(a["wikipedia_id"] is not None for a in row["anchors"])
            report.pages_with_qid += row["wikidata_info"] is not None
            batch.append(row)
            if len(batch) >= 1000:
                writer.write(pa.Table.from_pylist(batch, schema=PAGES_SCHEMA))
                batch.clear()
        if batch:
            writer.write(pa.Table.from_pylist(batch, schema=PAGES_SCHEMA))
        writer.close()
        if report.pages_read == 0:
            raise ValueError(f"{source}: holds no KILT page record")
        pq.write_table(REDIRECT_FINAL_SCHEMA.empty_table(), work / "redirects.parquet")
        report.articles = report.pages_read
        report.shards = len(writer.paths)
        report.seconds = report.parse_seconds = time.perf_counter() - started
        report.parquet_bytes = sum(p.stat().st_size for p in writer.paths)
        write_report_json(work / "report.json", report.to_dict())
        manifest = {
            "snapshot_id": snapshot_id,
            "source_file": source.name,
            "imported_from": str(source.resolve()),
            "format": "kilt-jsonl",
            "case": "first-letter",
            "articles": report.articles,
            "redirects": 0,
            "wikidata": {
                "page_props": None,
                "pages_with_qid": report.pages_with_qid,
                "source": "wikidata_info",
            },
            "built_at": datetime.now(UTC).isoformat(),
        }
        write_report_json(work / "manifest.json", manifest)
        with snapshot_writer(data_dir, snapshot_id, "knowledge_source") as target:
            publish(work, target.knowledge_source)
    except BaseException:
        writer.close()
        shutil.rmtree(work, ignore_errors=True)
        raise
    return report
