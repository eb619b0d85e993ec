"""Internal links of wikitext (step 4 of :mod:`assets.wikipedia.wikitext`): ``[[target|label]]trail``
becomes ``\\x01target\\x02label\\x03`` (the anchor sentinels the entry assembly turns into offsets); files,
categories (recorded) and bare interlanguage links become a removal mark."""

from __future__ import annotations

import re

from assets.wikipedia.templates_en import LANG_CODE_RE
from assets.wikipedia.wikitext_entries import MARK

__all__ = ["LINK_RE", "Links", "file_caption", "replace_links"]

LINK_RE = re.compile(
    r"\[\[([^\[\]\n|]*)"
    r"(?:\|([^\[\]\n]*(?:(?:\[(?!\[)|\](?!\])|\n(?![^\S\n]*\n))[^\[\]\n]*)*))?"
    r"\]\]([a-z]*)"
)
_UNCLOSED_FILE_RE_CACHE: dict[frozenset[str], re.Pattern[str]] = {}
_LONG_LANG_CODES = frozenset(
    {"simple", "be-tarask", "be-x-old", "zh-yue", "zh-min-nan", "zh-classical", "roa-rup",
     "roa-tara", "map-bms", "bat-smg", "nds-nl", "fiu-vro", "cbk-zam"}
)  # fmt: skip


def _is_language_prefix(prefix: str) -> bool:
    return prefix in _LONG_LANG_CODES or LANG_CODE_RE.fullmatch(prefix) is not None


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


_IMAGE_OPTION_RE = re.compile(
    r"^\s*(?:thumb|thumbnail|frame|framed|frameless|border|left|right|center|centre|none|baseline|sub|super|"
    r"top|text-top|middle|bottom|text-bottom|upright(?:\s*=?\s*[\d.]+)?|\d*x?\d+\s*px|"
    r"(?:alt|link|page|class|lang|thumbtime|start|end|upright)\s*=.*)\s*$",
    re.I,
)


def file_caption(label: str) -> str:
    """The caption of a file link's parameters (``thumb|200px|A caption``): its last parameter that is not
    an image option, or ``""``."""
    for part in reversed(label.split("|")):
        if part.strip() and not _IMAGE_OPTION_RE.match(part):
            return " ".join(part.split())
    return ""


class Links:
    """``re.sub`` callback for ``[[...]]``: a sentinel-wrapped label, or a
    mark for files, categories (recorded) and bare interlanguage links.
    A link trail (``[[dog]]s``) is inside the anchor unless ``trail_outside``."""

    __slots__ = ("captions", "categories", "category_prefixes", "file_prefixes", "seen", "trail_outside")

    def __init__(
        self,
        file_prefixes: frozenset[str],
        category_prefixes: frozenset[str],
        trail_outside: bool = False,
        captions: bool = False,
    ) -> None:
        self.captions = captions
        self.file_prefixes = file_prefixes
        self.category_prefixes = category_prefixes
        self.trail_outside = trail_outside
        self.categories: list[str] = []
        self.seen: set[str] = set()

    def __call__(self, m: re.Match[str]) -> str:
        target, label, trail = m.groups()
        colon = target.find(":")
        if colon >= 0:
            prefix = target[:colon].strip()
            if not prefix:  # leading colon: visible link to a namespace/interwiki page
                target = target[colon + 1 :]
            else:
                lowered = prefix.lower()
                if lowered in self.file_prefixes:
                    caption = file_caption(label) if self.captions and label else ""
                    return f"{MARK}\n\n{caption}\n\n{MARK}" if caption else MARK  # its own paragraph
                if lowered in self.category_prefixes:
                    self._category(target[colon + 1 :])
                    return MARK + trail
                if label is None and _is_language_prefix(prefix):
                    return MARK + trail
        if label is None:
            label = target
        elif not label or label.isspace():
            label = _pipe_trick(target)
        elif "\n" in label:
            label = label.replace("\n", " ")
        if self.trail_outside:
            return f"\x01{target}\x02{label}\x03{trail}"
        return f"\x01{target}\x02{label}{trail}\x03"

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


def replace_links(text: str, links: Links) -> str:
    """Replace internal links, innermost first (file captions may hold links)."""
    for _ in range(4):
        if "[[" not in text:
            return text
        text, n = LINK_RE.subn(links, text)
        if not n:
            break
    if "[[" in text:  # unclosed: drop a file link to its line end, else the brackets
        text = _unclosed_file_re(links.file_prefixes).sub(MARK, text)
        text = text.replace("[[", "")
    return text.replace("]]", "") if "]]" in text else text
