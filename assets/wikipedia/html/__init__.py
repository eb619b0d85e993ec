"""Parsoid HTML (Wikimedia's rendering, every template expanded) made into KILT entries: the converter of
the HTML route (:mod:`~assets.wikipedia.html.parsoid`) and its tables and infoboxes
(:mod:`~assets.wikipedia.html.structures`); the Enterprise HTML dumps that carry it are read
by :mod:`assets.wikipedia.dump.enterprise`."""

from assets.wikipedia.html.parsoid import HtmlPageError, html_document, parse_parsoid_html
from assets.wikipedia.html.structures import html_structures, visible_text

__all__ = ["HtmlPageError", "html_document", "html_structures", "parse_parsoid_html", "visible_text"]
