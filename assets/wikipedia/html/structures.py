"""Tables and infoboxes of an article's Parsoid HTML, as the structures the wikitext route reads
(:class:`~assets.wikipedia.wikitext.tables.Structures`), with exact character offsets into that HTML.

What a reader sees, templates expanded: an infobox is a ``table`` whose class starts ``infobox`` (or
``taxobox``, ``biota``); its name is its caption, else the first line of its first full-width header row; its
fields are the rows of a header cell and a data cell (``Born | 14 March 1879``), or of two data cells
(``Kingdom: | Animalia`` in a taxobox). Every other ``table`` is a table (its rows, header and data cells,
``rowspan``/``colspan`` as written, its caption), unless the text leaves it out as a reader does not see it
as the article's (navboxes, message boxes, metadata, hidden, references: the HTML route's
:func:`~assets.wikipedia.html.parsoid.element_fate`; and a series' sidebar) or it sits inside such an
element or an infobox; a table inside a table's cell is a table of its own, and left out of that cell's
text. A cell's text is what the clean style shows of it, on one line. Sections are the ``h2``-``h6``
headings before it.

Offsets: lxml does not keep where an element starts, so each ``<table``, ``<td``, ``<th`` and
``<caption`` start tag is found in the HTML, in order, and paired with the parsed element of the same rank;
a content runs from the end of its start tag to the start of its matching end tag. Parsoid writes
well-formed HTML, so the counts agree; where they do not (HTML the parser had to repair) the page's
structures are skipped, counted and named, rather than given offsets that point elsewhere. The bounds of
``limits.structures`` apply as on the wikitext route: a grid over ``max_grid_cells``, a cell or value over
``max_value_bytes`` (read as empty), the structures after a page's first ``max_structures``, spans read
as ``max_span`` at most. Linear in the HTML's length. Pure module: lxml and the standard library.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import lxml.etree

from assets.limits import StructureLimits
from assets.wikipedia.articles import Cell, Infobox, InfoboxField, Structures, Table
from assets.wikipedia.html.parsoid import TEXT_TABLE, HtmlPageError, element_fate, html_document

__all__ = ["html_structures", "visible_text"]

_LOCATED = ("table", "td", "th", "caption")
_START_TAG_RE = re.compile(r"<(table|td|th|caption)(?=[\s/>])(?:[^>\"']|\"[^\"]*\"|'[^']*')*>", re.IGNORECASE)
_INFOBOX_CLASSES = ("infobox", "taxobox", "biota")
_NAVIGATION = ("sidebar", "navbox", "vertical-navbox")
_HEADINGS = frozenset({"h2", "h3", "h4", "h5", "h6"})
_SPACES_RE = re.compile(r" {2,}")
_BREAKS = frozenset({"br", "p", "div", "li", "dd", "dt", "tr", "ul", "ol", "dl"})


def _tag(element: lxml.etree._Element) -> str:
    return element.tag.lower() if isinstance(element.tag, str) else ""


def _is_infobox(element: lxml.etree._Element) -> bool:
    return any(c.startswith(_INFOBOX_CLASSES) for c in (element.get("class") or "").split())


def _left_out(element: lxml.etree._Element, tag: str) -> bool:
    """Whether ``element`` is not the article's structure: what the text leaves out (the clean style:
    tables themselves are read), and a series' sidebar (navigation, as a navbox is)."""
    if _is_infobox(element):
        return False
    if tag == "table" and any(c.startswith(_NAVIGATION) for c in (element.get("class") or "").split()):
        return True
    return element_fate(element, tag, kilt=False) in ("drop", "mark")


def _first_line(element: lxml.etree._Element) -> str:
    """The text of ``element`` up to its first line break or block (an infobox's title, without the
    timeline or subtitle under it)."""
    parts = [element.text or ""]
    for child in element:
        if _tag(child) in _BREAKS:
            break
        parts.append(visible_text(child) + (child.tail or ""))
    return _SPACES_RE.sub(" ", "".join(parts).translate(TEXT_TABLE)).strip()


