"""Convert MediaWiki wikitext into KILT knowledge-source paragraphs.

The converter is a fixed sequence of whole-text regex passes and linear
scans (no per-character Python loops):

1. drop reserved control characters, normalise newlines;
2. remove comments, park ``<nowiki>``/``<pre>`` content, remove ``<ref>``
   and other content-less extension tags (``<math>``, ``<gallery>``, ...);
3. cut templates (``{{...}}``, nested, brace-depth count over two literal
   regex scans; common inline templates -- convert, nihongo, formatnum,
   quote, as of, dates, lang, nowrap, ... -- are replaced by their visible
   text; ``clean`` also renders lists and sorting, ``CLEAN_RENDERERS``) and
   tables (``{| ... |}``, nested, line-token depth count: ``kilt`` removes
   them, ``clean`` keeps their text, a paragraph per row);
4. replace internal links by ``\\x01target\\x02label\\x03`` (files,
   categories and interlanguage links are dropped, categories recorded;
   ``clean`` keeps a framed file's caption and a gallery's captions as
   paragraphs; :mod:`.wikitext_links`),
   external links by their labels, strip HTML tags, bold/italic quotes,
   magic words, decode entities;
5. every removal leaves a ``\\x05`` mark; in the ``clean`` style one split
   over the marks repairs the artefacts removals create (``word ,``,
   ``(; born``, ``( )``), in the ``kilt`` style the marks just go (KILT keeps
   ``such as , , or .``; see :mod:`assets.wikipedia.articles.text_styles`);
6. split into KILT entries (sections, bullets, paragraphs); per entry the
   link sentinels are turned into anchor offsets in a final pass, so the
   offsets always index the final strings.

Standard library only. English template renderers live in :mod:`assets.wikipedia.wikitext.templates_en`.

Step 6 (the reserved characters and entry assembly) is :mod:`assets.wikipedia.articles.entries`.
:func:`plain_text` runs steps 1-5 on a fragment (a table cell, an infobox value) and returns one line.
"""

from __future__ import annotations

import html
import re

from assets.wikipedia.articles import (
    DEFAULT_TEXT_STYLE,
    MARK,
    RESERVED,
    RESERVED_RE,
    SEP,
    EntryBuilder,
    ParsedArticle,
    assemble_entries,
    check_text_style,
    kilt_commas,
    kilt_quotes,
)
from assets.wikipedia.wikitext.links import Links, gallery_captions, replace_links
from assets.wikipedia.wikitext.templates_en import (
    CLEAN_RENDERERS,
    COLON_RENDERERS,
    LANG_PREFIX_RENDERER,
    RENDERERS,
    TEMPLATE_NAME_RE,
    template_params,
)

__all__ = [
    "DEFAULT_CATEGORY_PREFIXES",
    "DEFAULT_FILE_PREFIXES",
    "RESIDUAL_MARKERS",
    "has_residual_markup",
    "parse_wikitext",
    "plain_text",
    "table_cells",
]

DEFAULT_FILE_PREFIXES: frozenset[str] = frozenset({"file", "image", "media"})
DEFAULT_CATEGORY_PREFIXES: frozenset[str] = frozenset({"category"})

RESIDUAL_MARKERS = ("{{", "}}", "[[", "]]", "<ref", "{|")
_RESIDUAL_RE = re.compile("|".join(re.escape(marker) for marker in RESIDUAL_MARKERS))


def has_residual_markup(paragraph: str) -> bool:
    """Return True if ``paragraph`` still contains any of ``RESIDUAL_MARKERS``."""
    return _RESIDUAL_RE.search(paragraph) is not None


