"""Wikipedia title normalization, the way MediaWiki resolves a link target to a page."""

from __future__ import annotations

import html
import re
from urllib.parse import unquote

# FEVER / PTB escapes found in FEVER page ids ("Bad_Boys_-LRB-1995_film-RRB-").
FEVER_ESCAPES = {
    "-LRB-": "(",
    "-RRB-": ")",
    "-LSB-": "[",
    "-RSB-": "]",
    "-LCB-": "{",
    "-RCB-": "}",
    "-COLON-": ":",
}
_FEVER_ESCAPE_RE = re.compile("|".join(re.escape(k) for k in FEVER_ESCAPES))
_WHITESPACE_RE = re.compile(r"[\s_\u00a0\u200e\u200f]+")


def decode_fever_escapes(text: str) -> str:
    """``Soul_Food_-LRB-film-RRB-`` -> ``Soul_Food_(film)``."""
    return _FEVER_ESCAPE_RE.sub(lambda m: FEVER_ESCAPES[m.group(0)], text)


def split_fragment(target: str) -> tuple[str, str | None]:
    """Split ``"Page#Section"`` into ``("Page", "Section")``; no ``#`` gives ``(target, None)``."""
    title, sep, fragment = target.partition("#")
    return title, (fragment.strip() or None) if sep else None


def normalize_title(raw: str, *, case: str = "first-letter", decode_fever: bool = False) -> str:
    """Canonical page title: entities and %-escapes decoded, ``_`` as space, whitespace collapsed,
    leading ``:`` dropped, first letter upper-cased (for wikis whose ``<case>`` is first-letter).

    The fragment (``#...``) is *not* removed; call :func:`split_fragment` first for link targets.
    """
    title = raw
    if "%" in title:
        title = unquote(title)
    if "&" in title:
        title = html.unescape(title)
    if decode_fever and "-" in title:
        title = decode_fever_escapes(title)
    title = _WHITESPACE_RE.sub(" ", title).strip()
    if title.startswith(":"):
        title = title[1:].lstrip()
    if case == "first-letter" and title and not title[0].isupper():
        title = title[0].upper() + title[1:]
    return title


def link_target_key(target: str, *, case: str = "first-letter") -> str:
    """The lookup key of a wikilink target: normalized title without its fragment."""
    title, _ = split_fragment(target)
    return normalize_title(title, case=case)


MAX_TITLE_BYTES = 255
"""MediaWiki's longest page title, in UTF-8 bytes (``page.page_title`` is VARBINARY(255))."""
_ILLEGAL_TITLE_RE = re.compile("[\x00-\x1f\x7f#<>\\[\\]|{}\ufffd]")
"""Characters MediaWiki never allows in a title (``$wgLegalTitleChars`` leaves them out; U+FFFD is what a
bad byte became)."""


def title_problem(title: str) -> str | None:
    """Why ``title`` cannot be a MediaWiki page title (None when it can): empty, over
    :data:`MAX_TITLE_BYTES` bytes, or holding a character MediaWiki forbids (control characters among them),
    named by its code point."""
    if not title.strip():
        return "an empty title"
    size = len(title.encode("utf-8", "surrogatepass"))
    if size > MAX_TITLE_BYTES:
        return f"a title of {size:,} bytes (MediaWiki's longest is {MAX_TITLE_BYTES})"
    illegal = _ILLEGAL_TITLE_RE.search(title)
    if illegal:
        return f"a title holding U+{ord(illegal.group()):04X}, which MediaWiki forbids in titles"
    if any("\ud800" <= c <= "\udfff" for c in title):
        return "a title holding an unpaired surrogate"
    return None
