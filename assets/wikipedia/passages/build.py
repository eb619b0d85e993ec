"""Write a snapshot's passages: Parquet shards, a pyserini JsonCollection and a DPR TSV.

One work unit per knowledge-source shard, spread over worker processes; every output is written
under a temp directory published atomically when all shards are done.

Incremental builds (``reuse_from``): pages whose ``wikipedia_id``, title and ``text_sha1`` equal those
of a page of an earlier snapshot get that snapshot's passage rows copied instead of being chunked.
Passage ids are ``{wikipedia_id}-{n}``, a pure function of the page, so the copied rows are the rows
chunking would produce, and the outputs are byte-identical to a full build: the rows of a page batch
are assembled in page order and written with the same writers and the same batch boundaries. The join
runs once in DuckDB (spilling to disk) and leaves one small Parquet file of copied rows per shard,
read by the shard's worker in step with its page batches.
"""

from __future__ import annotations

import bisect
import csv
import logging
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from assets.files import publish, temp_sibling
from assets.incremental import (
    ReuseUnavailable,
    SortedRows,
    connect,
    passages_reuse_problem,
)
from assets.params import PASSAGE_UNIT, PassagesParams
from assets.storage import SnapshotPaths, sql_list, sql_literal, write_report_json
from assets.wikipedia.passages.chunk import CHUNKER_VERSION, SPAN_COLUMNS, ChunkStats, chunk_page_into
from assets.worker_pools import worker_pool

PASSAGES_SCHEMA = pa.schema(
    [
        ("passage_id", pa.string()),
        ("wikipedia_id", pa.string()),
        ("title", pa.string()),
        ("section", pa.string()),
        *[(column, pa.int32()) for column in SPAN_COLUMNS],
        ("text", pa.string()),
        ("word_count", pa.int32()),
    ]
)
TSV_HEADER = ("id", "text", "title")
PAGE_BATCH = 512  # pages per Arrow batch: one Parquet row group per batch (a rebuild must keep it)
REUSE_READ_ROWS = 4096

log = logging.getLogger(__name__)


@dataclass(slots=True)
class PassagesReport:
    """What the passages stage produced and how long it took."""

    snapshot_id: str
    mode: str
    max_words: int
    unit: str = PASSAGE_UNIT
    pages: int = 0
    passages: int = 0
    words: int = 0
    split_paragraphs: int = 0
    pages_without_passages: dict[str, int] = field(default_factory=dict)
    word_histogram: dict[str, int] = field(default_factory=dict)
    shards: int = 0
    seconds: float = 0.0
    bytes: dict[str, int] = field(default_factory=dict)
    chunker_version: int = CHUNKER_VERSION
    reuse_source: str | None = None  # snapshot whose passages were copied (None: every page chunked)
    reuse_skipped: str | None = None  # why a given reuse_from snapshot was not used
    reused_pages: int = 0
    reused_passages: int = 0

    @property
    def passages_per_second(self) -> float:
        return self.passages / self.seconds if self.seconds else 0.0

    @property
    def mean_words(self) -> float:
        return self.words / self.passages if self.passages else 0.0

    @property
    def reuse_ratio(self) -> float:
        """Fraction of the pages whose passages were copied from ``reuse_source``."""
        return self.reused_pages / self.pages if self.pages else 0.0

    def metadata(self) -> dict[str, Any]:
        """What the ``passages`` asset shows in the Dagster UI (plain values)."""
        return {
            "passages": self.passages,
            "pages": self.pages,
            "mode": self.mode,
            "max_words": self.max_words,
            "unit": self.unit,
            "mean_words": float(self.mean_words),
            "passages_per_page": float(self.passages / max(self.pages, 1)),
            "split_paragraphs": self.split_paragraphs,
            "reuse_source": self.reuse_source or "none",
            "reused_pages": self.reused_pages,
            "reused_passages": self.reused_passages,
            "reuse_ratio": float(round(self.reuse_ratio, 4)),
            "pages_without_passages": dict(self.pages_without_passages),
            "seconds": float(self.seconds),
            "passages_per_second": float(self.passages_per_second),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "passages_per_second": self.passages_per_second,
            "mean_words": self.mean_words,
            "reuse_ratio": self.reuse_ratio,
        }


@dataclass(slots=True)
class _ShardResult:
    stats: ChunkStats
    reused_pages: int = 0
    reused_passages: int = 0


