"""Real Japanese, Thai and Chinese Wikipedia text through the pipeline: the head of a 2022 jawiki dump
builds with the defaults (its passage checks used to fail), a Thai page whose dump calls itself enwiki is
built as Thai with BM25 over ICU's words, and a Chinese question in Traditional characters finds what its
Simplified twin finds."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import opencc
import pytest

from assets.indexes.bm25 import Bm25Searcher
from assets.input_forms import ENTERPRISE_FORM
from assets.segmentation import UNSPACED, count_words, has_unspaced
from assets.storage import SnapshotPaths
from support.dump_variants import JAWIKI_HEAD, MULTILINGUAL_BERLIN, complete_pages, read_xml, write_dump
from support.enterprise_dump import mobile_html_page, page_records, write_enterprise_dump
from support.real_data import real_file

ZH_MOBILE_HTML = ("wikipedia_multilingual", "zh", "mobileapps-mobile-html-zhwiki-67486205.html")


def _build(kiltpipe, data: Path, dump: Path, *extra: str) -> dict:
    code, out, err = kiltpipe(
        "build", "--data-dir", data, "--dump", dump, "--quiet", "--select", "+key:bm25_index", *extra
    )
    assert code == 0, err
    summary = json.loads(out)
    assert summary["success"] and all(c["passed"] for c in summary["checks"].values()), summary["checks"]
    return {**summary, "stderr": err}


def _passages(paths: SnapshotPaths) -> list[dict]:
    import pyarrow.parquet as pq

    return [
        row
        for part in sorted(paths.passages_parquet.glob("*.parquet"))
        for row in pq.read_table(part).to_pylist()
    ]


def test_real_jawiki_head_builds_with_the_defaults(kiltpipe, tmp_path: Path) -> None:
    """168 complete articles of a real jawiki dump: every check green (no_passage_over_limit recounts with
    the chunker's own counter), passages of ~100 Japanese words, and an article's title finds it first."""
    dump = write_dump(
        tmp_path / "jawiki-20220720-pages-articles.xml.bz2",
        complete_pages(read_xml(real_file(*JAWIKI_HEAD))),
        "bz2",
    )
    data = tmp_path / "data"
    summary = _build(kiltpipe, data, dump)
    assert summary["snapshot_id"] == "jawiki-20220720"
    assert any("no_passage_over_limit" in name for name in summary["checks"])
    paths = SnapshotPaths(data, summary["snapshot_id"])
    manifest = json.loads(paths.manifest_file.read_text())
    assert manifest["language"] == "ja" and manifest["language_check"]["source"] == "label"
    passages = _passages(paths)
    japanese = [p for p in passages if len(UNSPACED.findall(p["text"])) > 0.5 * len(p["text"])]
    assert 0.6 * 170 <= statistics.median(len(p["text"]) for p in japanese) <= 1.4 * 170
    titles = sorted({p["title"] for p in passages})[:60]
    with Bm25Searcher(paths.bm25_index) as searcher:
        first = [searcher.search(title, k=1) for title in titles]
    found = sum(1 for title, hits in zip(titles, first, strict=True) if hits and hits[0].title == title)
    assert found >= 0.9 * len(titles), found


def test_a_thai_page_labelled_enwiki_is_built_as_thai(
    kiltpipe, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The real thwiki page เบอร์ลิน in a dump whose siteinfo says enwiki: the mislabel is said once, the
    snapshot is Thai, BM25 indexes every passage (Anserini's Thai analyzer indexed none on this JRE) and a
    sentence of the page finds the page's passage."""
    dump = tmp_path / "dbpedia-minidump-th-berlin.xml.bz2"
    dump.write_bytes(real_file(*MULTILINGUAL_BERLIN["th"]).read_bytes())
    data = tmp_path / "data"
    summary = _build(kiltpipe, data, dump, "--snapshot", "thwiki-20210902")
    assert (
        "".join(r.getMessage() for r in caplog.records).count(
            "says it is language 'en', but its first pages are mostly thai script"
        )
        == 1
    )
    paths = SnapshotPaths(data, "thwiki-20210902")
    check = json.loads(paths.manifest_file.read_text())["language_check"]
    assert (check["label"], check["detected"], check["language"], check["source"]) == (
        "en",
        "th",
        "th",
        "scripts",
    )
    bm25 = summary["assets"]["bm25_index"]
    passages = _passages(paths)
    assert bm25["documents"] == len(passages) > 50
    assert (bm25["language"], bm25["requested_language"]) == ("whitespace", "th")
    thai = [
        p
        for p in passages
        if len(UNSPACED.findall(p["text"])) > 0.8 * len(p["text"]) and len(p["text"]) > 200
    ]
    texts = {p["passage_id"]: p["text"] for p in passages}
    hit_in_top5 = 0
    with Bm25Searcher(paths.bm25_index) as searcher:
        for passage in thai[:20]:
            sentence = passage["text"].split(" ")[0][:80]  # a Thai clause, no space inside
            hits = searcher.search(sentence, k=5)
            hit_in_top5 += any(h.passage_id == passage["passage_id"] for h in hits)
            assert all(
                h.text == texts[h.passage_id] for h in hits
            )  # the original text, not the index's words
    assert hit_in_top5 >= 0.9 * len(thai[:20])


def test_traditional_and_simplified_questions_find_the_same_passages(kiltpipe, tmp_path: Path) -> None:
    """Sentences of the real zhwiki page 柏林 (in a dump labelled enwiki), asked in Traditional (zh_tw,
    zh_hk) and in Simplified (zh_cn) characters, share at least 0.8 of their top 10."""
    dump = tmp_path / "dbpedia-minidump-zh-berlin.xml.bz2"
    dump.write_bytes(real_file(*MULTILINGUAL_BERLIN["zh"]).read_bytes())
    data = tmp_path / "data"
    _build(kiltpipe, data, dump, "--snapshot", "zhwiki-20210914")
    paths = SnapshotPaths(data, "zhwiki-20210914")
    index = paths.bm25_index
    assert json.loads(paths.manifest_file.read_text())["language"] == "zh"
    to_traditional = opencc.OpenCC("s2twp.json").convert
    to_simplified = opencc.OpenCC("t2s.json").convert
    passages = [p for p in _passages(paths) if len(p["text"]) > 60][:25]
    overlaps = []
    with Bm25Searcher(index) as searcher:
        for passage in passages:
            question = passage["text"][:40]
            traditional, simplified = to_traditional(question), to_simplified(question)
            assert traditional != simplified or question.isascii()
            a = [h.passage_id for h in searcher.search(traditional, k=10)]
            b = [h.passage_id for h in searcher.search(simplified, k=10)]
            overlaps.append(len(set(a) & set(b)) / max(len(b), 1))
            assert passage["passage_id"] in a[:3]
    assert statistics.mean(overlaps) >= 0.8, overlaps


def test_the_html_route_cuts_and_indexes_a_chinese_page_the_same_way(kiltpipe, tmp_path: Path) -> None:
    """The real zhwiki page 天囷增十五 as Parsoid mobile HTML, in an Enterprise-shaped record made from it:
    passages of Chinese words (recounted), a Simplified BM25 index (the page is written for zh-tw), and
    the page's own sentence asked in Simplified characters finds it."""
    page = mobile_html_page(real_file(*ZH_MOBILE_HTML))
    dump = write_enterprise_dump(
        tmp_path / "zhwiki-NS0-20210902-ENTERPRISE-HTML.json.tar.gz", page_records("zhwiki", [page])
    )
    data = tmp_path / "data"
    summary = _build(kiltpipe, data, dump)
    paths = SnapshotPaths(data, summary["snapshot_id"])
    manifest = json.loads(paths.manifest_file.read_text())
    assert (manifest["route"], manifest["language"]) == (ENTERPRISE_FORM, "zh")
    passages = _passages(paths)
    assert passages and all(p["word_count"] == count_words(p["text"]) <= 100 for p in passages)
    chinese = [p for p in passages if has_unspaced(p["text"])]
    assert chinese and max(len(p["text"]) for p in chinese) < 400  # Chinese words, not a section
    assert summary["assets"]["bm25_index"]["analysis"] == "simplified"
    longest = max(chinese, key=lambda p: len(p["text"]))
    question = opencc.OpenCC("t2s.json").convert(longest["text"][:30])
    with Bm25Searcher(paths.bm25_index) as searcher:
        hits = searcher.search(question, k=3)
    assert hits and hits[0].passage_id == longest["passage_id"] and hits[0].text == longest["text"]
