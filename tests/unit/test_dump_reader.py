"""The streaming dump reader on the real files and on variants derived from them in code."""

from __future__ import annotations

import bz2
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from assets.wikipedia.dump import DumpFormatError, DumpReader
from support.dump_variants import page_with_title, read_xml, set_field, set_text, split_dump, write_dump
from support.real_data import real_file


def test_excerpt_pages_namespaces_and_siteinfo(excerpt: Path) -> None:
    reader = DumpReader(excerpt)
    pages = list(reader)
    kinds = Counter((p.ns, p.redirect_target is not None) for p in pages)
    assert kinds == {(0, False): 106, (0, True): 99, (4, True): 1}
    assert reader.siteinfo.dbname == "enwiki"
    assert len(reader.siteinfo.namespaces) == 35
    assert reader.siteinfo.namespaces[14] == "Category"
    assert reader.stats.max_timestamp == "2016-05-01T07:08:29Z"
    anarchism = next(p for p in pages if p.title == "Anarchism")
    assert anarchism.page_id == 12 and anarchism.revid == 716551092 and anarchism.parentid == 714146352
    assert anarchism.text.startswith("{{Redirect2|Anarchist|Anarchists")
    assert next(p for p in pages if p.page_id == 10).redirect_target == "Computer accessibility"


@pytest.mark.parametrize(
    ("name", "pages", "has_siteinfo"),
    [
        ("gensim_enwiki-table-markup.xml.bz2", 5, False),
        ("wikipedia2vec_enwiki-pages-articles-sample.xml.bz2", 3, True),
        ("pywikibot_article-pear-0.10.xml", 1, True),
    ],
)
def test_other_real_dumps(name: str, pages: int, has_siteinfo: bool) -> None:
    reader = DumpReader(real_file("wikipedia", name))
    assert len(list(reader)) == pages
    assert reader.siteinfo.from_dump is has_siteinfo
    assert reader.siteinfo.namespaces[6] == "File"


@pytest.mark.parametrize(("compression", "streams"), [("none", 1), ("gzip", 1), ("xz", 1), ("bz2", 7)])
def test_compressions_and_multistream(tmp_path: Path, excerpt: Path, compression: str, streams: int) -> None:
    xml = read_xml(excerpt)
    dump = write_dump(tmp_path / "dump", xml, compression, streams)
    reader = DumpReader(dump)
    titles = [p.title for p in reader]
    assert len(titles) == 206 and reader.compression == compression
    assert reader.xml_bytes == len(xml)


def test_utf16_with_bom(tmp_path: Path, excerpt: Path) -> None:
    header, pages, footer = split_dump(read_xml(excerpt))
    xml = (header + page_with_title(pages, "Albert Einstein") + footer).decode("utf-8")
    dump = tmp_path / "utf16.xml"
    dump.write_bytes(xml.encode("utf-16"))  # BOM + UTF-16 (native byte order)
    [page] = list(DumpReader(dump))
    assert page.title == "Albert Einstein" and "theoretical physicist" in page.text


def test_several_revisions_latest_or_as_of(tmp_path: Path, excerpt: Path) -> None:
    header, pages, footer = split_dump(read_xml(excerpt))
    page = page_with_title(pages, "Alabama")
    revision = re.search(rb"    <revision>.*?</revision>\n", page, re.DOTALL).group(0)
    older = set_field(revision, "timestamp", "2010-01-01T00:00:00Z")
    older = set_field(older, "id", "1")
    older = set_text(older, b"An older revision of the Alabama article.")
    newer_last = page.replace(revision, older + revision)  # chronological order
    newer_first = page.replace(revision, revision + older)  # order in file must not matter
    for variant in (newer_last, newer_first):
        dump = write_dump(tmp_path / "revs.xml", header + variant + footer)
        [latest] = list(DumpReader(dump))
        assert latest.revid == 717329061 and latest.text.startswith("{{about|the U.S. state")
        reader = DumpReader(dump, as_of="2015-01-01")
        [old] = list(reader)
        assert old.revid == 1 and old.text == "An older revision of the Alabama article."
        assert reader.stats.skips.by_reason["revision_after_as_of"] == 1
    reader = DumpReader(write_dump(tmp_path / "early.xml", header + newer_last + footer), as_of="2005")
    assert list(reader) == []
    assert reader.stats.skips.by_reason["no_revision_before_as_of"] == 1


def test_pages_without_ns_and_old_schema(tmp_path: Path, excerpt: Path) -> None:
    """Export 0.3 style: no <ns>, no <redirect>; namespace from the title, redirect from the text."""
    xml = (
        read_xml(excerpt).replace(b"export-0.10", b"export-0.3").replace(b'version="0.10"', b'version="0.3"')
    )
    xml = re.sub(rb"\s*<ns>-?\d+</ns>", b"", xml)
    xml = re.sub(rb"\s*<redirect title=\"[^\"]*\" />", b"", xml)
    pages = list(DumpReader(write_dump(tmp_path / "old.xml", xml)))
    kinds = Counter((p.ns, p.redirect_target is not None) for p in pages)
    assert kinds == {(0, False): 106, (0, True): 99, (4, True): 1}


