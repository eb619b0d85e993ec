"""A converted article, whichever route read it: the last pass both converters share (the reserved
characters a converter marks links and removal points with, and KILT entries assembled from the marked
text: :mod:`~assets.wikipedia.articles.entries`), KILT's text styles
(:mod:`~assets.wikipedia.articles.text_styles`) and what a page's tables and infoboxes are
(:mod:`~assets.wikipedia.articles.structures`). The wikitext converter (``assets.wikipedia.wikitext``) and
the Parsoid HTML one (``assets.wikipedia.html``) both write into these; neither imports the other.
"""

from assets.wikipedia.articles.entries import (
    MARK,
    P_CLOSE,
    P_OPEN,
    RESERVED,
    RESERVED_RE,
    S_CLOSE,
    S_MID,
    S_OPEN,
    SEP,
    Anchor,
    EntryBuilder,
    ParsedArticle,
    assemble_entries,
)
from assets.wikipedia.articles.structures import (
    SKIPS_LISTED,
    Cell,
    Infobox,
    InfoboxField,
    Structures,
    Table,
)
from assets.wikipedia.articles.text_styles import (
    DEFAULT_TEXT_STYLE,
    TEXT_STYLES,
    KiltBullets,
    TextStyle,
    bullet_marker_end,
    check_text_style,
    kilt_commas,
    kilt_quotes,
)

__all__ = [
    "DEFAULT_TEXT_STYLE",
    "MARK",
    "P_CLOSE",
    "P_OPEN",
    "RESERVED",
    "RESERVED_RE",
    "SEP",
    "SKIPS_LISTED",
    "S_CLOSE",
    "S_MID",
    "S_OPEN",
    "TEXT_STYLES",
    "Anchor",
    "Cell",
    "EntryBuilder",
    "Infobox",
    "InfoboxField",
    "KiltBullets",
    "ParsedArticle",
    "Structures",
    "Table",
    "TextStyle",
    "assemble_entries",
    "bullet_marker_end",
    "check_text_style",
    "kilt_commas",
    "kilt_quotes",
]
