"""The ``kilt`` text style against the ``clean`` one and against KILT's own records.

On the embedded enwiki excerpt (106 articles) this measures:

* the share of the excerpt's paragraphs that are identical in both styles (``kilt`` paragraphs found,
  byte for byte, in the same page in the ``clean`` style);
* for KILT knowledge-source records of pages that are also in the excerpt, the share of KILT's paragraphs
  (titles excluded) that have an identical, and a near-identical (difflib ratio >= 0.9), paragraph in the
  same page of ours, in each style. The default records are the public quotation of KILT's record of "A"
  in ``tests/data/kilt_2019_quoted_records.json``; ``--kilt-records kilt_knowledgesource.json`` (KILT's
  34 GiB release, or any subset of its lines, gzipped or not) compares every excerpt page KILT has.
  KILT's pages are 2019 revisions, the excerpt's 2003-2016 ones, so text that changed in between can
  never match: the shares measure conventions only up to that;
* conversion speed of both styles (wikitext -> KILT entries, one process, best of ``--repeat``).

    .venv/bin/python benchmarks/bench_text_style.py [--kilt-records PATH] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from assets.wikipedia.articles import TEXT_STYLES
from assets.wikipedia.dump import DumpReader
from assets.wikipedia.pages import identical_share, match_paragraphs, read_kilt_pages
from assets.wikipedia.wikitext import parse_wikitext
from benchmarks.common import code_fingerprint, format_table, locate_excerpt, machine_info, write_results
from support.workspace import REPO_ROOT, log

QUOTED_RECORDS = REPO_ROOT / "tests" / "data" / "kilt_2019_quoted_records.json"


def excerpt_articles(dump: Path) -> list[tuple[str, str, str]]:
    """``(wikipedia_id, title, wikitext)`` of the dump's namespace-0 articles, in dump order."""
    return [
        (str(page.page_id), page.title, page.text)
        for page in DumpReader(dump)
        if page.ns == 0 and page.redirect_target is None
    ]


def convert_all(articles: list[tuple[str, str, str]], style: str, repeat: int) -> tuple[dict, float]:
    """Every article's KILT text in ``style``, and the best wall seconds of ``repeat`` conversions."""
    best = float("inf")
    pages: dict[str, list[str]] = {}
    for _ in range(repeat):
        started = time.perf_counter()
        pages = {pid: parse_wikitext(title, text, style=style).text for pid, title, text in articles}
        best = min(best, time.perf_counter() - started)
    return pages, best


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--kilt-records", type=Path, default=QUOTED_RECORDS, help="KILT page records")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    dump = locate_excerpt()
    articles = excerpt_articles(dump)
    ids = {pid for pid, _, _ in articles}
    titles = {title: pid for pid, title, _ in articles}
    log(f"{len(articles)} articles from {dump.name}; KILT records from {args.kilt_records}")
    pages: dict[str, dict[str, list[str]]] = {}
    seconds: dict[str, float] = {}
    for style in TEXT_STYLES:
        pages[style], seconds[style] = convert_all(articles, style, args.repeat)
    paragraphs = {style: sum(len(text) - 1 for text in pages[style].values()) for style in TEXT_STYLES}
    share_same = identical_share(pages["kilt"], pages["clean"])

    reference = [
        page
        for page in read_kilt_pages(args.kilt_records)
        if str(page.get("wikipedia_id")) in ids or page.get("wikipedia_title") in titles
    ]
    matches = {style: match_paragraphs(reference, pages[style], titles) for style in TEXT_STYLES}

    rows = [
        [
            style,
            paragraphs[style],
            f"{seconds[style]:.2f}",
            f"{len(articles) / seconds[style]:.0f}",
            f"{matches[style].identical}/{matches[style].paragraphs} ({matches[style].identical_share:.1%})",
            f"{matches[style].near_identical}/{matches[style].paragraphs} "
            f"({matches[style].near_identical_share:.1%})",
        ]
        for style in TEXT_STYLES
    ]
    print(
        format_table(
            ["style", "paragraphs", "convert s", "pages/s", "KILT paragraphs identical", "near-identical"],
            rows,
        )
    )
    print(
        f"excerpt paragraphs identical in both styles: {share_same:.1%} of the kilt style's "
        f"{paragraphs['kilt']:,}; KILT pages compared: {len(reference)} "
        f"({matches['kilt'].pages_missing} not in the excerpt)"
    )
    print(
        f"kilt / clean: KILT paragraphs identical {matches['kilt'].identical_share:.3f} vs "
        f"{matches['clean'].identical_share:.3f}; conversion time ratio "
        f"{seconds['kilt'] / seconds['clean']:.2f}x"
    )
    payload = {
        "excerpt": dump.name,
        "articles": len(articles),
        "kilt_records": str(args.kilt_records),
        "kilt_pages_compared": len(reference),
        "identical_between_styles": share_same,
        "styles": {
            style: {
                "paragraphs": paragraphs[style],
                "convert_seconds": seconds[style],
                "kilt_match": matches[style].to_dict(),
            }
            for style in TEXT_STYLES
        },
        "machine": machine_info(),
        "code": code_fingerprint(
            [
                REPO_ROOT / "assets/wikipedia/wikitext/convert.py",
                REPO_ROOT / "assets/wikipedia/articles/text_styles.py",
            ]
        ),
    }
    log(f"results: {write_results('text_style', payload)}")
    return payload


if __name__ == "__main__":
    main()
