"""The standing hostile suite's property-based half: hypothesis feeds every parser the project exposes to
outside bytes (wikitext, tables and infoboxes, SQL table dumps, ``dumpstatus.json``, the search API's JSON)
variants of real inputs (the excerpt's pages, a status of a run made from it) with markup, bytes and values
spliced in, and each case asserts a bound on time and on memory, not only that nothing crashed.

The examples are derandomized (the same on every machine and every run): CI cannot turn red by chance.
"""

from __future__ import annotations

import gzip
import json
import time
import tracemalloc
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assets.limits import HttpLimits, Limits, StructureLimits
from assets.reading.serving import BadRequest, parse_search_body
from assets.wikipedia.dump import DumpReader, SqlDumpError, SqlDumpReader
from assets.wikipedia.fetch import Release, release_from_status
from assets.wikipedia.passages import structured_passages
from assets.wikipedia.wikitext import find_structures, parse_wikitext, plain_text
from support.real_data import excerpt_dump

SETTINGS = settings(
    max_examples=40,
    deadline=None,  # the bounds below are the test's own, measured per example
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SECONDS_PER_MB = 20.0
"""Time bound: this many seconds per MB of input plus a second (the parsers run at ~1 MB/s at worst)."""
MEMORY_FACTOR = 60
"""Memory bound: peak Python allocations of at most this many times the input plus 8 MB."""
MARKUP = ["{{", "}}", "{|", "|}", "|-", "||", "!!", "\n|", "\n!", "[[", "]]", "|", "=", "<ref>", "</ref>",
          "<!--", "-->", "'''", "\n", "{{Infobox x|", "rowspan=999999999", "colspan=5000|", "\n== h ==\n",
          "&amp;", "<nowiki>", "\x00", "\ud7ff", "{{{", "}}}"]  # fmt: skip


@cache
def _pages() -> list[str]:
    return [page.text for page in DumpReader(excerpt_dump()) if page.ns == 0 and page.text][:40]


@st.composite
def spliced_wikitext(draw: st.DrawFn) -> str:
    """A real page's wikitext (a slice of it) with markup tokens spliced in, some repeated thousands of
    times (the shapes that once made the table reader quadratic)."""
    pages = _pages()
    text = pages[draw(st.integers(0, len(pages) - 1))]
    start = draw(st.integers(0, len(text)))
    text = text[start : start + draw(st.integers(0, 60_000))]
    for _ in range(draw(st.integers(0, 6))):
        token = draw(st.sampled_from(MARKUP))
        repeats = draw(st.sampled_from([1, 2, 10, 1000, 20_000]))
        at = draw(st.integers(0, len(text)))
        text = text[:at] + token * repeats + text[at:]
    return text


def _bounded(call, size: int) -> None:
    """Run ``call`` within the time and memory bounds for an input of ``size`` bytes."""
    tracemalloc.start()
    started = time.perf_counter()
    try:
        call()
    finally:
        seconds = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert seconds <= 1.0 + SECONDS_PER_MB * size / 1e6, (seconds, size)
    assert peak <= 8e6 + MEMORY_FACTOR * size, (peak, size)


@SETTINGS
@given(spliced_wikitext())
def test_wikitext_and_structures_are_bounded(text: str) -> None:
    def parse() -> None:
        article = parse_wikitext("Page", text)
        assert isinstance(article.text, list)
        plain_text(text[:5000])
        structures = find_structures(text, StructureLimits())
        for passage in structured_passages("1", "Page", structures, 100):
            assert passage.word_count <= 100
            assert 0 <= passage.start_character <= passage.end_character <= len(text)

    _bounded(parse, len(text.encode("utf-8", "surrogatepass")))


@cache
def _page_props_dump() -> bytes:
    from support.sql_dumps import PAGE_PROPS_DDL, page_props_rows, sql_dump_text

    ids = [page.page_id for page in DumpReader(excerpt_dump())][:200]
    rows = page_props_rows([(page_id, f"Q{page_id * 7}") for page_id in ids])
    return sql_dump_text("page_props", PAGE_PROPS_DDL, rows, per_insert=50).encode()


@SETTINGS
@given(st.data())
def test_sql_table_dumps_are_bounded(tmp_path_factory: pytest.TempPathFactory, data: st.DataObject) -> None:
    """A real-shaped page_props dump, cut, with bytes flipped or inserted, gzipped or not: rows or a
    SqlDumpError naming the place, within the bounds."""
    raw = bytearray(_page_props_dump())
    for _ in range(data.draw(st.integers(0, 5))):
        at = data.draw(st.integers(0, len(raw) - 1))
        if data.draw(st.booleans()):
            raw[at] = data.draw(st.integers(0, 255))
        else:
            raw[at:at] = data.draw(st.sampled_from([b"'", b"(", b"),(", b"\\", b";", b"\n", b"'" * 5000]))
    raw = raw[: data.draw(st.integers(1, len(raw)))]
    body = gzip.compress(bytes(raw)) if data.draw(st.booleans()) else bytes(raw)
    path = tmp_path_factory.mktemp("sql") / "page_props.sql.gz"
    path.write_bytes(body)

    def read() -> None:
        try:
            for _ in SqlDumpReader(path, "page_props"):
                pass
        except SqlDumpError as error:
            assert str(path) in str(error)

    _bounded(read, len(raw))


@cache
def _status() -> str:
    """A run's dumpstatus.json as the dump site serves it, for a run made from the real excerpt."""
    import tempfile

    from support.dump_site import DumpSite, run_files, write_run
    from support.dump_variants import read_xml

    work = Path(tempfile.mkdtemp())
    write_run(work / "site", "enwiki", "20160501", run_files(read_xml(excerpt_dump()), work / "made"))
    return json.dumps(DumpSite(work / "site").status("enwiki", "20160501"))


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)


