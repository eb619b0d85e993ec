"""Tables and infoboxes read from Parsoid HTML (``assets/wikipedia/html/structures.py``) on the real records
and pages of tests/data/wikipedia_html: what a template makes is there (an infobox the wikitext route cannot
read), the offsets point at the cell in the HTML, navigation is left out; hostile variants made in code from
the real pages are bounded, counted and linear."""

from __future__ import annotations

from functools import partial

import pytest

from assets.limits import StructureLimits
from assets.wikipedia.html.parsoid import html_document
from assets.wikipedia.html.structures import html_structures, visible_text
from assets.wikipedia.passages import structured_passages
from assets.wikipedia.wikitext import find_structures
from support.enterprise_dump import parsoid_pages, real_records
from support.timing import cpu_seconds


def _record(wiki: str) -> dict:
    return next(r for r in real_records() if r["is_part_of"]["identifier"] == wiki)


def _page(title: str) -> str:
    return next(p["html"] for p in parsoid_pages() if p["title"] == title)


def _shown(html: str, start: int, end: int) -> str:
    """What the HTML between two offsets shows (its cell's content parsed on its own)."""
    return visible_text(html_document(f"<div>{html[start:end]}</div>").find(".//div"))


def test_an_infobox_a_template_makes_is_read_with_offsets_into_the_html() -> None:
    """ruwiki's {{Карточка языка программирования}}: the wikitext route reads no infobox of it (not an
    ``Infobox`` template); the HTML has it, every value at its offsets."""
    record = _record("ruwiki")
    html = record["article_body"]["html"]
    assert find_structures(record["article_body"]["wikitext"]).infoboxes == []
    (box,) = html_structures(html).infoboxes
    fields = {f.key: f.text for f in box.fields}
    assert box.name == "Squirrel" and fields["Появился в"] == "2003"
    assert fields["Автор"] == "Альберто Демичелис"
    for field in box.fields:
        assert _shown(html, field.start, field.end) == field.text
    (passage,) = structured_passages("1", "Squirrel", html_structures(html), 100)
    assert passage.text.startswith("Squirrel: ") and "Появился в: 2003." in passage.text


def test_a_taxobox_and_wikitables_as_the_reader_sees_them() -> None:
    squirrel = _record("enwiki")["article_body"]["html"]
    (box,) = html_structures(squirrel).infoboxes
    assert box.name == "Squirrels"  # the title row's first line, not the timeline under it
    assert [(f.key, f.text) for f in box.fields[:2]] == [("Domain", "Eukaryota"), ("Kingdom", "Animalia")]
    ginnis = _page("Alexandros Ioannis Ginnis")  # frwiki: three wikitables, one with a caption
    structures = html_structures(ginnis)
    assert [t.section for t in structures.tables] == [
        "Championnats du monde",
        "Classements",
        "Championnats du monde junior",
    ]
    assert structures.tables[1].caption == "Classements de AJ Ginnis en Coupe du monde par année"
    assert structures.tables[0].rows[0][0].text == "Édition / Epreuve"  # a styled data cell, as written
    assert [c.text for c in structures.tables[1].rows[0][:2]] == ["Saison / Épreuve", "Général"]
    assert structures.tables[1].rows[0][0].header and structures.tables[1].rows[0][1].colspan == 2
    for table in structures.tables:
        for row in table.rows:
            for cell in row:
                assert _shown(ginnis, cell.start, cell.end) == cell.text
    passages = structured_passages("1", "Alexandros Ioannis Ginnis", structures, 100)
    assert any("Saison / Épreuve: 2021" in p.text for p in passages)


def test_navigation_is_left_out_and_what_the_text_leaves_out_too() -> None:
    """Albert Einstein: a series' sidebar (and its subgroups) is navigation, the one wikitable is read;
    ABC News: 16 tables in the HTML, navboxes and message boxes all, and one infobox."""
    einstein = html_structures(_page("Albert Einstein"))
    assert [(t.section, t.caption) for t in einstein.tables] == [("1905 – Annus Mirabilis papers", "")]
    abc = html_structures(_page("ABC News"))
    assert abc.tables == [] and [b.name for b in abc.infoboxes] == ["ABC News"]


def test_over_the_limits_is_skipped_and_counted() -> None:
    html = _page("Alexandros Ioannis Ginnis")
    few = html_structures(html, StructureLimits(max_structures=2))
    assert len(few.tables) + len(few.infoboxes) == 2 and few.skipped_structures == 2
    assert "2 tables and infoboxes after the first 2" in few.skipped[-1]
    small = html_structures(html, StructureLimits(max_value_bytes=40))
    assert small.skipped_values > 0 and any(c.text == "" for t in small.tables for r in t.rows for c in r)
    narrow = html_structures(html, StructureLimits(max_grid_cells=20))
    assert narrow.skipped_tables >= 1 and any(t.rows == [] for t in narrow.tables)


def test_hostile_html_is_bounded_linear_and_never_mislocated() -> None:
    """A real wikitable repeated to 20k rows, or nested 10k and 100k divs deep: linear time; a comment
    holding a ``<td>`` (tags the parser drops) makes the offsets unpairable: the page's structures are
    skipped and named, not given offsets that point elsewhere."""
    html = _page("Alexandros Ioannis Ginnis")
    start = html.index("<tr", html.index('class="wikitable'))
    row = html[start : html.index("</tr>", start) + 5]
    table = html[:start] + "{rows}" + html[start:]

    def rows(count: int) -> float:
        return cpu_seconds(partial(html_structures, table.replace("{rows}", row * count)), 1)

    assert rows(20_000) <= 15 * rows(2_000) + 0.2
    timings = {}
    for depth in (10_000, 100_000):  # past limits.html.max_depth: refused whole, counted and named
        nested = "<div>" * depth + html + "</div>" * depth
        timings[depth] = cpu_seconds(partial(html_structures, nested), 1)
        deep = html_structures(nested)
        assert (
            deep.tables == []
            and deep.skipped_structures == html.count("<table")
            and "not read whole" in deep.skipped[0]
            and "depth" in deep.skipped[0]
        )
    assert timings[100_000] <= 15 * timings[10_000] + 0.2
    commented = html.replace("<table", "<!-- <td> --><table", 1)
    broken = html_structures(commented)
    assert broken.tables == [] and broken.skipped_structures >= 3 and "do not pair" in broken.skipped[0]


@pytest.mark.parametrize("page", [p["title"] for p in parsoid_pages()])
def test_every_shipped_page_reads_with_offsets_that_point_at_its_cells(page: str) -> None:
    html = _page(page)
    structures = html_structures(html)
    for box in structures.infoboxes:
        assert html[box.start : box.start + 6] == "<table" and box.end > box.start
        for field in box.fields:
            assert _shown(html, field.start, field.end) == field.text
    for table in structures.tables:
        assert html[table.start : table.start + 6] == "<table"
