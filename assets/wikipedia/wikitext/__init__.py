"""Wikitext made into KILT paragraphs, and its tables and infoboxes with exact offsets.

* :mod:`~assets.wikipedia.wikitext.convert`: :func:`parse_wikitext`, with
  :mod:`~assets.wikipedia.wikitext.links`, :mod:`~assets.wikipedia.wikitext.entries` and the English
  inline templates (:mod:`~assets.wikipedia.wikitext.templates_en`);
* :mod:`~assets.wikipedia.wikitext.text_styles`: the ``kilt`` and ``clean`` text styles;
* :mod:`~assets.wikipedia.wikitext.titles`: MediaWiki's title normalisation;
* :mod:`~assets.wikipedia.wikitext.tables`: tables and infoboxes (:func:`find_structures`);
* the last pass (:func:`assemble_entries` of :mod:`~assets.wikipedia.wikitext.entries`), which the HTML
  route (:mod:`assets.wikipedia.html`) shares.
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
from assets.wikipedia.wikitext.entries import (
    MARK,
    RESERVED_RE,
    S_CLOSE,
    S_MID,
    S_OPEN,
    EntryBuilder,
    assemble_entries,
)
from assets.wikipedia.wikitext.tables import (
    FILLER,
    Cell,
    Infobox,
    InfoboxField,
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
    kilt_commas,
    kilt_quotes,
)
from assets.wikipedia.wikitext.titles import (
    decode_fever_escapes,
    link_target_key,
    normalize_title,
    split_fragment,
    title_problem,
)

__all__ = [
    "DEFAULT_CATEGORY_PREFIXES",
    "DEFAULT_FILE_PREFIXES",
    "DEFAULT_TEXT_STYLE",
    "FILLER",
    "MARK",
    "RESERVED_RE",
    "RESIDUAL_MARKERS",
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
    "assemble_entries",
    "bullet_marker_end",
    "check_text_style",
    "decode_fever_escapes",
    "find_structures",
    "has_residual_markup",
    "kilt_commas",
    "kilt_quotes",
    "link_target_key",
    "masked_wikitext",
    "normalize_title",
    "parse_wikitext",
    "plain_text",
    "split_fragment",
    "title_problem",
]
