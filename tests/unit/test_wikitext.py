"""Tests for ``assets.wikipedia.wikitext.convert`` on real dump pages (tests/data) plus small unit cases.

Edge cases are derived from real page text (cut templates, injected control characters, ...);
literal wikitext only appears in one-construct unit tests. ``run_benchmark()`` at the bottom is a
timing script, not a test: ``.venv/bin/python -m tests.unit.test_wikitext``.
"""

from __future__ import annotations

import bz2
import random
import re
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from assets.wikipedia.articles import Anchor, ParsedArticle
from assets.wikipedia.wikitext import (
    DEFAULT_CATEGORY_PREFIXES,
    DEFAULT_FILE_PREFIXES,
    RESIDUAL_MARKERS,
    has_residual_markup,
    parse_wikitext,
    plain_text,
)
from support.real_data import real_file

EXCERPT = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
OTHER_DUMPS = (
    "gensim_enwiki-table-markup.xml.bz2",
    "wikipedia2vec_enwiki-pages-articles-sample.xml.bz2",
    "pywikibot_article-pear-0.10.xml",
)
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")  # the parser's sentinels are C0 controls


# ------------------------------------------------------------------------------------ data helpers
def _dump_path(name: str) -> Path:
    return real_file("wikipedia", name)


def _iter_pages(path: Path) -> Iterator[dict[str, str]]:
    """Yield ``{"title", "ns", "text"}`` per ``<page>`` (namespaces stripped)."""
    opener = bz2.open if path.suffix == ".bz2" else open
    with opener(path, "rb") as fh:
        page: dict[str, str] = {}
        for _, elem in ET.iterparse(fh, events=("end",)):
            tag = elem.tag.rsplit("}", 1)[-1]
            if tag in ("title", "ns", "text"):
                page[tag] = elem.text or ""
            elif tag == "page":
                yield page
                page = {}
                elem.clear()


def _articles(path: Path) -> list[tuple[str, str]]:
    """Non-redirect namespace-0 pages as ``(title, wikitext)``."""
    return [
        (p["title"], p["text"])
        for p in _iter_pages(path)
        if p.get("ns", "0") == "0" and not p.get("text", "").lstrip().upper().startswith("#REDIRECT")
    ]


@pytest.fixture(scope="module")
def excerpt_articles() -> list[tuple[str, str]]:
    articles = _articles(_dump_path(EXCERPT))
    assert len(articles) == 106
    return articles


@pytest.fixture(scope="module")
def wikitext_of(excerpt_articles: list[tuple[str, str]]) -> dict[str, str]:
    return dict(excerpt_articles)


@pytest.fixture(scope="module")
def parsed(excerpt_articles: list[tuple[str, str]]) -> dict[str, ParsedArticle]:
    return {title: parse_wikitext(title, text) for title, text in excerpt_articles}


@pytest.fixture(scope="module")
def parsed_clean(excerpt_articles: list[tuple[str, str]]) -> dict[str, ParsedArticle]:
    """The excerpt in the ``clean`` text style (the default, ``kilt``, is in ``parsed``)."""
    return {title: parse_wikitext(title, text, style="clean") for title, text in excerpt_articles}


@pytest.fixture(scope="module")
def all_parsed(parsed: dict[str, ParsedArticle]) -> dict[str, tuple[str, ParsedArticle]]:
    """``{dump:title: (title, result)}`` for the excerpt plus the other real sample dumps."""
    out = {f"{EXCERPT}:{title}": (title, art) for title, art in parsed.items()}
    for name in OTHER_DUMPS:
        for title, text in _articles(_dump_path(name)):
            out[f"{name}:{title}"] = (title, parse_wikitext(title, text))
    return out


def _check_article(title: str, art: ParsedArticle) -> None:
    """Format and anchor invariants that every result must satisfy."""
    assert art.text[0] == title + "\n"
    for entry in art.text:
        assert entry.endswith("\n") and entry.count("\n") == 1, repr(entry)
        assert entry.strip(), repr(entry)
        assert entry == entry.lstrip(), repr(entry)
        assert not _CONTROL.search(entry), repr(entry)
    for anchor in art.anchors:
        assert isinstance(anchor, Anchor)
        assert 1 <= anchor.paragraph_id < len(art.text), anchor
        assert art.text[anchor.paragraph_id][anchor.start : anchor.end] == anchor.text, anchor
        assert anchor.text and anchor.text == anchor.text.strip(), anchor
        assert anchor.target and not _CONTROL.search(anchor.target + anchor.text), anchor
    assert len(art.categories) == len(set(art.categories))


def _line_containing(wikitext: str, needle: str) -> str:
    return next(line for line in wikitext.split("\n") if needle in line)


def _paragraph_containing(wikitext: str, needle: str) -> str:
    """The blank-line-delimited block of real wikitext that contains ``needle``."""
    return next(block for block in wikitext.split("\n\n") if needle in block)


