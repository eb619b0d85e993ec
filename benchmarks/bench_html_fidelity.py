"""What the reader sees, kept: the HTML route's page text against the reader's view of real Parsoid pages.

Pages: every Parsoid document of ``--pages`` (default: the 11 shipped in ``tests/data/wikipedia_html``;
the figures in the README are of ``../shared/data/wikipedia_html/parsoid_pages``: 83 documents, 10
wikis) and every Enterprise record of ``--records`` (the 3 real "Squirrel" records, which also carry the
wikitext of the same revision).

The reference, computed independently of our converter: Wikimedia's own reader of Parsoid HTML,
mwparserfromhtml 2.1.2 (``Article(html).wikistew.to_plaintext``), with the element types a KILT page leaves
out excluded by mwparserfromhtml's own taxonomy (references and citations, infoboxes, tables and wikitables,
navigation boxes, message boxes, notes/hatnotes, media, math, categories, comments, inline cleanup tags,
``noprint``), and, because its taxonomy has no type for them, removed first with BeautifulSoup: reference
lists (``typeof=mw:Extension/references``), galleries (``mw:Extension/gallery``), figures with their captions
(``figure``, ``mw:File``: KILT's pages have no images or captions), and the boxes of links around the article
(sister projects ``.sistersitebox``, authority control ``.authority-control``/``.catlinks``: navigation, as
enwiki's navboxes are), hatnotes and page notices by their role (``role=note``, ``role=contentinfo``: other
wikis' hatnote and notice classes are not mwparserfromhtml's; dewiki's disambiguation notice "Dies ist eine
Begriffsklärungsseite …" is one, a template KILT's pages never show), and what no reader sees
(``display:none``); indented lines (``dl > dd``), which KILT's pages leave out by convention (the ``kilt``
style: WikiExtractor's); and what citation templates render (``cite.citation``: KILT drops the templates).
Documents not in namespace 0 (``mw:pageNamespace``) are left out: an Enterprise dump
holds articles. Tables and infoboxes are left out of both sides: KILT's pages have none (their text is the
structured passages').

Scores: bag-of-words precision, recall and F1 (lower-cased ``\\w+`` tokens) of each page's text (KILT
entries as a reader reads them: section headers as their heading, list markers dropped, the title entry
left out) against its reference; the mean per language and over all pages. In the same run, on the
records that carry wikitext: the wikitext route (``kilt`` style) and mwparserfromhell 0.7.2
(``strip_code``). Targets (issue 54): F1 and recall >= 0.97 (no language below 0.95), precision >= 0.98.

    .venv/bin/python benchmarks/bench_html_fidelity.py [--pages ../shared/data/wikipedia_html/parsoid_pages]
        [--records ../shared/data/wikipedia_html/enterprise_records/wme-sdk-go_articles.ndjson.gz]
"""

from __future__ import annotations

import argparse
import re
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from assets.wikipedia.html import parse_parsoid_html
from assets.wikipedia.wikitext import parse_wikitext
from benchmarks.common import format_table, machine_info, write_results
from support.enterprise_dump import parsoid_pages, real_records
from support.parser_tests import bag_scores, entries_as_lines, tokens
from support.workspace import log

EXCLUDED = frozenset(
    {"Category", "Citation", "Comment", "Infobox", "Messagebox", "Media-img", "Media-audio", "Media-video",
     "Navigation", "Note", "Reference", "Math", "Wikitable", "Table", "noprint", "InlineCleanup"}
)  # fmt: skip
PRE_REMOVED = ("mw:Extension/references", "mw:Extension/gallery", "mw:File")
PRE_REMOVED_SELECTORS = (
    ".sistersitebox, .catlinks, .authority-control, figure, [role=note], [role=contentinfo], dl > dd, "
    "cite.citation"
)
"""``cite.citation``: what a citation template ({{cite book}}, CS1/CS2) rendered, in a "Bibliography" or
"Further reading" list: KILT's pages and the wikitext route drop the template (issue 63, part 10)."""
HIDDEN_RE = re.compile(r"display\s*:\s*none", re.IGNORECASE)
TARGETS = {"f1": 0.97, "recall": 0.97, "precision": 0.98, "language_floor": 0.95}


def reference_text(html: str) -> str:
    """The reader's view of ``html`` without what a KILT page leaves out, by mwparserfromhtml."""
    from bs4 import BeautifulSoup
    from mwparserfromhtml import Article

    soup = BeautifulSoup(html, "html.parser")
    doomed = [
        element
        for element in soup.find_all(attrs={"typeof": True})
        if any(kind in str(element.get("typeof")) for kind in PRE_REMOVED)
    ]
    hidden = soup.find_all(style=HIDDEN_RE)
    for element in [*doomed, *hidden, *soup.select(PRE_REMOVED_SELECTORS)]:
        element.extract()  # detached (its descendants with it): a later one inside it is detached twice
    return "\n".join(Article(str(soup)).wikistew.to_plaintext(exclude_elements=set(EXCLUDED)))


