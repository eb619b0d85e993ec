"""A MediaWiki dump of N articles with English Wikipedia's shape, made only from real text.

Every page is real wikitext of the dumps the repository carries, cut into blocks and recombined
(:mod:`support.generator.shape`), with article sizes, redirects, disambiguation pages, other namespaces and
link popularity drawn to enwiki's published figures (:class:`support.generator.shape.Shape` names each
source). Deterministic for a seed: the same arguments write the same bytes.

Written under ``--out`` (default ``benchmarks/work/scale/n{N}-s{seed}/``), in enwiki's file layout::

    {wiki}-{date}-pages-articles-multistream.xml.bz2        100 pages per bz2 stream
    {wiki}-{date}-pages-articles-multistream-index.txt.bz2  offset:page_id:title
    parts/{wiki}-{date}-pages-articles-multistream{k}.xml-p{first}p{last}.bz2 (+ index{k}), --parts K
    {wiki}-{date}-page_props.sql.gz                         wikibase_item (QIDs) and displaytitle rows
    {wiki}-{date}-redirect.sql.gz                           the redirect table, mysqldump layout
    stats.json                                              the dump's statistics beside enwiki's

``--month M`` writes the same dump a month later instead (``-m{M}`` folder, dated 20260201: a month of
edits, :mod:`support.generator.month`) with ``truth.jsonl``, every change it made.

    .venv/bin/python benchmarks/gen_wiki_dump.py --articles 10000 [--seed 0] [--parts 4] [--workers 2]
    .venv/bin/python benchmarks/gen_wiki_dump.py --articles 10000 --month 1
"""

from __future__ import annotations

import argparse
import bz2
import json
import math
import os
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any

from assets.files import atomic_path
from assets.worker_pools import in_order, worker_pool
from support.generator.month import MonthPlan
from support.generator.pages import ARTICLE, DISAMBIGUATION, REDIRECT, DumpPlan, page_xml
from support.generator.shape import Shape, load_pool
from support.sql_dumps import PAGE_PROPS_DDL, REDIRECT_DDL, write_table_dump
from support.workspace import WORK_DIR, log

GENERATOR_VERSION = 3  # bump when the output of the same arguments changes
FOOTER = "</mediawiki>\n"
# enwiki, for comparison (the figures and Shape's sources)
ENWIKI = {
    "articles": 6_900_000,
    "redirects_per_article": 1.45,
    "passages_per_article": 4.3,  # ~30 M passages
    "xml_bytes_per_article": 14_500,  # ~100 GB of pages-articles XML (every namespace) per article
    "wikitext_bytes_quantiles": dict(Shape().size_quantiles),
}

_SOURCE: Any = None  # the worker's page source (DumpPlan or MonthPlan) and its page order
_ORDER: list[int] = []


def page_source(articles: int, seed: int, month: int | None) -> Any:
    """Snapshot N (a :class:`DumpPlan`), or with ``month`` its next month (a ``MonthPlan``)."""
    plan = DumpPlan(load_pool(), articles, seed=seed)
    return plan if month is None else MonthPlan(plan, seed=month)


def _init_worker(articles: int, seed: int, month: int | None) -> None:
    global _SOURCE, _ORDER
    _SOURCE = page_source(articles, seed, month)
    _ORDER = _SOURCE.order()


def _render_group(group: tuple[int, int]) -> tuple[bytes, int, list[tuple[int, str]], dict[str, Any]]:
    """Pages ``start..stop`` (``group``) of the dump's order as one bz2 stream, their index entries and
    statistics."""
    start, stop = group
    parts, index = [], []
    stats = _empty_totals()
    for number in _ORDER[start:stop]:
        page = _SOURCE.render(number)
        xml = page_xml(_SOURCE, page, number)
        parts.append(xml)
        index.append((page.page_id, page.title))
        stats["kinds"][page.kind] += 1
        stats["xml_bytes"][page.kind] += len(xml.encode("utf-8"))
        if page.kind == ARTICLE:
            stats["article_bytes"].append(len(page.text.encode("utf-8")))
            stats["links"] += page.links
            stats["categories"] += page.categories
    data = "".join(parts).encode("utf-8")
    return bz2.compress(data, 9), len(data), index, stats


def _empty_totals() -> dict[str, Any]:
    return {"kinds": Counter(), "xml_bytes": Counter(), "article_bytes": [], "links": 0, "categories": 0}


def _dump_header() -> str:
    """The real excerpt's ``<mediawiki>`` element and ``<siteinfo>`` (enwiki's namespaces)."""
    from support.real_data import excerpt_dump

    with bz2.open(excerpt_dump(), "rt", encoding="utf-8") as stream:
        head = stream.read(20_000)
    return head[: head.index("</siteinfo>") + len("</siteinfo>")] + "\n"