def _empty_columns() -> dict[str, list]:
    return {name: [] for name in PASSAGES_SCHEMA.names}


def _count_copied(rows: pa.Table, max_words: int, stats: ChunkStats) -> None:
    """Add the passage statistics chunking would have counted for copied rows (their pages are counted
    one by one by :meth:`ChunkStats.add_page`)."""
    stats.add_passages(rows.column("word_count").to_numpy(), max_words)
    # a paragraph was split iff consecutive passages of its page both cover it
    pages = rows.column("wikipedia_id").to_numpy(zero_copy_only=False)
    starts = rows.column("start_paragraph_id").to_numpy()
    ends = rows.column("end_paragraph_id").to_numpy()
    shared = np.flatnonzero((pages[1:] == pages[:-1]) & (ends[:-1] == starts[1:]))
    stats.split_paragraphs += len({(pages[i], int(ends[i])) for i in shared.tolist()})


def _batch_table(
    batch: pa.RecordBatch,
    first_row: int,
    copied: pa.Table | None,
    max_words: int,
    mode: str,
    unit: str,
    result: _ShardResult,
) -> pa.Table:
    """The passages of one page batch, in page order: copied rows for matched pages, chunks for others."""
    stats = result.stats
    ids, titles, texts = (batch.column(i).to_pylist() for i in range(3))
    columns = _empty_columns()
    if copied is None:
        for wikipedia_id, title, text in zip(ids, titles, texts, strict=True):
            chunk_page_into(
                columns, wikipedia_id, title, text, max_words=max_words, mode=mode, unit=unit, stats=stats
            )
        return pa.Table.from_pydict(columns, schema=PASSAGES_SCHEMA)
    page_rows = copied.column("b_row").to_numpy()
    matched = set(page_rows.tolist())
    present = copied.column("passage_id").is_valid()  # a matched page without passages has one null row
    rows = copied.filter(present).drop_columns(["b_row"]).cast(PASSAGES_SCHEMA)
    row_of = page_rows[present.to_numpy(zero_copy_only=False)].tolist()
    pieces: list[pa.Table] = []
    run: list[int] = []  # [lo, hi) of copied rows not yet appended to pieces

    def flush_chunked() -> None:
        nonlocal columns
        if columns["passage_id"]:
            pieces.append(pa.Table.from_pydict(columns, schema=PASSAGES_SCHEMA))
            columns = _empty_columns()

    def flush_copied() -> None:
        if run and run[1] > run[0]:
            pieces.append(rows.slice(run[0], run[1] - run[0]))
        run.clear()

    for offset, (wikipedia_id, title, text) in enumerate(zip(ids, titles, texts, strict=True)):
        row = first_row + offset
        if row not in matched:
            flush_copied()
            chunk_page_into(
                columns, wikipedia_id, title, text, max_words=max_words, mode=mode, unit=unit, stats=stats
            )
            continue
        flush_chunked()
        lo, hi = bisect.bisect_left(row_of, row), bisect.bisect_right(row_of, row)
        if run and run[1] == lo:
            run[1] = hi
        else:
            flush_copied()
            run.extend((lo, hi))
        stats.add_page(text, hi - lo)
        result.reused_pages += 1
    flush_copied()
    flush_chunked()
    _count_copied(rows, max_words, stats)
    result.reused_passages += rows.num_rows
    if not pieces:
        return pa.Table.from_pydict(_empty_columns(), schema=PASSAGES_SCHEMA)
    return pa.concat_tables(pieces).combine_chunks()