# ---------------------------------------------------------------------------
# Compiled patterns
# ---------------------------------------------------------------------------
# Tag bodies below are "tempered": they cannot run across another open/close
# tag of the same name, so unclosed tags never make a pass quadratic.
_NOWIKI_RE = re.compile(
    r"<(nowiki|pre)(?:\s[^<>]*)?(?<!/)>([^<]*(?:<(?!/?\1(?![\w-]))[^<]*)*)</\1\s*>"
    r"|<(?:nowiki|pre)\s*/>",
    re.I,
)
# <ref>: content ends at the first </ref> and may not cross a blank line.
_REF_RE = re.compile(
    r"<ref(?:\s[^<>]*?)?"
    r"(?:/>|>[^<\n]*(?:(?:<(?!/?ref(?![\w-]))|\n(?![^\S\n]*\n))[^<\n]*)*</ref\s*>)",
    re.I,
)
_REF_UNCLOSED_RE = re.compile(r"<ref(?:\s[^<>\n]*)?>[^\n]*", re.I)
_EXT_NAMES = (
    "references|math|chem|ce|gallery|timeline|score|syntaxhighlight|source|imagemap|graph|"
    "mapframe|maplink|noinclude|includeonly|hiero|templatedata|inputbox|categorytree|"
    "charinsert|indicator|section|table"
)
# Content-less extension tags; the content may not contain another open/close
# of the same tag, so an unclosed tag never swallows a later one.
_EXT_RE = re.compile(
    r"<(" + _EXT_NAMES + r")(?![\w-])[^<>]*?"
    r"(?:/>|>[^<]*(?:<(?!/?\1(?![\w-]))[^<]*)*</\1\s*>)",
    re.I,
)
_OPEN_BRACES_RE = re.compile(r"\{\{+")
_CLOSE_BRACES_RE = re.compile(r"\}\}+")
_TABLE_SPLIT_RE = re.compile("^[ \t:\x05]*(\\{\\||\\|\\})", re.M)
_TABLE_LINE_RE = re.compile("^[ \t:\x05]*(\\{\\||\\|\\}|\\|\\+|\\|-|!|\\|)(.*)$")
_EXTLINK_RE = re.compile(
    r"\[(?:https?:|ftps?:|//|mailto:|ircs?:|news:|gopher:|sftp:|svn:|git:)"
    r"[^\s\[\]<>\"]*(?:[^\S\n]+([^\[\]\n]*))?\]",
    re.I,
)
_BR_RE = re.compile(r"<br\s*/?>|</br\s*>", re.I)
# HTML and extension tags MediaWiki accepts; anything else (``List<T>``) is literal text.
_TAG_RE = re.compile(
    r"</?(?:abbr|b|bdi|bdo|big|blockquote|br|caption|center|cite|code|data|dd|del|dfn|div|dl|dt|em|"
    r"font|h[1-6]|hr|i|ins|kbd|li|mark|ol|onlyinclude|p|poem|pre|q|rb|rp|rt|rtc|ruby|s|samp|small|"
    r"span|strike|strong|sub|sup|table|td|templatestyles|th|time|tr|tt|u|ul|var|wbr|nowiki|ref|"
    r"references|gallery|math|chem|ce|score|syntaxhighlight|source|timeline|hiero|imagemap|graph|"
    r"mapframe|maplink|noinclude|includeonly|inputbox|categorytree|templatedata|charinsert|"
    r"indicator|section)(?![\w-])(?:\s[^<>]*)?/?>",
    re.I,
)
_QUOTES_RE = re.compile(r"'''''|'''|''")
_MAGIC_RE = re.compile(r"__[A-Z]{2,}__")
_HRULE_RE = re.compile(r"^-{4,}", re.M)
_ENTITY_RE = re.compile(r"&(?:[A-Za-z][A-Za-z0-9]{1,31}|#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6});")
_EMPTY_PARENS_RE = re.compile("\\((?:[^\\S\n]|\x05)*(?:[,;:](?:[^\\S\n]|\x05)*)*\\)")
_MULTI_SPACE_RE = re.compile("  +")
# Matched against the "\x07"-joined heads of top-level templates.
_DISAMBIG_RE = re.compile(
    r"\x07\s*(?:disambiguation|disambig|disamb|dab|hndis|geodis|numberdis|mathdab|"
    r"[^{}|\n\x07]*?[\s_]disambiguation|[^{}|\n\x07]*?[\s_]disambig)\s*(?:[|}\x07]|$)",
    re.I,
)
_PUNCT = ",.;:!?)"
_MAX_RESCANS = 32  # unclosed templates/tables recovered per article (each costs a rescan)
_MAX_KEEP_NESTING = 8


