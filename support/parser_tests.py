"""MediaWiki's own parser tests as a fidelity check of wikitext-to-text converters.

``tests/data/mediawiki/parserTests.txt`` is MediaWiki core's ``parserTests.txt`` as the npm package
``parsoid@0.10.0`` ships it. Each case has a ``!! wikitext`` section and the HTML MediaWiki's PHP parser
renders for it (``!! html/php``, else ``!! html``); the text a reader sees is the HTML's text (scripts,
styles and the table of contents left out). A converter's text is scored against it by bag-of-words F1
(lower-cased ``\\w+`` tokens, counted with multiplicity). Cases that render no HTML from the wikitext
alone (pre-save transform, messages, comments, section edits, disabled tests) are left out.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

__all__ = [
    "ParserCase",
    "bag_f1",
    "bag_scores",
    "entries_as_lines",
    "read_cases",
    "score",
    "style_text",
    "tokens",
    "visible_text",
]

SECTION, BULLET = "Section::::", "BULLET::::"
SKIPPED_OPTIONS = ("disabled", "pst", "msg", "comment", "section=", "replace=", "preload", "showtitle")
_TOKEN_RE = re.compile(r"\w+")
_HIDDEN_TAGS = frozenset({"script", "style", "head", "title"})
_VOID_TAGS = frozenset({"br", "hr", "img", "input", "meta", "link", "wbr", "source", "track", "area", "col"})
_BLOCK_TAGS = frozenset(
    {"p", "div", "br", "li", "tr", "td", "th", "caption", "h1", "h2", "h3", "h4", "h5", "h6", "dd", "dt",
     "pre", "table", "ul", "ol", "dl", "blockquote", "figcaption", "hr"}
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class ParserCase:
    name: str
    wikitext: str
    html: str
    options: str


def read_cases(path: Path) -> list[ParserCase]:
    """The cases of a ``parserTests.txt`` that render HTML from their wikitext alone, in file order."""
    cases: list[ParserCase] = []
    sections: dict[str, list[str]] = {}
    current: str | None = None
    in_test = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("!!"):
            word = line[2:].strip()
            if word == "test":
                in_test, sections, current = True, {}, "test"
                sections["test"] = []
                continue
            if word == "end":
                if in_test:
                    case = _case(sections)
                    if case is not None:
                        cases.append(case)
                in_test, current = False, None
                continue
            if in_test:
                current = word
                sections[current] = []
                continue
        if in_test and current is not None:
            sections[current].append(line)
    return cases


def _case(sections: dict[str, list[str]]) -> ParserCase | None:
    options = " ".join(sections.get("options", [])).lower()
    if any(option in options for option in SKIPPED_OPTIONS) or "wikitext" not in sections:
        return None
    names = ("html/php", "html", "html/php+tidy", "html+tidy")
    html = next((sections[k] for k in names if k in sections), None)
    if html is None:
        return None
    return ParserCase(
        name=" ".join(sections.get("test", [])).strip(),
        wikitext="\n".join(sections["wikitext"]),
        html="\n".join(html),
        options=options,
    )


class _Visible(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.hidden = 0  # open elements inside a hidden one (itself included)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _VOID_TAGS:
            if tag in _BLOCK_TAGS and not self.hidden:
                self.parts.append("\n")
            return
        if self.hidden:
            self.hidden += 1
            return
        attributes = dict(attrs)
        classes = attributes.get("class") or ""
        if tag in _HIDDEN_TAGS or attributes.get("id") == "toc" or "mw-editsection" in classes:
            self.hidden = 1
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID_TAGS:
            return
        if self.hidden:
            self.hidden -= 1
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.hidden:
            self.parts.append(data)


def visible_text(html: str) -> str:
    """The text a reader sees of rendered HTML."""
    parser = _Visible()
    parser.feed(html)
    parser.close()
    return "".join(parser.parts)


def tokens(text: str) -> Counter[str]:
    return Counter(token.lower() for token in _TOKEN_RE.findall(text))


def bag_scores(predicted: Counter[str], gold: Counter[str]) -> tuple[float, float, float]:
    """Multiset ``(precision, recall, F1)`` of two bags of tokens (all 1.0 when both are empty)."""
    if not predicted and not gold:
        return 1.0, 1.0, 1.0
    overlap = sum((predicted & gold).values())
    if not overlap:
        return 0.0, 0.0, 0.0
    precision, recall = overlap / sum(predicted.values()), overlap / sum(gold.values())
    return precision, recall, 2 * precision * recall / (precision + recall)


def bag_f1(predicted: Counter[str], gold: Counter[str]) -> float:
    """Multiset F1 of two bags of tokens (1.0 when both are empty)."""
    return bag_scores(predicted, gold)[2]


def entries_as_lines(entries: list[str]) -> str:
    """KILT entries as a reader reads them: a section header as its heading's text, a list item without
    its marker, the title entry left out."""
    lines = []
    for entry in entries[1:]:
        entry = entry.strip()
        if entry.startswith(SECTION):
            entry = entry[len(SECTION) :].rstrip(".").rpartition(":")[2]
        elif entry.startswith(BULLET):
            entry = entry.partition(" ")[2]
        lines.append(entry)
    return "\n".join(lines)


def score(convert: Callable[[str], str], cases: Iterable[ParserCase]) -> tuple[float, list[float], int]:
    """``(mean F1, F1 per case, cases whose conversion raised)`` of ``convert`` (wikitext -> text); a
    conversion that raises scores 0."""
    scores: list[float] = []
    errors = 0
    for case in cases:
        try:
            text = convert(case.wikitext)
        except Exception:  # a converter's crash on a case is its score there
            errors += 1
            text = ""
        scores.append(bag_f1(tokens(text), tokens(visible_text(case.html))))
    return (sum(scores) / len(scores) if scores else 0.0), scores, errors


def style_text(style: str) -> Callable[[str], str]:
    """This project's converter in a text ``style``: a page's entries as lines (a section header as its
    heading's text, a list item without its marker), the title entry left out."""
    from assets.wikipedia.wikitext import parse_wikitext

    def convert(wikitext: str) -> str:
        return entries_as_lines(parse_wikitext("Parser test", wikitext, style=style).text)

    return convert