def test_truncated_compressed_stream(tmp_path: Path, excerpt: Path) -> None:
    data = excerpt.read_bytes()
    dump = tmp_path / "truncated.xml.bz2"
    dump.write_bytes(data[: len(data) // 2])
    cut = r"truncated\.xml\.bz2: the bz2 stream is truncated.*compressed byte"
    with pytest.raises(DumpFormatError, match=cut):
        list(DumpReader(dump))


def test_corrupt_compressed_stream(tmp_path: Path, excerpt: Path) -> None:
    data = bytearray(excerpt.read_bytes())
    data[500_000:500_200] = bytes(200)
    dump = tmp_path / "corrupt.xml.bz2"
    dump.write_bytes(bytes(data))
    damaged = r"corrupt\.xml\.bz2: the bz2 stream is truncated or damaged .*compressed byte \d+"
    with pytest.raises(DumpFormatError, match=damaged):
        list(DumpReader(dump))


def test_truncated_xml(tmp_path: Path, excerpt: Path) -> None:
    xml = read_xml(excerpt)
    dump = write_dump(tmp_path / "cut.xml.bz2", xml[: len(xml) // 3], "bz2")
    reader = DumpReader(dump)
    seen = []
    with pytest.raises(DumpFormatError, match=r"XML ends before the document is complete.*inside page id="):
        seen.extend(reader)
    assert 0 < len(seen) < 206  # pages before the cut were delivered


def test_invalid_bytes_error_names_page_and_offset(tmp_path: Path, excerpt: Path) -> None:
    header, pages, footer = split_dump(read_xml(excerpt))
    broken = page_with_title(pages, "Algeria").replace(b"Algeria", b"Alg\xff\xfeeria", 3)
    dump = write_dump(tmp_path / "invalid.xml", header + pages[0] + broken + footer)
    with pytest.raises(
        DumpFormatError, match=r"malformed XML at line \d+, column \d+ \(decompressed byte \d+\)"
    ):
        list(DumpReader(dump))
    reader = DumpReader(dump, invalid_bytes="replace")
    assert [p.title for p in reader][1] == "Alg\ufffd\ufffderia"
    assert reader.stats.replaced_invalid_bytes >= 2


def test_not_a_mediawiki_export(tmp_path: Path) -> None:
    junk = tmp_path / "feed.xml"
    junk.write_text('<?xml version="1.0"?><rss version="2.0"><channel><title>x</title></channel></rss>')
    with pytest.raises(DumpFormatError, match=r"feed.xml: not a MediaWiki export: root element is <rss>"):
        list(DumpReader(junk))
    binary = tmp_path / "random.bin"
    binary.write_bytes(bz2.compress(b"\x00\x01 not xml at all"))
    with pytest.raises(DumpFormatError, match=r"random\.bin: malformed XML"):
        list(DumpReader(binary))


def test_deleted_text_is_counted(tmp_path: Path, excerpt: Path) -> None:
    header, pages, footer = split_dump(read_xml(excerpt))
    page = re.sub(
        rb"<text[^>]*>.*?</text>",
        b'<text deleted="deleted" />',
        page_with_title(pages, "Aristotle"),
        flags=re.DOTALL,
    )
    reader = DumpReader(write_dump(tmp_path / "deleted.xml", header + page + footer))
    assert list(reader) == []
    assert reader.stats.skips.by_reason == {"text_deleted": 1}


def test_a_page_over_the_size_limit_is_skipped_with_its_id_and_size(excerpt: Path, tmp_path: Path) -> None:
    """One real article's wikitext repeated past the limit (MediaWiki refuses pages over 2 MiB): skipped,
    counted and named with its id and size; the other pages are read as before."""
    header, pages, footer = split_dump(read_xml(excerpt))
    anarchism = page_with_title(pages, "Anarchism")
    text = re.search(rb"<text[^>]*>(.*)</text>", anarchism, re.S)[1]
    huge = set_text(anarchism, text * (9 * 2**20 // len(text) + 1))  # over the default 8 MiB
    path = write_dump(
        tmp_path / "enwiki-20160501-pages-articles.xml.bz2",
        header + huge + b"".join(p for p in pages if p != anarchism) + footer,
        compression="bz2",
    )
    reader = DumpReader(path)
    read = list(reader)
    assert 12 not in {p.page_id for p in read} and len(read) == len(pages) - 1
    assert reader.stats.skips.by_reason["page_too_large"] == 1
    [example] = reader.stats.skips.named
    assert (
        example.startswith("page id=12 'Anarchism': ") and "over knowledge_source.max_page_bytes" in example
    )
    small = DumpReader(path, max_page_bytes=len(text) - 1)  # a lower limit: the buffer is dropped as read
    assert {p.page_id for p in small} == {p.page_id for p in read}
    assert (
        small.stats.skips.by_reason["page_too_large"] == 1
        and "characters of wikitext" in small.stats.skips.named[0]
    )
    exact = DumpReader(excerpt, max_page_bytes=len(text.decode()))  # at the limit: kept
    assert any(p.page_id == 12 for p in exact)


def test_an_external_entity_is_never_loaded_and_is_counted_with_its_page(
    excerpt: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    header, pages, footer = split_dump(read_xml(excerpt))
    doctype = f'<!DOCTYPE mediawiki [<!ENTITY xxe SYSTEM "file://{secret}">]>\n'.encode()
    anarchism = page_with_title(pages, "Anarchism")
    hostile = anarchism.replace(b"</text>", b"&xxe;</text>", 1)
    xml = header.replace(b"<mediawiki", doctype + b"<mediawiki", 1) + hostile + footer
    reader = DumpReader(write_dump(tmp_path / "enwiki-20160501-pages-articles.xml", xml))
    [page] = list(reader)
    assert "TOP SECRET" not in page.text and page.page_id == 12
    assert reader.stats.skips.by_reason["external_entity_dropped"] == 1
    assert reader.stats.skips.named == [
        f"page id=12 'Anarchism': external XML entity 'file://{secret}' dropped (never loaded)"
    ]


@pytest.fixture(scope="module")
def recompressed(tmp_path_factory: pytest.TempPathFactory, excerpt: Path) -> Callable[[str], Path]:
    """``codec -> the real excerpt recompressed by it``, written (and read whole: 206 pages) once a codec."""
    folder = tmp_path_factory.mktemp("codecs")
    made: dict[str, Path] = {}

    def whole(codec: str) -> Path:
        if codec not in made:
            name = f"enwiki-20160501-pages-articles.xml.{codec}"
            path = write_dump(folder / name, read_xml(excerpt), codec)
            assert sum(1 for _ in DumpReader(path)) == 206
            made[codec] = path
        return made[codec]

    return whole


@pytest.mark.parametrize("fraction", [0.3, 0.6, 0.9, 0.999])
@pytest.mark.parametrize("codec", ["gzip", "xz", "bz2"])
def test_a_dump_in_any_codec_cut_anywhere_is_an_error_naming_it(
    tmp_path: Path, recompressed: Callable[[str], Path], codec: str, fraction: float
) -> None:
    """The real excerpt recompressed by each codec reads whole; cut anywhere, it is an error naming the
    file and what was read, never a short dump read as a whole one."""
    whole = recompressed(codec)
    cut = tmp_path / f"cut.xml.{codec}"
    cut.write_bytes(whole.read_bytes()[: int(whole.stat().st_size * fraction)])
    with pytest.raises(DumpFormatError, match=rf"{cut}: the \w+ stream is truncated.*pages\)"):
        list(DumpReader(cut))


def test_stream_groups_decode_in_bounded_pieces_and_a_cut_one_is_an_error(tmp_path: Path, excerpt) -> None:
    """``range_pieces``: the stream groups of a multistream file (the real excerpt in 8 streams) decode to
    the XML; a stream that expands 1,000-fold comes out in pieces of at most PIECE_BYTES, and joined stops
    at its bound; a range that ends inside a stream, or past the file, is an error naming the file."""
    from assets.compressed import PIECE_BYTES, CompressedInputError, decompress_range, range_pieces

    xml = read_xml(excerpt)
    dump = write_dump(tmp_path / "multi.xml.bz2", xml, "bz2", streams=8)
    size = dump.stat().st_size
    assert decompress_range(dump, 0, size, max_bytes=len(xml)) == xml
    bomb = tmp_path / "bomb.bz2"
    bomb.write_bytes(bz2.compress(bytes(64 << 20)))  # 64 MiB of zero bytes in a few hundred bytes
    assert max(len(piece) for piece in range_pieces(bomb, 0, bomb.stat().st_size)) <= PIECE_BYTES
    with pytest.raises(CompressedInputError, match=r"bomb\.bz2: .* expand past 4,194,304 bytes \(knowledge_"):
        decompress_range(bomb, 0, bomb.stat().st_size, max_bytes=4 << 20)  # stops there, holding 4 MiB
    for start, end in ((0, size // 2), (0, size + 100)):
        with pytest.raises(CompressedInputError, match=r"multi\.xml\.bz2: the bz2 stream is truncated"):
            decompress_range(dump, start, end, max_bytes=len(xml))