def _chunk_shard(
    shard: Path, out_dir: Path, max_words: int, mode: str, unit: str, reuse_file: Path | None = None
) -> _ShardResult:
    """Passages of one page shard, written as ``<shard>.parquet``, ``.jsonl`` and ``.tsv`` parts
    (the JSONL and TSV are serialized by polars from the same Arrow batch). ``reuse_file``: rows to
    copy for the shard's matched pages (``b_row`` + the passage columns, by ``b_row`` and passage)."""
    result = _ShardResult(ChunkStats())
    cursor = SortedRows(
        pq.ParquetFile(reuse_file).iter_batches(batch_size=REUSE_READ_ROWS) if reuse_file else None, "b_row"
    )
    name = shard.stem
    writer = pq.ParquetWriter(out_dir / "parquet" / f"{name}.parquet", PASSAGES_SCHEMA, compression="zstd")
    with (
        open(out_dir / "collection" / f"{name}.jsonl", "wb") as collection,
        open(out_dir / "tsv" / f"{name}.tsv", "wb") as tsv,
    ):
        source = pq.ParquetFile(shard)
        first_row = 0
        for batch in source.iter_batches(
            batch_size=PAGE_BATCH, columns=["wikipedia_id", "wikipedia_title", "text"]
        ):
            copied = cursor.before(first_row + batch.num_rows)
            table = _batch_table(batch, first_row, copied, max_words, mode, unit, result)
            first_row += batch.num_rows
            writer.write_table(table)
            frame = pl.from_arrow(table.select(["passage_id", "title", "text"]))
            frame.select(
                pl.col("passage_id").alias("id"),
                pl.concat_str("title", pl.lit("\n"), "text").alias("contents"),
            ).write_ndjson(collection)
            frame.select("passage_id", "text", "title").write_csv(
                tsv, separator="\t", include_header=False, quote_style="necessary"
            )
    writer.close()
    if cursor.before(sys.maxsize) is not None:
        raise RuntimeError(f"{reuse_file}: copied rows for pages beyond the end of {shard}")
    return result


def _stage_reuse(source: SnapshotPaths, shards: list[Path], scratch: Path) -> dict[Path, Path]:
    """One Parquet file of rows to copy per shard with matched pages: ``source``'s passages of every
    page with the same ``wikipedia_id``, title and ``text_sha1`` there (one null row for a matched page
    without passages), by page row and passage number. One DuckDB pass over ``source``'s passages."""
    con = connect(scratch)
    try:
        duplicated = con.execute(
            f"SELECT wikipedia_id FROM read_parquet({sql_literal(source.pages_glob)}) "
            "GROUP BY wikipedia_id HAVING count(*) > 1 LIMIT 1"
        ).fetchone()
        if duplicated:
            raise ReuseUnavailable(
                f"page id {duplicated[0]} occurs more than once in {source.pages_dir}: "
                "its passages cannot be told apart"
            )
        names = ", ".join(f'"{name}"' for name in PASSAGES_SCHEMA.names)
        con.execute(
            f"""
            CREATE TABLE copied AS
            WITH b AS (
              SELECT filename AS shard, file_row_number AS b_row, wikipedia_id, wikipedia_title, text_sha1
              FROM read_parquet({sql_list(shards)}, filename = true, file_row_number = true)),
            a AS (
              SELECT wikipedia_id, wikipedia_title, text_sha1
              FROM read_parquet({sql_literal(source.pages_glob)})),
            matched AS (
              SELECT b.shard, b.b_row, b.wikipedia_id
              FROM b JOIN a USING (wikipedia_id, wikipedia_title, text_sha1)),
            p AS (
              SELECT CAST(regexp_extract(passage_id, '-(\\d+)$', 1) AS BIGINT) AS n, *
              FROM read_parquet({sql_literal(source.passages_glob)}))
            SELECT m.shard, m.b_row, p.n, {", ".join(f"p.{name}" for name in PASSAGES_SCHEMA.names)}
            FROM matched m LEFT JOIN p ON p.wikipedia_id = m.wikipedia_id
            ORDER BY m.shard, m.b_row, p.n
            """
        )
        counts = dict(con.execute("SELECT shard, count(*) FROM copied GROUP BY shard").fetchall())
        files = {}
        for number, shard in enumerate(shards):
            if counts.get(str(shard)):
                files[shard] = scratch / f"copied-{number:05d}.parquet"
                con.execute(
                    f"COPY (SELECT b_row, {names} FROM copied WHERE shard = {sql_literal(shard)} "
                    f"ORDER BY b_row, n) TO {sql_literal(files[shard])} (FORMAT parquet)"
                )
        return files
    finally:
        con.close()


