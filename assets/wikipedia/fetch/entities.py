"""Wikidata's entity dump runs on a dump site: ``wikidatawiki/entities/YYYYMMDD/`` holds
``wikidata-YYYYMMDD-all.json.bz2`` (and ``.json.gz``) with the run's checksum lists
``wikidata-YYYYMMDD-md5sums.txt`` and ``-sha1sums.txt``; ``wikidatawiki/entities/`` lists the runs. These runs
have no ``dumpstatus.json``: a run is *ready* when its checksum list names the file and the run's listing
gives its size (Wikimedia's listings give exact byte counts). :func:`find_entity_release` makes it a
:class:`~assets.wikipedia.fetch.releases.Release` that :class:`~assets.wikipedia.fetch.download.Fetcher`
fetches as any other (resumed, from the mirrors when a source fails, verified before it lands).

Pure module: the caller passes the function that reads a URL.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from assets.wikipedia.fetch.releases import Release, ReleaseFile, ReleaseUnavailable, listed_runs

__all__ = [
    "ENTITY_FOLDER",
    "ENTITY_WIKI",
    "entity_dump_name",
    "find_entity_release",
    "landed_entity_dumps",
    "listing_sizes",
    "parse_checksums",
]

ENTITY_FOLDER = "wikidatawiki/entities"
"""Where a dump site keeps the entity dump runs."""
ENTITY_WIKI = "wikidata"
"""The name a run's files start with (``wikidata-20241230-all.json.bz2``): its snapshot id prefix."""
COMPRESSIONS = {"bz2": "json.bz2", "gz": "json.gz"}
_LISTED = re.compile(r'<a href="([^"?/]+)">[^<]*</a>\s+\S+\s+\S+\s+(\d+)\s*$', re.MULTILINE)
_CHECKSUM_LINE = re.compile(r"^([0-9a-fA-F]{32,40})\s+\*?(\S+)\s*$", re.MULTILINE)


def entity_dump_name(date: str, compression: str = "bz2") -> str:
    if compression not in COMPRESSIONS:
        raise ValueError(f"unknown compression {compression!r}: choose one of {', '.join(COMPRESSIONS)}")
    return f"{ENTITY_WIKI}-{date}-all.{COMPRESSIONS[compression]}"


def listing_sizes(listing: str) -> dict[str, int]:
    """``{file name: bytes}`` of a run folder's listing (an nginx/Apache index with exact sizes)."""
    return {html.unescape(name): int(size) for name, size in _LISTED.findall(listing)}


def parse_checksums(text: str) -> dict[str, str]:
    """``{file name: lower-case hex digest}`` of a checksum list (``md5sum``/``sha1sum`` output)."""
    return {name: digest.lower() for digest, name in _CHECKSUM_LINE.findall(text)}


def _ready(source: str, date: str, name: str, read_text: Callable[[str], str]) -> ReleaseFile | str:
    """The file ``name`` of run ``date`` on ``source``, or why that run is not ready there."""
    folder = f"{source.rstrip('/')}/{ENTITY_FOLDER}/{date}"
    sizes = listing_sizes(read_text(f"{folder}/"))
    if name not in sizes:
        return f"{folder}/ lists no {name} with its size"
    digests = {}
    for algorithm in ("md5", "sha1"):
        try:
            digests[algorithm] = parse_checksums(
                read_text(f"{folder}/{ENTITY_WIKI}-{date}-{algorithm}sums.txt")
            ).get(name)
        except (OSError, LookupError):
            digests[algorithm] = None
    if not (digests["md5"] or digests["sha1"]):
        return f"no checksum list of {folder}/ names {name}"
    return ReleaseFile(name, f"{folder}/{name}", sizes[name], digests["md5"], digests["sha1"], "entities")


def find_entity_release(
    sources: Sequence[str],
    read_text: Callable[[str], str],
    *,
    date: str = "latest",
    compression: str = "bz2",
    newer_than: str | None = None,
) -> Release:
    """The newest entity dump run (or the run ``date``) ready on one of ``sources``, tried in order for
    each run; :class:`ReleaseUnavailable` says what each source answered when none is."""
    answers: list[str] = []
    dates = listed_runs(sources, ENTITY_FOLDER, read_text, answers) if date == "latest" else [date]
    for candidate in [d for d in dates if newer_than is None or d > newer_than]:
        name = entity_dump_name(candidate, compression)
        for source in sources:
            try:
                found = _ready(source, candidate, name, read_text)
            except (OSError, LookupError, ValueError) as error:
                answers.append(f"{source}: run {candidate}: {error}")
                continue
            if isinstance(found, ReleaseFile):
                return Release(
                    ENTITY_WIKI,
                    candidate,
                    source,
                    f"entities-{compression}",
                    (found,),
                    skipped=tuple(answers),
                    mirrors=tuple(other for other in sources if other != source),
                    folder=f"{ENTITY_FOLDER}/{candidate}",
                )
            answers.append(f"{source}: run {candidate} not ready ({found})")
    what = f"run {date}" if date != "latest" else "run"
    raise ReleaseUnavailable(
        f"no entity dump {what} is ready on {', '.join(sources)}" + "".join(f"\n  {a}" for a in answers)
    )


def landed_entity_dumps(folder: Path) -> list[Path]:
    """The entity dumps a fetch published in ``folder`` (``<landing>/wikidata/``: the file and the checksum
    list naming it), newest run first."""
    found = []
    for path in folder.glob(f"{ENTITY_WIKI}-*-all.json.*") if folder.is_dir() else []:
        match = re.fullmatch(rf"{ENTITY_WIKI}-(\d{{8}})-all\.json\.(bz2|gz)", path.name)
        if match is None:
            continue
        lists = [folder / f"{ENTITY_WIKI}-{match[1]}-{a}sums.txt" for a in ("sha1", "md5")]
        if any(
            lst.is_file() and path.name in parse_checksums(lst.read_text(encoding="utf-8")) for lst in lists
        ):
            found.append((match[1], path))
    return [path for _, path in sorted(found, reverse=True)]