# ----------------------------------------------------------------------------- whole-corpus checks
def test_residual_markup_rate(parsed: dict[str, ParsedArticle]) -> None:
    paragraphs = [p for art in parsed.values() for p in art.text[1:]]
    residual = [p for p in paragraphs if has_residual_markup(p)]
    clean = 1 - len(residual) / len(paragraphs)
    print(f"\nresidual-free paragraphs: {clean:.4%} ({len(residual)} of {len(paragraphs)} with markup)")
    assert len(paragraphs) > 10_000
    assert clean >= 0.995, residual[:5]


def test_invariants_on_all_real_pages(all_parsed: dict[str, tuple[str, ParsedArticle]]) -> None:
    anchors = 0
    for key, (title, art) in all_parsed.items():
        _check_article(title, art)
        anchors += len(art.anchors)
        assert len(art.text) > 1, key
    assert anchors > 20_000


def test_no_wiki_syntax_leaks(parsed: dict[str, ParsedArticle]) -> None:
    """File options, category links and ref tags never reach the text."""
    leak = re.compile(r"\bthumb\||\|thumb\b|\d+px\||\[\[(?:File|Image|Category):|</?ref\b", re.I)
    for title, art in parsed.items():
        for entry in art.text:
            assert not leak.search(entry), (title, entry)


# ------------------------------------------------------------------------------------ spot checks
def test_anarchism(parsed: dict[str, ParsedArticle]) -> None:
    art = parsed["Anarchism"]
    assert art.text[1].startswith(
        "Anarchism is a political philosophy that advocates self-governed societies"
    )
    first = [a for a in art.anchors if a.paragraph_id == 1]
    assert first[0] == Anchor(1, 15, 35, "political philosophy", "political philosophy")
    assert Anchor(1, 51, 64, "self-governed", "self-governance") in first
    assert art.categories[:3] == ["Anarchism", "Political culture", "Political ideologies"]
    assert not art.is_disambiguation
    # nested headers carry their path; "References" only holds {{Reflist}} and disappears
    assert "Section::::History.\n" in art.text
    assert "Section::::History.:Origins.\n" in art.text
    assert (
        "Section::::Anarchist schools of thought.:Classical anarchist schools of thought.:Social anarchism."
        ":Anarcho-communism.\n"
    ) in art.text
    assert "Section::::References.\n" not in art.text
    # a header is followed by its content, never by another header of the same or a higher level
    idx = art.text.index("Section::::History.\n")
    assert art.text[idx + 1] == "Section::::History.:Origins.\n"
    assert art.text[idx + 2].startswith("The earliest anarchist themes")


def test_link_trail_in_real_text(
    parsed: dict[str, ParsedArticle], parsed_clean: dict[str, ParsedArticle]
) -> None:
    # "[[strikebreaker]]s" in Anarchism: KILT's anchor stops before the trail, the clean style's covers it
    (kilt,) = [a for a in parsed["Anarchism"].anchors if a.target == "strikebreaker"]
    assert kilt.text == "strikebreaker"
    assert parsed["Anarchism"].text[kilt.paragraph_id][kilt.start : kilt.end + 1] == "strikebreakers"
    (clean,) = [a for a in parsed_clean["Anarchism"].anchors if a.target == "strikebreaker"]
    assert clean.text == "strikebreakers"


def test_nested_section_headers_and_bullets(parsed: dict[str, ParsedArticle]) -> None:
    dab = parsed["Aberdeen (disambiguation)"].text
    i = dab.index("Section::::Places.:Africa.:Sierra Leone.\n")
    assert dab[i - 2 : i] == ["Section::::Places.\n", "Section::::Places.:Africa.\n"]
    assert dab[i + 1] == "BULLET::::- Aberdeen, Sierra Leone\n"
    see_also = 0
    for art in parsed.values():
        if "Section::::See also.\n" in art.text:
            nxt = art.text[art.text.index("Section::::See also.\n") + 1]
            see_also += nxt.startswith("BULLET::::- ")
    assert see_also >= 50


def test_bullet_anchor_offsets(parsed: dict[str, ParsedArticle]) -> None:
    art = parsed["Aberdeen (disambiguation)"]
    pid = art.text.index("BULLET::::- Aberdeen, Sierra Leone\n")
    assert Anchor(pid, 12, 34, "Aberdeen, Sierra Leone", "Aberdeen, Sierra Leone") in art.anchors


def test_disambiguation_detection(parsed: dict[str, ParsedArticle]) -> None:
    dabs = {t for t, a in parsed.items() if a.is_disambiguation}
    # title suffix, {{disambiguation}}, {{Disambiguation|geo|hndis}} and {{geodis}}
    assert {"Aberdeen (disambiguation)", "Alien", "Ada", "Aa River"} <= dabs
    assert "Anarchism" not in dabs and "Albert Einstein" not in dabs
    assert len(dabs) <= 10


