"""Tables and infoboxes as passages of at most N words, each pointing back at the wikitext it came from.

A table is linearised row by row: the caption (and the section) open every passage of the table; a data
row reads ``header: value; header: value.`` with the column headers of its row group (the header rows
above it: consecutive header rows join per column, ``2010 / Votes``; a header row after data rows starts
a new group); ``rowspan``/``colspan`` are expanded, so a value that spans rows is repeated in each. An
infobox reads ``key: value.`` per field after its template name. Rows (fields) are packed in order while
the passage stays within N words; a row never splits where it fits in a passage of its own; a longer
row is cut at word boundaries. A word is :mod:`assets.segmentation`'s, as in text passages.

Provenance: ``kind`` (``table``/``infobox``), ``structure_index`` (the table's or infobox's rank on the page,
the order of :func:`~assets.wikipedia.wikitext.tables.find_structures`), ``section``, ``first_row``/
``last_row`` (row indexes of the table as written, or field indexes of the infobox, inclusive) and
``start_character``/``end_character``: offsets in the page's source (its wikitext; on the HTML route, the
record's Parsoid HTML) of the first and just past the last cell (value) the passage reads. Ids are
``<wikipedia_id>-t<table>.<n>`` / ``-i<infobox>.<n>``, so :func:`assets.indexes.hits.wikipedia_id_of` still
finds the page.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from assets.params import PASSAGE_UNIT
from assets.segmentation import count_words, cut_at, word_starts
from assets.wikipedia.articles import Cell, Infobox, Structures, Table

__all__ = [
    "STRUCTURED_FIELDS",
    "STRUCTURED_KINDS",
    "StructuredPassage",
    "infobox_units",
    "structured_passages",
    "table_units",
]

STRUCTURED_KINDS = ("table", "infobox")
STRUCTURED_VERSION = 2  # bump when the rules change (2: words of unspaced scripts are segmenter words)


@dataclass(slots=True)
class StructuredPassage:
    passage_id: str
    wikipedia_id: str
    title: str
    kind: str
    structure_index: int
    section: str
    first_row: int
    last_row: int
    start_character: int
    end_character: int
    text: str
    word_count: int


STRUCTURED_FIELDS = tuple(StructuredPassage.__dataclass_fields__)


@dataclass(slots=True)
class Unit:
    """One row (field) of linearised text with where it came from."""

    text: str
    row: int
    start: int
    end: int
    cells: list[tuple[int, int, int, int]] = field(default_factory=list)  # (first word, end word, start, end)

    def pieces(self, starts: list[int], size: int) -> list[Unit]:
        """The row's words (``starts``: :func:`~assets.segmentation.word_starts` of its text) in units of
        ``size`` words, in order; each one's offsets: the cells its words read. One pass over the words and
        the cells (cells are in word order): linear in the row, however many pieces a long row or a long
        value makes."""
        out: list[Unit] = []
        cell = 0  # the first cell that may still be read by a piece
        for first in range(0, len(starts), size):
            end = first + size
            while cell < len(self.cells) and self.cells[cell][1] <= first:
                cell += 1
            read, last = [], cell
            while last < len(self.cells) and self.cells[last][0] < end:
                read.append(self.cells[last])
                last += 1
            read = read or [(first, end, self.start, self.end)]
            text = _words_text(self.text, starts, first, end)
            out.append(Unit(text, self.row, min(c[2] for c in read), max(c[3] for c in read)))
        return out


def _words_text(text: str, starts: list[int], first: int, end: int) -> str:
    """Words ``first`` to ``end`` (exclusive) of ``text``, blanks between them made single spaces."""
    return " ".join(text[starts[first] : cut_at(text, starts, end, len(text))].split())


def _sentence(text: str) -> str:
    return text if text.endswith((".", "!", "?")) else text + "."


def _header_row(line: list[Cell | None]) -> bool:
    cells = [c for c in line if c is not None]
    return bool(cells) and all(c.header for c in cells)


def _row_text(
    line: list[Cell | None], headers: list[str], unit: str
) -> tuple[str, list[tuple[int, int, int, int]]]:
    """The row as ``header: value; header: value`` and, per cell read, its words' range and offsets."""
    parts: list[str] = []
    cells: list[tuple[int, int, int, int]] = []
    words = 0
    previous: Cell | None = None
    for column, cell in enumerate(line):
        if cell is None or cell is previous:  # a colspan reads once
            previous = cell
            continue
        previous = cell
        value = cell.text
        if not value:
            continue
        header = headers[column] if column < len(headers) else ""
        part = f"{header}: {value}" if header and header != value else value
        count = count_words(part, unit)
        parts.append(part)
        cells.append((words, words + count, cell.start, cell.end))
        words += count
    return "; ".join(parts), cells


