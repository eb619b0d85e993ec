"""Parsoid HTML (what Wikimedia renders, every template expanded) -> the KILT view of one article.

The HTML is walked once, without recursion (a 100k-deep document costs what a flat one does), into the
same intermediate text the wikitext route's cleaning passes make (:mod:`assets.wikipedia.articles.entries`):
headings as ``== h ==`` lines, list items as ``*``/``#``/``;``/``:`` lines, paragraphs between blank lines,
kept links as ``\\x01target\\x02label\\x03``, removals as ``\\x05``, italics and bold as ``''``/``'''``. The
last pass both routes share (:mod:`assets.wikipedia.articles`) then cuts it into KILT entries with anchor
offsets, and the style's quote and comma rules apply, so ``text_style: kilt | clean`` means the same on
both routes.

What a KILT page leaves out is left out here, by Parsoid's own markup: references and their lists
(``mw:Extension/ref``, ``mw:Extension/references``), files (``mw:File``), math (a removal point, as the
wikitext route removes ``<math>``), navboxes (``role=navigation``), hatnotes (``role=note``), message
boxes, hidden elements (``display:none``), styles, scripts and metadata; tables and infoboxes in the
``kilt`` style (their text is the structured passages'). Categories come from
``link[rel~=mw:PageProp/Category]``, a disambiguation page from ``mw:PageProp/disambiguation``.

Pure module: lxml and the standard library.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

import lxml.etree

from assets.limits import HtmlLimits
from assets.wikipedia.articles import (
    MARK,
    RESERVED_RE,
    S_CLOSE,
    S_MID,
    S_OPEN,
    EntryBuilder,
    ParsedArticle,
    assemble_entries,
    check_text_style,
    kilt_commas,
    kilt_quotes,
)

__all__ = ["TEXT_TABLE", "HtmlPageError", "element_fate", "html_document", "parse_parsoid_html"]


class HtmlPageError(ValueError):
    """An article's HTML that holds no document (empty, or not HTML at all)."""


_DROPPED_TAGS = frozenset(
    {"style", "script", "noscript", "link", "meta", "img", "audio", "video", "head", "title",
     "template", "svg", "button", "input", "select", "textarea", "object", "embed", "iframe"}
)  # fmt: skip
_DROPPED_CLASSES = frozenset(
    {"reference", "mw-ref", "mw-references-wrap", "navbox",
     "navbox-styles", "vertical-navbox", "hatnote", "dablink", "rellink", "ambox", "mbox-small", "ombox",
     "tmbox", "cmbox", "fmbox", "imbox", "metadata", "mw-editsection", "shortdescription", "sistersitebox",
     "portal", "portalbox", "catlinks", "mw-empty-elt", "printfooter", "authority-control", "toc",
     "mw-cite-backlink", "noexcerpt", "mw-kartographer-maplink", "gallery", "mw-gallery-traditional",
     "noprint", "Inline-Template", "infobox"}
)  # fmt: skip
_DROPPED_ROLES = frozenset({"navigation", "note", "contentinfo"})
_DROPPED_TYPEOF = ("mw:Extension/references", "mw:File", "mw:Image", "mw:Audio", "mw:Video")
_FRAMED = ("mw:File/Thumb", "mw:File/Frame", "mw:Image/Thumb", "mw:Image/Frame")
_MARKED_TYPEOF = ("mw:Extension/ref", "mw:Extension/math", "mw:Extension/chem", "mw:Extension/score")
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_BLOCKS = frozenset(
    {"p", "div", "section", "blockquote", "pre", "center", "article", "aside", "main", "header", "footer",
     "caption", "table", "tr", "details", "summary", "address", "hr", "body", "html"}
)  # fmt: skip
_LISTS = {"ul": "*", "ol": "#", "dl": ""}
_ITEMS = {"li": None, "dt": ";", "dd": ":"}
_ITALIC = frozenset({"i", "em", "var", "cite", "dfn"})
_BOLD = frozenset({"b", "strong"})
_CELLS = frozenset({"td", "th"})
_CLASSES_GALLERY = frozenset({"gallerycaption", "gallerytext"})
_HIDDEN_RE = re.compile(r"display\s*:\s*none", re.IGNORECASE)
TEXT_TABLE = {**dict.fromkeys(range(1, 8)), **dict.fromkeys(map(ord, "\t\r\n\f\v\xa0"), " ")}
"""``str.translate`` table of the walked text: reserved characters dropped, blanks made spaces."""
_MULTI_SPACE_RE = re.compile("  +")
_QUOTES_RE = re.compile(r"'''''|'''|''")
_EXIT = object()
CELL = "\x07"
"""Where a table cell starts in the walked text (a reserved character: never in the input)."""


def _tokens(value: str | None) -> list[str]:
    return value.split() if value else []