def _documents(pages: Path | None, records: Path | None) -> list[dict[str, Any]]:
    documents = [
        {"wiki": p["wiki"], "title": p["title"], "html": p["html"], "wikitext": None, "kind": "parsoid page"}
        for p in parsoid_pages(folder=pages)
    ]
    for record in real_records(records):
        body = record.get("article_body") or {}
        documents.append(
            {"wiki": record["is_part_of"]["identifier"], "title": record["name"], "html": body.get("html"),
             "wikitext": body.get("wikitext"), "kind": "enterprise record"}
        )  # fmt: skip
    return [d for d in documents if d["html"] and _article(d["html"])]


def _article(html: str) -> bool:
    """Whether a document is an article (``<meta property="mw:pageNamespace" content="0">``, or none)."""
    head = html[: html.find("<body")]
    marker = 'property="mw:pageNamespace" content="'
    at = head.find(marker)
    return at < 0 or head[at + len(marker) : at + len(marker) + 2] == '0"'


def measure(documents: list[dict[str, Any]]) -> dict[str, Any]:
    import mwparserfromhell

    rows, seconds = [], {"html route": 0.0, "reference": 0.0}
    for document in documents:
        started = time.perf_counter()
        reference = tokens(reference_text(document["html"]))
        seconds["reference"] += time.perf_counter() - started
        started = time.perf_counter()
        ours = entries_as_lines(parse_parsoid_html(document["title"], document["html"]).text)
        seconds["html route"] += time.perf_counter() - started
        row = {"wiki": document["wiki"], "title": document["title"], "kind": document["kind"]}
        row["html route"] = dict(
            zip(("precision", "recall", "f1"), bag_scores(tokens(ours), reference), strict=True)
        )
        if document["wikitext"]:
            wikitext = entries_as_lines(parse_wikitext(document["title"], document["wikitext"]).text)
            row["wikitext route"] = dict(
                zip(("precision", "recall", "f1"), bag_scores(tokens(wikitext), reference), strict=True)
            )
            peer = str(mwparserfromhell.parse(document["wikitext"]).strip_code())
            row["mwparserfromhell 0.7.2"] = dict(
                zip(("precision", "recall", "f1"), bag_scores(tokens(peer), reference), strict=True)
            )
        rows.append(row)
    return {"pages": rows, "seconds": {k: round(v, 2) for k, v in seconds.items()}}


def summarise(rows: list[dict[str, Any]], converter: str) -> dict[str, dict[str, float]]:
    """Mean precision, recall and F1 of ``converter`` per wiki and over ``all`` pages it scored."""
    groups: dict[str, list[dict[str, float]]] = defaultdict(list)
    for row in rows:
        if converter in row:
            groups[row["wiki"]].append(row[converter])
            groups["all"].append(row[converter])
    return {
        wiki: {
            "pages": len(scores),
            **{m: round(sum(s[m] for s in scores) / len(scores), 4) for m in ("precision", "recall", "f1")},
        }
        for wiki, scores in sorted(groups.items())
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=Path, help="a folder of Parsoid documents with _INDEX.tsv")
    parser.add_argument("--records", type=Path, help="an ndjson(.gz) file of Enterprise records")
    args = parser.parse_args()
    documents = _documents(args.pages, args.records)
    log(f"{len(documents)} documents")
    measured = measure(documents)
    converters = ("html route", "wikitext route", "mwparserfromhell 0.7.2")
    summary = {name: summarise(measured["pages"], name) for name in converters}
    html = summary["html route"]
    languages = [wiki for wiki in html if wiki != "all"]
    targets = {
        "f1": html["all"]["f1"] >= TARGETS["f1"],
        "recall": html["all"]["recall"] >= TARGETS["recall"],
        "precision": html["all"]["precision"] >= TARGETS["precision"],
        "no_language_below_floor": all(
            html[w]["f1"] >= TARGETS["language_floor"] and html[w]["recall"] >= TARGETS["language_floor"]
            for w in languages
        ),
    }
    table = []
    for wiki in [*languages, "all"]:
        line = [wiki, html[wiki]["pages"]]
        for name in converters:
            s = summary[name].get(wiki)
            line.append(f"{s['f1']:.3f} / {s['recall']:.3f} / {s['precision']:.3f}" if s else "-")
        table.append(line)
    print(format_table(["wiki", "pages", *[f"{c}: F1 / R / P" for c in converters]], table))
    print(f"targets {TARGETS}: {targets}")
    write_results(
        "html_fidelity",
        {
            "machine": machine_info(),
            "how": __doc__.split("\n\n")[2],
            "pages_from": str(args.pages or "tests/data/wikipedia_html/parsoid_pages"),
            "summary": summary,
            "targets": TARGETS,
            "targets_met": targets,
            "seconds": measured["seconds"],
            "pages": measured["pages"],
        },
    )


if __name__ == "__main__":
    main()
