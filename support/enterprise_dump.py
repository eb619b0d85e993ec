"""Enterprise HTML dumps made in code from real records and real Parsoid pages (never hand-written HTML).

:func:`real_records` are the three real article records; :func:`page_records` turns real Parsoid
documents into records of the same shape (a real record's fields, the document's own title, page id,
revision and HTML); :func:`write_enterprise_dump` writes records as Wikimedia does: ndjson members in a
gzip'd tar.
"""

from __future__ import annotations

import copy
import csv
import gzip
import io
import json
import re
import tarfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from support.dump_variants import read_xml, set_field, set_text, split_dump
from support.real_data import excerpt_dump, real_file

__all__ = [
    "iter_wikitext_twin",
    "mobile_html_page",
    "page_records",
    "parsoid_pages",
    "real_records",
    "scaled_records",
    "wikitext_twin",
    "write_enterprise_dump",
]


def real_records(path: Path | None = None) -> list[dict[str, Any]]:
    """The real records of ``path`` (an ndjson file, gzip'd or not; default: the three shipped ones,
    dewiki, enwiki and ruwiki "Squirrel"), as their lines decode."""
    path = path or real_file("wikipedia_html", "enterprise_records", "wme-sdk-go_articles.ndjson")
    data = path.read_bytes()
    text = (gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data).decode("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def parsoid_pages(wiki: str | None = None, folder: Path | None = None) -> list[dict[str, Any]]:
    """The Parsoid documents of ``folder`` (its ``_INDEX.tsv`` lists them, files gzip'd or not; default:
    the shipped ones), of ``wiki`` only when given: ``wiki``, ``title``, ``page_id``, ``revision`` and
    ``html``."""
    index = folder / "_INDEX.tsv" if folder else real_file("wikipedia_html", "parsoid_pages", "_INDEX.tsv")
    rows = list(csv.DictReader(io.StringIO(index.read_text(encoding="utf-8")), delimiter="\t"))

    def html(name: str) -> str:
        if folder is None:
            return real_file("wikipedia_html", "parsoid_pages", name).read_text(encoding="utf-8")
        data = (folder / name).read_bytes()
        return (gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data).decode("utf-8")

    return [
        {
            "wiki": row["wiki"],
            "title": row["title"],
            "page_id": int(row["page_id"]) if row["page_id"] else None,
            "revision": int(row["revision"]) if row["revision"] else None,
            "html": html(row["file"]),
        }
        for row in rows
        if row["form"] == "parsoid" and (wiki is None or row["wiki"] == wiki)
    ]


def page_records(wiki: str = "enwiki", pages: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """A record per Parsoid document (``pages``: :func:`parsoid_pages`' rows; default: the shipped ones of
    ``wiki``): the real record of the same wiki (or the enwiki one, its language fields set to the wiki's)
    with the document's title, ids and HTML, no wikitext, no redirects and no QID (the documents come
    without them)."""
    records = {record["is_part_of"]["identifier"]: record for record in real_records()}
    template = records.get(wiki) or records["enwiki"]
    language = wiki.removesuffix("wiki")
    made = []
    for page in parsoid_pages(wiki) if pages is None else pages:
        record = copy.deepcopy(template)
        record.update(
            name=page["title"],
            identifier=page["page_id"],
            url=f"https://{language}.wikipedia.org/wiki/{page['title'].replace(' ', '_')}",
            version={"identifier": page["revision"]},
            in_language={"identifier": language},
            is_part_of={"identifier": wiki, "url": f"https://{language}.wikipedia.org"},
            article_body={"html": page["html"]},
            redirects=[],
            categories=[],
        )
        record.pop("main_entity", None)
        made.append(record)
    return made


def mobile_html_page(path: Path) -> dict[str, Any]:
    """A Parsoid-derived mobile-html page (Wikimedia's PCS output) as a :func:`parsoid_pages` row: its title,
    page id and revision read from its own head."""
    html = path.read_text(encoding="utf-8")
    title = re.search(r"<title>([^<]*)</title>", html)
    page_id = re.search(r'<meta property="mw:pageId" content="(\d+)"', html)
    revision = re.search(r"Special:Redirect/revision/(\d+)", html)
    if not (title and page_id and revision):
        raise ValueError(f"{path}: not a Parsoid mobile-html page (no title, mw:pageId or revision)")
    wiki = re.search(r"//([a-z-]+)\.wikipedia\.org", html)
    return {
        "wiki": f"{wiki.group(1) if wiki else 'en'}wiki",
        "title": title.group(1),
        "page_id": int(page_id.group(1)),
        "revision": int(revision.group(1)),
        "html": html,
    }


def write_enterprise_dump(path: Path, records: Iterable[dict[str, Any]], members: int = 2) -> Path:
    """``records`` as ndjson lines spread over ``members`` tar members (``<stem>_<n>.ndjson``), gzip'd.
    A list is dealt out round-robin; another iterable is cut into members of ``members`` records each
    (streamed: one member is held at a time)."""
    stem = path.name.split(".")[0]
    if isinstance(records, list):
        count = max(1, min(members, len(records) or 1))
        groups: Iterable[list[dict[str, Any]]] = [records[index::count] for index in range(count)]
    else:
        groups = _chunks(records, members)
    with tarfile.open(path, "w:gz", compresslevel=6) as archive:
        for index, group in enumerate(groups):
            data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in group).encode("utf-8")
            info = tarfile.TarInfo(f"{stem}_{index}.ndjson")
            info.size = len(data)
            info.mtime = 0
            archive.addfile(info, io.BytesIO(data))
    return path


def _chunks(records: Iterable[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    chunk: list[dict[str, Any]] = []
    for record in records:
        chunk.append(record)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def scaled_records(count: int, wiki: str = "enwiki") -> Iterator[dict[str, Any]]:
    """``count`` records derived from the three real ones (each has HTML and wikitext): record i is real
    record ``i % 3`` with page id ``10_000_000 + i``, the title ``"<name> <i>"``, its redirects' titles
    suffixed alike, all of ``wiki``."""
    real = real_records()
    language = wiki.removesuffix("wiki")
    for index in range(count):
        record = dict(real[index % len(real)])
        name = f"{record['name']} {index}"
        record.update(
            name=name,
            identifier=10_000_000 + index,
            url=f"https://{language}.wikipedia.org/wiki/{name.replace(' ', '_')}",
            in_language={"identifier": language},
            is_part_of={"identifier": wiki, "url": f"https://{language}.wikipedia.org"},
            redirects=[{"name": f"{r['name']} {index}"} for r in record.get("redirects") or []],
        )
        yield record


def wikitext_twin(records: Iterable[dict[str, Any]]) -> bytes:
    """:func:`iter_wikitext_twin` joined."""
    return b"".join(iter_wikitext_twin(records))


def iter_wikitext_twin(records: Iterable[dict[str, Any]]) -> Iterator[bytes]:
    """An XML dump of the records that carry wikitext, in pieces: the real excerpt's ``<siteinfo>`` and one
    of its real page elements as the frame, each record's title, page id, revision, date and wikitext set
    in it (the same pages the records hold, as the XML route reads them)."""
    head, pages, tail = split_dump(read_xml(excerpt_dump()))
    frame = next(page for page in pages if b"<redirect" not in page and b"<ns>0</ns>" in page)
    yield head
    for record in records:
        wikitext = (record.get("article_body") or {}).get("wikitext")
        if not wikitext:
            continue
        page = set_field(frame, "title", escape(record["name"]))
        page = set_field(page, "id", str(record["identifier"]))  # the page's: the first <id>
        revision = page[page.index(b"<revision>") :]
        revision = set_field(revision, "id", str(record["version"]["identifier"]))
        revision = set_field(revision, "timestamp", record["date_modified"])
        yield page[: page.index(b"<revision>")] + set_text(revision, escape(wikitext).encode())
    yield tail
