"""Tables and infoboxes of an article's wikitext, with exact character offsets into that wikitext.

The text styles drop both (KILT's knowledge source has neither); this module reads them as structures:

* :func:`find_structures` finds every wikitable (``{| ... |}``, nested ones as their own tables, in the
  order they open) and every infobox (a top-level template whose name starts ``Infobox``, or a
  taxobox-like box), each with the section it sits in;
* a :class:`Table` is a grid: caption, rows of cells (header or data, ``rowspan``/``colspan``
  expanded), each cell's visible text (:func:`assets.wikipedia.wikitext.convert.plain_text`) and the
  offsets of its content; an :class:`Infobox` is its template name and ``key: value`` pairs with the
  offsets of each value.

Markup is located on a *masked* copy of the wikitext, the same length, in which every ``{{...}}`` and
``[[...]]`` (nested, unclosed ones left as they are) is blanked, so a ``|`` inside a template or a link
never splits a cell, and a table inside a template (a navbox) is not read as the page's. Everything is
linear in the length of the wikitext (one scan for the brackets, one pass over the lines, each
separator and span looked at once); malformed markup never raises: an unclosed ``{|`` ends at the end of
the page (counted in :attr:`Structures.unclosed_tables`), rows and cells outside a table are ignored, a
cell before the first ``|-`` opens a row. The bounds of ``limits.structures``
(:class:`~assets.limits.StructureLimits`) skip and count what is over them: a grid over
``max_grid_cells``, a cell or infobox value over ``max_value_bytes`` (read as empty), the structures of a
page after its first ``max_structures``; spans are read as ``max_span`` at most.
"""

from __future__ import annotations

import bisect
import re

from assets.limits import StructureLimits
from assets.wikipedia.articles import Cell, Infobox, InfoboxField, Structures, Table
from assets.wikipedia.wikitext.convert import plain_text, table_cells

__all__ = [
    "find_structures",
    "masked_wikitext",
]

FILLER = "\x00"  # what masked brackets become

_BRACKETS_RE = re.compile(r"\{\{|\}\}|\[\[|\]\]")
_HEADING_RE = re.compile(r"^(={1,6})[ \t]*(.+?)[ \t]*\1[ \t]*$", re.M)
_FILE_VALUE_RE = re.compile(r"^[^\n]*\.(?:png|jpe?g|svg|gif|tiff?|webp|pdf|ogg)$", re.I)  # a file name
_SPAN_RE = re.compile(r"\b(rowspan|colspan)\s*=\s*[\"']?\s*(\d+)", re.I)
_INFOBOX_RE = re.compile(  # "Infobox country", "Infobox_country", "infobox", taxobox-like boxes
    r"\s*(?:template\s*:\s*)?(infobox(?![a-z0-9])[^|]*|(?:automatic[ _])?taxobox(?![a-z0-9])|"
    r"(?:speciesbox|chembox|drugbox|geobox)(?![a-z0-9]))",
    re.I,
)
_HIDDEN_KEY_RE = re.compile(  # keys whose values a reader does not see as text (files, layout, coordinates)
    r"^(?!.*caption)(?:(?:image|img|logo|map|signature|flag|seal|coat of arms|pushpin|alt|upright|embed|"
    r"module|child|bodystyle)\b.*|.*(?:size|width|style|class|link)|.*\balt|(?:lat|long)[dmsnsew]{1,3}|"
    r"coord(?:inates)?\w*)$",
    re.I,
)


# ---------------------------------------------------------------------------------------------- masking
def _bracket_spans(text: str) -> list[tuple[int, int, str]]:
    """Every closed ``{{...}}`` and ``[[...]]`` as ``(start, end, kind)``, innermost included; an
    unmatched closer is ignored, an unclosed opener stays unmatched. Each opener is pushed and popped at
    most once: linear."""
    stack: list[tuple[str, int]] = []
    spans: list[tuple[int, int, str]] = []
    for m in _BRACKETS_RE.finditer(text):
        token, pos = m.group(), m.start()
        if token in ("{{", "[["):
            stack.append((token, pos))
            continue
        opener = "{{" if token == "}}" else "[["
        if opener == "{{":
            while stack and stack[-1][0] == "[[":  # links left open inside a template
                stack.pop()
        if stack and stack[-1][0] == opener:
            _, start = stack.pop()
            spans.append((start, m.end(), opener))
    spans.sort()
    return spans


