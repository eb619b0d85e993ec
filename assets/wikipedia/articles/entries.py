"""KILT entries from marked text: the last pass both converters share (the wikitext one,
:mod:`assets.wikipedia.wikitext.convert`, and the Parsoid HTML one, :mod:`assets.wikipedia.html`).

A converter's passes leave one string in which kept internal links are ``\\x01target\\x02label\\x03``,
parked ``<nowiki>``/``<pre>`` contents are ``\\x04n\\x06`` and removal points ``\\x05``. This module
defines those reserved characters (C0 controls: not allowed in XML, so never in a dump) and splits the
string into KILT entries (title, sections, bullets, paragraphs), turning the link sentinels into anchor
offsets in a final pass, so the offsets always index the final strings.

Standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from assets.wikipedia.articles.text_styles import KiltBullets

# Reserved characters (any occurrence in the input is removed before parsing)
S_OPEN = "\x01"  # \x01 target \x02 label \x03 : a kept internal link
S_MID = "\x02"
S_CLOSE = "\x03"
P_OPEN = "\x04"  # \x04 n \x06 : parked <nowiki>/<pre> content number n
MARK = "\x05"  # a removal point
P_CLOSE = "\x06"
SEP = "\x07"  # internal separator
RESERVED = (S_OPEN, S_MID, S_CLOSE, P_OPEN, MARK, P_CLOSE, SEP)
RESERVED_RE = re.compile("[\x01-\x07]")

_PARKED_RE = re.compile("\x04([0-9]+)\x06")
_SENT_SPLIT_RE = re.compile("(\x01[^\x01-\x03]*\x02|\x03)")
_HEADING_RE = re.compile(r"(=+)(.*?)(=+)")
_LIST_PREFIX_RE = re.compile(r"[*#:;]+")
_WORD_RE = re.compile(r"\w")
_AFTER_NO_SPACE = (" ", ",", ".", ";", ":", "!", "?", ")", "")


@dataclass(slots=True)
class Anchor:
    """A link inside one KILT entry: ``text[paragraph_id][start:end] == text``."""

    paragraph_id: int
    start: int
    end: int
    text: str
    target: str


_Span = tuple[int, int, str]


def _resolve(block: str) -> tuple[str, list[_Span]]:
    """Drop link sentinels from a block; return stripped text and spans."""
    chunks = block.split(S_OPEN)
    head = chunks[0]
    if S_MID in head or S_CLOSE in head:
        return _resolve_nested(block)
    out = [head]
    length = len(head)
    last = head[-1:]
    spans: list[_Span] = []
    for chunk in chunks[1:]:
        target, mid, rest = chunk.partition(S_MID)
        label, close, after = rest.partition(S_CLOSE)
        if not close or not mid or S_MID in rest or S_CLOSE in after:
            return _resolve_nested(block)
        if label and label[0] != " " and label[-1] != " ":
            spans.append((length, length + len(label), target))
            out.append(label)
            length += len(label)
            last = label[-1]
        else:  # move blanks at the label edges outside the anchor
            core = label.strip(" ")
            if label[:1] == " " and last != " " and length:
                out.append(" ")
                length += 1
                last = " "
            if core:
                spans.append((length, length + len(core), target))
                out.append(core)
                length += len(core)
                last = core[-1]
                if label[-1] == " " and after[:1] not in _AFTER_NO_SPACE:
                    out.append(" ")
                    length += 1
                    last = " "
            if last == " " and after[:1] == " ":
                after = after.lstrip(" ")
        if after:
            out.append(after)
            length += len(after)
            last = after[-1]
    text = "".join(out)
    stripped = text.strip()
    if len(stripped) != len(text):
        return stripped, _shift_spans(text, stripped, spans)
    return text, spans


def _resolve_nested(block: str) -> tuple[str, list[_Span]]:
    """Slow path of :func:`_resolve` for nested or malformed sentinels."""
    parts = _SENT_SPLIT_RE.split(block)
    out: list[str] = []
    length = 0
    spans: list[_Span] = []
    stack: list[tuple[str, int]] = []
    for i, part in enumerate(parts):
        if not i % 2:
            part = RESERVED_RE.sub("", part)
            if out and out[-1][-1:] == " " and part[:1] == " ":
                part = part.lstrip(" ")
            if part:
                out.append(part)
                length += len(part)
        elif part == S_CLOSE:
            if stack:
                target, start = stack.pop()
                if length > start:
                    spans.append((start, length, target))
        else:
            stack.append((part[1:-1], length))
    text = "".join(out)
    return text.strip(), _shift_spans(text, text.strip(), spans)


def _shift_spans(text: str, stripped: str, spans: list[_Span]) -> list[_Span]:
    """Re-base spans on ``stripped``; trim blanks, drop empty ones, sort."""
    lead = len(text) - len(text.lstrip())
    size = len(stripped)
    fixed: list[_Span] = []
    for start, end, target in spans:
        start = max(start - lead, 0)
        end = min(end - lead, size)
        while start < end and stripped[start].isspace():
            start += 1
        while end > start and stripped[end - 1].isspace():
            end -= 1
        if end > start:
            fixed.append((start, end, target))
    fixed.sort(key=lambda s: s[0])
    return fixed


class EntryBuilder:
    """Accumulates KILT entries, pending section headers and anchors."""

    __slots__ = ("anchors", "headers", "parked", "text")

    def __init__(self, title: str, parked: list[str]) -> None:
        self.text: list[str] = [title + "\n"]
        self.anchors: list[Anchor] = []
        self.headers: list[list] = []  # [level, title, spans, emitted]
        self.parked = parked

    def _unpark(self, block: str) -> str:
        parked = self.parked
        return _PARKED_RE.sub(lambda m: parked[int(m.group(1))], block)

    def _finish(self, block: str) -> tuple[str, list[_Span]]:
        if P_OPEN in block:
            block = self._unpark(block)
        if S_OPEN in block or S_CLOSE in block or S_MID in block:
            return _resolve(block)
        return block.strip(), []

    def _append(self, prefix: str, body: str, spans: list[_Span]) -> None:
        pid = len(self.text)
        entry = prefix + body
        if spans:
            off = len(prefix)
            anchors = self.anchors
            for start, end, target in spans:
                if P_OPEN in target:
                    target = RESERVED_RE.sub("", self._unpark(target))
                target = target.strip()
                if target:
                    start += off
                    end += off
                    anchors.append(Anchor(pid, start, end, entry[start:end], target))
        self.text.append(entry + "\n")

    def header(self, level: int, raw: str) -> None:
        body, spans = self._finish(raw)
        if not body:
            return
        headers = self.headers
        while headers and headers[-1][0] >= level:
            headers.pop()
        headers.append([level, body, spans, False])

    def content(self, prefix: str, raw: str) -> None:
        body, spans = self._finish(raw)
        if not body or _WORD_RE.search(body) is None:
            return
        if self.headers:
            path = "Section::::"
            for h in self.headers:
                if not h[3]:
                    h[3] = True
                    self._append(path, h[1] + ".", h[2])
                path += h[1] + ".:"
        self._append(prefix, body, spans)


def assemble_entries(builder: EntryBuilder, text: str, kilt: bool) -> None:
    """Split cleaned text into section headers, bullets and paragraphs; in the ``kilt`` style indented
    lines are dropped and list items are numbered as KILT numbers them (:class:`KiltBullets`)."""
    para: list[str] = []
    content = builder.content
    bullets = KiltBullets() if kilt else None
    for line in text.split("\n"):
        if line and (line[0] == " " or line[-1] == " "):
            line = line.strip(" ")
        if not line:
            if para:
                content("", " ".join(para))
                para = []
            if bullets is not None:
                bullets.end()
            continue
        first = line[0]
        if first == "=":
            m = _HEADING_RE.fullmatch(line)
            if m is not None and len(m.group(1)) + len(m.group(3)) < len(line):
                if para:
                    content("", " ".join(para))
                    para = []
                if bullets is not None:
                    bullets.end()
                left, right = len(m.group(1)), len(m.group(3))
                level = min(left, right, 6)
                builder.header(level, "=" * (left - level) + m.group(2) + "=" * (right - level))
                continue
        elif first in "*#:;":
            if para:
                content("", " ".join(para))
                para = []
            markers = _LIST_PREFIX_RE.match(line).group()  # type: ignore[union-attr]
            rest = line[len(markers) :]
            if bullets is None:
                content("BULLET::::- " if ("*" in markers or "#" in markers) else "", rest)
            elif first != ":":  # KILT has no indented lines
                content(bullets.prefix(markers, _WORD_RE.search(rest) is not None), rest)
            continue
        if bullets is not None:
            bullets.end()
        para.append(line)
    if para:
        content("", " ".join(para))


@dataclass(slots=True)
class ParsedArticle:
    """KILT view of one article."""

    text: list[str]
    anchors: list[Anchor] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    is_disambiguation: bool = False