def element_fate(element: lxml.etree._Element, tag: str, kilt: bool) -> str | None:
    """What the text makes of ``element`` (``tag``: its lower-case tag) in the ``kilt`` style or the
    clean one: ``"drop"`` (the subtree goes), ``"mark"`` (it goes, leaving a removal point), ``"gallery"``
    (clean: its captions only) or None (walked)."""
    if tag in _DROPPED_TAGS:
        return "drop"
    typeof = element.get("typeof")
    if typeof:
        if any(kind in typeof for kind in _MARKED_TYPEOF):
            return "mark"
        if not kilt and tag == "figure" and any(kind in typeof for kind in _FRAMED):
            return None  # the clean style keeps a framed image's caption (its image is dropped)
        if any(kind in typeof for kind in _DROPPED_TYPEOF):
            return "drop"
    classes = _tokens(element.get("class"))
    if not kilt and "gallery" in classes:
        return "gallery"
    if classes and not _DROPPED_CLASSES.isdisjoint(classes):
        return "mark" if "reference" in classes or "mw-ref" in classes else "drop"
    if element.get("role") in _DROPPED_ROLES:
        return "drop"
    style = element.get("style")
    if style and _HIDDEN_RE.search(style):
        return "drop"
    if kilt and tag in ("table", "figure"):
        return "drop"
    if kilt and tag == "cite" and "citation" in classes:  # a rendered {{cite book}} (CS1/CS2): the wikitext
        return "drop"  # route and KILT's pages drop the template, so the kilt style drops what it rendered
    if tag == "ol" and "references" in classes:  # a reference list a template made (no typeof of its own)
        return "drop"
    return None


def _link_target(href: str) -> str | None:
    """``./Title_with_underscores#frag`` -> ``Title with underscores#frag`` (None: not a page link)."""
    if not href.startswith("./"):
        return None
    target = unquote(href[2:].split("?", 1)[0]).replace("_", " ")
    return RESERVED_RE.sub("", target).strip() or None


class _Walk:
    """The intermediate text of one document, its categories and whether it is a disambiguation page."""

    def __init__(self, kilt: bool) -> None:
        self.kilt = kilt
        self.out: list[str] = []
        self.categories: list[str] = []
        self.disambiguation = False
        self.lists: list[str] = []  # the markers of the open lists, outermost first

    def text(self, value: str | None) -> None:
        if value:  # reserved characters dropped, blanks made spaces (runs of them collapse at the end)
            self.out.append(value.translate(TEXT_TABLE))

    def head(self, element: lxml.etree._Element) -> None:
        """``<link>``/``<meta>``: categories and page properties (the elements themselves show nothing)."""
        rel = _tokens(element.get("rel"))
        if "mw:PageProp/Category" in rel:
            target = _link_target(element.get("href") or "")
            if target and ":" in target:
                name = target.split(":", 1)[1].split("#", 1)[0].strip()
                if name and name not in self.categories:
                    self.categories.append(name)
        elif element.get("property") == "mw:PageProp/disambiguation":
            self.disambiguation = True

    def enter(self, element: lxml.etree._Element, tag: str) -> str | None:
        """What opens ``element``; returns what closes it (None: nothing)."""
        level = _HEADINGS.get(tag)
        if level is not None:
            self.out.append("\n\n" + "=" * level)
            return "=" * level + "\n\n"
        if tag in _LISTS:
            self.lists.append(_LISTS[tag])
            return "\n" if len(self.lists) > 1 else "\n\n"
        if tag in _ITEMS:
            marker = _ITEMS[tag]
            markers = "".join(m or "*" for m in self.lists[:-1]) + (
                marker or (self.lists or ["*"])[-1] or "*"
            )
            self.out.append("\n" + markers + " ")
            return "\n"
        if tag in _CELLS:  # the clean style's table rows: cells joined by " | " (kilt: no tables)
            self.out.append(CELL)
            return None
        if tag in _BLOCKS or tag == "figcaption":
            self.out.append("\n\n")
            return "\n\n"
        if tag == "br":
            self.out.append(" ")
            return None
        if tag == "a":
            rel = _tokens(element.get("rel"))
            target = _link_target(element.get("href") or "") if "mw:WikiLink" in rel else None
            if target is not None:
                self.out.append(S_OPEN + target + S_MID)
                return S_CLOSE
            return None
        if tag in _ITALIC:
            self.out.append("''")
            return "''"
        if tag in _BOLD:
            self.out.append("'''")
            return "'''"
        return None

    def leave(self, tag: str, closing: str | None) -> None:
        if closing is not None:
            self.out.append(closing)
        if tag in _LISTS and self.lists:
            self.lists.pop()


_PARSER = lxml.etree.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True, huge_tree=True)
"""libxml2's HTML parser (plain elements, no lxml.html element classes to look up: the walk reads tags,
attributes and text only), without its own depth and text-node limits (``huge_tree``), which cut a page
short silently: :data:`HtmlLimits` are applied instead (:func:`html_document`)."""
_FATAL = lxml.etree.ErrorLevels.FATAL