def test_lang_template_text_kept(parsed: dict[str, ParsedArticle]) -> None:
    # Aikido: "* {{lang|ja|[[wikt:en:合|合]]}}&nbsp;– ''ai''&nbsp;– joining, ..."
    art = parsed["Aikido"]
    pid = art.text.index('BULLET::::- 合 – "ai" – joining, unifying, combining, fitting\n')
    assert Anchor(pid, 12, 13, "合", "wikt:en:合") in art.anchors


def test_tables_removed_from_table_heavy_pages(all_parsed: dict[str, tuple[str, ParsedArticle]]) -> None:
    keys = [k for k in all_parsed if k.startswith("gensim_enwiki-table-markup")]
    assert keys
    for key in keys:
        for entry in all_parsed[key][1].text:
            assert not entry.startswith(("|", "!", "{|")), (key, entry)
            assert "wikitable" not in entry and "style=" not in entry, (key, entry)


# ------------------------------------------------------------- inline templates in real text
def test_rendered_templates_in_real_sentences(
    parsed: dict[str, ParsedArticle], parsed_clean: dict[str, ParsedArticle]
) -> None:
    def entry(title: str, needle: str) -> str:
        return next(p for p in parsed[title].text if needle in p)

    # {{formatnum: 3003}} m (was "Mount Tahat ( m)")
    assert entry("Algeria", "Mount Tahat").endswith("The highest point is Mount Tahat (3,003 m).\n")
    # {{Nihongo|'''Aikido'''|合気道|Aikidō|lead=yes}} (was " is a modern Japanese martial art")
    assert (
        parsed["Aikido"]
        .text[1]
        .startswith("Aikido (合気道, Aikidō) is a modern Japanese martial art developed")
    )
    # {{convert|...}}: plain value, range, mixed units, unit symbols
    assert "At 1300 mi, Alabama has one of the longest navigable inland waterways" in entry(
        "Alabama", "At 1300"
    )
    assert "ranging from 400 to 670 mm annually" in entry("Algeria", "Tell Atlas, ranging")
    assert "would range between 110 and 125 mph." in entry("Andre Agassi", "flat first serve")
    assert "At 6 ft 4 in, he was tall" in entry("Abraham Lincoln", "Illinois General Assembly. At")
    assert "in land area at 663,268 sq mi, over twice the size of Texas" in entry(
        "Alaska", "over twice the size"
    )
    # {{as of}} with lc=y, month names and days
    assert "The next twenty largest employers, as of 2011, included:\n" in parsed["Alabama"].text
    assert entry("Astronaut", "a total of 532").startswith("As of 8 June 2013, a total of 532 people")
    assert "As of 30 June 2015 when the last leap second was added" in entry(
        "International Atomic Time", "leap"
    )
    # {{frac}}, {{smaller}}, {{ill}}, {{transl}}
    assert "CH4 + 3/2 O2 → CO + 2 H2O\n" in parsed_clean["Alkane"].text  # an indented line: not in KILT's
    huxley = parsed["Aldous Huxley"].text
    prize = 'BULLET::::- 1939 James Tait Black Memorial Prize (for "After Many a Summer Dies the Swan")\n'
    assert prize in huxley
    assert "Gotha gymnasium (Gymnasium Ernestinum Gotha) in Saxe-Gotha" in entry(
        "Arthur Schopenhauer", "Gotha"
    )
    assert parsed_clean["Allah"].text[1] == "The word 'Allah' in Arabic calligraphy\n"  # the image caption
    assert parsed_clean["Allah"].text[2].startswith("Allah (الله Allāh) is the Arabic word")
    assert parsed["Allah"].text[1].startswith('Allah (; الله "Allāh", ) is the Arabic word')
    # {{quote|...}} becomes its own entry; links inside it stay anchors
    lincoln = parsed["Abraham Lincoln"].text
    assert any(p.startswith("My paramount object in this struggle is to save the Union") for p in lincoln)
    art = parsed["Anarchism"]
    pid = next(i for i, p in enumerate(art.text) if p.startswith("Louise Michel, the Reclus brothers"))
    assert Anchor(pid, 0, 13, "Louise Michel", "Louise Michel") in art.anchors


def test_date_templates_only_in_infobox_are_dropped(
    parsed: dict[str, ParsedArticle], parsed_clean: dict[str, ParsedArticle], wikitext_of: dict[str, str]
) -> None:
    # Einstein's date templates sit in the infobox (removed whole); his lead writes the dates out.
    source = wikitext_of["Albert Einstein"]
    assert "{{Birth date|df=yes|1879|3|14}}" in source
    assert "}}; 14 March 1879&nbsp;– 18 April 1955) was a German-born" in source  # written out, no template
    text = parsed["Albert Einstein"].text
    # the two pronunciation templates before the dates leave "(; ; " in KILT's style, nothing in the clean one
    assert text[1].startswith("Albert Einstein (; ; 14 March 1879 – 18 April 1955) was a German-born")
    clean = parsed_clean["Albert Einstein"].text[1]
    assert clean.startswith("Albert Einstein (14 March 1879 – 18 April 1955) was a German-born")
    # the infobox's {{nowrap|[[Princeton, New Jersey]], U.S.}} is not rendered on its own
    assert not any("Princeton, New Jersey, U.S." in p for p in text)
    for art in parsed.values():
        for p in art.text:
            assert "birth_date" not in p and "death_place" not in p, p


