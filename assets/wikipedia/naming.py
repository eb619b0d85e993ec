"""Naming a dump's snapshot before building it: the id is the Dagster partition key."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from assets.wikipedia import embedded
from assets.wikipedia.dump_reader import DumpReader, dump_date_from_name

log = logging.getLogger(__name__)


def snapshot_id_of_dump(files: Sequence[Path]) -> str:
    """``{dbname}-{YYYYMMDD}``: dbname from the first file's ``<siteinfo>``, the date from its name.

    The embedded excerpt is ``enwiki-20160501``. A name without a date costs one pass over the dump to
    find the newest revision (pass an explicit snapshot id to avoid it).
    """
    first = Path(files[0])
    if not first.is_file():
        raise FileNotFoundError(f"dump not found: {first}")
    if first.name == embedded.FILE_NAME and embedded.sha256_of(first) == embedded.SHA256:
        return embedded.SNAPSHOT_ID
    reader = DumpReader(first)
    pages = iter(reader)
    next(pages, None)  # parses <siteinfo>
    dbname = reader.siteinfo.dbname or f"{reader.siteinfo.language or 'en'}wiki"
    date = dump_date_from_name(first)
    if date is None:
        log.warning(f"{first.name}: no YYYYMMDD in the name; reading the dump for its newest revision")
        for _ in pages:  # the rest of the first file
            pass
        stamps = [reader.stats.max_timestamp]
        for path in files[1:]:
            part = DumpReader(path)
            for _ in part:
                pass
            stamps.append(part.stats.max_timestamp)
        newest = max((s for s in stamps if s), default=None)
        if newest is None:
            raise ValueError(f"{first}: no revision timestamp to name the snapshot; pass a snapshot id")
        date = newest[:10].replace("-", "")
    return f"{dbname}-{date}"
