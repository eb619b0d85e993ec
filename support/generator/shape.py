"""The real text a generated Wikipedia is made of, and the shape it is given (``gen_wiki_dump.py``).

:class:`TextPool` cuts every article of the real dumps the repository carries (``tests/data/wikipedia``:
the enwiki excerpt and three smaller real dumps) into blocks: lead paragraphs, infoboxes and hatnote
templates, level-2 sections (heading and blocks, subsections included), end sections (References,
External links, ...), category names and redirect bodies. A block keeps its text, with each main-namespace
link cut out as a *slot* (its display text and link trail), so that a generated page is real text whose
links point at generated titles. Nothing here is invented prose; only MediaWiki's own boilerplate
(``may refer to:``, ``#REDIRECT``) is written in code.

:class:`Shape` holds the figures the generated dump aims at, each with its source.
"""

from __future__ import annotations

import bz2
import html
import math
import re
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path

SOURCE_DUMPS = (
    ("wikipedia", "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"),
    ("wikipedia", "gensim_enwiki-table-markup.xml.bz2"),
    ("wikipedia", "wikipedia2vec_enwiki-pages-articles-sample.xml.bz2"),
    ("wikipedia", "pywikibot_article-pear-0.10.xml"),
)

_PAGE_RE = re.compile(r"<page>(.*?)</page>", re.S)
_TITLE_RE = re.compile(r"<title>([^<]*)</title>")
_NS_RE = re.compile(r"<ns>(-?\d+)</ns>")
_USERNAME_RE = re.compile(r"<username>([^<]*)</username>")
_TEXT_RE = re.compile(r"<text[^>]*>(.*?)</text>", re.S)
_REDIRECT_RE = re.compile(r"^\s*#REDIRECT\s*:?\s*\[\[[^\]]*\]\](.*)$", re.I | re.S)
# a main-namespace link [[target|display]]trail (innermost only: links inside file captions match too)
LINK_RE = re.compile(r"\[\[([^\[\]|{}<>\n]+?)(?:\|([^\[\]]*?))?\]\]([a-z]*)")
_CATEGORY_RE = re.compile(r"^\[\[\s*Category\s*:\s*([^\]|]+?)\s*(?:\|[^\]]*)?\]\]\s*$", re.I)
_INTERLANGUAGE_RE = re.compile(r"^\[\[[a-z]{2,3}(?:-[a-z]+)?:[^\]]*\]\]\s*$")
_HEADING_RE = re.compile(r"^(=+)\s*(.*?)\s*\1\s*$")
END_SECTIONS = frozenset(
    {"references", "notes", "external links", "see also", "further reading", "bibliography", "sources"}
)
_BAD_TITLE_CHARS = re.compile(r"[#<>\[\]|{}:_()\n\t]")


@dataclass(frozen=True, slots=True)
class Block:
    """A stretch of real wikitext with its main-namespace links cut out: ``texts[0] + link(slots[0]) +
    texts[1] + ...``; a slot is ``(display, trail)``, the display being the original link's visible text."""

    texts: tuple[str, ...]
    slots: tuple[tuple[str, str], ...]
    size: int  # bytes of the original text (UTF-8)


@dataclass(slots=True)
class Section:
    heading: str  # the level-2 heading line
    blocks: list[Block]


@dataclass(slots=True)
class TextPool:
    """Every real article of the source dumps, cut into the pieces a generated page is assembled from."""

    lead_paragraphs: list[Block] = field(default_factory=list)  # sorted by size (stubs pick by size)
    lead_sizes: list[int] = field(default_factory=list)
    lead_templates: list[Block] = field(default_factory=list)  # hatnotes, sidebars, "Use ... English"
    infoboxes: list[Block] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    end_sections: list[Section] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    redirect_tails: list[str] = field(default_factory=list)  # what follows [[target]] in real redirects
    titles: list[str] = field(default_factory=list)  # real titles and link targets: the title stock
    contributors: list[str] = field(default_factory=list)  # real user names of the source revisions

    def lead_near(self, size: int) -> Block:
        """The longest lead paragraph of at most ``size`` bytes (the shortest if none is)."""
        return self.lead_paragraphs[max(0, bisect_right(self.lead_sizes, size) - 1)]