def test_convert_range_in_other_dump(all_parsed: dict[str, tuple[str, ParsedArticle]]) -> None:
    key = "pywikibot_article-pear-0.10.xml:Pear"
    text = all_parsed[key][1].text  # {{convert|10|–|17|m|ft}} (was "reaching tall")
    assert any("It is a medium-sized tree, reaching 10–17 m tall" in p for p in text)


# ------------------------------------------------------------------- edge cases from real text
def test_unclosed_template_is_bounded(wikitext_of: dict[str, str]) -> None:
    lead = _paragraph_containing(wikitext_of["Anarchism"], "'''Anarchism''' is a")
    second = _line_containing(wikitext_of["Anarchism"], "Anarchism draws on many currents")
    cut = lead.index("{{cite journal") + len("{{cite journal |last=Mal")
    art = parse_wikitext("Anarchism", lead[:cut] + "\n\n" + second)
    _check_article("Anarchism", art)
    assert art.text[1].startswith("Anarchism is a political philosophy")
    assert art.text[-1].startswith("Anarchism draws on many currents")
    assert not any(has_residual_markup(p) for p in art.text)


def test_unclosed_link_ref_and_table(wikitext_of: dict[str, str]) -> None:
    lead = _paragraph_containing(wikitext_of["Anarchism"], "'''Anarchism''' is a")
    second = _line_containing(wikitext_of["Anarchism"], "Anarchism draws on many currents")
    link_cut = lead[: lead.index("[[political philosophy]]") + len("[[political phil")]
    ref_cut = lead[: lead.index("<ref>") + len('<ref>"ANARCHISM, a social')]
    table_line = _line_containing(wikitext_of["ASCII"], '{| class="wikitable"')
    for broken in (link_cut, ref_cut, table_line):
        art = parse_wikitext("Anarchism", broken + "\n\n" + second)
        _check_article("Anarchism", art)
        assert art.text[-1].startswith("Anarchism draws on many currents"), broken[-40:]
        assert not any(has_residual_markup(p) for p in art.text)
    assert parse_wikitext("Anarchism", link_cut).text[1].endswith("political phil\n")


def test_nested_file_caption_removed(wikitext_of: dict[str, str]) -> None:
    text = wikitext_of["Anarchism"]
    line = _line_containing(text, "[[File:WilliamGodwin.jpg")
    assert "[[William Godwin]]" in line  # the caption holds a nested link
    art = parse_wikitext("Anarchism", line + "\n" + _line_containing(text, "Anarchism draws on many"))
    _check_article("Anarchism", art)
    joined = "".join(art.text)
    assert "first to formulate" not in joined and "WilliamGodwin" not in joined
    assert not [a for a in art.anchors if a.target == "William Godwin"]


def test_reserved_characters_in_input(wikitext_of: dict[str, str]) -> None:
    lead = _paragraph_containing(wikitext_of["Anarchism"], "'''Anarchism''' is a")
    noisy = "".join(ch + ("\x01\x02\x03\x05\x07"[i % 5] if i % 97 == 0 else "") for i, ch in enumerate(lead))
    art = parse_wikitext("Anarchism", noisy)
    _check_article("Anarchism", art)
    assert "political philosophy" in [a.text for a in art.anchors]


def test_random_cuts_of_real_pages(excerpt_articles: list[tuple[str, str]]) -> None:
    """Slices and splices of real pages never raise and always satisfy the invariants."""
    rnd = random.Random(7)
    tokens = [
        "{{",
        "}}",
        "[[",
        "]]",
        "{|",
        "|}",
        "<ref>",
        "</ref>",
        "<!--",
        "\n\n",
        "''",
        "[[File:x|",
        "|",
        "=",
    ]
    for _ in range(300):
        _, text = rnd.choice(excerpt_articles)
        start = rnd.randrange(len(text))
        piece = list(text[start : start + rnd.randrange(1, 4000)])
        for _ in range(rnd.randrange(0, 12)):
            piece.insert(rnd.randrange(len(piece) + 1), rnd.choice(tokens))
        _check_article("T", parse_wikitext("T", "".join(piece)))  # no catch-all: an error would surface here


