"""Passages over every page of the real excerpt: exact coordinates, no loss, limits, outputs, checks."""

from __future__ import annotations

import csv
import json

import pyarrow.parquet as pq
import pytest

from assets.segmentation import count_words, has_unspaced
from assets.wikipedia import checks
from assets.wikipedia.articles import bullet_marker_end
from assets.wikipedia.pages import iter_pages
from assets.wikipedia.passages import PASSAGES_SCHEMA, SECTION_PREFIX, chunk_page, content_bounds


def referenced_text(page_text: list[str], passage, mode: str) -> str:
    """The passage rebuilt from its coordinates alone: slices joined by single spaces."""
    slices = []
    for paragraph_id in range(passage.start_paragraph_id, passage.end_paragraph_id + 1):
        paragraph = page_text[paragraph_id]
        if paragraph.startswith(SECTION_PREFIX) or (mode == "dpr" and bullet_marker_end(paragraph)):
            continue
        start, end = content_bounds(paragraph)
        if paragraph_id == passage.start_paragraph_id:
            start = passage.start_character
        if paragraph_id == passage.end_paragraph_id:
            end = passage.end_character
        if start < end:
            slices.append(paragraph[start:end])
    return " ".join(slices)


def eligible_words(page_text: list[str], mode: str) -> list[str]:
    words = []
    for paragraph in page_text[1:]:
        if paragraph.startswith(SECTION_PREFIX) or (mode == "dpr" and bullet_marker_end(paragraph)):
            continue
        start, end = content_bounds(paragraph)
        words += paragraph[start:end].split()
    return words


@pytest.mark.parametrize(("mode", "max_words"), [("kilt", 100), ("dpr", 100), ("kilt", 20), ("dpr", 7)])
def test_invariants_over_every_passage(built_excerpt, mode: str, max_words: int) -> None:
    paths, _ = built_excerpt
    total = 0
    for page in iter_pages(paths):
        text = page["text"]
        passages = chunk_page(
            page["wikipedia_id"], page["wikipedia_title"], text, max_words=max_words, mode=mode
        )
        total += len(passages)
        assert [p.passage_id for p in passages] == [
            f"{page['wikipedia_id']}-{i}" for i in range(len(passages))
        ]
        for passage in passages:
            assert passage.text == referenced_text(text, passage, mode)
            assert 1 <= passage.word_count == count_words(passage.text) <= max_words
            assert passage.title == page["wikipedia_title"]
            if mode == "kilt":  # never crosses a section boundary
                inner = text[passage.start_paragraph_id : passage.end_paragraph_id + 1]
                assert not any(t.startswith(SECTION_PREFIX) for t in inner)
        # nothing truncated or dropped: the passages' characters are the page's, in order (a word of an
        # unspaced script may end inside a whitespace token: "算盤," is two words)
        assert "".join("".join(p.text.split()) for p in passages) == "".join(eligible_words(text, mode))
        if not any(has_unspaced(p.text) for p in passages):
            assert [w for p in passages for w in p.text.split()] == eligible_words(text, mode)
            if mode == "dpr":  # disjoint N-word blocks; only an article's last block may be shorter
                assert all(p.word_count == max_words for p in passages[:-1])
    assert total > 4000


def test_sections_and_lists(built_excerpt) -> None:
    paths, _ = built_excerpt
    einstein = next(p for p in iter_pages(paths) if p["wikipedia_title"] == "Albert Einstein")
    kilt = chunk_page("736", "Albert Einstein", einstein["text"], mode="kilt")
    assert kilt[0].section == "Section::::Abstract."
    assert any(p.section.startswith("Section::::Biography.:") for p in kilt)
    assert not any(p.text.startswith(("Section::::", "BULLET::::")) for p in kilt)
    bullets = [i for i, t in enumerate(einstein["text"]) if bullet_marker_end(t)]
    assert any(p.start_paragraph_id <= bullets[0] <= p.end_paragraph_id for p in kilt)  # lists kept
    dpr = chunk_page("736", "Albert Einstein", einstein["text"], mode="dpr")
    assert not any(
        p.start_paragraph_id == b or p.end_paragraph_id == b for p in dpr for b in bullets
    )  # lists excluded


