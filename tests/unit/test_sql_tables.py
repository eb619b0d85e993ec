"""The SQL table dump reader on dumps written in code in the real files' layout, with values taken from
the real excerpt (page ids, titles and paragraphs full of quotes, backslashes and newlines)."""

from __future__ import annotations

import bz2
import gzip
import lzma
from pathlib import Path

import pytest

from assets.wikipedia.dump import (
    SqlDumpError,
    SqlDumpReader,
    TableReadReport,
    iter_redirect_rows,
    iter_wikidata_ids,
    side_tables_beside,
    unescape,
    write_wikidata_ids,
)
from support.dump_variants import field, read_xml, split_dump
from support.sql_dumps import (
    PAGE_PROPS_DDL,
    REDIRECT_DDL,
    page_props_rows,
    sql_dump_text,
    sql_value,
    write_gz,
)

MKQA_QIDS = ["Q56005", "Q952176", "Q5638484"]  # answer entities of the real MKQA records in tests/data


@pytest.fixture(scope="module")
def excerpt_pages(excerpt: Path) -> list[tuple[int, str, str]]:
    """``(page id, title, a stretch of wikitext)`` of the excerpt's first 60 pages."""
    _, pages, _ = split_dump(read_xml(excerpt))
    found = []
    for page in pages[:60]:
        text = page.split(b"<text", 1)[1].split(b">", 1)[1][:600].decode("utf-8", "replace")
        found.append((int(field(page, "id")), field(page, "title"), text))
    return found


def _rows(excerpt_pages: list[tuple[int, str, str]]) -> list[tuple]:
    """A page_props table: a QID for three pages, and every page's wikitext as another property (the
    values hold quotes, backslashes, newlines, brackets and non-ASCII letters)."""
    qids = [(page_id, qid) for (page_id, _, _), qid in zip(excerpt_pages, MKQA_QIDS, strict=False)]
    extra = [(page_id, "displaytitle", title) for page_id, title, _ in excerpt_pages]
    extra += [(page_id, "wikitext_sample", text + "\\ '' \0 \x1a") for page_id, _, text in excerpt_pages]
    return page_props_rows(qids, extra)


