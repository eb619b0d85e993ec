"""Internal links of wikitext (step 4 of :mod:`assets.wikipedia.wikitext.convert`): ``[[target|label]]trail``
becomes ``\\x01target\\x02label\\x03`` (the anchor sentinels the entry assembly turns into offsets); files,
categories (recorded) and bare interlanguage links become a removal mark."""

from __future__ import annotations

import re

from assets.wikipedia.articles import MARK
from assets.wikipedia.wikitext.templates_en import LANG_CODE_RE

__all__ = ["LINK_RE", "Links", "file_caption", "gallery_captions", "replace_links"]

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


_FRAMED_RE = re.compile(r"^\s*(?:thumb|thumbnail|frame|framed|manualthumb)\s*(?:=.*)?$", re.I)


def shown_caption(label: str) -> str:
    """The caption a reader sees under a file link: its caption when the image is framed (``thumb``,
    ``frame``); an inline or ``frameless`` image's caption is only its tooltip, so ``""`` then."""
    parameters = label.split("|")
    return file_caption(parameters) if any(_FRAMED_RE.match(p) for p in parameters) else ""


def file_caption(label: str | list[str]) -> str:
    """The caption of a file link's parameters (``thumb|200px|A caption``, or already split): its last
    parameter that is not an image option, or ``""``."""
    for part in reversed(label.split("|") if isinstance(label, str) else label):
        if part.strip() and not _IMAGE_OPTION_RE.match(part):
            return " ".join(part.split())
    return ""


_GALLERY_RE = re.compile(r"<gallery(?![\w-])([^<>]*?)(?:/>|>(.*?)</gallery\s*>)", re.I | re.S)
_GALLERY_TOKEN_RE = re.compile(r"(\[\[|\]\]|\{\{|\}\}|\|)")
_GALLERY_TITLE_RE = re.compile(r"""\bcaption\s*=\s*(?:"([^"]*)"|'([^']*)'|(\S+))""", re.I)


def _top_level_parameters(line: str) -> list[str]:
    """``line`` split at the ``|`` outside its links and templates (a gallery line's parameters are still
    wikitext: ``File:X.jpg|[[A|B]], [[C|D]]``)."""
    parts, current, depth = [], [], 0
    for token in _GALLERY_TOKEN_RE.split(line):
        if token == "|" and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        if token in ("[[", "{{"):
            depth += 1
        elif token in ("]]", "}}"):
            depth = max(0, depth - 1)
        current.append(token)
    return [*parts, "".join(current)]


def _gallery(m: re.Match[str]) -> str:
    title = _GALLERY_TITLE_RE.search(m.group(1))
    captions = [next(filter(None, title.groups()), "")] if title else []
    for line in (m.group(2) or "").split("\n"):  # "File:Name.jpg|options|A caption", one image a line
        name, *parameters = _top_level_parameters(line)
        if parameters and name.strip():
            captions.append(file_caption(parameters))
    shown = [" ".join(caption.split()) for caption in captions if caption.strip()]
    return "".join(f"{MARK}\n\n{caption}\n\n{MARK}" for caption in shown) or MARK


def gallery_captions(text: str) -> str:
    """``<gallery>`` blocks as a reader sees their text: the gallery's ``caption=`` and each image's
    caption, a paragraph each (file names and image options left out); a gallery without captions
    becomes a removal mark. For the ``clean`` style (``kilt`` drops galleries whole)."""
    return _GALLERY_RE.sub(_gallery, text)  # one case-insensitive scan; no copy when there is none


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
                if lowered == "media" and self.captions:  # a link to the file itself: its text shows
                    return (label if label and label.strip() else target) + trail
                if lowered in self.file_prefixes:
                    caption = shown_caption(label) if self.captions and label else ""
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