def test_random_cuts_of_rendered_templates(excerpt_articles: list[tuple[str, str]]) -> None:
    """Lines holding real rendered templates (convert, nihongo, quote, ...), cut inside or after them."""
    rnd = random.Random(11)
    start_re = re.compile(
        r"\{\{\s*(?:convert|cvt|nihongo|quote|as of|formatnum|frac|transl|small|lang)\b", re.I
    )
    spots = [(text, m.start()) for _, text in excerpt_articles for m in start_re.finditer(text)]
    assert len(spots) > 500
    for _ in range(300):
        text, pos = rnd.choice(spots)
        line_start = text.rfind("\n", 0, pos) + 1  # the cut only breaks the template and what follows
        piece = text[line_start : pos + rnd.randrange(2, 300)]
        art = parse_wikitext("T", piece)
        _check_article("T", art)
        assert not any("{{" in p or "}}" in p for p in art.text), piece


def test_unexpected_errors_propagate(monkeypatch: pytest.MonkeyPatch, wikitext_of: dict[str, str]) -> None:
    """No catch-all: the caller (convert_batch) counts and names a page that fails to convert."""
    import assets.wikipedia.wikitext.convert as wikitext_module

    def broken(*args: object, **kwargs: object) -> str:
        raise RuntimeError("converter bug")

    monkeypatch.setattr(wikitext_module, "_render_template", broken)
    with pytest.raises(RuntimeError, match="converter bug"):
        parse_wikitext("Aikido", wikitext_of["Aikido"])
    assert parse_wikitext("T", "no templates here").text == ["T\n", "no templates here\n"]


def test_empty_and_degenerate_inputs(wikitext_of: dict[str, str]) -> None:
    assert parse_wikitext("X", "") == ParsedArticle(["X\n"], [], [], False)
    assert parse_wikitext("X", "   \n\n  ").text == ["X\n"]
    reflist_only = _line_containing(wikitext_of["Anarchism"], "{{Reflist")
    assert parse_wikitext("X", "==References==\n" + reflist_only).text == ["X\n"]
    for text in ("{{" * 500, "}}" * 500, "[[" * 500, "<ref>" * 500, "{|\n" * 500, "<!--" * 500):
        _check_article("X", parse_wikitext("X", text))


# -------------------------------------------------------------- one-construct unit tests
def _one(wikitext: str, style: str = "clean") -> str:
    art = parse_wikitext("T", wikitext, style=style)
    assert len(art.text) == 2, art.text
    return art.text[1][:-1]


@pytest.mark.parametrize(
    ("wikitext", "expected"),
    [
        ("a '''bold''' and ''italic'' word", "a bold and italic word"),
        ("[[bus]]es run", "buses run"),
        ("[[Boston, Massachusetts|]] x", "Boston x"),
        ("see [http://example.org the site] and [http://example.org]", "see the site and"),
        ("a<br/>b &amp; c&nbsp;d &ndash; e &#65;", "a b & c d – e A"),
        ("x<sup>2</sup> <span style='a'>y</span> <nowiki>[[z]]</nowiki>", "x2 y [[z]]"),
        ("word {{convert|1|m}}, next {{cite web|x}}.", "word 1 m, next."),
        ("word {{cite web|x}} {{sfn|y}}, next", "word, next"),
        ("Name ({{IPA|/x/}}; born 1900) is", "Name (born 1900) is"),
        ("Name ({{lang-el|}}) is", "Name is"),
        ("{{lang|fr|le texte}}, {{lang-de|Text}} {{nowrap|3 km}}{{'}}", "le texte, Text 3 km'"),
        ("a<ref>r</ref> b<ref name=x/> c<math>x^2</math> d<!-- c --> e __NOTOC__", "a b c d e"),
        ("a [[File:x.jpg|thumb|200px]] b [[Category:C|k]][[fr:A]] [[wikt:w|word]]", "a b word"),
        ("f() and g ( ) h", "f() and g h"),
    ],
)
def test_constructs(wikitext: str, expected: str) -> None:
    assert _one(wikitext) == expected


def test_clean_keeps_captions_and_tables_kilt_drops_them() -> None:
    """What a reader sees: a thumbnail's caption (its own paragraph, options left out) and a table's
    caption and rows in ``clean``; ``kilt`` drops both, as KILT's knowledge source does."""
    wikitext = "a [[File:x.jpg|thumb|200px|alt=x|c [[d]] e]] b\n\n{|\n|+ T\n! H1 !! H2\n|-\n| 1 || 2\n|}\nz"
    clean = parse_wikitext("T", wikitext, style="clean").text[1:]
    assert clean == ["a\n", "c d e\n", "b\n", "T\n", "H1 | H2\n", "1 | 2\n", "z\n"]
    assert parse_wikitext("T", wikitext, style="kilt").text[1:] == ["a b\n", "z\n"]


