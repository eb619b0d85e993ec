"""What a parse step hands its form's reader: where the rows go, whatever reader read them (its stage-1
shards, its redirects and its counters: :class:`Stage1Sink`, with the pages an earlier snapshot converted
already copied in), and how the reader works (:class:`StepWork`: the conversion pool, the progress)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from dataclasses import replace as dataclass_replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from tqdm import tqdm

from assets.wikipedia.dump import SiteInfo
from assets.wikipedia.pages.conversion import (
    SIDE_ROWS,
    BatchResult,
    ConversionSettings,
    ShardedParquetWriter,
    count_paragraphs,
)
from assets.wikipedia.pages.plan import PARSER_VERSION, DumpPart
from assets.wikipedia.pages.reuse import ReusedRows, conversion_identity, reuse_problem
from assets.wikipedia.schema import (
    REDIRECT_STAGE1_SCHEMA,
    RESIDUAL_SAMPLE_SIZE,
    STAGE1_SCHEMA,
    KnowledgeSourceReport,
)

__all__ = ["Stage1Sink", "StepWork", "add_counts", "add_examples", "same_buffers"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class StepWork:
    """How a reader works: its batches are converted in ``pool`` (None: in this process), at most
    ``window`` in flight; it advances ``bar`` by the part's bytes and says how far it got through
    ``on_progress`` (every 10 s or so)."""

    pool: ProcessPoolExecutor | None
    window: int
    bar: tqdm | None = None
    on_progress: Callable[[str], None] | None = None


class Stage1Sink:
    """Collects a part's converted batches, whatever reader read them: Arrow rows into its stage-1 shards,
    redirects, counters."""

    def __init__(self, work: Path, part: DumpPart) -> None:
        self.report = KnowledgeSourceReport(
            snapshot_id="",
            dump_path=part.path,
            dump_bytes=part.end - part.start,
            compression="",
            input_bytes=0,
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
        identity = conversion_identity(site, settings.section.text_style, PARSER_VERSION, self.part.route)
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
