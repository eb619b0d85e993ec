"""Every MKQA language with a real Wikipedia page in ``tests/data`` gets that page indexed by its own BM25
analysis and found by its title (issue 62): zh, ja, th, ko, ar (the shared "Berlin" pages; my too, which
MKQA lacks), de, fr, es, it, pt, en (real Parsoid documents), ru (a real Enterprise record). All pages go
into each language's index, so a title is found among the other languages' pages, by that language's
analyzer (Anserini's, or ICU's words pre-tokenized for th and my, Simplified folding for zh).

MKQA's other twelve languages (da, fi, he, hu, km, ms, nl, no, pl, sv, tr, vi) have no Wikipedia page in the
shared data this project may read: each gets the page a real Wikidata entity shipped with the package
(``assets/wikidata/fixtures``) has on that wiki, its text the entity's label, description and aliases in
that language as Wikidata's editors wrote them (short: a title and a line or two, not an article)."""

from __future__ import annotations

import html
import json
from functools import cache
from pathlib import Path

import pytest

from assets.indexes.bm25 import Bm25Searcher, build_bm25_index
from assets.languages import MKQA_BY_CODE, mkqa_codes_for
from assets.wikidata.build import embedded_entity_files
from assets.wikidata.reader import EntityTerms, aliases, iter_entities, sitelink_title, term
from assets.wikipedia.html import parse_parsoid_html
from assets.wikipedia.passages import chunk_page
from assets.wikipedia.wikitext import parse_wikitext
from support.dump_variants import MULTILINGUAL_BERLIN, field, first_articles, read_xml, split_dump
from support.enterprise_dump import parsoid_pages, real_records
from support.real_data import real_file

PARSOID_MORE = {
    "es": ("wikipedia_multilingual", "es", "parsoid-eswiki-Grecia.html"),
    "it": ("wikipedia_multilingual", "it", "parsoid-itwiki-Matrioska.html"),
    "pt": ("wikipedia_multilingual", "pt", "parsoid-ptwiki-O.html"),
}
TITLES = {"es": "Grecia", "it": "Matrioska", "pt": "O"}
WIKIDATA_PAGES = {
    "da": "Q1", "fi": "Q167", "he": "Q160", "hu": "Q1", "km": "Q145", "ms": "Q328", "nl": "Q145",
    "no": "Q1521", "pl": "Q45", "sv": "Q35", "tr": "Q2013", "vi": "Q869",
}  # fmt: skip
"""Per language without a Wikipedia page here, the entity whose page on that wiki stands in for one (among
the entities with a sitelink and a label there, one with a description; titles distinct)."""
TERM_LANGUAGE = {"no": "nb"}
"""Wikidata's term language of a wiki's language where the two differ (nowiki is written in Bokmål)."""


def _wikidata_pages() -> dict[str, tuple[str, list[str]]]:
    """``{language: (title, text)}``: the entity's page title on ``<language>wiki``, its text the entity's
    label, description and aliases in that language."""
    wanted = set(WIKIDATA_PAGES.values())
    entities: dict[str, EntityTerms] = {}
    for path in embedded_entity_files():
        if path.name.endswith((".json.bz2", ".ndjson.bz2", ".json.gz")):
            for entity in iter_entities(path, EntityTerms):
                if entity.id in wanted:
                    entities.setdefault(entity.id, entity)  # the first read of an entity wins, as in a build
    pages: dict[str, tuple[str, list[str]]] = {}
    for language, qid in WIKIDATA_PAGES.items():
        entity, lang = entities[qid], TERM_LANGUAGE.get(language, language)
        title = sitelink_title(entity.sitelinks, f"{language}wiki")
        lines = [term(entity.labels, lang), term(entity.descriptions, lang), *aliases(entity.aliases, lang)]
        assert title and lines[0], (language, qid)
        pages[language] = (title, [title, *(line for line in lines if line)])
    return pages


@cache
def _pages() -> dict[str, tuple[str, list[str]]]:
    """``{language: (title, KILT text)}`` of one real page per language."""
    pages: dict[str, tuple[str, list[str]]] = {}
    for language, parts in MULTILINGUAL_BERLIN.items():
        _, [page, *_], _ = split_dump(first_articles(read_xml(real_file(*parts)), 1))
        title = field(page, "title")
        wikitext = page.split(b"<text", 1)[1].split(b">", 1)[1].rsplit(b"</text>", 1)[0].decode()
        pages[language] = (title, parse_wikitext(title, html.unescape(wikitext)).text)
    for wiki, language in (("dewiki", "de"), ("frwiki", "fr"), ("enwiki", "en")):
        page = parsoid_pages(wiki)[0]
        pages[language] = (page["title"], parse_parsoid_html(page["title"], page["html"]).text)
    for language, parts in PARSOID_MORE.items():
        html_text = real_file(*parts).read_text(encoding="utf-8")  # stored .xz, unpacked as published
        pages[language] = (TITLES[language], parse_parsoid_html(TITLES[language], html_text).text)
    ru = next(r for r in real_records() if r["is_part_of"]["identifier"] == "ruwiki")
    pages["ru"] = (ru["name"], parse_parsoid_html(ru["name"], ru["article_body"]["html"]).text)
    return pages | _wikidata_pages()


@pytest.fixture(scope="module")
def collection(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every page's passages, one JSONL collection (``id``: ``<language>-<n>``)."""
    folder = tmp_path_factory.mktemp("multilingual") / "collection"
    folder.mkdir()
    with open(folder / "part-00000.jsonl", "w", encoding="utf-8") as sink:
        for language, (title, text) in _pages().items():
            for passage in chunk_page(language, title, text):
                record = {"id": f"{language}-{passage.passage_id}", "contents": f"{title}\n{passage.text}"}
                sink.write(json.dumps(record, ensure_ascii=False) + "\n")
    return folder


LANGUAGES = ["zh", "ja", "th", "ko", "ar", "my", "de", "fr", "es", "it", "pt", "en", "ru", *WIKIDATA_PAGES]


def test_every_mkqa_language_has_a_page_here() -> None:
    assert {MKQA_BY_CODE[code].wiki_language for code in MKQA_BY_CODE} <= set(LANGUAGES)


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_real_page_is_found_by_its_title_with_its_languages_analysis(
    collection: Path, language: str
) -> None:
    assert language == "my" or mkqa_codes_for(language), language  # an MKQA language (Burmese: not in MKQA)
    index = collection.parent / f"bm25-{language}"
    report = build_bm25_index(collection, index, language=language, progress=False)
    assert report.documents_indexed == report.collection_documents  # nothing lost (Thai: 0 before)
    title, text = _pages()[language]
    # the title asked; ptwiki's page "O" (the letter) is a Portuguese stopword: its first words are asked
    query = " ".join(text[1].split()[:8]) if language == "pt" else title
    with Bm25Searcher(index) as searcher:
        hits = searcher.search(query, k=3)
    assert hits and hits[0].passage_id.startswith(f"{language}-"), (query, [h.passage_id for h in hits])
    assert language not in MKQA_BY_CODE or MKQA_BY_CODE[language].analyzer == report.language