@pytest.mark.parametrize(
    ("wikitext", "expected"),
    [
        ("a '''bold''' and ''italic'' word", 'a bold and "italic" word'),
        ("'''''both''''' ''\"cited\"'' \"\"twice\"\" ''open", 'both "cited" "twice" "open'),
        ("[[bus]]es run", "buses run"),
        ("word {{convert|1|m}}, next {{cite web|x}}.", "word 1 m, next ."),
        ("word {{cite web|x}} {{sfn|y}}, next", "word , next"),
        ("Name ({{IPA|/x/}}; born 1900) is", "Name (; born 1900) is"),
        ("Name ({{lang-el|}}) is", "Name () is"),
        ("f() and g ( ) h", "f() and g ( ) h"),
        ("a{{x}},{{y}}, b{{z}},. c", "a, b. c"),
    ],
)
def test_constructs_kilt_style(wikitext: str, expected: str) -> None:
    """KILT's conventions (assets.wikipedia.articles.text_styles) on one construct each."""
    assert _one(wikitext, style="kilt") == expected


def test_kilt_link_trail_outside_anchor() -> None:
    art = parse_wikitext("T", "[[bus]]es and [[Tram|the tram]]s")
    assert art.text[1] == "buses and the trams\n"
    assert [(a.start, a.end, a.text) for a in art.anchors] == [(0, 3, "bus"), (10, 18, "the tram")]
    clean = parse_wikitext("T", "[[bus]]es and [[Tram|the tram]]s", style="clean")
    assert [(a.start, a.end, a.text) for a in clean.anchors] == [(0, 5, "buses"), (10, 19, "the trams")]


def test_kilt_numbered_list_items() -> None:
    wikitext = "x\n# a\n# b\n## c\n## d\n# e\n#\n# f\n\n# g\n* h\n: ind\n# i\npara\n# z"
    assert parse_wikitext("T", wikitext).text[2:] == [
        "BULLET::::1. a\n", "BULLET::::2. b\n", "BULLET::::1. c\n", "BULLET::::2. d\n", "BULLET::::3. e\n",
        "BULLET::::4. f\n", "BULLET::::1. g\n", "BULLET::::- h\n", "BULLET::::1. i\n", "para\n",
        "BULLET::::1. z\n",
    ]  # fmt: skip
    assert parse_wikitext("T", wikitext, style="clean").text[2] == "BULLET::::- a\n"


def test_unknown_text_style_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"unknown text style 'kilt2'.*kilt, clean"):
        parse_wikitext("T", "x", style="kilt2")


