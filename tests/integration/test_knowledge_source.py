"""Dump -> knowledge source on the real excerpt: counts, schema, checks, export/import, lookups."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from assets.input_forms import XML_FORM
from assets.params import KnowledgeSourceParams
from assets.storage import SnapshotPaths, list_snapshots
from assets.wikipedia import checks
from assets.wikipedia.dump import DumpFormatError
from assets.wikipedia.pages import (
    READERS,
    DumpPart,
    ParseSettings,
    build_knowledge_source,
    export_kilt_jsonl,
    import_kilt_jsonl,
    iter_pages,
    parse_dump_part,
    plan_dump_parts,
    read_parsed_part,
)
from assets.wikipedia.schema import PAGES_SCHEMA
from support.dump_variants import (
    page_with_title,
    read_xml,
    set_field,
    set_text,
    split_dump,
    write_dump,
    write_multistream,
)


def test_counts_and_report(built_excerpt) -> None:
    paths, report = built_excerpt
    assert report.snapshot_id == "enwiki-20160501"
    assert (report.pages_read, report.articles, report.redirects) == (206, 106, 99)
    assert report.skipped == {"non_main_namespace": 1}
    assert report.shards == 3 and len(list(paths.pages_dir.glob("*.parquet"))) == 3
    saved = json.loads(paths.report_file.read_text())
    assert saved["articles"] == 106 and saved["residual_markup_fraction"] == report.residual_markup_fraction
    manifest = json.loads(paths.manifest_file.read_text())
    assert manifest["dbname"] == "enwiki" and manifest["case"] == "first-letter"
    assert list_snapshots(paths.data_dir) == ["enwiki-20160501"]


def test_residual_markup_target(built_excerpt) -> None:
    """Residual {{ }} [[ ]] <ref {| in at most 0.5% of all paragraphs (measured by the build)."""
    _, report = built_excerpt
    assert report.paragraphs > 10_000
    assert report.residual_markup_fraction <= 0.005, report.residual_markup_examples


def test_pages_schema_and_kilt_structure(built_excerpt) -> None:
    paths, _ = built_excerpt
    schema = pq.read_schema(next(paths.pages_dir.glob("*.parquet")))
    assert schema.names == PAGES_SCHEMA.names
    pages = {p["wikipedia_title"]: p for p in iter_pages(paths)}
    assert len(pages) == 106
    for page in pages.values():
        assert page["text"][0] == page["wikipedia_title"] + "\n"
        assert all(t.endswith("\n") and t.strip() for t in page["text"])
        assert page["history"]["pageid"] == int(page["wikipedia_id"])
        assert page["history"]["url"].startswith("https://en.wikipedia.org/w/index.php?title=")
        assert "_" not in page["history"]["url"].split("&")[0]  # KILT quotes titles with %20
    einstein = pages["Albert Einstein"]
    assert einstein["wikipedia_id"] == "736"
    assert einstein["text"][1].startswith("Albert Einstein (")
    assert "German-born theoretical physicist" in einstein["text"][1]
    sections = [t for t in einstein["text"] if t.startswith("Section::::")]
    assert "Section::::Biography.\n" in sections
    assert any(s.startswith("Section::::Biography.:") for s in sections)  # nested header path
    assert any(t.startswith("BULLET::::- ") for t in einstein["text"])
    assert "Nobel laureates in Physics" in einstein["categories"]
    assert einstein["history"]["revid"] == 716825343
    # anchors: resolved inside the excerpt, null outside it
    anchors = pages["Anarchism"]["anchors"]
    assert any(a["text"] == "political philosophy" and a["wikipedia_id"] is None for a in anchors)
    resolved = [a for p in pages.values() for a in p["anchors"] if a["wikipedia_id"] is not None]
    assert resolved and all(
        pages[a["wikipedia_title"]]["wikipedia_id"] == a["wikipedia_id"] for a in resolved
    )
    assert not pages["Albert Einstein"]["is_disambiguation"]
    assert pages["A"]["text"][1].startswith('A (named , plural "As", "A\'s"')  # the kilt text style


def test_redirects_table(built_excerpt) -> None:
    paths, report = built_excerpt
    rows = {r["source_title"]: r for r in pq.read_table(paths.redirects_file).to_pylist()}
    assert len(rows) == 99
    assert rows["AccessibleComputing"]["status"] == "missing_target"
    assert rows["AccessibleComputing"]["target_title"] == "Computer accessibility"
    resolved = [r for r in rows.values() if r["status"] == "resolved"]
    assert len(resolved) == report.redirects_resolved > 0
    assert all(r["target_wikipedia_id"] for r in resolved)


def test_all_checks_pass(built_excerpt) -> None:
    paths, _ = built_excerpt
    for name, check in checks.ALL_CHECKS.items():
        outcome = check(paths)
        assert outcome.passed, (name, outcome.description)


def test_export_and_import_roundtrip(built_excerpt, tmp_path: Path) -> None:
    paths, _ = built_excerpt
    out = tmp_path / "ks.jsonl.gz"
    assert export_kilt_jsonl(paths, out, progress=False) == 106
    with gzip.open(out, "rt") as handle:
        first = json.loads(handle.readline())
    assert set(first) >= {
        "_id",
        "wikipedia_id",
        "wikipedia_title",
        "text",
        "anchors",
        "categories",
        "history",
    }
    assert isinstance(first["categories"], str) and first["history"]["pageid"] == int(first["wikipedia_id"])
    assert first["history"]["pre_dump"] is True and isinstance(first["history"]["revid"], int)  # as KILT's
    report = import_kilt_jsonl(out, tmp_path / "data", "kilt-roundtrip", progress=False)
    assert report.articles == 106
    imported = SnapshotPaths(tmp_path / "data", "kilt-roundtrip")
    original = {p["wikipedia_id"]: p for p in iter_pages(paths)}
    for page in iter_pages(imported):
        source = original[page["wikipedia_id"]]
        for key in ("wikipedia_title", "text", "anchors", "text_sha1", "history", "is_disambiguation"):
            assert page[key] == source[key], key
        # KILT writes categories comma-joined, so names containing commas cannot be told apart
        assert ",".join(page["categories"]) == ",".join(source["categories"])
    for name, check in checks.ALL_CHECKS.items():
        assert check(imported).passed, name


def test_import_rejects_malformed_line(built_excerpt, tmp_path: Path) -> None:
    paths, _ = built_excerpt
    out = tmp_path / "ks.jsonl"
    export_kilt_jsonl(paths, out, progress=False)
    lines = out.read_text().splitlines()
    lines[3] = lines[3][: len(lines[3]) // 2]
    out.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"ks.jsonl:4: not valid JSON"):
        import_kilt_jsonl(out, tmp_path / "data", "broken", progress=False)
    assert not (tmp_path / "data" / "snapshots" / "broken").exists()


def test_failed_build_publishes_nothing(tmp_path: Path, excerpt: Path) -> None:
    xml = read_xml(excerpt)
    dump = write_dump(tmp_path / "cut.xml.bz2", xml[: len(xml) // 2], "bz2")
    data_dir = tmp_path / "data"
    with pytest.raises(DumpFormatError, match=r"cut\.xml\.bz2"):
        build_knowledge_source(
            dump, data_dir, KnowledgeSourceParams(snapshot="broken", workers=0), progress=False
        )
    assert list_snapshots(data_dir) == []
    assert not any((data_dir / "snapshots").iterdir())  # no temp directory left behind


def test_skipped_pages_are_counted_by_reason(tmp_path: Path, excerpt: Path) -> None:
    """Derived variants: an empty page, a page that is only a template, and a redirect chain."""
    header, pages, footer = split_dump(read_xml(excerpt))
    empty = set_text(set_field(page_with_title(pages, "Aristotle"), "title", "Aristotle (empty)"), b"")
    empty = set_field(empty, "id", "90000001")
    infobox = re.search(rb"\{\{Infobox.*?\n\}\}", page_with_title(pages, "Alabama"), re.DOTALL).group(0)
    only_template = set_text(
        set_field(page_with_title(pages, "Alabama"), "title", "Alabama (template)"), infobox
    )
    only_template = set_field(only_template, "id", "90000002")
    # redirect chain: "Rand chain" -> "AynRand" (a real redirect) -> "Ayn Rand"
    chain = page_with_title(pages, "AccessibleComputing")
    chain = set_field(chain, "title", "Rand chain").replace(
        b'title="Computer accessibility"', b'title="AynRand"'
    )
    chain = set_field(chain, "id", "90000003")
    variant = header + b"".join(pages) + empty + only_template + chain + footer
    dump = write_dump(tmp_path / "variant.xml", variant)
    report = build_knowledge_source(
        dump, tmp_path / "data", KnowledgeSourceParams(snapshot="variant", workers=0), progress=False
    )
    assert report.articles == 106
    assert report.skipped == {"non_main_namespace": 1, "empty_text": 1, "no_text_after_cleaning": 1}
    assert any("90000001" in e for e in report.skipped_examples)
    assert any("90000002" in e for e in report.skipped_examples)
    redirects = {
        r["source_title"]: r
        for r in pq.read_table(SnapshotPaths(tmp_path / "data", "variant").redirects_file).to_pylist()
    }
    assert redirects["AynRand"]["target_wikipedia_title"] == "Ayn Rand"
    assert redirects["Rand chain"]["target_wikipedia_title"] == "Ayn Rand"
    assert redirects["Rand chain"]["target_wikipedia_id"] == redirects["AynRand"]["target_wikipedia_id"]
    assert (redirects["Rand chain"]["hops"], redirects["AynRand"]["hops"]) == (2, 1)


def _page_rows(paths: SnapshotPaths) -> list[dict]:
    return [{k: v for k, v in page.items()} for page in iter_pages(paths)]


def test_multistream_parallel_equals_sequential(built_excerpt, tmp_path: Path, excerpt: Path) -> None:
    """Stream groups of a multistream dump are decompressed and parsed by the workers; the result is
    the same as reading the dump sequentially. Streams that cut pages in half fall back to sequential."""
    paths, report = built_excerpt
    xml = read_xml(excerpt)
    aligned = write_multistream(tmp_path / "enwiki-20160501-pages-articles-multistream.xml.bz2", xml, 10)
    parallel = build_knowledge_source(
        aligned,
        tmp_path / "p",
        ParseSettings(KnowledgeSourceParams(snapshot="p", workers=2), fragment_bytes=1),
        progress=False,
    )
    assert parallel.compression.startswith("bz2 multistream (23 streams")
    misaligned = write_dump(tmp_path / "cut.xml.bz2", xml, "bz2", streams=9)
    # streams that cut pages (pbzip2) are not cut into parse steps either: the file is read in order
    assert [p.streams for p in plan_dump_parts(misaligned, tmp_path / "x", part_bytes=1).parts] == [None]
    fallback = build_knowledge_source(
        misaligned,
        tmp_path / "f",
        ParseSettings(KnowledgeSourceParams(snapshot="f", workers=2), fragment_bytes=1),
        progress=False,
    )
    assert fallback.compression == "bz2"
    expected = _page_rows(paths)
    for other, rep in (
        (SnapshotPaths(tmp_path / "p", "p"), parallel),
        (SnapshotPaths(tmp_path / "f", "f"), fallback),
    ):
        assert _page_rows(other) == expected
        assert (rep.pages_read, rep.articles, rep.redirects, rep.skipped) == (
            report.pages_read,
            report.articles,
            report.redirects,
            report.skipped,
        )
        assert (
            pq.read_table(other.redirects_file).to_pylist() == pq.read_table(paths.redirects_file).to_pylist()
        )
        assert json.loads(other.manifest_file.read_text())["max_revision_timestamp"] == "2016-05-01T07:08:29Z"


def test_a_stream_group_that_expands_past_its_bound_is_an_error_naming_it(
    tmp_path: Path, excerpt: Path
) -> None:
    """A bz2 bomb inside a multistream dump: one real page whose text is its own text repeated to 10 MiB
    (a few tens of kB compressed). The page alone would be skipped as too large, but its stream group is
    held whole to be parsed: past ``knowledge_source.max_group_bytes`` the build stops, naming the file,
    the group's compressed range and the setting, before holding more; within the bound it builds."""
    head, pages, tail = split_dump(read_xml(excerpt))
    page = page_with_title(pages, "Albedo")
    text = re.search(rb"<text[^>]*>(.*?)</text>", page, re.DOTALL).group(1)
    bomb = set_text(page, text * (10 * 2**20 // len(text)))
    xml = head + b"".join(bomb if p is page else p for p in pages) + tail
    dump = write_multistream(tmp_path / "enwiki-20160501-pages-articles-multistream.xml.bz2", xml, 10)
    assert dump.stat().st_size < len(xml) / 8

    def build(bound: int, out: str) -> object:
        section = KnowledgeSourceParams(snapshot=out, workers=2, max_group_bytes=bound)
        return build_knowledge_source(dump, tmp_path / out, ParseSettings(section), progress=False)

    with pytest.raises(DumpFormatError) as raised:
        build(4 * 2**20, "small")
    message = str(raised.value)
    assert str(dump) in message and "knowledge_source.max_group_bytes" in message
    assert re.search(r"compressed bytes [\d,]+-[\d,]+ expand past 4,194,304 bytes", message), message
    report = build(64 * 2**20, "large")
    assert report.skipped["page_too_large"] == 1 and report.articles == 105


def test_parse_steps_resume_and_redo_what_changed(
    built_excerpt, tmp_path: Path, excerpt: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A multistream file is cut into parse steps of about ``part_bytes`` that tile it. A step an earlier
    (failed) build finished is kept; one whose settings differ is parsed again; the snapshot equals the
    sequential build and the parts' scratch folder goes once it is published."""
    paths, _ = built_excerpt
    dump = write_multistream(
        tmp_path / "enwiki-20160501-pages-articles-multistream.xml.bz2", read_xml(excerpt), 10
    )
    data_dir = tmp_path / "data"
    settings = ParseSettings(fragment_bytes=1)
    plan = plan_dump_parts(dump, data_dir, settings, part_bytes=200_000)
    parts = plan.parts
    assert len(parts) >= 4 and all(part.streams for part in parts)
    assert [p.start for p in parts[1:]] == [p.end for p in parts[:-1]] and parts[
        -1
    ].end == dump.stat().st_size
    assert sum(len(part.streams or []) for part in parts) == 23
    assert DumpPart.from_dict(json.loads(json.dumps(parts[1].to_dict()))) == parts[1]  # step values are JSON

    assert not parse_dump_part(parts[0]).resumed  # an earlier build got this far, then failed
    assert plan_dump_parts(dump, data_dir, settings, part_bytes=200_000).parts == parts
    assert parse_dump_part(parts[0]).resumed
    changed = plan_dump_parts(
        dump,
        data_dir,
        ParseSettings(KnowledgeSourceParams(rows_per_shard=7), fragment_bytes=1),
        part_bytes=200_000,
    )
    assert changed.parts[0].key != parts[0].key and read_parsed_part(changed.parts[0]) is None

    parsed_groups: list[int] = []
    read_xml_part = READERS[XML_FORM]

    def counting(part, *args):  # type: ignore[no-untyped-def]
        parsed_groups.append(part.index)
        return read_xml_part(part, *args)

    monkeypatch.setitem(READERS, XML_FORM, counting)  # every step reads through its form's reader
    report = build_knowledge_source(
        dump,
        data_dir,
        ParseSettings(
            KnowledgeSourceParams(snapshot="steps", workers=0, part_bytes=200_000), fragment_bytes=1
        ),
        progress=False,
    )
    assert parsed_groups == list(range(1, len(parts)))  # part 0 was kept
    assert report.compression == f"bz2 multistream (23 streams in {len(parts)} parse steps)"
    assert _page_rows(SnapshotPaths(data_dir, "steps")) == _page_rows(paths)
    assert not (data_dir / "snapshots" / ".parse").exists()