def test_numbered_list_items_are_text_without_their_marker(built_excerpt) -> None:
    """KILT's "BULLET::::1. " marker is markup, as "BULLET::::- " is: kept out of passages (kilt mode), and
    numbered items are dropped with the other list items (dpr mode)."""
    paths, _ = built_excerpt
    page = next(p for p in iter_pages(paths) if p["wikipedia_title"] == "Affirming the consequent")
    numbered = [i for i, t in enumerate(page["text"]) if t.startswith("BULLET::::1. ")]
    assert numbered
    kilt = chunk_page(page["wikipedia_id"], page["wikipedia_title"], page["text"], mode="kilt")
    assert not any("BULLET::::" in p.text for p in kilt)
    first = page["text"][numbered[0]]
    assert any(first[len("BULLET::::1. ") :].strip() in p.text for p in kilt)
    dpr = chunk_page(page["wikipedia_id"], page["wikipedia_title"], page["text"], mode="dpr")
    assert not any(p.start_paragraph_id == n or p.end_paragraph_id == n for p in dpr for n in numbered)


def test_long_paragraph_split_at_word_boundaries(built_excerpt) -> None:
    paths, _ = built_excerpt
    page = next(p for p in iter_pages(paths) if p["wikipedia_title"] == "Anarchism")
    long_id = next(i for i, t in enumerate(page["text"]) if len(t.split()) > 100 and i > 0)
    pieces = [
        p
        for p in chunk_page("12", "Anarchism", page["text"])
        if p.start_paragraph_id <= long_id <= p.end_paragraph_id
    ]
    assert len(pieces) >= 2
    paragraph = page["text"][long_id]
    inside = [p for p in pieces if p.start_paragraph_id == p.end_paragraph_id == long_id]
    assert inside
    for piece in inside:  # a piece starts at a word's first character and ends after a word's last one
        start, end = piece.start_character, piece.end_character
        assert not paragraph[start].isspace() and (start == 0 or paragraph[start - 1].isspace())
        assert not paragraph[end - 1].isspace() and (end == len(paragraph) or paragraph[end].isspace())


def test_bad_mode_and_limit() -> None:
    with pytest.raises(ValueError, match="unknown passage mode 'bm25'"):
        chunk_page("1", "T", ["T\n", "x\n"], mode="bm25")
    with pytest.raises(ValueError, match="max_words must be >= 1"):
        chunk_page("1", "T", ["T\n", "x\n"], max_words=0)


def test_outputs_agree(built_store) -> None:
    paths, report = built_store
    table = pq.read_table(paths.passages_parquet)
    assert table.schema.names == PASSAGES_SCHEMA.names and table.num_rows == report.passages
    rows = table.to_pylist()
    collection = [
        json.loads(line)
        for f in sorted(paths.passages_collection.glob("*.jsonl"))
        for line in f.read_text().splitlines()
    ]
    assert [c["id"] for c in collection] == [r["passage_id"] for r in rows]
    assert all(c["contents"] == f"{r['title']}\n{r['text']}" for c, r in zip(collection, rows, strict=True))
    with open(paths.passages_tsv, newline="") as handle:
        tsv = list(csv.reader(handle, delimiter="\t"))
    assert tsv[0] == ["id", "text", "title"]
    assert [tuple(t) for t in tsv[1:]] == [(r["passage_id"], r["text"], r["title"]) for r in rows]
    saved = json.loads(paths.passages_report.read_text())
    assert saved["passages"] == report.passages and sum(saved["word_histogram"].values()) == report.passages


def test_checks_pass_and_catch_violations(built_store, tmp_path) -> None:
    paths, _ = built_store
    assert checks.no_empty_passage(paths).passed
    assert checks.no_passage_over_limit(paths, 100).passed
    assert not checks.no_passage_over_limit(paths, 50).passed  # the check recounts words
    assert checks.passage_ids_unique(paths).passed
    assert checks.every_page_has_passage(paths, "kilt").passed