# ---------------------------------------------------------------------------
# Templates and tables
# ---------------------------------------------------------------------------
# Inline templates whose visible text is kept are rendered (text only) by the
# functions below; every other template is removed. Only a rendered
# template's parameters are parsed; nested templates inside a kept parameter
# are rendered or removed recursively (at most ``_MAX_KEEP_NESTING`` levels).
class _ParamText:
    """Renders template parameters at one nesting level (see :class:`templates_en.ParamText`)."""

    __slots__ = ("level", "renderers")

    def __init__(self, level: int, renderers: dict = RENDERERS) -> None:
        self.level = level
        self.renderers = renderers

    def text(self, raw: str) -> str:
        """A parameter's visible text: nested templates rendered or removed, trimmed."""
        if "{{" in raw or "}}" in raw:
            keep = self.level < _MAX_KEEP_NESTING
            raw = _strip_templates(raw, None, keep, self.level + 1, self.renderers)
        return raw.strip()

    def value(self, raw: str) -> str:
        """A parameter as a single-line value (numbers, units, date parts)."""
        value = self.text(raw)
        if MARK in value or "\n" in value:
            value = " ".join(value.replace(MARK, " ").split())
        return value


def _render_template(text: str, start: int, end: int, level: int, renderers: dict = RENDERERS) -> str:
    """Visible text of the template whose body is ``text[start:end]``, or ``""``."""
    m = TEMPLATE_NAME_RE.match(text, start, end)
    if m is None:
        return ""
    key = m.group(1).rstrip(" _\t").lower()
    render = renderers.get(key)
    if render is None:
        if "_" in key or "  " in key:
            render = renderers.get(" ".join(key.replace("_", " ").split()))
        elif key.startswith("lang-"):
            render = LANG_PREFIX_RENDERER
        if render is None:
            return ""
    if m.group(2) == ":" and render not in COLON_RENDERERS:
        return ""  # a parser function or a namespaced page, not the template
    pos, named = template_params(text[m.end() : end]) if m.group(2) else ([], {})
    return render(pos, named, _ParamText(level, renderers))


def _strip_templates(
    text: str,
    heads: list[str] | None = None,
    keep: bool = True,
    level: int = 0,
    renderers: dict = RENDERERS,
) -> str:
    """Remove ``{{...}}``/``{{{...}}}`` (nested) with a brace-depth count.

    Each removal leaves a mark; with ``keep`` the templates in ``_RENDERERS``
    are replaced by their visible text instead. Stray closing braces are
    dropped; an unclosed template is cut up to the end of its paragraph (next
    blank line) and scanning resumes there. The first characters of every
    top-level template are appended to ``heads`` (disambiguation detection).
    """
    if "{{" not in text and "}}" not in text:
        return text
    out: list[str] = []
    for _ in range(_MAX_RESCANS):
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
            if depth:
                before = depth
                depth += count
                if depth > 0:
                    continue
                depth = 0
                out.append(text[last:first])
                kept = ""
                if keep and text[first + 2] != "{":
                    # a run like '}}}}' also closes nested templates: the body ends before its last '}}'
                    body_end = pos + before - 2 if before > 2 else pos
                    kept = _render_template(text, first + 2, body_end, level, renderers)
                out.append(kept or MARK)
            else:  # stray closing braces
                out.append(text[last:pos])
            last = pos - count
        if depth == 0:
            out.append(text[last:])
            break
        out.append(text[last:first])
        cut = text.find("\n\n", first)
        if cut < 0:
            break
        text = text[cut:]
    else:  # too many unclosed templates: keep the rest, minus the braces
        out.append(_CLOSE_BRACES_RE.sub("", _OPEN_BRACES_RE.sub("", text)))
    return "".join(out)