def visible_text(element: lxml.etree._Element) -> str:
    """What a reader sees of ``element``'s subtree, on one line: what the text leaves out and nested tables
    left out, blanks collapsed. Iterative: a deep subtree costs what a flat one does."""
    parts = [element.text or ""]
    stack: list = list(reversed(element))
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            parts.append(item)
            continue
        tag = _tag(item)
        if not tag or tag == "table" or _left_out(item, tag):
            parts.append(item.tail or "")
            continue
        if tag in _BREAKS:
            parts.append(" ")
        parts.append(item.text or "")
        if item.tail:
            stack.append(item.tail)
        stack.extend(reversed(item))
    return _SPACES_RE.sub(" ", "".join(parts).translate(TEXT_TABLE)).strip()


class _Located:
    """The source offsets of the ``table``/``td``/``th``/``caption`` elements, paired by rank."""

    def __init__(self, html: str, root: lxml.etree._Element) -> None:
        self.html = html
        self.lower = html.lower()
        self.starts = list(_START_TAG_RE.finditer(html))
        self.elements = list(root.iter(*_LOCATED))
        self.rank = {id(element): n for n, element in enumerate(self.elements)}
        self.closes: dict[str, list[int]] = {}

    @property
    def paired(self) -> bool:
        return len(self.starts) == len(self.elements) and all(
            m.group(1).lower() == _tag(e) for m, e in zip(self.starts, self.elements, strict=True)
        )

    def _close_tags(self, tag: str) -> list[int]:
        """Offsets of every ``<tag`` and ``</tag`` (the opening ones negative-coded), in order."""
        if tag not in self.closes:
            found = re.finditer(rf"<(/?){tag}(?=[\s/>])", self.lower)
            self.closes[tag] = [m.start() if m.group(1) else -m.start() - 1 for m in found]
        return self.closes[tag]

    def span(self, element: lxml.etree._Element) -> tuple[int, int, int]:
        """``(start of the start tag, start of the content, end of the content)`` of ``element``: its
        content ends at the matching end tag (same-name tags nested in it counted), else where the next
        element of the same name starts, else at the end of the HTML."""
        match = self.starts[self.rank[id(element)]]
        tag = match.group(1).lower()
        tags = self._close_tags(tag)
        position = _first_after(tags, match.end())
        depth = 1
        while position < len(tags):
            offset = tags[position]
            if offset < 0:
                depth += 1
            else:
                depth -= 1
                if depth == 0:
                    return match.start(), match.end(), offset
            position += 1
        return match.start(), match.end(), len(self.html)


def _first_after(tags: list[int], offset: int) -> int:
    """Index of the first tag at or after ``offset`` in ``tags`` (binary search on the decoded offsets)."""
    low, high = 0, len(tags)
    while low < high:
        middle = (low + high) // 2
        value = tags[middle]
        if (value if value >= 0 else -value - 1) < offset:
            low = middle + 1
        else:
            high = middle
    return low


def _span_of(element: lxml.etree._Element, name: str, most: int) -> int:
    value = (element.get(name) or "").strip()
    number = int(value) if value.isdigit() and len(value) <= 6 else 1
    return max(1, min(number, most))


def _rows(table: lxml.etree._Element) -> Iterator[lxml.etree._Element]:
    """The table's own rows (``tr`` children, or those of its ``thead``/``tbody``/``tfoot``)."""
    for child in table:
        tag = _tag(child)
        if tag == "tr":
            yield child
        elif tag in ("thead", "tbody", "tfoot"):
            yield from (row for row in child if _tag(row) == "tr")


def _cells(row: lxml.etree._Element) -> list[lxml.etree._Element]:
    return [cell for cell in row if _tag(cell) in ("td", "th")]