def html_document(html: str | bytes, limits: HtmlLimits | None = None) -> lxml.etree._Element:
    """The parsed document of one article's HTML; :class:`HtmlPageError` when it holds none, when libxml2
    reports a fatal error (what follows it would be lost), or when it is over ``limits`` (``limits.html``'s
    defaults when None): deeper than ``max_depth``, or a text node or attribute value longer than
    ``max_node_bytes`` characters."""
    limits = limits or HtmlLimits()
    if isinstance(html, str):
        html = html.encode("utf-8", "surrogatepass")
    if not html.strip():
        raise HtmlPageError("the HTML is empty")
    try:
        root = lxml.etree.fromstring(html, parser=_PARSER)
    except (lxml.etree.ParserError, lxml.etree.XMLSyntaxError, ValueError) as error:
        raise HtmlPageError(f"the HTML holds no document ({error})") from None
    if root is None:
        raise HtmlPageError("the HTML holds no document")
    fatal = [entry for entry in _PARSER.error_log if entry.level >= _FATAL]
    if fatal:
        raise HtmlPageError(f"libxml2 stopped reading the HTML at line {fatal[0].line}: {fatal[0].message}")
    _check_limits(root, limits)
    return root


def _check_limits(root: lxml.etree._Element, limits: HtmlLimits) -> None:
    """:class:`HtmlPageError` naming the setting when the document is over ``limits``."""
    depth = deepest = 0
    longest = limits.max_node_bytes
    for event, element in lxml.etree.iterwalk(root, events=("start", "end")):
        if event == "end":
            depth -= 1
            continue
        depth += 1
        if depth > deepest:
            deepest = depth
            if deepest > limits.max_depth:
                raise HtmlPageError(
                    f"the HTML nests elements deeper than {limits.max_depth} (limit: limits.html.max_depth)"
                )
        for value in (element.text, element.tail, *element.attrib.values()):
            if value is not None and len(value) > longest:
                raise HtmlPageError(
                    f"a text node or attribute of {len(value):,} characters, over {longest:,} "
                    "(limit: limits.html.max_node_bytes)"
                )


def parse_parsoid_html(
    title: str, html: str | bytes, *, style: str = "kilt", limits: HtmlLimits | None = None
) -> ParsedArticle:
    """The KILT view of one article from its Parsoid HTML: text entries (title first), anchors with their
    offsets, categories, and whether it is a disambiguation page. :class:`HtmlPageError` when the HTML
    holds no document or is over ``limits`` (:func:`html_document`)."""
    kilt = check_text_style(style) == "kilt"
    title = " ".join(RESERVED_RE.sub("", str(title)).split())
    root = html_document(html, limits)
    walk = _Walk(kilt)
    for element in root.iter("link", "meta"):
        walk.head(element)
    body = root.find("body")
    stack: list = [body if body is not None else root]
    while stack:
        item = stack.pop()
        if item is _EXIT:
            tag, closing, tail = stack.pop()
            walk.leave(tag, closing)
            walk.text(tail)
            continue
        element = item
        tag = element.tag if isinstance(element.tag, str) else ""
        if not tag:  # a comment or processing instruction left by the parser: only its tail shows
            walk.text(element.tail)
            continue
        tag = tag.lower()
        fate = element_fate(element, tag, kilt)
        if fate is not None:
            if fate == "mark":
                walk.out.append(MARK)
            elif (
                fate == "gallery"
            ):  # the clean style: the gallery's caption and each image's, a paragraph each
                walk.out.extend(
                    f"\n\n{''.join(part.itertext()).translate(TEXT_TABLE)}\n\n"
                    for part in element.iter()
                    if not _CLASSES_GALLERY.isdisjoint(_tokens(part.get("class")))
                )
            walk.text(element.tail)
            continue
        closing = walk.enter(element, tag)
        walk.text(element.text)
        stack.append((tag, closing, element.tail))
        stack.append(_EXIT)
        stack.extend(reversed(element))
    text = _finish("".join(walk.out), kilt)
    builder = EntryBuilder(title, [])
    assemble_entries(builder, text, kilt)
    disambiguation = walk.disambiguation or title.endswith("(disambiguation)")
    return ParsedArticle(builder.text, builder.anchors, walk.categories, disambiguation)


def _finish(text: str, kilt: bool) -> str:
    """The style's last passes over the walked text, as the wikitext route ends its cleaning."""
    if CELL in text:  # a row's cells: "a | b | c"
        text = "\n".join(
            " | ".join(c.strip(" ") for c in line.split(CELL) if c.strip(" ")) if CELL in line else line
            for line in text.split("\n")
        )
    text = "\n".join(line.strip(" ") for line in text.split("\n"))
    if "''" in text:  # no rule crosses a line end: the whole text at once, as the wikitext route does
        text = kilt_quotes(text) if kilt else _QUOTES_RE.sub("", text)
    text = text.replace(MARK, "")  # a removal leaves the text around it as it was, in both styles
    if kilt:
        text = kilt_commas(text)
    return _MULTI_SPACE_RE.sub(" ", text)
