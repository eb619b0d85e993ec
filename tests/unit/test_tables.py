"""Tables and infoboxes read from real wikitext (the excerpt and gensim's table-markup pages), their
passages, and malformed variants derived from those pages in code."""

from __future__ import annotations

from functools import cache

import pytest

from assets.indexes.hits import wikipedia_id_of
from assets.wikipedia.dump import DumpReader
from assets.wikipedia.passages import structured_passages, table_units
from assets.wikipedia.wikitext import FILLER, find_structures, masked_wikitext, plain_text
from support.hostile_pages import SHAPES, structure_page
from support.real_data import excerpt_dump, real_file
from support.timing import cpu_seconds


@cache
def articles() -> dict[str, tuple[int, str]]:
    """Title -> (page id, wikitext) of every article of the excerpt and of gensim's table-markup dump."""
    found = {}
    for path in (excerpt_dump(), real_file("wikipedia", "gensim_enwiki-table-markup.xml.bz2")):
        for page in DumpReader(path):
            if page.ns == 0 and page.redirect_target is None:
                found[page.title] = (page.page_id, page.text)
    return found


def first_table(text: str) -> str:
    """The wikitext of the page's first top-level table (with its ``{|`` and ``|}``)."""
    table = find_structures(text).tables[0]
    return text[table.start : table.end]


def test_masking_keeps_length_and_hides_brackets() -> None:
    _, text = articles()["Alabama"]
    masked = masked_wikitext(text)
    assert len(masked) == len(text)
    assert "{{" not in masked and "[[" not in masked
    assert masked.count("\n") < text.count("\n")  # multi-line templates are blanked, newlines included
    assert FILLER * 10 in masked


def test_cell_and_field_offsets_point_at_their_wikitext() -> None:
    """Every cell's (field's) text is the visible text of the wikitext its offsets cut out."""
    cells = fields = 0
    for _, text in articles().values():
        structures = find_structures(text)
        for table in structures.tables:
            nested = [t for t in structures.tables if t.parent == table.index]
            for row in table.rows:
                for cell in row:
                    if any(cell.start <= t.start < cell.end for t in nested):
                        continue  # the nested table is read as its own
                    assert cell.text == plain_text(text[cell.start : cell.end])
                    cells += 1
        for box in structures.infoboxes:
            assert text[box.start : box.start + 2] == "{{" and text[box.end - 2 : box.end] == "}}"
            for field in box.fields:
                assert field.text == plain_text(text[field.start : field.end])
                fields += 1
    assert cells > 5000 and fields > 1000


def test_caption_attributes_are_not_caption_text() -> None:
    """``|+ style="font-size:100%" | Religious affiliation ...`` (Alabama, Alaska): the caption is what
    the page shows after the attribute bar."""
    captions = {
        title: [t.caption for t in find_structures(text).tables if t.caption]
        for title, (_, text) in articles().items()
    }
    assert "Religious affiliation in Alabama (2014)" in captions["Alabama"]
    assert "Religious affiliation in Alaska (2014)" in captions["Alaska"]
    shown = [caption for found in captions.values() for caption in found]
    assert len(shown) >= 10 and not any("style=" in c or "|" in c for c in shown)


def test_a_real_table_reads_as_its_page_shows_it() -> None:
    _, text = articles()["Alabama"]
    table = find_structures(text).tables[0]
    assert table.section == "Race and ancestry"
    assert table.caption == "Alabama Racial Breakdown of Population"
    grid = table.grid()
    assert [c.text for c in grid[0]] == ["Racial composition", "1990", "2000", "2010"]
    assert all(c.header for c in grid[0]) and not any(c.header for c in grid[1])
    assert [c.text for c in grid[1]] == ["White", "73.6%", "71.1%", "68.5%"]
    heading, units = table_units(table)
    assert heading == "Race and ancestry — Alabama Racial Breakdown of Population"
    assert units[0].text == "Racial composition: White; 1990: 73.6%; 2000: 71.1%; 2010: 68.5%."


