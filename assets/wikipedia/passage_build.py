"""Write a snapshot's passages: Parquet shards, a pyserini JsonCollection and a DPR TSV.

One work unit per knowledge-source shard, spread over worker processes; every output is written
under a temp directory published atomically when all shards are done.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from assets.storage import SnapshotPaths, publish, temp_sibling
from assets.wikipedia.passages import ChunkStats, chunk_page_into

PASSAGES_SCHEMA = pa.schema(
    [
        ("passage_id", pa.string()),
        ("wikipedia_id", pa.string()),
        ("title", pa.string()),
        ("section", pa.string()),
        ("start_paragraph_id", pa.int32()),
        ("start_character", pa.int32()),
        ("end_paragraph_id", pa.int32()),
        ("end_character", pa.int32()),
        ("text", pa.string()),
        ("word_count", pa.int32()),
    ]
)
TSV_HEADER = ("id", "text", "title")


@dataclass(slots=True)
class PassagesReport:
    """What the passages stage produced and how long it took."""

    snapshot_id: str
    mode: str
    max_words: int
    pages: int = 0
    passages: int = 0
    words: int = 0
    split_paragraphs: int = 0
    pages_without_passages: dict[str, int] = field(default_factory=dict)
    word_histogram: dict[str, int] = field(default_factory=dict)
    shards: int = 0
    seconds: float = 0.0
    bytes: dict[str, int] = field(default_factory=dict)

    @property
    def passages_per_second(self) -> float:
        return self.passages / self.seconds if self.seconds else 0.0

    @property
    def mean_words(self) -> float:
        return self.words / self.passages if self.passages else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "passages_per_second": self.passages_per_second,
            "mean_words": self.mean_words,
        }


def _chunk_shard(shard: Path, out_dir: Path, max_words: int, mode: str) -> ChunkStats:
    """Passages of one page shard, written as ``<shard>.parquet``, ``.jsonl`` and ``.tsv`` parts
    (the JSONL and TSV are serialized by polars from the same Arrow batch)."""
    stats = ChunkStats()
    name = shard.stem
    writer = pq.ParquetWriter(out_dir / "parquet" / f"{name}.parquet", PASSAGES_SCHEMA, compression="zstd")
    with (
        open(out_dir / "collection" / f"{name}.jsonl", "wb") as collection,
        open(out_dir / "tsv" / f"{name}.tsv", "wb") as tsv,
    ):
        source = pq.ParquetFile(shard)
        for batch in source.iter_batches(batch_size=512, columns=["wikipedia_id", "wikipedia_title", "text"]):
            columns: dict[str, list] = {name: [] for name in PASSAGES_SCHEMA.names}
            ids, titles, texts = (batch.column(i).to_pylist() for i in range(3))
            for wikipedia_id, title, text in zip(ids, titles, texts, strict=True):
                chunk_page_into(
                    columns, wikipedia_id, title, text, max_words=max_words, mode=mode, stats=stats
                )
            table = pa.Table.from_pydict(columns, schema=PASSAGES_SCHEMA)
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
    return stats


def build_passages(
    paths: SnapshotPaths,
    *,
    max_words: int = 100,
    mode: str = "kilt",
    workers: int | None = None,
    progress: bool = True,
) -> PassagesReport:
    """Cut every page of the snapshot into passages; publishes ``<snapshot>/passages/`` atomically."""
    started = time.perf_counter()
    shards = sorted(paths.pages_dir.glob("*.parquet"))
    if not shards:
        raise FileNotFoundError(
            f"snapshot {paths.snapshot_id} has no knowledge-source shards in {paths.pages_dir}"
        )
    workers = min(os.cpu_count() or 1, 2, len(shards)) if workers is None else workers
    work = temp_sibling(paths.passages)
    for sub in ("parquet", "collection", "tsv"):
        (work / sub).mkdir(parents=True)
    report = PassagesReport(paths.snapshot_id, mode, max_words, shards=len(shards))
    total = ChunkStats()
    try:
        bar = tqdm(total=len(shards), desc="passages", unit="shard", disable=not progress, file=sys.stderr)
        if workers <= 1:
            for shard in shards:
                total.merge(_chunk_shard(shard, work, max_words, mode))
                bar.update()
        else:
            with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
                futures = [pool.submit(_chunk_shard, shard, work, max_words, mode) for shard in shards]
                for future in futures:
                    total.merge(future.result())
                    bar.update()
        bar.close()
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
        (work / "report.json").write_text(json.dumps(report.to_dict(), indent=2) + "\n")
        publish(work, paths.passages)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return report
