"""Wikimedia Enterprise HTML dump runs on a dump site: ``other/enterprise_html/runs/YYYYMMDD/`` holds one
``<wiki>-NS0-YYYYMMDD-ENTERPRISE-HTML.json.tar.gz`` per wiki (a tar of ndjson article records, gzip'd);
``other/enterprise_html/runs/`` lists the runs. These runs have no ``dumpstatus.json``, and Wikimedia
publishes no checksum of their files: a run is *ready* for a wiki when its listing names the wiki's file with
its size (Wikimedia's listings give exact byte counts). What the fetch can verify, it verifies: the size from
the listing, a checksum when the run folder does publish a list naming the file (``<file>.md5``/``.sha1``, or
``*md5sums*.txt``/``*sha1sums*.txt``: at most :data:`CHECKSUM_LISTS_READ`), else every gzip member's CRC-32
and length, read through to the end before the file lands (:func:`~assets.wikipedia.fetch.files.verified`).

:func:`find_html_release` makes the newest ready run a :class:`~assets.wikipedia.fetch.releases.Release`
of form ``enterprise-html`` that :class:`~assets.wikipedia.fetch.download.Fetcher` fetches as any other
(resumed, from the mirrors when a source fails). Pure module: the caller passes the function that reads
a URL.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from assets.input_forms import ENTERPRISE_FORM
from assets.limits import FetchLimits
from assets.params import FETCH_FORM, FETCH_TABLES
from assets.wikipedia.fetch.entities import listing_sizes, parse_checksums
from assets.wikipedia.fetch.releases import (
    Release,
    ReleaseFile,
    find_release,
    listed_runs,
    runs_to_probe,
    unavailable,
)

__all__ = ["HTML_FORM", "HTML_RUNS_FOLDER", "find_html_release", "find_wiki_release", "html_dump_name"]

HTML_RUNS_FOLDER = "other/enterprise_html/runs"
"""Where a dump site keeps the Enterprise HTML dump runs."""
HTML_FORM = ENTERPRISE_FORM
"""The form name of these dumps (``kiltpipe fetch --form``, ``snapshots.releases.form``)."""
_CHECKSUM_LIST = re.compile(r".*(md5|sha1)sums.*\.txt")
CHECKSUM_LISTS_READ = 4
"""Checksum lists of a run folder read at most, those naming the wiki or the run's date first: a listing
can name any number of them, each one a request."""


def html_dump_name(wiki: str, date: str, namespace: int = 0) -> str:
    """``enwiki-NS0-20240601-ENTERPRISE-HTML.json.tar.gz``: the name Wikimedia gives a wiki's file."""
    return f"{wiki}-NS{namespace}-{date}-ENTERPRISE-HTML.json.tar.gz"


def _published_checksums(
    folder: str, name: str, listed: dict[str, int], read_text: Callable[[str], str]
) -> dict[str, str | None]:
    """``{"md5": hex or None, "sha1": hex or None}``: what the run folder publishes for ``name`` (a list
    naming it, or a ``<name>.md5``/``.sha1`` file); a list that cannot be read counts as none."""
    found: dict[str, str | None] = {"md5": None, "sha1": None}
    wiki, date = name.split("-NS", 1)[0], name.split("-")[2] if name.count("-") >= 2 else ""
    own = [n for n in (f"{name}.md5", f"{name}.sha1") if n in listed]
    lists = sorted(
        (n for n in listed if _CHECKSUM_LIST.fullmatch(n)), key=lambda n: (wiki not in n, date not in n, n)
    )
    for listing in [*own, *lists][:CHECKSUM_LISTS_READ]:
        algorithm = "sha1" if "sha1" in listing else "md5"
        try:
            text = read_text(f"{folder}/{listing}")
        except (OSError, LookupError, ValueError):
            continue
        digest = parse_checksums(text).get(name)
        if digest is None and listing.startswith(name):  # <name>.md5: the digest alone, or with the name
            first = text.split(maxsplit=1)
            digest = first[0].lower() if first and re.fullmatch(r"[0-9a-fA-F]+", first[0]) else None
        if digest and len(digest) == (40 if algorithm == "sha1" else 32):
            found[algorithm] = digest
    return found


def find_html_release(
    wiki: str,
    sources: Sequence[str],
    read_text: Callable[[str], str],
    *,
    date: str = "latest",
    newer_than: str | None = None,
    limits: FetchLimits | None = None,
) -> Release:
    """The newest Enterprise HTML run (or the run ``date``) whose listing names ``wiki``'s file with its
    size on one of ``sources``, tried in order for each run, at most ``limits.max_runs_probed`` runs
    (newest first); :class:`ReleaseUnavailable` says what the sources answered when none does."""
    answers: list[str] = []
    dates = listed_runs(sources, HTML_RUNS_FOLDER, read_text, answers) if date == "latest" else [date]
    for candidate in runs_to_probe(dates, newer_than, limits):
        name = html_dump_name(wiki, candidate)
        for source in sources:
            folder = f"{source.rstrip('/')}/{HTML_RUNS_FOLDER}/{candidate}"
            try:
                listed = listing_sizes(read_text(f"{folder}/"))
                if name not in listed:
                    answers.append(f"{folder}/: lists no {name} with its size")
                    continue
                digests = _published_checksums(folder, name, listed, read_text)
            except (OSError, LookupError, ValueError) as error:
                answers.append(f"{folder}/: {error}")
                continue
            remote = ReleaseFile(
                name, f"{folder}/{name}", listed[name], digests["md5"], digests["sha1"], HTML_FORM
            )
            return Release(
                wiki,
                candidate,
                source,
                HTML_FORM,
                (remote,),
                skipped=tuple(answers),
                mirrors=tuple(other for other in sources if other != source),
                folder=f"{HTML_RUNS_FOLDER}/{candidate}",
            )
    what = f"run {date}" if date != "latest" else "run" + (f" newer than {newer_than}" if newer_than else "")
    raise unavailable(
        f"no Enterprise HTML {what} of {wiki} is ready on {', '.join(sources)}", answers, limits
    )


def find_wiki_release(
    wiki: str,
    sources: Sequence[str],
    read_text: Callable[[str], str],
    read_json: Callable[[str], Any],
    *,
    date: str = "latest",
    form: str = FETCH_FORM,
    tables: Sequence[str] = FETCH_TABLES,
    newer_than: str | None = None,
    limits: FetchLimits | None = None,
) -> Release:
    """A wiki's newest ready run in ``form``: :func:`find_html_release` for ``enterprise-html`` (its records
    carry the QIDs and redirects: no SQL table is fetched), else
    :func:`~assets.wikipedia.fetch.releases.find_release` (``multistream`` or ``parts``, with ``tables``)."""
    if form == HTML_FORM:
        return find_html_release(wiki, sources, read_text, date=date, newer_than=newer_than, limits=limits)
    return find_release(
        wiki,
        sources,
        read_text,
        read_json,
        date=date,
        form=form,
        tables=tables,
        newer_than=newer_than,
        limits=limits,
    )