def test_spans_are_expanded() -> None:
    """Every cell with a rowspan (colspan) of the real pages covers the rows (columns) below (beside) it."""
    checked = 0
    for _, text in articles().values():
        for table in find_structures(text).tables:
            grid = table.grid()
            for r, row in enumerate(table.rows):
                for cell in row:
                    if cell.rowspan == 1 and cell.colspan == 1:
                        continue
                    column = next(c for c, other in enumerate(grid[r]) if other is cell)
                    assert grid[r][column : column + cell.colspan] == [cell] * cell.colspan
                    for below in range(r + 1, min(r + cell.rowspan, len(grid))):
                        assert grid[below][column] is cell
                    checked += 1
    assert checked >= 20


def test_infobox_fields_are_what_a_reader_sees() -> None:
    _, text = articles()["Afghanistan"]
    box = find_structures(text).infoboxes[0]
    assert box.name == "Infobox country" and box.section == ""
    values = {f.key: f.text for f in box.fields}
    assert values["capital"] == "Kabul" and values["common name"] == "Afghanistan"
    assert not any(k.startswith(("image", "lat", "long")) for k in values)  # files and coordinates


def test_passages_keep_the_word_limit_and_point_back() -> None:
    ids = set()
    for title, (page_id, text) in articles().items():
        structures = find_structures(text)
        for passage in structured_passages(str(page_id), title, structures, 100):
            assert passage.word_count == len(passage.text.split()) <= 100
            assert wikipedia_id_of(passage.passage_id) == str(page_id)
            assert 0 <= passage.start_character < passage.end_character <= len(text)
            assert passage.first_row <= passage.last_row
            assert passage.passage_id not in ids
            ids.add(passage.passage_id)
    assert len(ids) > 300


def test_a_row_that_fits_is_never_split() -> None:
    _, text = articles()["Academy Awards"]
    table = find_structures(text).tables[0]
    passages = structured_passages("324", "Academy Awards", find_structures(text), 100)
    rows = {u.row: u.text for u in table_units(table)[1]}
    for passage in (p for p in passages if p.kind == "table"):
        for row in range(passage.first_row, passage.last_row + 1):
            if row in rows:
                assert rows[row] in passage.text


# --------------------------------------------------------------------------------------- bad input
def test_unclosed_table_ends_with_the_page_and_is_counted() -> None:
    _, text = articles()["Alabama"]
    table = first_table(text)
    broken = text.replace(table, table.removesuffix("|}"), 1)
    structures = find_structures(broken)
    assert structures.unclosed_tables == 1
    assert structures.tables[0].unclosed and structures.tables[0].end == len(broken)
    assert structures.tables[0].rows  # its rows are still read


def test_stray_rows_and_cells_outside_tables_are_ignored() -> None:
    _, text = articles()["Alabama"]
    table = first_table(text)
    rows = table.split("\n")[1:-1]  # the table's lines without {| and |}
    stray = text.replace(table, "\n".join(rows), 1)  # its rows and cells with no table around them
    assert len(find_structures(stray).tables) == len(find_structures(text).tables) - 1


def test_cells_before_the_first_row_open_a_row() -> None:
    _, text = articles()["Alabama"]
    table = first_table(text)
    without_rows = "\n".join(line for line in table.split("\n") if not line.startswith("|-"))
    structures = find_structures(without_rows)
    assert len(structures.tables) == 1 and len(structures.tables[0].rows) == 1  # one long row
    assert structures.tables[0].rows[0][0].text == "Racial composition"


def test_unbalanced_infobox_braces_do_not_crash() -> None:
    _, text = articles()["Afghanistan"]
    box = find_structures(text).infoboxes[0]
    unclosed = text[: box.end - 2] + text[box.end :]  # its closing braces gone
    structures = find_structures(unclosed)
    assert isinstance(structures.infoboxes, list)
    assert structured_passages("736", "Afghanistan", structures, 100) is not None
    extra = text[: box.end] + "}}" * 50 + text[box.end :]  # stray closers
    assert find_structures(extra).infoboxes[0].fields == box.fields