def _strip_tables(text: str) -> str:
    """Remove ``{| ... |}`` tables (nested; tokens at line start)."""
    if "{|" not in text:
        return text
    out: list[str] = []
    for _ in range(_MAX_RESCANS):
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
    else:  # too many unclosed tables: keep the rest, minus the table tokens
        out.append(_TABLE_SPLIT_RE.sub("", text))
    return "".join(out)


def table_cells(line: str, start: int, end: int, separators: tuple[str, ...]) -> list[tuple[int, int, int]]:
    """``(cell start, content start, end)`` of each cell of table markup written on one line, from
    ``start`` (after the leading ``|``/``!``/``|+``) to ``end``, split at ``separators`` (``||``, and
    ``!!`` in header rows). A cell's attributes (``style="..." | content``) end at its first ``|`` with no
    ``[`` before it (a link's or an external link's ``|`` is content); the content starts after it.
    The one reading of cell markup: the ``clean`` text view's tables and
    :mod:`~assets.wikipedia.wikitext.tables`' structures (which pass the wikitext with templates and links
    blanked)."""
    cells = []
    pos = start
    next_at = dict.fromkeys(separators, -1)  # each separator's next place from pos (-2: none left)
    while True:
        cut, width = end, 0
        for sep in separators:  # each separator is searched for again only once passed: linear in the line
            if next_at[sep] == -1 or 0 <= next_at[sep] < pos:
                found = line.find(sep, pos, end)
                next_at[sep] = found if found >= 0 else -2
            found = next_at[sep]
            if 0 <= found < cut:
                cut, width = found, len(sep)
        bar = line.find("|", pos, cut)
        attributes = bar >= 0 and line.find("[", pos, bar) < 0
        cells.append((pos, bar + 1 if attributes else pos, cut))
        if not width:
            return cells
        pos = cut + width


def _cell_texts(rest: str, separators: tuple[str, ...]) -> list[str]:
    """The trimmed contents of the cells of one line of table markup (attributes left out)."""
    return [rest[content:cut].strip() for _, content, cut in table_cells(rest, 0, len(rest), separators)]


def _tables_as_text(text: str) -> str:
    """The ``clean`` style's tables: as the page shows them, a paragraph per row (cells joined by `` | ``)
    and one for the caption; table markup and cell attributes go. Lines outside tables are kept."""
    if "{|" not in text:
        return text
    out: list[str] = []
    row: list[str] = []
    depth = 0

    def flush() -> None:
        if row:
            out.extend(("", " | ".join(cell for cell in row if cell), ""))  # a paragraph per row
            row.clear()

    for line in text.split("\n"):
        m = _TABLE_LINE_RE.match(line) if depth or "{|" in line else None
        if m is None or (not depth and m.group(1) != "{|"):
            if depth and row:
                row[-1] = f"{row[-1]} {line.strip()}".strip()  # a cell's next line
            else:
                out.append(line)
            continue
        token, rest = m.groups()
        if token == "{|":
            flush()
            depth += 1
        elif token == "|}":
            flush()
            depth -= 1
        elif token == "|-":
            flush()
        elif token == "|+":
            flush()
            out.extend(("", *_cell_texts(rest, ()), ""))
        else:
            row.extend(_cell_texts(rest, ("||", "!!") if token == "!" else ("||",)))
    flush()
    return "\n".join(out)


# ---------------------------------------------------------------------------
# Small callbacks
# ---------------------------------------------------------------------------
_ENTITY_CACHE: dict[str, str] = {}


