"""Parsoid HTML (Wikimedia's rendering, every template expanded) made into KILT entries: the converter of
the HTML route (:mod:`~assets.wikipedia.html.parsoid`); the Enterprise HTML dumps that carry it are read
by :mod:`assets.wikipedia.dump.enterprise`."""

from assets.wikipedia.html.parsoid import HtmlPageError, parse_parsoid_html

__all__ = ["HtmlPageError", "parse_parsoid_html"]