def test_ten_thousand_infobox_parameters() -> None:
    _, text = articles()["Afghanistan"]
    box = find_structures(text).infoboxes[0]
    field = box.fields[1]  # "common name = Afghanistan"
    line = text[text.rfind("|", 0, field.start) : field.end]
    many = text[: box.end - 2] + line * 10_000 + text[box.end - 2 :]
    structures = find_structures(many)
    assert len(structures.infoboxes[0].fields) == len(box.fields) + 10_000
    passages = structured_passages("736", "Afghanistan", structures, 100)
    assert all(p.word_count <= 100 for p in passages)


def test_tables_nested_a_hundred_deep() -> None:
    _, text = articles()["Alabama"]
    table = first_table(text)
    nested = table
    for _ in range(99):  # the table as the only cell of a table, a hundred levels
        nested = "{|\n|-\n|\n" + nested + "\n|}"
    structures = find_structures(nested)
    assert len(structures.tables) == 100 and structures.unclosed_tables == 0
    assert structures.tables[-1].caption == "Alabama Racial Breakdown of Population"
    assert [t.parent for t in structures.tables[1:]] == list(range(99))
    assert structured_passages("303", "Alabama", structures, 100)


@pytest.mark.parametrize("variant", ["rows", "unclosed_templates", "unclosed_tables"])
def test_time_is_linear_in_repeats(variant: str) -> None:
    """5k and 50k repeats of a piece of a real page: at most 20x the time for 10x the input."""
    _, text = articles()["Alabama"]
    table = first_table(text)
    piece = {
        "rows": "\n".join(table.split("\n")[3:8]) + "\n",  # real rows
        "unclosed_templates": "{{convert|5|km " + "[[Alabama River\n",  # never closed
        "unclosed_tables": "{|\n|-\n| Alabama\n",
    }[variant]

    def seconds(repeats: int) -> float:
        body = table.removesuffix("|}") + piece * repeats + "|}" if variant == "rows" else piece * repeats
        return cpu_seconds(
            lambda: structured_passages("303", "Alabama", find_structures(body), 100), repeats=1
        )

    small, large = seconds(5_000), seconds(50_000)
    assert large < 20 * small + 0.5, (small, large)


@pytest.mark.parametrize("shape", SHAPES)
def test_structures_are_linear_in_cells_values_and_infoboxes(shape: str) -> None:
    """The three shapes that were quadratic (a header row of 100k cells took 76 s, a 2 MB infobox value
    56 s, 40k infoboxes 7x the time of 20k): 10x the input costs at most 15x the time, the limits raised
    out of the way (``support/hostile_pages.py``: real cells and fields)."""
    from assets.limits import StructureLimits

    unbounded = StructureLimits(max_value_bytes=1 << 30, max_structures=1 << 30, max_grid_cells=1 << 30)

    def seconds(size: int) -> float:
        text = structure_page(shape, size)
        return cpu_seconds(lambda: structured_passages("1", "Page", find_structures(text, unbounded), 100))

    sizes = {
        "header_cells": (10_000, 100_000),
        "value_bytes": (200_000, 2_000_000),
        "infoboxes": (2_000, 20_000),
    }
    small, large = (seconds(size) for size in sizes[shape])
    assert large <= 15 * small + 0.2, (shape, small, large)


def test_structures_over_the_limits_are_skipped_and_counted() -> None:
    """A value over max_value_bytes reads as empty, structures past max_structures are dropped, a grid
    over max_grid_cells is skipped: each counted, and named in ``skipped``."""
    from assets.limits import StructureLimits

    _, afghanistan = articles()["Afghanistan"]
    box = find_structures(afghanistan).infoboxes[0]
    whole_box = afghanistan[box.start : box.end]
    limits = StructureLimits(max_value_bytes=2000, max_structures=5, max_grid_cells=10)
    long_value = whole_box[:-2] + "| long = " + "word " * 1000 + "\n}}"
    structures = find_structures("\n".join([long_value] * 8), limits)
    assert structures.skipped_values == 5 and structures.skipped_structures == 3
    assert len(structures.infoboxes) == 5
    assert all("long" not in [f.key for f in b.fields] for b in structures.infoboxes)
    _, alabama = articles()["Alabama"]
    tables = find_structures(first_table(alabama), limits)
    assert tables.skipped_tables == 1 and tables.tables[0].rows == []
    assert any("expanded grid over 10 cells" in why for why in tables.skipped)