def _decode_entity(m: re.Match[str]) -> str:
    entity = m.group()
    decoded = _ENTITY_CACHE.get(entity)
    if decoded is None:
        decoded = html.unescape(entity)
        if decoded.isspace() or RESERVED_RE.search(decoded):
            decoded = " "
        if len(_ENTITY_CACHE) < 4096:
            _ENTITY_CACHE[entity] = decoded
    return decoded


def _extlink(m: re.Match[str]) -> str:
    return m.group(1) or MARK


def _empty_parens(m: re.Match[str]) -> str:
    """Drop '()' / '( ; )' left by removals, but keep 'f()'-style code."""
    start = m.start()
    return m.group() if start and m.string[start - 1].isalnum() else MARK


def _last_char(chunks: list[str]) -> str:
    for chunk in reversed(chunks):
        if chunk:
            return chunk[-1]
    return ""


def _repair_marks(text: str) -> str:
    """Remove removal marks, fixing 'word ,' / '(; x' / 'x, )' around them."""
    parts = text.split(MARK)
    out = [parts[0]]
    for right in parts[1:]:
        if not right:
            continue
        r = right.lstrip(" ") if right[0] == " " else right
        c = r[:1]
        if not c or c not in _PUNCT:
            if c and r is not right and _last_char(out) == "(":  # '( x' left by a removal
                right = r
            out.append(right)
            continue
        strip = " ,;" if c == ")" else " "
        i = len(out) - 1
        prev = out[i].rstrip(strip)
        while not prev and i:  # look through chunks emptied between marks
            out[i] = ""
            i -= 1
            prev = out[i].rstrip(strip)
        out[i] = prev
        if c != ")" and (not prev or prev[-1] in "\n(*#"):  # separator left at a line/paren start
            r = r.lstrip(" ,.;:")
        out.append(r)
    return "".join(out)


# ---------------------------------------------------------------------------
# Whole-text cleaning
# ---------------------------------------------------------------------------
def _strip_comments(text: str) -> str:
    """Remove ``<!-- -->``; an unclosed comment is cut to the end of its line."""
    out: list[str] = []
    last = 0
    closed = True
    pos = text.find("<!--")
    while pos >= 0:
        out.append(text[last:pos])
        end = text.find("-->", pos + 4) if closed else -1
        if end >= 0:
            last = end + 3
        else:
            closed = False
            end = text.find("\n", pos)
            last = len(text) if end < 0 else end
        pos = text.find("<!--", last)
    out.append(text[last:])
    return "".join(out)


def _park_nowiki(text: str, parked: list[str]) -> str:
    def park(m: re.Match[str]) -> str:
        content = m.group(2)
        if not content:
            return ""
        if "&" in content:
            content = html.unescape(content)
        parked.append(" ".join(RESERVED_RE.sub("", content).split()))
        return f"\x04{len(parked) - 1}\x06"

    return _NOWIKI_RE.sub(park, text)