@SETTINGS
@given(st.data())
def test_dump_statuses_are_bounded(data: st.DataObject) -> None:
    """A real status with values replaced by any JSON (lists, strings, negative sizes, other hosts):
    a Release confined to the source, or the reason it is not one; never an exception."""
    status = json.loads(_status())
    for _ in range(data.draw(st.integers(0, 4))):
        node, path = status, []
        while isinstance(node, dict) and node and data.draw(st.booleans()):
            key = data.draw(st.sampled_from(sorted(node)))
            path.append(key)
            if not isinstance(node[key], dict):
                break
            node = node[key]
        if isinstance(node, dict) and node:
            node[data.draw(st.sampled_from(sorted(node)))] = data.draw(
                JSON
                | st.sampled_from(["http://other.example/x", "../../etc/passwd", "file:///etc/passwd", -5])
            )
    raw = json.dumps(status)

    def read() -> None:
        found = release_from_status(status, wiki="enwiki", date="20160501", source="http://127.0.0.1:9")
        if isinstance(found, Release):
            assert all(f.url.startswith("http://127.0.0.1:9/enwiki/20160501/") for f in found.files)
            assert all(f.size >= 0 for f in found.files)
        else:
            assert isinstance(found, str) and found

    _bounded(read, len(raw))


BODY = st.one_of(
    st.binary(max_size=2000),
    JSON.map(lambda value: json.dumps(value).encode()),
    st.builds(
        lambda depth, opener: opener * depth,
        st.integers(1, 200_000),
        st.sampled_from([b"[", b"{", b'{"a":[']),
    ),
    st.builds(lambda digits: b'{"query": "x", "k": ' + b"9" * digits + b"}", st.integers(1, 20_000)),
    st.builds(lambda q, k: json.dumps({"queries": q, "k": k}).encode(), st.lists(st.text(max_size=50)), JSON),
)


@SETTINGS
@given(BODY)
def test_search_bodies_are_bounded(raw: bytes) -> None:
    """Any body to POST /search: a parsed request or a BadRequest (a 400), within the bounds; a body
    nested deeper than limits.http.max_json_depth or with a longer number never reaches the parser."""
    limits = Limits(http=HttpLimits())

    def parse() -> None:
        try:
            parsed = parse_search_body(raw, limits)
        except BadRequest as error:
            assert str(error)
            return
        assert isinstance(parsed["queries"], list) and isinstance(parsed["k"], int)

    _bounded(parse, len(raw))


@pytest.mark.parametrize("size", [80_000, 1_000_000, 8_000_000])
def test_escaped_quotes_cost_what_reading_them_costs(size: int) -> None:
    """Escaped quotes in an unclosed string made the bounds check quadratic (80 KB: 12 s on the event
    loop); now each size is refused as not JSON within the linear bound, and the same quotes closed are
    one string of that many quotes; a quote after an even run of backslashes closes the string."""
    limits = Limits(http=HttpLimits())
    unclosed = b'{"query": "' + b'\\"' * (size // 2)

    def refuse() -> None:
        with pytest.raises(BadRequest, match="unterminated string"):
            parse_search_body(unclosed, limits)

    _bounded(refuse, len(unclosed))
    closed = unclosed + b'", "k": 3}'
    _bounded(lambda: parse_search_body(closed, limits), len(closed))
    assert parse_search_body(closed, limits)["queries"] == ['"' * (size // 2)]
    tricky = b'{"query": "a\\\\\\\\", "k": [[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]}'
    with pytest.raises(BadRequest, match=r"limits\.http\.max_json_depth"):
        parse_search_body(tricky, limits)
    digits = b'{"query": "' + b"9" * 5000 + b'", "k": 3}'  # digits inside a string are text, not a number
    assert parse_search_body(digits, limits)["k"] == 3
    with pytest.raises(BadRequest, match="backslash outside a string"):
        parse_search_body(b'{"query": "x"} \\', limits)
