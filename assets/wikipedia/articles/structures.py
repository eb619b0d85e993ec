"""What a page's tables and infoboxes are, whichever converter read them (the wikitext one,
:func:`assets.wikipedia.wikitext.find_structures`, or the Parsoid HTML one,
:func:`assets.wikipedia.html.html_structures`): cells and fields with their offsets in the page's source."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["SKIPS_LISTED", "Cell", "Infobox", "InfoboxField", "Structures", "Table"]

SKIPS_LISTED = 20
"""Skipped structures and values named per page (all are counted)."""


@dataclass(slots=True)
class Cell:
    """One cell of a table row: ``header`` for ``!`` cells; ``start``/``end`` are the offsets of its
    content in the page's wikitext (attributes excluded)."""

    header: bool
    text: str
    start: int
    end: int
    rowspan: int = 1
    colspan: int = 1


@dataclass(slots=True)
class Table:
    """A wikitable: ``index`` is its rank among the page's tables (in the order they open), ``start``/
    ``end`` the offsets of ``{|`` and just after ``|}``, ``rows`` the rows as written (a cell spanning
    rows appears in the row that declares it; :meth:`grid` expands spans)."""

    index: int
    start: int
    end: int
    section: str
    caption: str = ""
    rows: list[list[Cell]] = field(default_factory=list)
    unclosed: bool = False
    parent: int | None = None  # index of the table this one is nested in

    def grid(self) -> list[list[Cell | None]]:
        """The rows with ``rowspan``/``colspan`` expanded: ``grid[r][c]`` is the cell that covers row
        ``r``, column ``c`` (the same object wherever a cell spans), ``None`` where no cell does. A cell
        takes the first column of its row not covered by a cell from above, as MediaWiki lays it out."""
        covered: dict[tuple[int, int], Cell] = {}
        rows = len(self.rows)
        for r, row in enumerate(self.rows):
            column = 0
            for cell in row:
                while (r, column) in covered:
                    column += 1
                for dr in range(min(cell.rowspan, rows - r)):
                    for dc in range(cell.colspan):
                        covered[(r + dr, column + dc)] = cell
                column += cell.colspan
        widths = [0] * rows
        for r, c in covered:
            widths[r] = max(widths[r], c + 1)
        return [[covered.get((r, c)) for c in range(widths[r])] for r in range(rows)]

    def grid_size(self) -> int:
        """Cells of the expanded grid, computed without building it (spans capped at ``max_span``)."""
        return sum(c.colspan * c.rowspan for row in self.rows for c in row)


@dataclass(slots=True)
class InfoboxField:
    """One ``key = value`` of an infobox; ``start``/``end`` are the offsets of the raw value."""

    key: str
    text: str
    start: int
    end: int


@dataclass(slots=True)
class Infobox:
    """An infobox template: ``index`` is its rank among the page's infoboxes, ``start``/``end`` the
    offsets of ``{{`` and just after ``}}``."""

    index: int
    start: int
    end: int
    section: str
    name: str
    fields: list[InfoboxField] = field(default_factory=list)


@dataclass(slots=True)
class Structures:
    """What :func:`find_structures` read of one page, and what it could not."""

    tables: list[Table] = field(default_factory=list)
    infoboxes: list[Infobox] = field(default_factory=list)
    unclosed_tables: int = 0
    skipped_tables: int = 0  # grids over limits.structures.max_grid_cells
    skipped_values: int = 0  # cells and infobox values over max_value_bytes (read as empty)
    skipped_structures: int = 0  # tables and infoboxes after the page's first max_structures
    skipped: list[str] = field(default_factory=list)  # why, per skipped structure (the first few)

    def name_skip(self, why: str) -> None:
        """Say why something was skipped (the first :data:`SKIPS_LISTED` are kept; all are counted)."""
        if len(self.skipped) < SKIPS_LISTED:
            self.skipped.append(why)