def cut_links(text: str) -> Block:
    """``text`` as a :class:`Block`: main-namespace links become slots; namespaced, interwiki and
    section-only links stay as text."""
    texts: list[str] = []
    slots: list[tuple[str, str]] = []
    position = 0
    for match in LINK_RE.finditer(text):
        target = match[1].strip()
        if not target or ":" in target or target.startswith("#"):
            continue
        texts.append(text[position : match.start()])
        slots.append((match[2] if match[2] is not None else match[1], match[3]))
        position = match.end()
    texts.append(text[position:])
    return Block(tuple(texts), tuple(slots), len(text.encode("utf-8")))


def _read_source(path: Path) -> str:
    data = path.read_bytes()
    return (bz2.decompress(data) if data[:3] == b"BZh" else data).decode("utf-8")


def _split_blocks(lines: list[str]) -> list[str]:
    """Lines into blocks at blank lines outside templates and tables (a block spanning blank lines inside
    ``{{...}}`` or ``{|...|}`` stays whole)."""
    blocks: list[str] = []
    current: list[str] = []
    depth = 0
    for line in lines:
        if not line.strip() and depth <= 0:
            if current:
                blocks.append("\n".join(current))
                current = []
            depth = 0
            continue
        current.append(line)
        depth += line.count("{{") - line.count("}}") + line.count("{|") - line.count("|}")
    if current:
        blocks.append("\n".join(current))
    return blocks


def _title_stock(names: set[str]) -> list[str]:
    """Real names usable as titles: first letter upper case, no characters that would make a generated
    ``Name (Qualifier)`` title ambiguous or invalid."""
    stock = set()
    for name in names:
        name = " ".join(name.replace("_", " ").split())
        if 2 <= len(name) <= 60 and not _BAD_TITLE_CHARS.search(name) and "&" not in name:
            stock.add(name[0].upper() + name[1:])
    return sorted(stock)


def load_pool() -> TextPool:
    """The pool of the real source dumps the repository carries (``tests/data/wikipedia``)."""
    from support.real_data import real_file

    pool = TextPool()
    categories: set[str] = set()
    names: set[str] = set()
    leads: list[Block] = []
    contributors: set[str] = set()
    for folder, name in SOURCE_DUMPS:
        for page in _PAGE_RE.findall(_read_source(real_file(folder, name))):
            title, namespace = _TITLE_RE.search(page), _NS_RE.search(page)
            body = _TEXT_RE.search(page)
            if not (title and namespace and body):
                continue
            text = html.unescape(body[1])
            contributors.update(html.unescape(user) for user in _USERNAME_RE.findall(page))
            names.add(html.unescape(title[1]))
            redirect = _REDIRECT_RE.match(text)
            if redirect:
                pool.redirect_tails.append(redirect[1].rstrip())
                continue
            if namespace[1] != "0":
                continue
            names.update(m[1].strip() for m in LINK_RE.finditer(text) if ":" not in m[1])
            _cut_article(text, pool, leads, categories)
    leads.sort(key=lambda block: block.size)
    pool.lead_paragraphs, pool.lead_sizes = leads, [block.size for block in leads]
    pool.categories = sorted(categories)
    pool.titles = _title_stock(names)
    pool.contributors = sorted(contributors)
    return pool


def _leading_templates(block: str) -> tuple[list[str], str]:
    """The whole templates a lead block opens with (hatnotes, sidebars, the infobox), and the rest."""
    templates: list[str] = []
    rest = block.lstrip()
    while rest.startswith("{{"):
        depth, position = 0, 0
        while position < len(rest):
            if rest.startswith("{{", position):
                depth, position = depth + 1, position + 2
            elif rest.startswith("}}", position):
                depth, position = depth - 1, position + 2
                if depth == 0:
                    break
            else:
                position += 1
        if depth != 0:
            break
        templates.append(rest[:position])
        rest = rest[position:].lstrip()
    return templates, rest


