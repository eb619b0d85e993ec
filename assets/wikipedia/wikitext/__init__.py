"""Wikitext made into KILT paragraphs, and its tables and infoboxes with exact offsets.

* :mod:`~assets.wikipedia.wikitext.convert`: :func:`parse_wikitext`, with
  :mod:`~assets.wikipedia.wikitext.links` and the English inline templates
  (:mod:`~assets.wikipedia.wikitext.templates_en`), ending in the last pass both routes share
  (:mod:`assets.wikipedia.articles`);
* :mod:`~assets.wikipedia.wikitext.titles`: MediaWiki's title normalisation;
* :mod:`~assets.wikipedia.wikitext.tables`: tables and infoboxes (:func:`find_structures`).
"""

from assets.wikipedia.wikitext.convert import (
    DEFAULT_CATEGORY_PREFIXES,
    DEFAULT_FILE_PREFIXES,
    RESIDUAL_MARKERS,
    has_residual_markup,
    parse_wikitext,
    plain_text,
)
from assets.wikipedia.wikitext.tables import FILLER, find_structures, masked_wikitext
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
    "FILLER",
    "RESIDUAL_MARKERS",
    "decode_fever_escapes",
    "find_structures",
    "has_residual_markup",
    "link_target_key",
    "masked_wikitext",
    "normalize_title",
    "parse_wikitext",
    "plain_text",
    "split_fragment",
    "title_problem",
]