class _Reader:
    def __init__(self, html: str, limits: StructureLimits) -> None:
        self.limits = limits
        self.root = html_document(html)
        self.located = _Located(html, self.root)
        self.out = Structures()

    def value(self, element: lxml.etree._Element, what: str) -> tuple[str, int, int]:
        """``(text, content start, content end)`` of a cell, caption or value; over ``max_value_bytes``
        it reads as empty, counted."""
        _, start, end = self.located.span(element)
        if end - start > self.limits.max_value_bytes:
            self.out.skipped_values += 1
            self.out.name_skip(f"{what}: {end - start:,} characters of HTML")
            return "", start, end
        return visible_text(element), start, end

    def table(self, element: lxml.etree._Element, section: str, parent: int | None) -> None:
        index = len(self.out.tables)
        start, _, end = self.located.span(element)
        table = Table(index, start, end, section, parent=parent)
        caption = next((c for c in element if _tag(c) == "caption"), None)
        if caption is not None:
            table.caption = self.value(caption, f"table {index}'s caption")[0]
        cells = 0
        for row in _rows(element):
            line = []
            for cell in _cells(row):
                text, content_start, content_end = self.value(cell, f"table {index}: a cell")
                most = self.limits.max_span
                line.append(
                    Cell(
                        _tag(cell) == "th",
                        text,
                        content_start,
                        content_end,
                        _span_of(cell, "rowspan", most),
                        _span_of(cell, "colspan", most),
                    )
                )
            if line:
                table.rows.append(line)
                cells += sum(c.rowspan * c.colspan for c in line)
        if cells > self.limits.max_grid_cells:
            self.out.skipped_tables += 1
            self.out.name_skip(f"table {index}: expanded grid over {self.limits.max_grid_cells:,} cells")
            table.rows = []
        self.out.tables.append(table)

    def infobox(self, element: lxml.etree._Element, section: str) -> None:
        index = len(self.out.infoboxes)
        start, _, end = self.located.span(element)
        caption = next((c for c in element if _tag(c) == "caption"), None)
        name = visible_text(caption) if caption is not None else ""
        box = Infobox(index, start, end, section, name)
        for row in _rows(element):
            cells = _cells(row)
            if len(cells) == 1 and not name and _tag(cells[0]) == "th":
                box.name = name = _first_line(cells[0])
                continue
            if len(cells) != 2 or _tag(cells[1]) != "td":
                continue
            key = visible_text(cells[0]).rstrip(":").strip()
            text, value_start, value_end = self.value(cells[1], f"infobox {index}: {key[:40]!r}")
            if key and text:
                box.fields.append(InfoboxField(key, text, value_start, value_end))
        box.name = box.name or "infobox"
        self.out.infoboxes.append(box)

    def read(self) -> Structures:
        if not self.located.paired:
            found = len(self.located.elements)
            self.out.skipped_structures += sum(
                1 for m in self.located.starts if m.group(1).lower() == "table"
            )
            self.out.name_skip(
                f"the HTML's {len(self.located.starts):,} table and cell tags do not pair with the "
                f"{found:,} elements parsed (HTML the parser repaired, or cut at its depth limit): "
                "no offsets to give"
            )
            return self.out
        section = ""
        open_tables: dict[int, int] = {}  # id of a table element read -> its index
        skipped: set[int] = set()  # ids of the elements whose tables are left out (infoboxes included)
        seen = 0
        for element in self.root.iter("h2", "h3", "h4", "h5", "h6", "table"):
            tag = _tag(element)
            if tag in _HEADINGS:
                section = visible_text(element)
                continue
            ancestors = list(element.iterancestors())
            if any(id(a) in skipped for a in ancestors) or any(_left_out(a, _tag(a)) for a in ancestors):
                skipped.add(id(element))
                continue
            if _left_out(element, tag):
                skipped.add(id(element))
                continue
            seen += 1
            if seen > self.limits.max_structures:
                self.out.skipped_structures += 1
                continue
            if _is_infobox(element):
                skipped.add(id(element))
                self.infobox(element, section)
                continue
            parent = next((open_tables[id(a)] for a in ancestors if id(a) in open_tables), None)
            open_tables[id(element)] = len(self.out.tables)
            self.table(element, section, parent)
        if self.out.skipped_structures:
            most = self.limits.max_structures
            self.out.name_skip(
                f"{self.out.skipped_structures:,} tables and infoboxes after the first {most:,}"
            )
        return self.out


def html_structures(html: str, limits: StructureLimits | None = None) -> Structures:
    """The tables and infoboxes of one article's Parsoid HTML (see the module's docstring), within
    ``limits`` (default: ``limits.structures``' defaults). An HTML that is not read whole (no document,
    or over ``limits.html``) has none: its tables are counted as skipped, and why is named."""
    if "<table" not in html and "<TABLE" not in html:
        return Structures()
    try:
        return _Reader(html, limits or StructureLimits()).read()
    except HtmlPageError as error:
        skipped = Structures()
        skipped.skipped_structures = len(re.findall(r"<table\b", html, re.IGNORECASE))
        skipped.name_skip(f"the HTML was not read whole ({error}): its tables and infoboxes are skipped")
        return skipped
