"""Parse steps: each part of a dump's plan (:mod:`.plan`) read by its form's reader (:mod:`.readers`)
into its own stage-1 shards, published whole and kept for a retry."""

from __future__ import annotations

import contextlib
import shutil
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict
from pathlib import Path

from tqdm import tqdm

from assets.files import publish, temp_sibling, write_json_atomic
from assets.skips import SkipLog
from assets.wikipedia.dump import SiteInfo
from assets.wikipedia.pages.enterprise_steps import drop_superseded
from assets.wikipedia.pages.plan import PART_FILE, DumpPart, ParsedPart, read_parsed_part
from assets.wikipedia.pages.readers import CONVERSION_MODULES, reader_for
from assets.wikipedia.pages.stage1 import Stage1Sink, StepWork
from assets.wikipedia.schema import RESIDUAL_SAMPLE_SIZE, KnowledgeSourceReport
from assets.worker_pools import worker_pool

__all__ = ["parse_dump_part", "remove_empty_parse_dirs"]


def _parse_into(
    part: DumpPart, folder: Path, work: StepWork
) -> tuple[KnowledgeSourceReport, SiteInfo, str | None]:
    folder.mkdir(parents=True)
    sink = Stage1Sink(folder, part)
    try:
        site, max_timestamp, superseded = reader_for(part.route)(part, sink, work)
    finally:
        sink.close()
    pages, redirects = drop_superseded(sink.stage1.paths, superseded, folder / "redirects.parquet", site.case)
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
        pool = worker_pool(workers, preload=CONVERSION_MODULES)
    window = 2 * max(workers, 1)
    out_dir = Path(part.out_dir)
    work = temp_sibling(out_dir)
    try:
        report, site, max_timestamp = _parse_into(part, work, StepWork(pool, window, bar, on_progress))
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