@pytest.mark.parametrize(
    ("wikitext", "expected"),
    [
        # convert / cvt: input value(s) and unit as written; converted output and named params ignored
        ("{{convert|2908|m}}", "2908 m"),
        ("{{cvt|2908|m|ft|abbr=on}}", "2908 m"),
        ("{{convert|5|to|10|km}}", "5 to 10 km"),
        ("{{convert|3|-|4|ft}}", "3-4 ft"),
        ("{{convert|110|and|125|mph|km/h|abbr=on}}", "110 and 125 mph"),
        ("{{convert|6|ft|4|in|cm|0}}", "6 ft 4 in"),
        ("{{convert|2413|ft|0|abbr=on}}", "2413 ft"),
        ("{{convert|-27|F}} and {{convert|52419|sqmi|km2}}", "-27 °F and 52419 sq mi"),
        ("{{Convert\n |22 |e6acre |km2}}", "22 million acres"),
        ("x ({{convert||m}}) y", "x y"),
        # nihongo family
        ("{{nihongo|English|漢字|rōmaji}}", "English (漢字, rōmaji)"),
        ("{{Nihongo|'''Aikido'''|合気道|Aikidō|lead=yes}}", "Aikido (合気道, Aikidō)"),
        ("{{nihongo|Ukemi|受身}}", "Ukemi (受身)"),
        ("{{nihongo||漢字|rōmaji}}", "漢字 (rōmaji)"),
        ("{{nihongo2|漢字}}", "漢字"),
        ("{{nihongo3|English|漢字|rōmaji}}", "rōmaji (漢字, English)"),
        # formatnum (parser function and template form); nowrap / nobr
        ("{{formatnum:1234}}", "1,234"),
        ("{{formatnum|1234567.25}}", "1,234,567.25"),
        ("({{formatnum: 3003}} m)", "(3,003 m)"),
        ("{{formatnum:-1000}} {{formatnum:999}} {{formatnum:12.88}}", "-1,000 999 12.88"),
        ("{{nowrap|3 km}} {{nobr|4 km}}", "3 km 4 km"),
        # quote / blockquote
        ("{{quote|To be.|Someone|Source}}", "To be."),
        ("{{blockquote|text=To be.|author=Someone}}", "To be."),
        ("{{quote|quote=To be.}}", "To be."),
        ("{{Quote | [[Louise Michel]], and others}}", "Louise Michel, and others"),
        # as of
        ("{{as of|2016}}", "As of 2016"),
        ("{{as of|2016|5}}", "As of May 2016"),
        ("a {{as of|2010|lc=y}}", "a as of 2010"),
        ("{{as of|lc=y|2012}}", "as of 2012"),
        ("{{As of|2011|June|20}}", "As of 20 June 2011"),
        ("{{as of|2015|6|30|df=US}}", "As of June 30, 2015"),
        # small inline templates
        ("{{circa|1900}} {{c.|1900}}", "c. 1900 c. 1900"),
        ("{{sic|teh}} {{sic|hide=y|Chi|na}}", "teh China"),
        ("{{small|a}} {{smaller|b}} {{big|c}}", "a b c"),
        ("{{abbr|GDP|gross domestic product}}", "GDP"),
        ("{{frac|1|2}} {{frac|3|1|2}} {{frac|2}}", "1/2 3 1/2 1/2"),
        ("{{sfrac|3''n'' + 1|2}}", "(3n + 1)/2"),
        ("{{mvar|x}} {{math|''a''<sup>2</sup>}} {{math|1=x = y}} {{math|x {{=}} y}}", "x a2 x = y x = y"),
        ("{{ill|Gymnasium Ernestinum|de|Gymnasium Ernestinum Gotha}}", "Gymnasium Ernestinum"),
        ("{{ill|de|Gymnasium Ernestinum Gotha|x}} {{ill|Foo|de|lt=Bar}}", "Gymnasium Ernestinum Gotha Bar"),
        ("{{transl|ar|al-Jazā'ir}} {{transl|ar|ALA|''Allāh''}}", "al-Jazā'ir Allāh"),
        # dates: day-first unless mf=yes; the age is not rendered
        ("{{birth date|1879|3|14}}", "14 March 1879"),
        ("{{Death date and age|df=yes|1955|4|18|1879|3|14}}", "18 April 1955"),
        ("{{birth date|mf=yes|1905|02|02}}", "February 2, 1905"),
        ("{{birth date and age|1947|04|01|df=y}}", "1 April 1947"),
        ("{{start date|1990|7}} {{start date|1990}}", "July 1990 1990"),
        ("{{start date and age|1918|05|14|paren=yes}}", "14 May 1918"),
        ("{{birth year and age|1950}}", "1950"),
        ("{{dts|1778|02|05}}", "5 February 1778"),
        # nested templates inside kept parameters are rendered or removed
        ("{{lang|fr|{{small|le texte}}}}", "le texte"),
        ("{{small|a{{efn|note}} b}}", "a b"),
        ("{{convert|{{formatnum:1000}}|m}}", "1,000 m"),
        ("{{formatnum:{{Inflation|US|800|1861|r=-2}}}} dollars", "dollars"),
        ("{{quote|a {{cite web|url=x|title=y}} b {{nowrap|c d}}}}", "a b c d"),
        # everything else still disappears completely
        (
            "{{Infobox person|name=X|birth_date={{birth date|1879|3|14}}|place={{nowrap|[[a]]}}}}X was.",
            "X was.",
        ),
        ("text\n{{Navbox|title={{small|T}}|list1={{nowrap|[[a]] · [[b]]}}}}", "text"),
        ("a {{cite web|title={{small|x}}}} b {{IPAc-en|x}} c", "a b c"),
    ],
)
def test_inline_templates(wikitext: str, expected: str) -> None:
    assert _one(wikitext) == expected


def test_quote_is_its_own_entry_and_keeps_anchors() -> None:
    art = parse_wikitext("T", "He wrote:\n{{quote|text=I [[saw]] it.\n\nThen left.|author=X}}\nAfter that.")
    assert art.text == ["T\n", "He wrote:\n", "I saw it.\n", "Then left.\n", "After that.\n"]
    assert art.anchors == [Anchor(2, 2, 5, "saw", "saw")]


def test_rendered_template_anchors() -> None:
    art = parse_wikitext(
        "T", "In {{nowrap|[[Princeton, New Jersey|Princeton]], U.S.}} ({{nihongo|[[bayonet]]|銃剣|jūken}})"
    )
    assert art.text == ["T\n", "In Princeton, U.S. (bayonet (銃剣, jūken))\n"]
    assert [(a.text, a.target) for a in art.anchors] == [
        ("Princeton", "Princeton, New Jersey"),
        ("bayonet", "bayonet"),
    ]
    for a in art.anchors:
        assert art.text[a.paragraph_id][a.start : a.end] == a.text


def test_lists_headers_and_paragraph_joining() -> None:
    wikitext = "line one\nline two\n\n== A ==\n=== B ===\n* item [[x]]\n#\n: indented\n;term\n"
    # KILT's style drops indented lines and writes ';' items as bullets
    assert parse_wikitext("T", wikitext).text == [
        "T\n", "line one line two\n", "Section::::A.\n", "Section::::A.:B.\n", "BULLET::::- item x\n",
        "BULLET::::- term\n",
    ]  # fmt: skip
    art = parse_wikitext("T", wikitext, style="clean")
    assert art.text == [
        "T\n",
        "line one line two\n",
        "Section::::A.\n",
        "Section::::A.:B.\n",
        "BULLET::::- item x\n",
        "indented\n",
        "term\n",
    ]
    assert art.anchors == [Anchor(4, 17, 18, "x", "x")]
    # headers are written only for sections with content; header links are anchors
    art = parse_wikitext("T", "== Empty ==\n{{reflist}}\n== [[Foo|Full]] ==\ntext")
    assert art.text == ["T\n", "Section::::Full.\n", "text\n"]
    assert art.anchors == [Anchor(1, 11, 15, "Full", "Foo")]