def test_values_round_trip_with_every_escape(tmp_path: Path, excerpt_pages) -> None:
    rows = _rows(excerpt_pages)
    assert any("'" in str(r[2]) for r in rows) and any("\n" in str(r[2]) for r in rows)
    path = write_gz(
        tmp_path / "enwiki-20160501-page_props.sql.gz",
        sql_dump_text("page_props", PAGE_PROPS_DDL, rows, per_insert=7),
    )
    for chunk in (5, 333, 1 << 20):  # chunk borders inside strings, escapes and keywords
        reader = SqlDumpReader(path, chunk_bytes=chunk)
        read = [tuple(v.decode() if isinstance(v, bytes) else v for v in row) for row in reader]
        assert read == [tuple(r) for r in rows]
        assert reader.stats.columns == ("pp_page", "pp_propname", "pp_value", "pp_sortkey")
        assert reader.stats.statements == -(-len(rows) // 7)


def test_mysql_quote_forms_and_numbers() -> None:
    assert unescape(rb"it\'s \\ \n\t\0\Z \% \_ it''s") == b"it's \\ \n\t\0\x1a \\% \\_ it's"
    assert sql_value(None) == "NULL" and sql_value(1.5) == "1.5"


def test_tuples_on_several_lines_no_create_table_and_other_tables(tmp_path: Path, excerpt_pages) -> None:
    rows = _rows(excerpt_pages)[:40]
    text = sql_dump_text("page_props", PAGE_PROPS_DDL, rows, per_insert=10, tuple_separator=",\n  ")
    text = text.replace(PAGE_PROPS_DDL, "")  # a cut-off header: the columns are MediaWiki's known ones
    other = sql_dump_text("category", "", [(1, "Living_people", 3)], per_insert=10)
    path = tmp_path / "dump.sql"
    path.write_text(other + "\n" + text)
    reader = SqlDumpReader(path, "page_props")
    assert [row[0] for row in reader] == [row[0] for row in rows]
    assert reader.stats.columns == ("pp_page", "pp_propname", "pp_value", "pp_sortkey")
    assert reader.stats.other_tables == {"category": 1}


def test_several_gzip_members(tmp_path: Path, excerpt_pages) -> None:
    text = sql_dump_text("page_props", PAGE_PROPS_DDL, _rows(excerpt_pages), per_insert=5).encode()
    middle = len(text) // 2
    path = tmp_path / "members.sql.gz"
    path.write_bytes(gzip.compress(text[:middle]) + gzip.compress(text[middle:]))
    assert sum(1 for _ in SqlDumpReader(path, chunk_bytes=1000)) == len(_rows(excerpt_pages))


def test_truncated_gzip_member_names_the_byte_offset(tmp_path: Path, excerpt_pages) -> None:
    good = gzip.compress(sql_dump_text("page_props", PAGE_PROPS_DDL, _rows(excerpt_pages)).encode())
    path = tmp_path / "enwiki-20160501-page_props.sql.gz"
    path.write_bytes(good[: len(good) * 2 // 3])
    with pytest.raises(
        SqlDumpError,
        match=r"the gzip stream is truncated: it ends inside a member.* near compressed byte [\d,]+ of",
    ) as raised:
        list(SqlDumpReader(path, chunk_bytes=4096))
    assert str(path) in str(raised.value)


def test_malformed_and_unterminated_statements(tmp_path: Path, excerpt_pages) -> None:
    text = sql_dump_text("page_props", PAGE_PROPS_DDL, _rows(excerpt_pages)[:20], per_insert=20)
    bad = tmp_path / "bad.sql"
    bad.write_text(text.replace("'displaytitle'", "displaytitle", 1))
    with pytest.raises(
        SqlDumpError, match=r"malformed or truncated tuple \(expected 4 values\) at decompressed byte"
    ):
        list(SqlDumpReader(bad))
    cut = tmp_path / "cut.sql"
    cut.write_text(text[: text.rindex(");") + 1])  # the last tuple, and no ";" after it
    with pytest.raises(SqlDumpError, match=r"malformed or truncated tuple .* at decompressed byte [\d,]+"):
        list(SqlDumpReader(cut))
    cut.write_text(text[: text.index("),(") + 2])  # the file ends after a tuple's comma
    with pytest.raises(
        SqlDumpError, match=r"unterminated INSERT \(the file ends inside it\) at decompressed byte"
    ):
        list(SqlDumpReader(cut))


def test_wikidata_ids_keep_wikibase_items_and_count_the_rest(tmp_path: Path, excerpt_pages) -> None:
    rows = [*_rows(excerpt_pages), (999_999_999, "wikibase_item", "not-a-qid", None)]
    path = write_gz(tmp_path / "pp.sql.gz", sql_dump_text("page_props", PAGE_PROPS_DDL, rows))
    report = TableReadReport(str(path))
    found = list(iter_wikidata_ids(path, report))
    assert [qid for _, qid in found] == MKQA_QIDS
    assert report.rows == len(rows) and report.kept == 3
    assert report.skips.by_reason == {"other_property": len(rows) - 4, "invalid_qid": 1}
    assert report.skips.named == ["invalid_qid: page 999999999: b'not-a-qid'"]
    table = write_wikidata_ids(path, tmp_path / "ids.parquet")
    assert table.kept == 3
    with pytest.raises(SqlDumpError, match="no INSERT INTO `page_props`"):
        list(iter_wikidata_ids(write_gz(tmp_path / "empty.sql.gz", PAGE_PROPS_DDL), TableReadReport("x")))


def test_redirect_rows(tmp_path: Path, excerpt_pages) -> None:
    rows = [(page_id, 0, title.replace(" ", "_"), "", "") for page_id, title, _ in excerpt_pages[:10]]
    rows.append((7, 4, "Village_pump", "", "Section"))
    path = write_gz(tmp_path / "rd.sql.gz", sql_dump_text("redirect", REDIRECT_DDL, rows))
    report = TableReadReport(str(path))
    assert list(iter_redirect_rows(path, report)) == rows
    assert report.kept == 11


def test_side_tables_are_found_beside_the_dump(tmp_path: Path) -> None:
    dump = tmp_path / "enwiki-20160501-pages-articles.xml.bz2"
    assert side_tables_beside([str(dump)]).page_props is None
    write_gz(tmp_path / "enwiki-20160501-page_props.sql.gz", PAGE_PROPS_DDL)
    write_gz(tmp_path / "enwiki-20160501-redirect.sql.gz", REDIRECT_DDL)
    write_gz(tmp_path / "dewiki-20160501-page_props.sql.gz", PAGE_PROPS_DDL)
    found = side_tables_beside([str(dump)])
    assert found.page_props == tmp_path / "enwiki-20160501-page_props.sql.gz"
    assert found.redirect_table == tmp_path / "enwiki-20160501-redirect.sql.gz"
    assert side_tables_beside([str(tmp_path / "excerpt.xml")]).page_props is None


@pytest.mark.parametrize("fraction", [0.3, 0.6, 0.9, 0.999])
@pytest.mark.parametrize("codec", [gzip, bz2, lzma])
def test_a_table_in_any_codec_cut_anywhere_is_an_error_naming_it(
    tmp_path: Path, excerpt_pages, codec, fraction: float
) -> None:
    """SQL tables are read through the one opener: every codec reads whole, and a cut is an error naming
    the file (never the rows before the cut as a short success)."""
    text = sql_dump_text("page_props", PAGE_PROPS_DDL, _rows(excerpt_pages)).encode()
    whole = tmp_path / f"enwiki-20160501-page_props.sql.{codec.__name__}"
    whole.write_bytes(codec.compress(text))
    assert sum(1 for _ in SqlDumpReader(whole, chunk_bytes=4096)) == len(_rows(excerpt_pages))
    cut = tmp_path / f"cut-page_props.sql.{codec.__name__}"
    cut.write_bytes(whole.read_bytes()[: int(whole.stat().st_size * fraction)])
    with pytest.raises(SqlDumpError, match=rf"{cut}: the \w+ stream is truncated.*table rows read"):
        list(SqlDumpReader(cut, chunk_bytes=4096))