def _bounds(line: list[Cell | None]) -> tuple[int, int]:
    cells = [c for c in line if c is not None]
    return min(c.start for c in cells), max(c.end for c in cells)


def table_units(table: Table, unit: str = PASSAGE_UNIT) -> tuple[str, list[Unit]]:
    """The table's heading (section and caption) and its rows as text, in order."""
    heading = " — ".join(part for part in (table.section, table.caption) if part)
    grid = table.grid()
    units: list[Unit] = []
    headers: list[str] = []
    in_header_group = False
    has_data = any(not _header_row(line) for line in grid if line)
    for r, line in enumerate(grid):
        if not any(c is not None for c in line):
            continue
        if has_data and _header_row(line):
            if not in_header_group:
                headers, in_header_group = [], True
            for column, cell in enumerate(line):
                text = cell.text if cell is not None else ""
                while len(headers) <= column:
                    headers.append("")
                if text and text not in headers[column].split(" / "):
                    headers[column] = f"{headers[column]} / {text}" if headers[column] else text
            continue
        in_header_group = False
        text, cells = _row_text(line, headers, unit)
        if text:
            start, end = _bounds(line)
            units.append(Unit(_sentence(text), r, start, end, cells))
    return heading, units


def infobox_units(box: Infobox) -> tuple[str, list[Unit]]:
    """The infobox's heading (its template name) and its fields as ``key: value.``, in order."""
    units = [Unit(_sentence(f"{f.key}: {f.text}"), i, f.start, f.end) for i, f in enumerate(box.fields)]
    return box.name, units


def _pieces(heading: str, units: list[Unit], max_words: int, unit: str) -> list[tuple[str, list[Unit]]]:
    """Passages of one structure: ``(text, units it reads)``; words are :mod:`assets.segmentation`'s."""
    head_starts = word_starts(heading, unit=unit)
    head = min(len(head_starts), max_words // 2)
    prefix = _words_text(heading, head_starts, 0, head) + ": " if head else ""
    budget = max_words - head
    out: list[tuple[str, list[Unit]]] = []
    texts: list[str] = []
    taken: list[Unit] = []
    used = 0
    for row in units:
        starts = word_starts(row.text, unit=unit)
        if used and used + len(starts) > budget:
            out.append((prefix + " ".join(texts), taken))
            texts, taken, used = [], [], 0
        if len(starts) > budget:  # a row longer than a passage: cut at word boundaries
            out.extend((prefix + piece.text, [piece]) for piece in row.pieces(starts, budget))
            continue
        texts.append(" ".join(row.text.split()))
        taken.append(row)
        used += len(starts)
    if taken:
        out.append((prefix + " ".join(texts), taken))
    return out


def structured_passages(
    wikipedia_id: str, title: str, structures: Structures, max_words: int, unit: str = PASSAGE_UNIT
) -> list[StructuredPassage]:
    """Every table and infobox of one page (:func:`~assets.wikipedia.wikitext.tables.find_structures`) as
    passages of at most ``max_words`` words (``unit``: what a word of an unspaced script is)."""
    if max_words < 2:
        raise ValueError(f"max_words must be at least 2, not {max_words}")
    passages: list[StructuredPassage] = []
    # one structure's units at a time: holding every page's units at once made 10x the infoboxes cost 20x
    # the time (the garbage collector walks what is alive)
    tables = (("table", t.index, t.section, lambda t=t: table_units(t, unit)) for t in structures.tables)
    boxes = (("infobox", b.index, b.section, lambda b=b: infobox_units(b)) for b in structures.infoboxes)
    for kind, index, section, units_of in itertools.chain(tables, boxes):
        heading, units = units_of()
        for n, (text, taken) in enumerate(_pieces(heading, units, max_words, unit)):
            passages.append(
                StructuredPassage(
                    passage_id=f"{wikipedia_id}-{kind[0]}{index}.{n}",
                    wikipedia_id=wikipedia_id,
                    title=title,
                    kind=kind,
                    structure_index=index,
                    section=section,
                    first_row=taken[0].row,
                    last_row=taken[-1].row,
                    start_character=min(u.start for u in taken),
                    end_character=max(u.end for u in taken),
                    text=text,
                    word_count=count_words(text, unit),
                )
            )
    return passages
