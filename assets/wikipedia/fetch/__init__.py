"""Wikimedia dump releases fetched, verified and published into the landing folder.

* :mod:`~assets.wikipedia.fetch.releases`: which run of a wiki is complete, on which source, its files;
* :mod:`~assets.wikipedia.fetch.download`: the fetch itself (resumed, bounded, verified, published);
* :mod:`~assets.wikipedia.fetch.files`: checksums, part files, pace and sources of one file;
* :mod:`~assets.wikipedia.fetch.landing`: the complete dumps of a landing folder (the landing sensor's scan).
"""

from assets.wikipedia.fetch.download import STAGING, Fetcher, FetchError, FetchSettings
from assets.wikipedia.fetch.landing import LandedDump, LandingScan, scan_landing
from assets.wikipedia.fetch.releases import (
    TABLES,
    Release,
    ReleaseUnavailable,
    find_release,
    release_from_status,
)

__all__ = [
    "STAGING",
    "TABLES",
    "FetchError",
    "FetchSettings",
    "Fetcher",
    "LandedDump",
    "LandingScan",
    "Release",
    "ReleaseUnavailable",
    "find_release",
    "release_from_status",
    "scan_landing",
]
