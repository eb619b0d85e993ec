"""Convert MediaWiki wikitext into KILT knowledge-source paragraphs.

The converter is a fixed sequence of whole-text regex passes and linear
splits (no per-character Python loops):

1. drop reserved private-use characters, normalise newlines;
2. remove comments, park ``<nowiki>``/``<pre>`` content, remove ``<ref>``
   and the other content-less extension tags (``<math>``, ``<gallery>`` ...);
3. cut templates (``{{...}}``, nested, brace-depth scan over a regex split)
   and tables (``{| ... |}``, nested, same scan over line tokens);
4. replace internal links by ``\\ue000target\\ue001label\\ue002`` (files,
   categories and interlanguage links are dropped, categories recorded),
   external links by their labels, strip HTML tags, quotes, magic words,
   decode entities;
5. clean removal artefacts and whitespace, split into KILT entries
   (sections, bullets, paragraphs) and turn the sentinels into anchor offsets
   in one final pass per entry, so offsets always match the final strings.

Standard library only.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

__all__ = [
    "DEFAULT_CATEGORY_PREFIXES",
    "DEFAULT_FILE_PREFIXES",
    "RESIDUAL_MARKERS",
    "Anchor",
    "ParsedArticle",
    "has_residual_markup",
    "parse_wikitext",
]

DEFAULT_FILE_PREFIXES: frozenset[str] = frozenset({"file", "image", "media"})
DEFAULT_CATEGORY_PREFIXES: frozenset[str] = frozenset({"category"})

RESIDUAL_MARKERS = ("{{", "}}", "[[", "]]", "<ref", "{|")


@dataclass(slots=True)
class Anchor:
    """A link inside one KILT entry: ``text[paragraph_id][start:end] == text``."""

    paragraph_id: int
    start: int
    end: int
    text: str
    target: str


@dataclass(slots=True)
class ParsedArticle:
    """KILT view of one article."""

    text: list[str]
    anchors: list[Anchor] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    is_disambiguation: bool = False


def has_residual_markup(paragraph: str) -> bool:
    """Return True if ``paragraph`` still contains any of ``RESIDUAL_MARKERS``."""
    return any(marker in paragraph for marker in RESIDUAL_MARKERS)


# ---------------------------------------------------------------------------
# Reserved characters
# ---------------------------------------------------------------------------
# \ue000 target \ue001 label \ue002 marks a kept internal link;
# \ue003 n \ue004 marks parked <nowiki>/<pre> content number n.
_S_OPEN = "\ue000"
_S_MID = "\ue001"
_S_CLOSE = "\ue002"
_P_OPEN = "\ue003"
_P_CLOSE = "\ue004"
_RESERVED = (_S_OPEN, _S_MID, _S_CLOSE, _P_OPEN, _P_CLOSE)
_RESERVED_RE = re.compile("[\ue000-\ue004]")

# ---------------------------------------------------------------------------
# Compiled patterns
# ---------------------------------------------------------------------------
_COMMENT_RE = re.compile(r"<!--(?:.*?-->|[^\n]*)", re.S)
_NOWIKI_RE = re.compile(
    r"<(nowiki|pre)(?:\s[^>]*)?(?<!/)>(.*?)</\1\s*>|<(?:nowiki|pre)\s*/>", re.S | re.I
)
_PARKED_RE = re.compile("\ue003([0-9]+)\ue004")
# <ref>: content ends at the first </ref> and may not cross a blank line.
_REF_RE = re.compile(
    r"<ref(?:\s[^>]*?)?(?:/>|>[^<\n]*(?:(?:<(?!/ref\s*>)|\n(?![^\S\n]*\n))[^<\n]*)*</ref\s*>)",
    re.I,
)
_REF_UNCLOSED_RE = re.compile(r"<ref(?:\s[^>\n]*)?>[^\n]*", re.I)
_EXT_NAMES = (
    "references|math|chem|ce|gallery|timeline|score|syntaxhighlight|source|imagemap|graph|"
    "mapframe|maplink|noinclude|includeonly|hiero|templatedata|inputbox|categorytree|"
    "charinsert|indicator|section|table"
)
# Content-less extension tags: content may not contain another open/close of
# the same tag, so an unclosed tag never swallows a later one.
_EXT_RE = re.compile(
    r"<(" + _EXT_NAMES + r")(?![\w-])[^>]*?"
    r"(?:/>|>[^<]*(?:<(?!/?\1(?![\w-]))[^<]*)*</\1\s*>)",
    re.I,
)
_OPEN_BRACES_RE = re.compile(r"\{\{+")
_CLOSE_BRACES_RE = re.compile(r"\}\}+")
_KEEP_ANY_RE = re.compile(r"\{\{\s*(?:lang|nowrap|nobr|'s?\s*\}\})", re.I)
_KEEP_TEMPLATE_RE = re.compile(
    r"\s*(?:(lang)|lang-[A-Za-z-]+|(nowrap|nobr)|(')|('s))\s*(\||$)", re.I
)
_NAMED_PARAM_RE = re.compile(r"\s*[\w -]+\s*=")
_INNER_LINK_RE = re.compile(r"\[\[[^\[\]]*\]\]")
_TABLE_SPLIT_RE = re.compile(r"^[ \t:]*(\{\||\|\})", re.M)

_LINK_RE = re.compile(
    r"\[\[([^\[\]\n|]*)"
    r"(?:\|([^\[\]\n]*(?:(?:\[(?!\[)|\](?!\])|\n(?![^\S\n]*\n))[^\[\]\n]*)*))?"
    r"\]\]([a-z]*)"
)
_UNCLOSED_FILE_RE_CACHE: dict[frozenset[str], re.Pattern[str]] = {}

_EXTLINK_RE = re.compile(
    r"\[(?:https?:|ftps?:|//|mailto:|ircs?:|news:|gopher:|sftp:|svn:|git:)"
    r"[^\s\[\]<>\"]*(?:[^\S\n]+([^\]\n]*))?\]",
    re.I,
)
_BR_RE = re.compile(r"<br\s*/?>|</br\s*>", re.I)
_TAG_RE = re.compile(r"</?[A-Za-z][A-Za-z0-9]*(?:\s[^<>]*)?/?>")
_QUOTES_RE = re.compile(r"'''''|'''|''")
_MAGIC_RE = re.compile(r"__[A-Z]{2,}__")
_HRULE_RE = re.compile(r"^-{4,}", re.M)
_ENTITY_RE = re.compile(r"&(?:[A-Za-z][A-Za-z0-9]{1,31}|#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6});")
_EMPTY_PARENS_RE = re.compile(r"\((?:[^\S\n]*[,;:])*[^\S\n]*\)")
_OTHER_SPACE_RE = re.compile(
    "[\t\x0b\x0c\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
)
_MULTI_SPACE_RE = re.compile("  +")
_SENT_OPEN_SPACE_RE = re.compile("(\ue000[^\ue000-\ue002\n]*\ue001) ")
_SENT_EMPTY_RE = re.compile("\ue000[^\ue000-\ue002\n]*\ue001\ue002")
_SENT_SPLIT_RE = re.compile("(\ue000[^\ue000-\ue002]*\ue001|\ue002)")
_PUNCT_FIXES = (
    (" ,", ","), (" .", "."), (" ;", ";"), (" :", ":"), (" !", "!"), (" ?", "?"), (" )", ")"),
    ("(,", "("), ("(;", "("), ("( ", "("), (",)", ")"), (";)", ")"),
)
_HEADING_RE = re.compile(r"(=+)(.*?)(=+)")
_LIST_PREFIX_RE = re.compile(r"[*#:;]+")
_WORD_RE = re.compile(r"\w")
_LANG_CODE_RE = re.compile(r"[a-z]{2,3}(?:-[a-z]{2,8})*")
_LONG_LANG_CODES = frozenset(
    {"simple", "be-tarask", "be-x-old", "zh-yue", "zh-min-nan", "zh-classical", "roa-rup",
     "roa-tara", "map-bms", "bat-smg", "nds-nl", "fiu-vro", "cbk-zam"}
)  # fmt: skip
# Matched against "\ue004"-joined heads of top-level templates.
_DISAMBIG_RE = re.compile(
    r"\ue004\s*(?:disambiguation|disambig|disamb|dab|hndis|geodis|numberdis|mathdab|"
    r"[^{}|\n\ue004]*?[\s_]disambiguation|[^{}|\n\ue004]*?[\s_]disambig)\s*(?:[|}\ue004]|$)",
    re.I,
)


# ---------------------------------------------------------------------------
# Nested-structure scanners
# ---------------------------------------------------------------------------
def _keep_template(body: str) -> str:
    """Visible text of ``{{lang|..}}``, ``{{lang-xx|..}}``, ``{{nowrap|..}}``, ``{{'}}``."""
    m = _KEEP_TEMPLATE_RE.match(body)
    if m is None:
        return ""
    if m.group(3):
        return "'"
    if m.group(4):
        return "'s"
    if m.group(5) != "|":
        return ""
    inner = _strip_templates(body[m.end() :], None, True)
    if "[[" in inner:
        inner = _INNER_LINK_RE.sub(lambda lm: lm.group().replace("|", "\ue004"), inner)
    params = [p for p in inner.split("|") if not _NAMED_PARAM_RE.match(p)]
    if not params:
        return ""
    keep = params[-1] if m.group(1) else params[0]
    return keep.replace("\ue004", "|").replace("\n", " ")


def _strip_templates(text: str, heads: list[str] | None = None, keep: bool | None = None) -> str:
    """Remove ``{{...}}``/``{{{...}}}`` (nested) with a brace-depth count.

    Stray closing braces are dropped; an unclosed template is cut up to the
    end of its paragraph (next blank line) and scanning resumes there. The
    first characters of every top-level template are appended to ``heads``.
    """
    if "{{" not in text and "}}" not in text:
        return text
    if keep is None:
        keep = _KEEP_ANY_RE.search(text) is not None
    out: list[str] = []
    while True:
        # (position, signed brace count): '{{..' positive, '}}..' negative.
        events = [(m.start(), m.end() - m.start()) for m in _OPEN_BRACES_RE.finditer(text)]
        events += [(m.start(), m.start() - m.end()) for m in _CLOSE_BRACES_RE.finditer(text)]
        events.sort()
        last = 0
        depth = 0
        first = 0
        for pos, count in events:
            if count > 0:
                if depth == 0:
                    first = pos
                    if heads is not None:
                        heads.append(text[pos + count : pos + count + 40])
                depth += count
                continue
            end = pos - count
            if depth:
                depth += count
                if depth > 0:
                    continue
                depth = 0
                out.append(text[last:first])
                if keep and text[first + 2] != "{":
                    kept = _keep_template(text[first + 2 : pos])
                    if kept:
                        out.append(kept)
            else:  # stray closing braces
                out.append(text[last:pos])
            last = end
        if depth == 0:
            out.append(text[last:])
            break
        out.append(text[last:first])
        cut = text.find("\n\n", first)
        if cut < 0:
            break
        text = text[cut:]
    return "".join(out)


def _strip_tables(text: str) -> str:
    """Remove ``{| ... |}`` tables (nested; tokens at line start)."""
    if "{|" not in text and "|}" not in text:
        return text
    out: list[str] = []
    while True:
        parts = _TABLE_SPLIT_RE.split(text)
        out.append(parts[0])
        depth = 0
        first = 0
        for i in range(1, len(parts), 2):
            if parts[i] == "{|":
                if depth == 0:
                    first = i
                depth += 1
                continue
            if depth:
                depth -= 1
                if depth:
                    continue
            out.append(parts[i + 1])
        if depth == 0:
            break
        rest = "".join(parts[first:])
        cut = rest.find("\n\n")
        if cut < 0:
            break
        text = rest[cut:]
    return "".join(out)


# ---------------------------------------------------------------------------
# Links
# ---------------------------------------------------------------------------
def _is_language_prefix(prefix: str) -> bool:
    return prefix in _LONG_LANG_CODES or _LANG_CODE_RE.fullmatch(prefix) is not None


def _pipe_trick(target: str) -> str:
    label = target.lstrip(": ")
    colon = label.find(":")
    if colon >= 0:
        label = label[colon + 1 :]
    paren = label.find("(")
    if paren > 0:
        label = label[:paren]
    else:
        comma = label.find(",")
        if comma > 0:
            label = label[:comma]
    return label.strip()


class _Links:
    """``re.sub`` callback for ``[[...]]``: sentinel-wrapped label, or '' for
    files, categories (recorded) and bare interlanguage links."""

    __slots__ = ("categories", "category_prefixes", "file_prefixes", "seen")

    def __init__(self, file_prefixes: frozenset[str], category_prefixes: frozenset[str]) -> None:
        self.file_prefixes = file_prefixes
        self.category_prefixes = category_prefixes
        self.categories: list[str] = []
        self.seen: set[str] = set()

    def __call__(self, m: re.Match[str]) -> str:
        target, label, trail = m.group(1, 2, 3)
        colon = target.find(":")
        if colon >= 0:
            prefix = target[:colon].strip()
            if not prefix:  # leading colon: visible link to a namespace/interwiki page
                target = target[colon + 1 :]
            else:
                lowered = prefix.lower()
                if lowered in self.file_prefixes:
                    return ""
                if lowered in self.category_prefixes:
                    self._category(target[colon + 1 :])
                    return trail
                if label is None and _is_language_prefix(prefix):
                    return trail
        if label is None:
            label = target
        elif not label or label.isspace():
            label = _pipe_trick(target)
        elif "\n" in label:
            label = label.replace("\n", " ")
        if trail:
            label += trail
        return f"\ue000{target}\ue001{label}\ue002"

    def _category(self, raw: str) -> None:
        name = " ".join(raw.replace("_", " ").split())
        if name:
            name = name[0].upper() + name[1:]
            if name not in self.seen:
                self.seen.add(name)
                self.categories.append(name)


def _unclosed_file_re(file_prefixes: frozenset[str]) -> re.Pattern[str]:
    pattern = _UNCLOSED_FILE_RE_CACHE.get(file_prefixes)
    if pattern is None:
        names = "|".join(re.escape(p) for p in sorted(file_prefixes, key=len, reverse=True))
        pattern = re.compile(r"\[\[[^\S\n]*(?:" + (names or "(?!)") + r")[^\S\n]*:[^\n]*", re.I)
        _UNCLOSED_FILE_RE_CACHE[file_prefixes] = pattern
    return pattern


def _replace_links(text: str, links: _Links) -> str:
    """Replace internal links, innermost first (file captions may hold links)."""
    for _ in range(4):
        if "[[" not in text:
            return text
        text, n = _LINK_RE.subn(links, text)
        if not n:
            break
    if "[[" in text:
        text = _unclosed_file_re(links.file_prefixes).sub("", text)
        text = text.replace("[[", "")
    return text.replace("]]", "") if "]]" in text else text


# ---------------------------------------------------------------------------
# Small callbacks
# ---------------------------------------------------------------------------
_ENTITY_CACHE: dict[str, str] = {}


def _decode_entity(m: re.Match[str]) -> str:
    entity = m.group()
    decoded = _ENTITY_CACHE.get(entity)
    if decoded is None:
        decoded = html.unescape(entity)
        if _RESERVED_RE.search(decoded) or decoded in ("\n", "\r"):
            decoded = " "
        if len(_ENTITY_CACHE) < 4096:
            _ENTITY_CACHE[entity] = decoded
    return decoded


def _empty_parens(m: re.Match[str]) -> str:
    """Drop '()' / '( ; )' left by removals, but keep 'f()'-style code."""
    start = m.start()
    return m.group() if start and m.string[start - 1].isalnum() else ""


def _extlink(m: re.Match[str]) -> str:
    return m.group(1) or ""


# ---------------------------------------------------------------------------
# Whole-text cleaning
# ---------------------------------------------------------------------------
def _clean(text: str, links: _Links, parked: list[str], heads: list[str]) -> str:
    """Apply all markup passes; returns text with link sentinels."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "<!--" in text:
        text = _COMMENT_RE.sub("", text)
    if "<" in text:
        if "<nowiki" in text or "<pre" in text or "<NOWIKI" in text or "<PRE" in text:

            def park(m: re.Match[str]) -> str:
                content = m.group(2)
                if not content:
                    return ""
                if "&" in content:
                    content = html.unescape(content)
                parked.append(" ".join(_RESERVED_RE.sub("", content).split()))
                return f"{_P_OPEN}{len(parked) - 1}{_P_CLOSE}"

            text = _NOWIKI_RE.sub(park, text)
        if "<ref" in text or "<REF" in text or "<Ref" in text:
            text = _REF_RE.sub("", text)
            text = _REF_UNCLOSED_RE.sub("", text)
        text = _EXT_RE.sub("", text)
    text = _strip_templates(text, heads)
    text = _strip_tables(text)
    text = _replace_links(text, links)
    if "[" in text:
        text = _EXTLINK_RE.sub(_extlink, text)
    if "<" in text:
        text = _BR_RE.sub(" ", text)
        text = _TAG_RE.sub("", text)
    if "''" in text:
        text = _QUOTES_RE.sub("", text)
    if "__" in text:
        text = _MAGIC_RE.sub("", text)
    if "----" in text:
        text = _HRULE_RE.sub("", text)
    if "&" in text:
        text = _ENTITY_RE.sub(_decode_entity, text)
    if "(" in text:
        text = _EMPTY_PARENS_RE.sub(_empty_parens, text)
    text = _OTHER_SPACE_RE.sub(" ", text)
    if "  " in text:
        text = _MULTI_SPACE_RE.sub(" ", text)
    if _S_OPEN in text:
        moved = False
        if _S_MID + " " in text:
            text = _SENT_OPEN_SPACE_RE.sub(" \\1", text)
            moved = True
        if " " + _S_CLOSE in text:
            text = text.replace(" " + _S_CLOSE, _S_CLOSE + " ")
            moved = True
        if _S_MID + _S_CLOSE in text:
            text = _SENT_EMPTY_RE.sub("", text)
            moved = True
        if moved and "  " in text:
            text = _MULTI_SPACE_RE.sub(" ", text)
    for old, new in _PUNCT_FIXES:
        if old in text:
            text = text.replace(old, new)
    if " \n" in text:
        text = text.replace(" \n", "\n")
    if "\n " in text:
        text = text.replace("\n ", "\n")
    return text.strip(" ")


# ---------------------------------------------------------------------------
# Entry assembly
# ---------------------------------------------------------------------------
def _resolve(block: str) -> tuple[str, list[tuple[int, int, str]]]:
    """Drop sentinels from a block; return stripped text and (start, end, target)."""
    chunks = block.split(_S_OPEN)
    head = chunks[0]
    if _S_MID in head or _S_CLOSE in head:
        return _resolve_nested(block)
    out = [head]
    length = len(head)
    spans: list[tuple[int, int, str]] = []
    for chunk in chunks[1:]:
        target, mid, rest = chunk.partition(_S_MID)
        label, close, after = rest.partition(_S_CLOSE)
        if not close or _S_MID in rest or _S_CLOSE in after:
            return _resolve_nested(block)
        if label:
            spans.append((length, length + len(label), target))
            out.append(label)
            length += len(label)
        out.append(after)
        length += len(after)
    text = "".join(out)
    stripped = text.strip()
    if len(stripped) != len(text):
        spans = _fix_spans(text, stripped, spans)
    return stripped, spans


def _resolve_nested(block: str) -> tuple[str, list[tuple[int, int, str]]]:
    """Slow path of :func:`_resolve` for nested or malformed sentinels."""
    parts = _SENT_SPLIT_RE.split(block)
    parts = [p if i % 2 else _RESERVED_RE.sub("", p) for i, p in enumerate(parts)]
    out: list[str] = []
    length = 0
    spans: list[tuple[int, int, str]] = []
    stack: list[tuple[str, int]] = []
    for i, part in enumerate(parts):
        if not i % 2:
            out.append(part)
            length += len(part)
        elif part == _S_CLOSE:
            if stack:
                target, start = stack.pop()
                if length > start:
                    spans.append((start, length, target))
        else:
            stack.append((part[1:-1], length))
    text = "".join(out)
    stripped = text.strip()
    return stripped, _fix_spans(text, stripped, spans)


def _fix_spans(
    text: str, stripped: str, spans: list[tuple[int, int, str]]
) -> list[tuple[int, int, str]]:
    """Shift spans for stripping, trim blanks, drop empty ones, sort by start."""
    lead = len(text) - len(text.lstrip())
    size = len(stripped)
    fixed: list[tuple[int, int, str]] = []
    for start, end, target in spans:
        start = max(start - lead, 0)
        end = min(end - lead, size)
        while start < end and stripped[start] == " ":
            start += 1
        while end > start and stripped[end - 1] == " ":
            end -= 1
        if end > start:
            fixed.append((start, end, target))
    fixed.sort(key=lambda s: s[0])
    return fixed


class _Builder:
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

    def _finish(self, block: str) -> tuple[str, list[tuple[int, int, str]]]:
        if _P_OPEN in block:
            block = self._unpark(block)
        if _S_OPEN in block or _S_CLOSE in block or _S_MID in block:
            return _resolve(block)
        return block.strip(), []

    def _append(self, prefix: str, body: str, spans: list[tuple[int, int, str]]) -> None:
        pid = len(self.text)
        entry = prefix + body
        if spans:
            off = len(prefix)
            anchors = self.anchors
            for start, end, target in spans:
                start += off
                end += off
                if "\ue003" in target:
                    target = self._unpark(target)
                anchors.append(Anchor(pid, start, end, entry[start:end], target.strip()))
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


def _assemble(builder: _Builder, text: str) -> None:
    """Split cleaned text into section headers, bullets and paragraphs."""
    para: list[str] = []
    content = builder.content
    for line in text.split("\n"):
        if not line:
            if para:
                content("", " ".join(para))
                para = []
            continue
        first = line[0]
        if first == " ":
            line = line.strip()
            if not line:
                if para:
                    content("", " ".join(para))
                    para = []
                continue
            first = line[0]
        if first == "=":
            m = _HEADING_RE.fullmatch(line.rstrip())
            if m is not None and len(m.group(1)) + len(m.group(3)) < len(m.group()):
                if para:
                    content("", " ".join(para))
                    para = []
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
            content("BULLET::::- " if ("*" in markers or "#" in markers) else "", rest)
            continue
        para.append(line)
    if para:
        content("", " ".join(para))


# ---------------------------------------------------------------------------
# Public entry point
# ---------------------------------------------------------------------------
def _strip_reserved(s: str) -> str:
    for ch in _RESERVED:
        if ch in s:
            return _RESERVED_RE.sub("", s)
    return s


def _is_disambiguation(title: str, heads: list[str]) -> bool:
    if title.endswith("(disambiguation)"):
        return True
    return bool(heads) and _DISAMBIG_RE.search("\ue004" + "\ue004".join(heads)) is not None


def parse_wikitext(
    title: str,
    wikitext: str,
    *,
    file_prefixes: frozenset[str] = DEFAULT_FILE_PREFIXES,
    category_prefixes: frozenset[str] = DEFAULT_CATEGORY_PREFIXES,
) -> ParsedArticle:
    """Parse one article's wikitext into KILT text, anchors and categories.

    ``file_prefixes``/``category_prefixes`` are lowercased namespace names
    (with aliases). Never raises for ``str`` input.
    """
    title = _strip_reserved(" ".join(str(title).split()))
    if not isinstance(wikitext, str):
        wikitext = "" if wikitext is None else str(wikitext)
    wikitext = _strip_reserved(wikitext)
    is_dab = False
    try:
        is_dab = title.endswith("(disambiguation)")
        links = _Links(file_prefixes, category_prefixes)
        parked: list[str] = []
        heads: list[str] = []
        cleaned = _clean(wikitext, links, parked, heads)
        is_dab = _is_disambiguation(title, heads)
        builder = _Builder(title, parked)
        _assemble(builder, cleaned)
        return ParsedArticle(builder.text, builder.anchors, links.categories, is_dab)
    except Exception:  # pragma: no cover - defensive: never raise on str input
        return ParsedArticle([title + "\n"], [], [], is_dab)