class _StreamFile:
    """A multistream bz2 file and its index being written (temp names, renamed on close)."""

    def __init__(self, path: Path, index_path: Path, header: bytes) -> None:
        self.path, self.index_path = path, index_path
        self.sink = open(path.with_name(path.name + ".tmp"), "wb")  # noqa: SIM115 (closed in close())
        self.index = bz2.open(index_path.with_name(index_path.name + ".tmp"), "wt", encoding="utf-8")  # noqa: SIM115
        self.sink.write(header)

    def add(self, blob: bytes, entries: list[tuple[int, str]]) -> None:
        offset = self.sink.tell()
        self.sink.write(blob)
        self.index.writelines(f"{offset}:{page_id}:{title}\n" for page_id, title in entries)

    def close(self, footer: bytes) -> None:
        self.sink.write(footer)
        self.sink.close()
        self.index.close()
        os.replace(self.sink.name, self.path)
        os.replace(self.index_path.with_name(self.index_path.name + ".tmp"), self.index_path)


def write_sql_tables(source: Any, out: Path, prefix: str) -> dict[str, int]:
    """page_props (the pages' QIDs, and a displaytitle row for 1 in 10 pages) and the redirect table of a
    page source (a :class:`DumpPlan` or a ``MonthPlan``), in page-id order as mysqldump writes them."""

    def page_props() -> Any:
        for number in source.order():
            if source.kind(number) == REDIRECT:
                continue
            page_id = source.page_id(number)
            if page_id % 10 == 3:
                yield (page_id, "displaytitle", source.page_title(number), None)
            qid = source.qid(number)
            if qid is not None:
                yield (page_id, "wikibase_item", qid, None)

    def redirects() -> Any:
        for number in source.order():
            if source.kind(number) == REDIRECT:
                yield (source.page_id(number), 0, source.redirect_to(number).replace(" ", "_"), "", "")

    props, redirect = out / f"{prefix}-page_props.sql.gz", out / f"{prefix}-redirect.sql.gz"
    return {
        "page_props_rows": write_table_dump(props, "page_props", PAGE_PROPS_DDL, page_props()),
        "redirect_rows": write_table_dump(redirect, "redirect", REDIRECT_DDL, redirects()),
    }


def _add_stats(totals: dict[str, Any], stats: dict[str, Any]) -> None:
    """A group of pages' statistics added to the dump's."""
    for key in ("kinds", "xml_bytes"):
        totals[key].update(stats[key])
    for key in ("article_bytes", "links", "categories"):
        totals[key] += stats[key]


def _write_stats(report: dict[str, Any], stats_path: Path) -> None:
    """``stats.json`` written whole (its presence marks a finished dump)."""
    tmp = stats_path.with_name("stats.json.tmp")
    tmp.write_text(json.dumps(report, indent=2) + "\n")
    os.replace(tmp, stats_path)


def generate(
    articles: int,
    out: Path,
    *,
    seed: int = 0,
    month: int | None = None,
    parts: int = 0,
    workers: int = 2,
    wiki: str = "enwiki",
    pages_per_stream: int = 100,
) -> dict[str, Any]:
    """Write the dump (cached: the same arguments in ``out`` are not written twice); its statistics. With
    ``month``, the snapshot a month later (dated a month later) and ``truth.jsonl``, its changes."""
    date = "20260101" if month is None else "20260201"
    arguments = {"articles": articles, "seed": seed, "parts": parts, "wiki": wiki, "date": date,
                 "pages_per_stream": pages_per_stream, "version": GENERATOR_VERSION}  # fmt: skip
    if month is not None:
        arguments["month"] = month
    stats_path = out / "stats.json"
    if stats_path.is_file() and json.loads(stats_path.read_text()).get("arguments") == arguments:
        log(f"reusing the generated dump in {out}")
        return json.loads(stats_path.read_text())
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    prefix = f"{wiki}-{date}"
    source = page_source(articles, seed, month)
    order = source.order()
    total = len(order)
    log(f"generating {articles:,} articles ({total:,} pages{', a month later' if month else ''}) into {out}")
    header = _dump_header().encode("utf-8")
    multistream = _StreamFile(
        out / f"{prefix}-pages-articles-multistream.xml.bz2",
        out / f"{prefix}-pages-articles-multistream-index.txt.bz2",
        bz2.compress(header, 9),
    )
    streams = math.ceil(total / pages_per_stream)
    per_part = math.ceil(streams / max(parts, 1)) * pages_per_stream  # pages per part file: whole streams
    part_files: dict[int, _StreamFile] = {}
    totals = _empty_totals()
    xml_bytes = len(header) + len(FOOTER)
    groups = ((s, min(s + pages_per_stream, total)) for s in range(0, total, pages_per_stream))
    done = 0
    footer = bz2.compress(FOOTER.encode(), 9)
    with worker_pool(workers, _init_worker, (articles, seed, month), preload=(__name__,)) as pool:
        for _, (blob, size, entries, stats) in in_order(_render_group, groups, pool, 2 * workers):
            multistream.add(blob, entries)
            if parts:
                part = 1 + done // per_part
                if part not in part_files:
                    for finished in part_files.values():
                        finished.close(footer)
                    last = order[min(total, part * per_part) - 1]
                    ids = f"p{source.page_id(order[done])}p{source.page_id(last)}"
                    part_files = {part: _part_file(out, prefix, part, ids, header)}
                part_files[part].add(blob, entries)
            xml_bytes += size
            done += len(entries)
            _add_stats(totals, stats)
            if done % 100_000 < pages_per_stream:
                log(f"  {done:,}/{total:,} pages, {xml_bytes / 1e6:,.0f} MB XML")
    multistream.close(footer)
    for finished in part_files.values():
        finished.close(footer)
    tables = write_sql_tables(source, out, prefix)
    report = _statistics(source, totals, xml_bytes, tables)
    if month is not None:
        report["changes"] = _write_truth(source, out / "truth.jsonl")
    report.update(
        arguments=arguments,
        files=sorted(
            str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() and p.name != "stats.json"
        ),
        compressed_bytes=multistream.path.stat().st_size,
        generation_seconds=round(time.perf_counter() - started, 1),
    )
    _write_stats(report, stats_path)
    log(f"written in {report['generation_seconds']:.0f} s: {xml_bytes / 1e6:,.0f} MB XML")
    return report