def _reusable(
    paths: SnapshotPaths, reuse_from: SnapshotPaths, shards: list[Path], scratch: Path, report: PassagesReport
) -> dict[Path, Path]:
    """The earlier snapshot's passages staged per shard for reuse, when it qualifies (the report says
    which snapshot, or why not)."""
    try:
        problem = passages_reuse_problem(
            reuse_from,
            max_words=report.max_words,
            mode=report.mode,
            unit=report.unit,
            chunker=CHUNKER_VERSION,
        )
        if problem is not None:
            raise ReuseUnavailable(problem)
        staged = _stage_reuse(reuse_from, shards, scratch)
        report.reuse_source = reuse_from.snapshot_id
        return staged
    except ReuseUnavailable as reason:
        report.reuse_skipped = str(reason)
        log.warning(
            "passages of %s: chunking every page, not reusing %s: %s",
            paths.snapshot_id,
            reuse_from.snapshot_id,
            reason,
        )
        return {}


def _chunk_shards(jobs: list[tuple[Any, ...]], workers: int, progress: bool) -> list[Any]:
    """Each job's shard chunked (in ``workers`` processes, or in this one), in the jobs' order."""
    bar = tqdm(total=len(jobs), desc="passages", unit="shard", disable=not progress, file=sys.stderr)
    results = []
    if workers <= 1:
        for job in jobs:
            results.append(_chunk_shard(*job))
            bar.update()
    else:
        with worker_pool(workers, preload=(__name__,)) as pool:
            futures = [pool.submit(_chunk_shard, *job) for job in jobs]
            for future in futures:
                results.append(future.result())
                bar.update()
    bar.close()
    return results


def build_passages(
    paths: SnapshotPaths,
    settings: PassagesParams | None = None,
    *,
    progress: bool = True,
    reuse_from: SnapshotPaths | None = None,
) -> PassagesReport:
    """Cut every page of the snapshot into passages as ``settings`` (the ``passages`` section of
    params.yaml; default its defaults) say; publishes ``<snapshot>/passages/`` atomically.

    ``reuse_from``: an earlier snapshot whose passages (built with the same ``max_words``, ``mode`` and
    chunker) are copied for unchanged pages; the outputs are byte-identical to a full build. When the
    earlier snapshot does not qualify, every page is chunked and ``report.reuse_skipped`` says why.
    """
    started = time.perf_counter()
    shards = sorted(paths.pages_dir.glob("*.parquet"))
    if not shards:
        raise FileNotFoundError(
            f"snapshot {paths.snapshot_id} has no knowledge-source shards in {paths.pages_dir}"
        )
    settings = settings or PassagesParams()
    max_words, mode, workers = settings.max_words, settings.mode, min(settings.workers, len(shards))
    work = temp_sibling(paths.passages)
    for sub in ("parquet", "collection", "tsv"):
        (work / sub).mkdir(parents=True)
    report = PassagesReport(paths.snapshot_id, mode, max_words, settings.unit, shards=len(shards))
    total = ChunkStats()
    scratch = temp_sibling(paths.root / "passages-reuse")
    try:
        reuse_files = _reusable(paths, reuse_from, shards, scratch, report) if reuse_from is not None else {}
        jobs = [(shard, work, max_words, mode, settings.unit, reuse_files.get(shard)) for shard in shards]
        results = _chunk_shards(jobs, workers, progress)
        for result in results:
            total.merge(result.stats)
            report.reused_pages += result.reused_pages
            report.reused_passages += result.reused_passages
        with open(work / "passages.tsv", "w", encoding="utf-8", newline="") as merged:
            csv.writer(merged, delimiter="\t", lineterminator="\n").writerow(TSV_HEADER)
            for part in sorted((work / "tsv").glob("*.tsv")):
                with open(part, encoding="utf-8") as handle:
                    shutil.copyfileobj(handle, merged, 1 << 20)
        shutil.rmtree(work / "tsv")
        report.pages = total.pages
        report.passages = total.passages
        report.words = total.words
        report.split_paragraphs = total.split_paragraphs
        report.pages_without_passages = dict(total.pages_without_passages)
        report.word_histogram = {
            f"{k}-{min(k + 9, max_words - 1)}" if k < max_words else str(max_words): v
            for k, v in sorted(total.word_histogram.items())
        }
        report.bytes = {
            "parquet": sum(p.stat().st_size for p in (work / "parquet").glob("*.parquet")),
            "collection": sum(p.stat().st_size for p in (work / "collection").glob("*.jsonl")),
            "tsv": (work / "passages.tsv").stat().st_size,
        }
        report.seconds = time.perf_counter() - started
        write_report_json(work / "report.json", report.to_dict())
        publish(work, paths.passages)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return report