def test_categories_interwiki_and_prefixes() -> None:
    art = parse_wikitext("T", "a [[Category:Foo bar|x]] [[category:Foo_bar]] [[Category:Baz]] [[de:Foo]]")
    assert art.categories == ["Foo bar", "Baz"]
    assert art.text == ["T\n", "a\n"]
    art = parse_wikitext(
        "T",
        "a [[Datei:x.jpg|mini|cap]] [[Kategorie:K]] b",
        file_prefixes=DEFAULT_FILE_PREFIXES | {"datei"},
        category_prefixes=DEFAULT_CATEGORY_PREFIXES | {"kategorie"},
    )
    assert art.text == ["T\n", "a b\n"] and art.categories == ["K"]
    art = parse_wikitext("T", "[[:Category:Foo|the category]] and [[Foo#Bar|bar]]")
    assert [(a.text, a.target) for a in art.anchors] == [("the category", "Category:Foo"), ("bar", "Foo#Bar")]


def test_anchor_targets_are_decoded_not_normalised() -> None:
    art = parse_wikitext("T", "[[AT&amp;T|phone]] and [[political_philosophy]]")
    assert [(a.text, a.target) for a in art.anchors] == [
        ("phone", "AT&T"),
        ("political_philosophy", "political_philosophy"),
    ]


def test_disambiguation_templates() -> None:
    for template in ("{{disambiguation}}", "{{Disambig}}", "{{dab}}", "{{hndis|Smith}}", "{{Geodis}}",
                     "{{disambiguation|geo}}", "{{Place name disambiguation}}"):  # fmt: skip
        assert parse_wikitext("T", "T may be:\n* [[a]]\n" + template).is_disambiguation, template
    assert parse_wikitext("T (disambiguation)", "x").is_disambiguation
    for template in ("{{disambiguation needed}}", "{{Redirect|T|T (disambiguation)}}", "{{About|x}}"):
        assert not parse_wikitext("T", "T is\n" + template).is_disambiguation, template


def test_has_residual_markup() -> None:
    assert RESIDUAL_MARKERS == ("{{", "}}", "[[", "]]", "<ref", "{|")
    assert not has_residual_markup("plain text (with) [brackets] and {braces}\n")
    for marker in RESIDUAL_MARKERS:
        assert has_residual_markup(f"a {marker} b")


# ------------------------------------------------------------------------------------- throughput
def _throughput(articles: list[tuple[str, str]], repeats: int = 3) -> tuple[float, float]:
    """Best-of-``repeats`` seconds for parsing ``articles`` once, and the matching MB/s."""
    size = sum(len(text.encode("utf-8")) for _, text in articles)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for title, text in articles:
            parse_wikitext(title, text)
        best = min(best, time.perf_counter() - start)
    return best, size / best / 1e6


def test_report_throughput(excerpt_articles: list[tuple[str, str]]) -> None:
    """Prints the single-core throughput (no time assertion: CI machines vary)."""
    seconds, mb_per_s = _throughput(excerpt_articles)
    print(f"\nparse_wikitext: {len(excerpt_articles)} articles in {seconds:.3f}s = {mb_per_s:.1f} MB/s")


def run_benchmark(repeats: int = 5) -> None:
    """Timing script (not a test): best-of-N MB/s of ``parse_wikitext`` on the excerpt's articles."""
    articles = _articles(_dump_path(EXCERPT))
    size = sum(len(text.encode("utf-8")) for _, text in articles)
    seconds, mb_per_s = _throughput(articles, repeats)
    print(
        f"{len(articles)} articles, {size / 1e6:.2f} MB wikitext: best {seconds:.3f}s = {mb_per_s:.1f} MB/s"
    )


if __name__ == "__main__":
    run_benchmark()


@pytest.mark.parametrize(
    ("wikitext", "clean"),
    [
        ("{{hlist|[[Pashto language|Pashto]]|Dari}}", "Pashto, Dari"),
        ("{{ubl|one|two}} {{unbulleted list|three}}", "one, two three"),
        ("{{plainlist|\n* a\n* [[b]]\n}}", "a, b"),
        ("{{sortname|Ada|Lovelace}}", "Ada Lovelace"),
        ("{{sort|Lovelace|Ada Lovelace}}", "Ada Lovelace"),
    ],
)
def test_clean_renders_lists_and_sorting_kilt_drops_them(wikitext: str, clean: str) -> None:
    assert plain_text(wikitext) == clean
    assert _one(f"x {wikitext} y") == f"x {clean} y"
    assert parse_wikitext("T", f"x {wikitext} y", style="kilt").text[1] == "x y\n"