def _clean(text: str, links: Links, parked: list[str], heads: list[str], kilt: bool) -> str:
    """Apply all markup passes (in the ``kilt`` or the ``clean`` style); returns text with link sentinels."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "<" in text:
        if "<!--" in text:
            text = _strip_comments(text)
        text = _park_nowiki(text, parked)
        text = _REF_RE.sub(MARK, text)
        text = _REF_UNCLOSED_RE.sub(MARK, text)
        if not kilt:
            text = gallery_captions(text)
        text = _EXT_RE.sub(MARK, text)
    text = _strip_templates(text, heads, renderers=RENDERERS if kilt else CLEAN_RENDERERS)
    text = _strip_tables(text) if kilt else _tables_as_text(text)
    text = replace_links(text, links)
    if "[" in text:
        text = _EXTLINK_RE.sub(_extlink, text)
    if "<" in text:
        text = _BR_RE.sub(" ", text)
        text = _TAG_RE.sub("", text)
    if "''" in text:
        text = kilt_quotes(text) if kilt else _QUOTES_RE.sub("", text)
    if "__" in text:
        text = _MAGIC_RE.sub("", text)
    if "----" in text:
        text = _HRULE_RE.sub("", text)
    if "&" in text:
        text = _ENTITY_RE.sub(_decode_entity, text)
    if "\t" in text:
        text = text.replace("\t", " ")
    if "\xa0" in text:
        text = text.replace("\xa0", " ")
    if kilt:
        if MARK in text:
            text = text.replace(MARK, "")
        text = kilt_commas(text)
    else:
        if "(" in text:
            text = _EMPTY_PARENS_RE.sub(_empty_parens, text)
        if MARK in text:
            text = _repair_marks(text)
    return _MULTI_SPACE_RE.sub(" ", text)


# ---------------------------------------------------------------------------
# Public entry point
# ---------------------------------------------------------------------------
def _strip_reserved(s: str) -> str:
    for ch in RESERVED:
        if ch in s:
            return RESERVED_RE.sub("", s)
    return s


def _is_disambiguation(title: str, heads: list[str]) -> bool:
    if title.endswith("(disambiguation)"):
        return True
    return bool(heads) and _DISAMBIG_RE.search(SEP + SEP.join(heads)) is not None


def parse_wikitext(
    title: str,
    wikitext: str,
    *,
    file_prefixes: frozenset[str] = DEFAULT_FILE_PREFIXES,
    category_prefixes: frozenset[str] = DEFAULT_CATEGORY_PREFIXES,
    style: str = DEFAULT_TEXT_STYLE,
) -> ParsedArticle:
    """Parse one article's wikitext into KILT text, anchors and categories.

    ``file_prefixes``/``category_prefixes`` are lowercased namespace names
    (with aliases); ``style`` is ``kilt`` or ``clean``
    (:mod:`assets.wikipedia.articles.text_styles`). Malformed markup never raises; an
    unexpected internal error propagates, so the caller can count and name the page.
    """
    kilt = check_text_style(style) == "kilt"
    title = _strip_reserved(" ".join(str(title).split()))
    if not isinstance(wikitext, str):
        wikitext = "" if wikitext is None else str(wikitext)
    wikitext = _strip_reserved(wikitext)
    links = Links(file_prefixes, category_prefixes, trail_outside=kilt, captions=not kilt)
    parked: list[str] = []
    heads: list[str] = []
    cleaned = _clean(wikitext, links, parked, heads, kilt)
    builder = EntryBuilder(title, parked)
    assemble_entries(builder, cleaned, kilt)
    return ParsedArticle(builder.text, builder.anchors, links.categories, _is_disambiguation(title, heads))


_SENTINEL_RE = re.compile("\x01[^\x02]*\x02([^\x03]*)\x03")
_PARKED_NUMBER_RE = re.compile("\x04([0-9]+)\x06")


def plain_text(
    wikitext: str,
    *,
    file_prefixes: frozenset[str] = DEFAULT_FILE_PREFIXES,
    category_prefixes: frozenset[str] = DEFAULT_CATEGORY_PREFIXES,
    style: str = "clean",
) -> str:
    """The visible text of a fragment of wikitext (a table cell, an infobox value) on one line: the same
    passes as :func:`parse_wikitext` (templates rendered or removed, links to their labels, tags, quotes,
    entities), without paragraph assembly; removal marks and newlines become single spaces."""
    kilt = check_text_style(style) == "kilt"
    if not isinstance(wikitext, str):
        wikitext = "" if wikitext is None else str(wikitext)
    parked: list[str] = []
    links = Links(file_prefixes, category_prefixes, captions=not kilt)
    cleaned = _clean(_strip_reserved(wikitext), links, parked, [], kilt)
    if parked:
        cleaned = _PARKED_NUMBER_RE.sub(lambda m: parked[int(m.group(1))], cleaned)
    cleaned = _SENTINEL_RE.sub(r"\1", cleaned).replace(MARK, " ")
    return " ".join(cleaned.split())
