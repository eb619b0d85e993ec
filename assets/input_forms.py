"""The forms a dump comes in, each with one name everywhere: the ``knowledge_source.input`` setting,
``kiltpipe fetch --form``, the route a knowledge source's ``manifest.json`` records, its conversion rules
(what page reuse compares), the build report, the run tag and the asset metadata.

* ``xml``: a MediaWiki XML dump (pages-articles, multistream, the parts of a multi-part dump); its pages'
  wikitext is converted.
* ``enterprise-html``: a Wikimedia Enterprise HTML dump (a gzip'd tar of NDJSON records); its pages'
  Parsoid HTML is converted.

The names alone, for every layer; a form is told from a file by ``assets.wikipedia.dump.forms`` and read
by its reader, ``assets.wikipedia.pages.readers``."""

from __future__ import annotations

from typing import Any

__all__ = [
    "ENTERPRISE_FORM",
    "FORM_NAMES",
    "XML_FORM",
    "bytes_name",
    "recorded_conversion",
    "recorded_route",
]

XML_FORM = "xml"
ENTERPRISE_FORM = "enterprise-html"
_BYTES_NAMES = {XML_FORM: "xml", ENTERPRISE_FORM: "html"}
"""What the bytes each form's reader reads are called in a report and its metadata (``xml_bytes``,
``html_bytes``)."""
FORM_NAMES = tuple(_BYTES_NAMES)
_LEGACY_ROUTES = {"wikitext": XML_FORM, "parsoid-html": ENTERPRISE_FORM}
"""The names a knowledge source built before the forms were named once records for its route."""


def bytes_name(form: str) -> str:
    """What the bytes ``form``'s reader reads are called: ``xml`` or ``html``; an unknown form is a
    ValueError listing the known ones."""
    try:
        return _BYTES_NAMES[form]
    except KeyError:
        raise ValueError(f"input form {form!r}: choose one of {', '.join(FORM_NAMES)}") from None


def recorded_route(manifest: dict[str, Any]) -> str:
    """The form a knowledge source's ``manifest.json`` (or its conversion rules) says it was built from:
    its ``route``; one built before the forms were named once says ``wikitext`` or ``parsoid-html``, or
    nothing for an XML dump."""
    route = manifest.get("route") or XML_FORM
    return _LEGACY_ROUTES.get(route, route)


def recorded_conversion(conversion: dict[str, Any]) -> dict[str, Any]:
    """A manifest's conversion rules with their route in today's name (one built before the forms were
    named once left the XML route unnamed): what page reuse compares with a build's own."""
    return {**conversion, "route": recorded_route(conversion)}
