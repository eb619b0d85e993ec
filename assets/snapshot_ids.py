"""Snapshot ids: the one place they are checked and taken apart.

A snapshot id names a Dagster partition and a folder (``<data_dir>/snapshots/<id>/``), so it must be a
plain file name: ``{dbname}-{YYYYMMDD}`` for built dumps (``enwiki-20160501``, ``zh_yuewiki-20240601``) or
any other short name (``kilt-20190801``, ``kilt-copy``). Every entry point (CLI, Dagster config and
partition keys, the landing sensor, DVC params through the CLI) goes through :func:`check_snapshot_id`,
and :class:`assets.storage.SnapshotPaths` refuses an id that fails it, so no id can reach a path outside
the data dir.
"""

from __future__ import annotations

import re

from assets.names import NAME_PATTERN, InvalidName, check_name, is_name

SNAPSHOT_ID_PATTERN = NAME_PATTERN
"""The one name rule of :mod:`assets.names`."""
DBNAME_PATTERN = r"[a-z][a-z0-9_]*"
"""A wiki's database name as dumps.wikimedia.org spells it (``enwiki``, ``zh_yuewiki``)."""
DATE_PATTERN = r"\d{8}"
"""A dump date, ``YYYYMMDD``."""
DUMP_SNAPSHOT_PATTERN = rf"(?P<snap>(?P<dbname>{DBNAME_PATTERN})-(?P<date>{DATE_PATTERN}))"
"""The ``{dbname}-{YYYYMMDD}`` a Wikimedia dump file name starts with: its snapshot id."""
_DATED = re.compile(rf"(?P<dbname>.+)-(?P<date>{DATE_PATTERN})")
ENTERPRISE_NAME_PATTERN = (
    rf"(?P<dbname>{DBNAME_PATTERN})-NS(?P<ns>[0-9]+)-(?P<date>{DATE_PATTERN})-ENTERPRISE-HTML\.json\.tar\.gz"
)
"""The name of a Wikimedia Enterprise HTML dump: ``enwiki-NS0-20240101-ENTERPRISE-HTML.json.tar.gz``."""
_DUMP_SNAPSHOT = re.compile(DUMP_SNAPSHOT_PATTERN)
_ENTERPRISE = re.compile(ENTERPRISE_NAME_PATTERN)
_DATE_IN_NAME = re.compile(r"(?<!\d)((?:19|20)\d{6})(?!\d)")


class InvalidSnapshotId(InvalidName):
    """A snapshot id that is not a plain, short file name."""


def check_snapshot_id(snapshot_id: object, *, what: str = "snapshot id") -> str:
    """``snapshot_id`` when it is a valid name (:func:`assets.names.check_name`), else
    :class:`InvalidSnapshotId` naming the value and the rule."""
    try:
        return check_name(snapshot_id, what=what, example="enwiki-20240601")
    except InvalidName as error:
        raise InvalidSnapshotId(str(error), error.rule) from None


def is_snapshot_id(name: str) -> bool:
    return is_name(name)


def split_snapshot_id(snapshot_id: str) -> tuple[str, str] | None:
    """``("enwiki", "20160501")`` for ``enwiki-20160501``; None when the id has no trailing date."""
    match = _DATED.fullmatch(snapshot_id)
    return (match["dbname"], match["date"]) if match else None


def snapshot_date(snapshot_id: str) -> str | None:
    """``20160501`` of ``enwiki-20160501`` (the dump date a snapshot id ends with); None otherwise."""
    parts = split_snapshot_id(snapshot_id)
    return parts[1] if parts else None


def snapshot_order_key(snapshot_id: str) -> tuple[str, str]:
    """Sort key putting snapshots in dump-date order (ids without a date first, by name)."""
    return (snapshot_date(snapshot_id) or "", snapshot_id)


def dated_snapshot_id(dbname: str, date: str) -> str:
    """``{dbname}-{YYYYMMDD}`` from a dbname and a date (``20160501`` or ``2016-05-01...``), checked."""
    digits = date[:10].replace("-", "")
    if not re.fullmatch(DATE_PATTERN, digits):
        raise InvalidSnapshotId(f"date {date!r} is not YYYYMMDD or YYYY-MM-DD")
    return check_snapshot_id(f"{dbname}-{digits}")


def snapshot_of_dump_name(name: str) -> str | None:
    """``enwiki-20160501`` of ``enwiki-20160501-pages-articles.xml.bz2`` (the snapshot id a Wikimedia dump
    file name starts with) or of ``enwiki-NS0-20160501-ENTERPRISE-HTML.json.tar.gz``; None for another
    name."""
    enterprise = _ENTERPRISE.fullmatch(name)
    if enterprise:
        return f"{enterprise['dbname']}-{enterprise['date']}"
    match = _DUMP_SNAPSHOT.match(name)
    return match.group("snap") if match else None


def date_in_file_name(name: str) -> str | None:
    """``20160501`` of ``enwiki-20160501-pages-articles.xml.bz2``: the first 8-digit 19xx/20xx date in a
    file name; None when there is none."""
    match = _DATE_IN_NAME.search(name)
    return match.group(1) if match else None
