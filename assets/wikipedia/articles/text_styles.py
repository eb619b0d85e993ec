"""The knowledge source's two text styles (``knowledge_source.text_style``).

``kilt`` (the default) writes pages as KILT's 2019 knowledge source has them. KILT cut its pages with
WikiExtractor (``--sections --lists``: the ``Section::::`` and ``BULLET::::-`` entries), and these are that
pipeline's conventions, which a paragraph of ours must follow to match KILT's byte for byte:

- italic ``''x''`` is written ``"x"``; bold ``'''x'''`` and bold italic ``'''''x'''''`` lose their quotes;
  ``''"x"''`` and ``""x""`` are ``"x"``; an unpaired ``'''`` is dropped and an unpaired ``''`` is ``"``;
- a removed template (or reference, file, ...) leaves the text around it as it was: ``such as , , or .``
  (runs of blanks become one; ``,,`` becomes ``,`` and ``,.`` becomes ``.``);
- a link trail stays outside the anchor: ``[[autism spectrum disorder]]s`` anchors
  ``autism spectrum disorder``;
- indented lines (``:`` at the start of the line) are not entries;
- a ``#`` list item is ``BULLET::::1. ``, ``BULLET::::2. `` ... (numbered per list level), every other list
  item (``*``, ``;``) is ``BULLET::::- ``.

``clean`` is the earlier style of this project: italics and bold lose their quotes, the punctuation and
blanks a removal leaves are repaired (``such as,, or.``, ``( )`` dropped), a link's trail is part of its
anchor, indented and ``;`` lines are paragraphs, and every ``*`` or ``#`` item is ``BULLET::::- ``.
"""

from __future__ import annotations

import re
from typing import Literal

from assets.params import TEXT_STYLE

__all__ = [
    "DEFAULT_TEXT_STYLE",
    "TEXT_STYLES",
    "KiltBullets",
    "TextStyle",
    "bullet_marker_end",
    "check_text_style",
    "kilt_commas",
    "kilt_quotes",
]

TextStyle = Literal["kilt", "clean"]
TEXT_STYLES: tuple[str, ...] = ("kilt", "clean")
DEFAULT_TEXT_STYLE: TextStyle = TEXT_STYLE

# Applied in this order; none crosses a line end.
_KILT_QUOTE_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"'''''(.*?)'''''"), r"\1"),  # bold italic
    (re.compile(r"'''(.*?)'''"), r"\1"),  # bold
    (re.compile(r"''\"([^\"]*?)\"''"), r'"\1"'),  # italic around a quotation
    (re.compile(r"''(.*?)''"), r'"\1"'),  # italic
    (re.compile(r'""([^"]*?)""'), r'"\1"'),  # doubled quotation marks
)


_BULLET_MARKER_RE = re.compile(r"BULLET::::(?:-|[0-9]+\.)")


def bullet_marker_end(entry: str) -> int:
    """Where a list item's marker (``BULLET::::-`` or ``BULLET::::N.``, either style) ends in ``entry``;
    0 when ``entry`` is not a list item. The marker is markup: passages and span search start after it."""
    if not entry.startswith("BULLET::::"):
        return 0
    marker = _BULLET_MARKER_RE.match(entry)
    return marker.end() if marker else 0


def check_text_style(style: str) -> TextStyle:
    """``style`` if it is a text style, else a ``ValueError`` naming the choices."""
    if style not in TEXT_STYLES:
        raise ValueError(f"unknown text style {style!r}: choose one of {', '.join(TEXT_STYLES)}")
    return style  # type: ignore[return-value]


def kilt_quotes(text: str) -> str:
    """Bold and italic quote marks as KILT's pipeline writes them (see the module docstring)."""
    for pattern, replacement in _KILT_QUOTE_RULES:
        text = pattern.sub(replacement, text)
    if "''" in text:
        text = text.replace("'''", "").replace("''", '"')
    return text


def kilt_commas(text: str) -> str:
    """``,,`` and ``,.`` left by removals become ``,`` and ``.``, as in KILT's pipeline."""
    return text.replace(",,", ",").replace(",.", ".") if "," in text else text


class KiltBullets:
    """List-item prefixes as KILT writes them: ``BULLET::::N. `` for a ``#`` item (numbered per list level,
    from 1), ``BULLET::::- `` for any other (``*``, ``;``). A line that is not a list item, a blank line or a
    header ends the list (:meth:`end`)."""

    __slots__ = ("counts", "levels")

    def __init__(self) -> None:
        self.levels = ""
        self.counts: list[int] = []

    def end(self) -> None:
        self.levels = ""
        self.counts.clear()

    def prefix(self, markers: str, counted: bool = True) -> str:
        """The prefix of an item with list ``markers`` (``*``, ``##``, ``*#`` ...); an item without text
        (``counted`` false) opens its levels but takes no number."""
        keep = 0
        for old, new in zip(self.levels, markers, strict=False):
            if old != new:
                break
            keep += 1
        self.levels = markers
        del self.counts[keep:]
        self.counts.extend([0] * (len(markers) - keep))
        if counted:
            self.counts[-1] += 1
        return f"BULLET::::{self.counts[-1]}. " if markers[-1] == "#" else "BULLET::::- "
