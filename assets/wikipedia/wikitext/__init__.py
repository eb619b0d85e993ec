"""Wikitext made into KILT paragraphs, and its tables and infoboxes with exact offsets.

* :mod:`~assets.wikipedia.wikitext.convert`: :func:`parse_wikitext`, with
  :mod:`~assets.wikipedia.wikitext.links`, :mod:`~assets.wikipedia.wikitext.entries` and the English
  inline templates (:mod:`~assets.wikipedia.wikitext.templates_en`);
* :mod:`~assets.wikipedia.wikitext.text_styles`: the ``kilt`` and ``clean`` text styles;
* :mod:`~assets.wikipedia.wikitext.titles`: MediaWiki's title normalisation;
* :mod:`~assets.wikipedia.wikitext.tables`: tables and infoboxes (:func:`find_structures`).
"""

from assets.wikipedia.wikitext.convert import (
    DEFAULT_CATEGORY_PREFIXES,
    DEFAULT_FILE_PREFIXES,
    RESIDUAL_MARKERS,
    Anchor,
    ParsedArticle,
    has_residual_markup,
    parse_wikitext,
    plain_text,
)
from assets.wikipedia.wikitext.tables import (
    FILLER,
    Cell,
    Infobox,
    Structures,
    Table,
    find_structures,
    masked_wikitext,
)
from assets.wikipedia.wikitext.text_styles import (
    DEFAULT_TEXT_STYLE,
    TEXT_STYLES,
    KiltBullets,
    bullet_marker_end,
    check_text_style,
    kilt_quotes,
)
from assets.wikipedia.wikitext.titles import (
    decode_fever_escapes,
    link_target_key,
    normalize_title,
    split_fragment,
)

__all__ = [
    "DEFAULT_CATEGORY_PREFIXES",
    "DEFAULT_FILE_PREFIXES",
    "DEFAULT_TEXT_STYLE",
    "FILLER",
    "RESIDUAL_MARKERS",
    "TEXT_STYLES",
    "Anchor",
    "Cell",
    "Infobox",
    "KiltBullets",
    "ParsedArticle",
    "Structures",
    "Table",
    "bullet_marker_end",
    "check_text_style",
    "decode_fever_escapes",
    "find_structures",
    "has_residual_markup",
    "kilt_quotes",
    "link_target_key",
    "masked_wikitext",
    "normalize_title",
    "parse_wikitext",
    "plain_text",
    "split_fragment",
]