def _cut_article(text: str, pool: TextPool, leads: list[Block], categories: set[str]) -> None:
    lines: list[str] = []
    for line in text.split("\n"):
        category = _CATEGORY_RE.match(line.strip())
        if category:
            categories.add(category[1])
        elif not _INTERLANGUAGE_RE.match(line.strip()) and not line.startswith("{{DEFAULTSORT"):
            lines.append(line)
    sections: list[tuple[str | None, list[str]]] = [(None, [])]
    for line in lines:
        heading = _HEADING_RE.match(line)
        if heading and len(heading[1]) == 2:
            sections.append((line.strip(), []))
        else:
            sections[-1][1].append(line)
    for heading, body in sections:
        blocks = [b for b in _split_blocks(body) if b.strip()]
        if heading is None:
            for block in blocks:
                templates, rest = _leading_templates(block)
                for template in templates:
                    is_infobox = template.lower().startswith("{{infobox")
                    (pool.infoboxes if is_infobox else pool.lead_templates).append(cut_links(template))
                if rest and not rest.startswith(("{|", "[[", "<!--", "__", "{{")):
                    leads.append(cut_links(rest))
            continue
        section = Section(heading, [cut_links(b) for b in blocks])
        if not section.blocks:
            continue
        name = _HEADING_RE.match(heading)[2].strip().lower()  # type: ignore[index]
        (pool.end_sections if name in END_SECTIONS else pool.sections).append(section)


# ----------------------------------------------------------------------------------------- the shape
@dataclass(frozen=True, slots=True)
class Shape:
    """What a generated dump aims at, per main-namespace article. Sources:

    * article wikitext bytes: the shape of the toolserver count of enwiki's 3,517,730 articles (wikien-l,
      2010-11-29, "What proportion of articles are stubs?"): 5.3 % < 500 B, 15.6 % < 1,000 B, 40.4 % <
      2,000 B, 73.8 % < 5,000 B, 89.4 % < 10,000 B, a log-normal of sigma 1.02 through them; its scale grown
      1.4x (every size limit x 1.4: median 3.9 KB, mean 6.6 KB) so that an article makes ~4.3 passages as
      today's enwiki does (~30 M passages for ~6.9 M articles); the mean was ~5.9 KB in 2013
      (wiki-research-l, 2013-08) and articles have grown since;
    * redirects: ~10 M for ~6.9 M articles (the issue's figures), 1.4 per article; 0.5 % point at another
      redirect (double redirects, which bots fix within days);
    * disambiguation pages: ~186,000 of 3.5 M articles in 2010 (same toolserver count), 5 %;
    * links: popularity by rank ~ 1/rank^0.9 (in-degree power law of exponent ~2.1, Capocci et al. 2006,
      "Preferential attachment in the growth of social networks: the case of Wikipedia");
      10 % through a redirect, 2 % red links;
    * non-article pages in pages-articles (rounded namespace counts of enwiki, per article): Category 0.35,
      Wikipedia 0.17, Template 0.16, File 0.13, Portal 0.03; the build skips them all.
    """

    size_sigma: float = 1.02
    size_growth: float = 1.4  # today's articles against 2010's
    size_min: int = 120
    size_max: int = 400_000
    size_quantiles_2010: tuple[tuple[float, int], ...] = (
        (0.053, 500),
        (0.156, 1000),
        (0.404, 2000),
        (0.738, 5000),
        (0.894, 10000),
    )
    redirects_per_article: float = 1.4
    redirect_chain_share: float = 0.005
    disambiguation_share: float = 0.05
    link_exponent: float = 0.9
    link_via_redirect: float = 0.10
    red_link_share: float = 0.02
    infobox_share: float = 0.4  # of articles over 3 KB
    other_namespaces: tuple[tuple[int, str, float], ...] = (
        (14, "Category", 0.35),
        (4, "Wikipedia", 0.17),
        (10, "Template", 0.16),
        (6, "File", 0.13),
        (100, "Portal", 0.03),
    )

    @property
    def size_mu(self) -> float:
        """The log-normal's mu: the 2010 fit's (7.94), grown by :attr:`size_growth`."""
        return 7.94 + math.log(self.size_growth)

    @property
    def size_quantiles(self) -> tuple[tuple[float, int], ...]:
        """The shares the dump aims at: 2010's counts, each size limit grown by :attr:`size_growth`."""
        return tuple((share, round(limit * self.size_growth)) for share, limit in self.size_quantiles_2010)

    def article_bytes(self, normal: float) -> int:
        """The wikitext size of an article at standard-normal draw ``normal``."""
        size = math.exp(self.size_mu + self.size_sigma * normal)
        return int(min(self.size_max, max(self.size_min, size)))
