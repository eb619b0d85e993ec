"""Pathological pages made of real markup, shared by the tests and ``benchmarks/bench_structured_hostile.py``:
a table whose header row has N cells (a real header cell of Alabama's first table, its data row a real
infobox value), an infobox with one value of N bytes (Afghanistan's infobox, a field's value repeated) and
a page of N copies of a small real infobox (A Modest Proposal's): the three shapes that once made the
structured passages quadratic."""

from __future__ import annotations

from functools import cache

from assets.wikipedia.dump import DumpReader
from assets.wikipedia.wikitext import find_structures
from support.real_data import excerpt_dump

SHAPES = ("header_cells", "value_bytes", "infoboxes")


@cache
def _pieces() -> tuple[str, str, str, str]:
    """(a header cell, an infobox value, a whole infobox, a small whole infobox) of real pages of the
    excerpt: Alabama's first table, Afghanistan's infobox, A Modest Proposal's (5 fields)."""
    wanted = ("Alabama", "Afghanistan", "A Modest Proposal")
    texts = {page.title: page.text for page in DumpReader(excerpt_dump()) if page.title in wanted}
    alabama, afghanistan, proposal = (texts[title] for title in wanted)
    table = find_structures(alabama).tables[0]
    header = next(c for row in table.rows for c in row if c.header and c.text)
    box = find_structures(afghanistan).infoboxes[0]
    field = box.fields[1]
    small = find_structures(proposal).infoboxes[0]
    return (
        alabama[header.start : header.end].strip(),
        afghanistan[field.start : field.end].strip(),
        afghanistan[box.start : box.end],
        proposal[small.start : small.end],
    )


def structure_page(shape: str, size: int) -> str:
    """The wikitext of a page of ``shape`` (:data:`SHAPES`) at ``size`` (cells, value bytes, infoboxes)."""
    cell, value, box, small = _pieces()
    if shape == "header_cells":
        return "{|\n! " + " !! ".join([cell] * size) + "\n|-\n| " + " || ".join([value] * size) + "\n|}\n"
    if shape == "value_bytes":
        words = (value + " ") * (size // (len(value) + 1))
        return box[:-2] + f"| long = {words}\n}}}}"
    if shape == "infoboxes":
        return "\n".join([small] * size)
    raise ValueError(f"unknown shape {shape!r}: one of {', '.join(SHAPES)}")
