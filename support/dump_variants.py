"""Derive dump variants from the real excerpt in code (never hand-written pages)."""

from __future__ import annotations

import bz2
import gzip
import lzma
import re
from pathlib import Path

PAGE_RE = re.compile(rb"  <page>.*?</page>\n", re.DOTALL)


def read_xml(path: Path) -> bytes:
    with open(path, "rb") as handle:
        magic = handle.read(3)
    if magic == b"BZh":
        return bz2.decompress(path.read_bytes())
    return path.read_bytes()


def split_dump(xml: bytes) -> tuple[bytes, list[bytes], bytes]:
    """(header up to the first page, page elements, footer)."""
    pages = PAGE_RE.findall(xml)
    first = xml.index(pages[0])
    last = xml.rindex(pages[-1]) + len(pages[-1])
    return xml[:first], pages, xml[last:]


def page_with_title(pages: list[bytes], title: str) -> bytes:
    needle = f"<title>{title}</title>".encode()
    return next(p for p in pages if needle in p)


def field(page: bytes, name: str) -> str:
    return re.search(rb"<%s>(.*?)</%s>" % (name.encode(), name.encode()), page, re.DOTALL).group(1).decode()


def set_field(page: bytes, name: str, value: str) -> bytes:
    tag = name.encode()
    return re.sub(
        rb"<%s>.*?</%s>" % (tag, tag),
        b"<%s>%s</%s>" % (tag, value.encode(), tag),
        page,
        count=1,
        flags=re.DOTALL,
    )


def set_text(page: bytes, text: bytes) -> bytes:
    return re.sub(
        rb"(<text[^>]*>).*?(</text>)",
        lambda m: m.group(1) + text + m.group(2),
        page,
        count=1,
        flags=re.DOTALL,
    )


