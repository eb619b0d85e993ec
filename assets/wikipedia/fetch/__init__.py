"""Wikimedia dump releases fetched, verified and published into the landing folder.

* :mod:`~assets.wikipedia.fetch.releases`: which run of a wiki is complete, on which source, its files;
* :mod:`~assets.wikipedia.fetch.download`: the fetch itself (resumed, bounded, verified, published);
* :mod:`~assets.wikipedia.fetch.files`: checksums, part files, pace and sources of one file;
* :mod:`~assets.wikipedia.fetch.landing`: the complete dumps of a landing folder (the landing sensor's scan);
* :mod:`~assets.wikipedia.fetch.entities`: Wikidata's entity dump runs, as releases the same fetch takes;
* :mod:`~assets.wikipedia.fetch.html_runs`: the Enterprise HTML dump runs, and a wiki's run in any form.
"""

from assets.wikipedia.fetch.download import STAGING, Fetcher, FetchError, FetchSettings
from assets.wikipedia.fetch.entities import (
    ENTITY_FOLDER,
    ENTITY_WIKI,
    entity_dump_name,
    find_entity_release,
    landed_entity_dumps,
)
from assets.wikipedia.fetch.html_runs import HTML_FORM, find_html_release, find_wiki_release, html_dump_name
from assets.wikipedia.fetch.landing import LandedDump, LandingScan, scan_landing
from assets.wikipedia.fetch.releases import (
    TABLES,
    Release,
    ReleaseUnavailable,
    find_release,
    release_from_status,
)

__all__ = [
    "ENTITY_FOLDER",
    "ENTITY_WIKI",
    "HTML_FORM",
    "STAGING",
    "TABLES",
    "FetchError",
    "FetchSettings",
    "Fetcher",
    "LandedDump",
    "LandingScan",
    "Release",
    "ReleaseUnavailable",
    "entity_dump_name",
    "find_entity_release",
    "find_html_release",
    "find_release",
    "find_wiki_release",
    "html_dump_name",
    "landed_entity_dumps",
    "release_from_status",
    "scan_landing",
]
