"""Naming a dump's snapshot before building it: the id is the Dagster partition key."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from assets.files import sha256_of
from assets.input_forms import ENTERPRISE_FORM
from assets.params import INPUT_FORM, INVALID_BYTES, MAX_RECORD_BYTES
from assets.snapshot_ids import dated_snapshot_id
from assets.wikipedia.dump import embedded
from assets.wikipedia.dump.enterprise import ENTERPRISE_NAME_RE, EnterpriseRead, read_enterprise_dump
from assets.wikipedia.dump.forms import dump_form
from assets.wikipedia.dump.reader import DumpReader, SiteInfo, dump_date_from_name

log = logging.getLogger(__name__)


def _day(timestamp: str) -> str:
    """``20160501`` of ``2016-05-01``, ``2016-05-01T12:00:00Z`` or ``20160501``."""
    return timestamp[:10].replace("-", "")


def snapshot_id_for(site: SiteInfo, name_date: str | None, as_of: str | None, newest: str | None) -> str:
    """``{dbname}-{YYYYMMDD}``: the dump's date (from its file name, else its newest revision ``newest``),
    capped at ``as_of``'s date: a build as of an earlier date is another snapshot, never the latest one."""
    dbname = site.dbname or f"{site.language or 'en'}wiki"
    date = name_date or (_day(newest) if newest else None)
    if as_of:
        date = min(date, _day(as_of)) if date else _day(as_of)
    return dated_snapshot_id(dbname, date or datetime.now(UTC).strftime("%Y%m%d"))


def snapshot_id_of_dump(
    files: Sequence[Path],
    *,
    as_of: str | None = None,
    invalid_bytes: str = INVALID_BYTES,
    max_record_bytes: int = MAX_RECORD_BYTES,
    input_form: str = INPUT_FORM,
) -> str:
    """The snapshot id of a dump (:func:`snapshot_id_for`), read with the build's ``invalid_bytes``.

    The embedded excerpt is ``enwiki-20160501``. A name without a date costs one pass over the dump to
    find the newest revision (at or before ``as_of``; none with ``as_of``, whose date is the id's); pass
    an explicit snapshot id to avoid it.
    """
    first = Path(files[0])
    if not first.is_file():
        raise FileNotFoundError(f"dump not found: {first}")
    if not as_of and first.name == embedded.FILE_NAME and sha256_of(first) == embedded.SHA256:
        return embedded.SNAPSHOT_ID
    if dump_form(first, input_form) == ENTERPRISE_FORM:
        return _enterprise_snapshot_id(first, as_of, max_record_bytes)
    reader = DumpReader(first, as_of=as_of, invalid_bytes=invalid_bytes)
    pages = iter(reader)
    next(pages, None)  # parses <siteinfo>
    date = dump_date_from_name(first)
    newest = None
    if date is None and not as_of:
        log.warning(f"{first.name}: no YYYYMMDD in the name; reading the dump for its newest revision")
        for _ in pages:  # the rest of the first file
            pass
        stamps = [reader.stats.max_timestamp]
        for path in files[1:]:
            part = DumpReader(path, invalid_bytes=invalid_bytes)
            for _ in part:
                pass
            stamps.append(part.stats.max_timestamp)
        newest = max((s for s in stamps if s), default=None)
        if newest is None:
            raise ValueError(f"{first}: no revision timestamp to name the snapshot; pass a snapshot id")
    return snapshot_id_for(reader.siteinfo, date, as_of, newest)


def _enterprise_snapshot_id(dump: Path, as_of: str | None, max_record_bytes: int) -> str:
    """``{wiki}-{date}`` of an Enterprise HTML dump: both from its name; a renamed copy is read for its
    wiki (the first record's ``is_part_of``) and, without a date in the name, its newest ``date_modified``."""
    named = ENTERPRISE_NAME_RE.match(dump.name)
    if named:
        return snapshot_id_for(SiteInfo(dbname=named["dbname"]), named["date"], as_of, None)
    read = EnterpriseRead()
    date = dump_date_from_name(dump)
    newest = None
    for _, _, record in read_enterprise_dump(dump, max_record_bytes, read):
        if date is not None or as_of:
            break
        if record.date_modified and (newest is None or record.date_modified > newest):
            newest = record.date_modified
    if date is None and not as_of and newest is None:
        raise ValueError(f"{dump}: no record with a date_modified to name the snapshot; pass a snapshot id")
    return snapshot_id_for(SiteInfo(dbname=read.dbname, language=read.language), date, as_of, newest)