def _write_truth(month: MonthPlan, path: Path) -> dict[str, int]:
    """Every change of the month, one JSON line per page; the counts per kind of change."""
    counts: Counter[str] = Counter()
    with atomic_path(path) as temp, open(temp, "w", encoding="utf-8") as sink:
        for record in month.truth():
            for key in ("change", "edits", "renamed_from", "redirect", "qid"):
                if key in record:
                    counts[record[key] if key == "change" else key] += 1
            sink.write(json.dumps(record, ensure_ascii=False) + "\n")
    return dict(sorted(counts.items()))


def _part_file(out: Path, prefix: str, part: int, ids: str, header: bytes) -> _StreamFile:
    folder = out / "parts"
    folder.mkdir(exist_ok=True)
    return _StreamFile(
        folder / f"{prefix}-pages-articles-multistream{part}.xml-{ids}.bz2",
        folder / f"{prefix}-pages-articles-multistream-index{part}.txt-{ids}.bz2",
        bz2.compress(header, 9),
    )


def _statistics(
    source: Any, totals: dict[str, Any], xml_bytes: int, tables: dict[str, int]
) -> dict[str, Any]:
    plan = source if isinstance(source, DumpPlan) else source.base
    kinds = totals["kinds"]
    articles = kinds[ARTICLE] + kinds[DISAMBIGUATION]
    sizes = sorted(totals["article_bytes"])
    share_below = {str(limit): round(sum(1 for s in sizes if s < limit) / len(sizes), 3)
                   for _, limit in plan.shape.size_quantiles}  # fmt: skip
    namespaces = {name: kinds[3 + i] for i, (_, name, _) in enumerate(plan.shape.other_namespaces)}
    return {
        "articles": articles,
        "disambiguation_pages": kinds[DISAMBIGUATION],
        "redirects": kinds[REDIRECT],
        "redirects_per_article": round(kinds[REDIRECT] / articles, 3),
        "redirect_chains": int(
            (plan.kinds[plan.redirect_target[plan.redirect_target >= 0]] == REDIRECT).sum()
        ),
        "other_namespace_pages": namespaces,
        "pages": len(plan),
        "xml_bytes": xml_bytes,
        "xml_bytes_per_article": round(xml_bytes / articles),
        "article_wikitext_bytes": {
            "mean": round(statistics.fmean(sizes)),
            "median": sizes[len(sizes) // 2],
            "p90": sizes[int(len(sizes) * 0.9)],
            "p99": sizes[int(len(sizes) * 0.99)],
            "max": sizes[-1],
            "share_below": share_below,
            "target_share_below": {str(limit): share for share, limit in plan.shape.size_quantiles},
        },
        "links_per_article": round(totals["links"] / kinds[ARTICLE], 1),
        "categories_per_article": round(totals["categories"] / kinds[ARTICLE], 2),
        "title_stock": len(plan.pool.titles),
        **tables,
        "enwiki": ENWIKI,
    }


def default_out(articles: int, seed: int, month: int | None = None) -> Path:
    return WORK_DIR / "scale" / (f"n{articles}-s{seed}" + ("" if month is None else f"-m{month}"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--articles", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--parts", type=int, default=0, help="also write the dump as K part files")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--month", type=int, help="write the snapshot a month later (this seed's edits)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    out = args.out or default_out(args.articles, args.seed, args.month)
    report = generate(
        args.articles, out, seed=args.seed, month=args.month, parts=args.parts, workers=args.workers
    )
    print(json.dumps({k: v for k, v in report.items() if k not in ("files", "enwiki")}, indent=2))