def _outermost(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """The spans not inside another (``spans`` sorted by start)."""
    out: list[tuple[int, int, str]] = []
    reach = -1
    for span in spans:
        if span[0] >= reach:
            out.append(span)
            reach = span[1]
    return out


def masked_wikitext(text: str, spans: list[tuple[int, int, str]] | None = None) -> str:
    """``text`` with every outermost ``{{...}}``/``[[...]]`` replaced by :data:`FILLER` (same length)."""
    pieces: list[str] = []
    last = 0
    for start, end, _ in _outermost(_bracket_spans(text) if spans is None else spans):
        pieces.append(text[last:start])
        pieces.append(FILLER * (end - start))
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


# ---------------------------------------------------------------------------------------------- sections
class _Sections:
    def __init__(self, text: str, masked: str) -> None:
        self.starts: list[int] = []
        self.names: list[str] = []
        for m in _HEADING_RE.finditer(masked):
            if len(m.group(1)) >= 2:
                self.starts.append(m.start())
                self.names.append(plain_text(text[m.start(2) : m.end(2)]))

    def at(self, offset: int) -> str:
        i = bisect.bisect_right(self.starts, offset) - 1
        return self.names[i] if i >= 0 else ""


# ---------------------------------------------------------------------------------------------- tables
def _split_cells(masked: str, text: str, start: int, end: int, separators: tuple[str, ...]) -> list:
    """``(attributes, content_start, content_end)`` of the cells written on one line from ``start``
    (after the leading ``|``/``!``) to ``end`` (:func:`~assets.wikipedia.wikitext.convert.table_cells` on the
    masked text; the attributes read from the wikitext)."""
    return [
        (text[cell : content - 1] if content > cell else "", content, cut)
        for cell, content, cut in table_cells(masked, start, end, separators)
    ]


def _span(attributes: str, name: str, most: int) -> int:
    for m in _SPAN_RE.finditer(attributes[:1000]):
        if m.group(1).lower() == name:
            return max(1, min(int(m.group(2)[:7]), most))
    return 1


def _skip(out: Structures, why: str) -> None:
    out.name_skip(why)


class _OpenTable:
    __slots__ = ("caption", "cell", "holes", "limits", "out", "row_open", "table")

    def __init__(self, table: Table, limits: StructureLimits, out: Structures) -> None:
        self.table = table
        self.limits, self.out = limits, out
        self.caption: list[int] | None = None  # [start, end] of the caption's content
        self.cell: list | None = None  # [header, attributes, start, end] of the cell being read
        self.holes: list[tuple[int, int]] = []  # nested tables inside the open cell
        self.row_open = False


def _cell_text(text: str, start: int, end: int, holes: list[tuple[int, int]]) -> str:
    if not holes:
        return plain_text(text[start:end])
    pieces, last = [], start
    for hole_start, hole_end in holes:
        if start <= hole_start < end:
            pieces.append(text[last:hole_start])
            last = max(last, hole_end)
    pieces.append(text[last:end] if last < end else "")
    return plain_text(" ".join(pieces))


def _close_cell(state: _OpenTable, text: str) -> None:
    if state.cell is not None:
        header, attributes, start, end = state.cell
        table = state.table
        if not state.row_open:
            table.rows.append([])  # a row opens with its first cell: no row is ever empty
            state.row_open = True
        if end - start > state.limits.max_value_bytes:  # characters: at least as many bytes
            state.out.skipped_values += 1
            _skip(state.out, f"table {table.index}: a cell of {end - start:,} characters")
            cell = Cell(header, "", start, end)
        else:
            cell = Cell(header, _cell_text(text, start, end, state.holes), start, end)
        most = state.limits.max_span
        cell.rowspan, cell.colspan = _span(attributes, "rowspan", most), _span(attributes, "colspan", most)
        table.rows[-1].append(cell)
        state.cell, state.holes = None, []
    if state.caption is not None:
        state.table.caption = plain_text(text[state.caption[0] : state.caption[1]])
        state.caption = None


def _finish(state: _OpenTable, text: str, end: int, out: Structures) -> None:
    _close_cell(state, text)
    table = state.table
    table.end = end
    if table.grid_size() > state.limits.max_grid_cells:
        out.skipped_tables += 1
        _skip(out, f"table {table.index}: expanded grid over {state.limits.max_grid_cells:,} cells")
        table.rows = []


def _read_tables(
    text: str, masked: str, sections: _Sections, out: Structures, limits: StructureLimits
) -> None:
    stack: list[_OpenTable] = []
    tables: list[Table] = []
    pos = 0
    length = len(text)
    while pos < length:
        newline = masked.find("\n", pos)
        line_end = length if newline < 0 else newline
        line = masked[pos:line_end]
        token_at = pos + len(line) - len(line.lstrip(" \t:"))
        token = masked[token_at : token_at + 2]
        if token == "{|":
            parent = stack[-1].table.index if stack else None
            table = Table(len(tables), token_at, length, sections.at(token_at), parent=parent)
            tables.append(table)
            if stack and stack[-1].cell is not None:
                stack[-1].holes.append((pos, length))  # closed below, when the nested table ends
            stack.append(_OpenTable(table, limits, out))
        elif stack:
            state = stack[-1]
            first = masked[token_at : token_at + 1]
            if token == "|}":
                _finish(state, text, token_at + 2, out)
                stack.pop()
                if stack and stack[-1].holes and stack[-1].holes[-1][1] == length:
                    stack[-1].holes[-1] = (stack[-1].holes[-1][0], token_at + 2)
            elif token == "|+":
                _close_cell(state, text)
                _, start, _ = table_cells(masked, token_at + 2, line_end, ())[0]
                state.caption = [start, line_end]  # "|+ style=... | Caption": the attributes left out
            elif token == "|-":
                _close_cell(state, text)
                state.row_open = False
            elif first in ("|", "!"):
                _close_cell(state, text)
                header = first == "!"
                separators = ("||", "!!") if header else ("||",)
                cells = _split_cells(masked, text, token_at + 1, line_end, separators)
                for attributes, start, end in cells[:-1]:
                    state.cell = [header, attributes, start, end]
                    _close_cell(state, text)
                attributes, start, end = cells[-1]
                state.cell = [header, attributes, start, end]
            elif state.cell is not None:  # a cell's next line
                state.cell[3] = line_end
            elif state.caption is not None:
                state.caption[1] = line_end
        pos = line_end + 1
    while stack:  # unclosed: they end with the page
        state = stack.pop()
        state.table.unclosed = True
        out.unclosed_tables += 1
        _finish(state, text, length, out)
    out.tables = tables


# ---------------------------------------------------------------------------------------------- infoboxes
def _read_infoboxes(
    text: str,
    spans: list[tuple[int, int, str]],
    sections: _Sections,
    out: Structures,
    limits: StructureLimits,
) -> None:
    inside = 0  # index into ``spans`` (sorted by start) of the first span not yet passed
    for start, end, kind in _outermost(spans):
        if kind != "{{" or text[start + 2 : start + 3] == "{":
            continue
        head = text[start + 2 : min(end - 2, start + 122)]
        m = _INFOBOX_RE.match(head.split("|", 1)[0])
        if m is None:
            continue
        if len(out.tables) + len(out.infoboxes) >= limits.max_structures:  # not read: counted
            out.skipped_structures += 1
            continue
        body_start, body_end = start + 2, end - 2
        while inside < len(spans) and spans[inside][0] <= start:  # this template and what came before
            inside += 1
        inner = []
        while inside < len(spans) and spans[inside][0] < body_end:  # the spans inside this template
            span = spans[inside]
            inner.append((span[0] - body_start, span[1] - body_start, span[2]))
            inside += 1
        body = masked_wikitext(text[body_start:body_end], inner)
        name = " ".join(m.group(1).replace("_", " ").split())
        box = Infobox(len(out.infoboxes), start, end, sections.at(start), name)
        bar = body.find("|")
        while bar >= 0:
            after = body.find("|", bar + 1)
            part_end = len(body) if after < 0 else after
            equals = body.find("=", bar + 1, part_end)
            if equals >= 0:
                key = " ".join(text[body_start + bar + 1 : body_start + equals].replace("_", " ").split())
                value_start, value_end = body_start + equals + 1, body_start + part_end
                if key and not _HIDDEN_KEY_RE.match(key[:200]):
                    if value_end - value_start > limits.max_value_bytes:
                        out.skipped_values += 1
                        _skip(
                            out, f"infobox {box.index}: {key[:60]} of {value_end - value_start:,} characters"
                        )
                    else:
                        value = plain_text(text[value_start:value_end])
                        if value and not _FILE_VALUE_RE.match(value):
                            box.fields.append(InfoboxField(key, value, value_start, value_end))
            bar = after
        out.infoboxes.append(box)


def _cap_tables(out: Structures, most: int) -> None:
    """Keep the page's first ``most`` tables; count the rest (infoboxes then fill what room is left)."""
    over = len(out.tables) - most
    if over > 0:
        out.skipped_structures += over
        out.tables = out.tables[:most]


def find_structures(wikitext: str, limits: StructureLimits | None = None) -> Structures:
    """The tables and infoboxes of one page's ``wikitext`` (see the module's docstring), within
    ``limits`` (default: ``limits.structures``' defaults)."""
    limits = limits or StructureLimits()
    text = wikitext
    out = Structures()
    if "{|" not in text and "{{" not in text:
        return out
    spans = _bracket_spans(text)
    masked = masked_wikitext(text, spans)
    sections = _Sections(text, masked)
    if "{|" in masked:
        _read_tables(text, masked, sections, out, limits)
        _cap_tables(out, limits.max_structures)
    _read_infoboxes(text, spans, sections, out, limits)
    if out.skipped_structures:
        most = limits.max_structures
        _skip(out, f"{out.skipped_structures:,} tables and infoboxes after the first {most:,}")
    return out