def write_dump(path: Path, xml: bytes, compression: str = "none", streams: int = 1) -> Path:
    """Write ``xml`` plain, gz, xz, or bz2 (``streams`` > 1 gives a multistream bz2)."""
    if compression == "bz2":
        step = max(1, len(xml) // streams + 1)
        path.write_bytes(b"".join(bz2.compress(xml[i : i + step]) for i in range(0, len(xml), step)))
    elif compression == "gzip":
        path.write_bytes(gzip.compress(xml))
    elif compression == "xz":
        path.write_bytes(lzma.compress(xml))
    else:
        path.write_bytes(xml)
    return path


def write_multistream(path: Path, xml: bytes, pages_per_stream: int = 100) -> Path:
    """A Wikipedia-style multistream bz2: the header alone, then ``pages_per_stream`` pages per stream."""
    header, pages, footer = split_dump(xml)
    groups = [b"".join(pages[i : i + pages_per_stream]) for i in range(0, len(pages), pages_per_stream)]
    path.write_bytes(b"".join(bz2.compress(part) for part in [header, *groups, footer]))
    return path


def write_parts(
    folder: Path, xml: bytes, snapshot_id: str, parts: int = 3, multistream: bool = False
) -> list[Path]:
    """Split the pages of ``xml`` into ``parts`` bz2 part files named like Wikimedia's
    (``{snapshot_id}-pages-articles{N}.xml-p{first id}p{last id}.bz2``), each a whole dump with the
    header and footer; returns them in part order."""
    header, pages, footer = split_dump(xml)
    size = -(-len(pages) // parts)
    kind = "pages-articles-multistream" if multistream else "pages-articles"
    paths = []
    for number, start in enumerate(range(0, len(pages), size), 1):
        chunk = pages[start : start + size]
        name = f"{snapshot_id}-{kind}{number}.xml-p{field(chunk[0], 'id')}p{field(chunk[-1], 'id')}.bz2"
        paths.append(write_dump(folder / name, header + b"".join(chunk) + footer, "bz2"))
    return paths


# ------------------------------------------------------------------------------------- a later snapshot
_TEXT_RE = re.compile(rb"(<text[^>]*>)(.*?)(</text>)", re.DOTALL)
_PROSE_RE = re.compile(rb"(?:[A-Z']|\[\[)[^\n{}|]*[.!?]")  # one line of prose: no template or table


def is_article(page: bytes) -> bool:
    return b"<ns>0</ns>" in page and b"<redirect" not in page


def edit_paragraph(page: bytes, duplicate: bool) -> bytes | None:
    """The page with its first plain-prose paragraph duplicated (or dropped); None when it has none."""
    match = _TEXT_RE.search(page)
    if match is None:
        return None
    blocks = match.group(2).split(b"\n\n")
    for i, block in enumerate(blocks[1:-1], start=1):  # never the first or last block
        if _PROSE_RE.fullmatch(block) and b"&lt;" not in block and len(block.split()) >= 12:
            edited = (
                [*blocks[: i + 1], block, *blocks[i + 1 :]] if duplicate else blocks[:i] + blocks[i + 1 :]
            )
            return set_text(page, b"\n\n".join(edited))
    return None


def later_snapshot(
    xml: bytes, *, every: int = 10, new_id: int = 99_000_001
) -> tuple[bytes, dict[str, list[str]]]:
    """A later dump derived from ``xml``: in every run of ``every`` articles, the first with a plain prose
    paragraph has it duplicated or dropped (alternately); the last unedited article is removed and a copy
    of the first article is added under a new title and page id. Returns the dump and the titles
    changed, removed and added."""
    header, pages, footer = split_dump(xml)
    articles = [i for i, page in enumerate(pages) if is_article(page)]
    changed: list[str] = []
    for group in range(0, len(articles), every):
        for i in articles[group + 1 : group + every]:
            edited = edit_paragraph(pages[i], duplicate=len(changed) % 2 == 0)
            if edited is not None:
                pages[i] = edited
                changed.append(field(edited, "title"))
                break
    removed = next(i for i in reversed(articles) if field(pages[i], "title") not in changed)
    removed_title = field(pages[removed], "title")
    copy = pages[articles[0]]
    added_title = f"{field(copy, 'title')} (later copy)"
    copy = set_field(set_field(copy, "title", added_title), "id", str(new_id))
    kept = [page for i, page in enumerate(pages) if i != removed]
    summary = {"changed": changed, "removed": [removed_title], "added": [added_title]}
    return header + b"".join([*kept, copy]) + footer, summary


def article_subset(xml: bytes, titles: list[str]) -> bytes:
    """The dump with only the named articles (and no other page)."""
    header, pages, footer = split_dump(xml)
    wanted = {f"<title>{t}</title>".encode() for t in titles}
    return header + b"".join(p for p in pages if any(w in p for w in wanted)) + footer


SMALL_TITLES = [
    "Anarchism",
    "Autism",
    "Albedo",
    "Achilles",
    "Abraham Lincoln",
    "Aristotle",
    "Albert Einstein",
    "Ayn Rand",
]


TINY_TITLES = ["Actrius", "Alain Connes", "Albedo"]  # 8, 6 and 40 passages


def small_dump(xml: bytes) -> bytes:
    """Eight real articles of the excerpt (and no other page): a dump that builds in seconds."""
    return article_subset(xml, SMALL_TITLES)


def replicated(xml: bytes, copies: int, id_offset: int = 10_000_000) -> bytes:
    """The dump's pages ``copies`` times, copy k with page ids + k * ``id_offset`` and titles suffixed
    `` (copy k)`` (k >= 1; copy 0 is the original): a larger dump of real text."""
    header, pages, footer = split_dump(xml)
    out = list(pages)
    for k in range(1, copies):
        for page in pages:
            copy = set_field(page, "title", f"{field(page, 'title')} (copy {k})")
            out.append(set_field(copy, "id", str(int(field(page, "id")) + k * id_offset)))
    return header + b"".join(out) + footer


def with_siteinfo(xml: bytes, dbname: str, language: str) -> bytes:
    """The dump relabelled as another wiki: ``<dbname>``, the ``xml:lang`` of ``<mediawiki>`` and the
    server host (``https://{language}.wikipedia.org``), the rest of the real siteinfo kept."""
    xml = re.sub(rb"<dbname>[^<]*</dbname>", b"<dbname>%s</dbname>" % dbname.encode(), xml, count=1)
    xml = re.sub(rb'xml:lang="[^"]*"', b'xml:lang="%s"' % language.encode(), xml, count=1)
    return re.sub(rb"https://en\.wikipedia\.org", b"https://%s.wikipedia.org" % language.encode(), xml)


def complete_pages(xml: bytes) -> bytes:
    """The dump's complete ``<page>`` elements under its header, closed by ``</mediawiki>``: a file that
    stops after a page (as the head of a dump cut with ``head``) made whole."""
    header, pages, _ = split_dump(xml)
    return header + b"".join(pages) + b"</mediawiki>\n"


ANY_PAGE_RE = re.compile(rb"[ \t]*<page>.*?</page>\n?", re.DOTALL)
"""A ``<page>`` element however it is indented (DBpedia's minidumps do not indent theirs)."""


def first_articles(xml: bytes, count: int) -> bytes:
    """The dump with only its first ``count`` articles (no redirect, no other namespace), closed, its pages
    indented as Wikimedia's (so :func:`split_dump` reads them)."""
    pages = ANY_PAGE_RE.findall(xml)
    header = xml[: xml.index(pages[0])]
    articles = [b"  " + p.strip() + b"\n" for p in pages if is_article(p)][:count]
    return header + b"".join(articles) + b"</mediawiki>\n"


MULTILINGUAL_BERLIN = {
    language: ("wikipedia_multilingual", language, f"dbpedia-minidump-{language}-berlin.xml.bz2")
    for language in ("zh", "ja", "th", "ko", "ar", "my")
}
"""The real "Berlin" page of six Wikipedias (``tests/data/wikipedia_multilingual``); their siteinfo says
enwiki whatever the language."""
JAWIKI_HEAD = ("wikipedia_multilingual", "ja", "wp2txt-testdata_ja-20220720-first215pages.xml.bz2")
"""The head of a real 2022 jawiki dump (215 pages, 168 complete articles; it stops after a ``</page>``:
:func:`complete_pages`)."""
