"""The plan of a dump's parse: the dump cut into parts (one per part file, or per group of bz2 streams of
a multistream file), each with the key of what its output depends on, the dump's form told once for all of
them (:data:`PARSER_VERSION` says when a part kept from an earlier run is stale)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from assets.compressed import CompressedInputError, range_pieces
from assets.input_forms import XML_FORM
from assets.limits import HtmlLimits
from assets.params import PART_BYTES, KnowledgeSourceParams
from assets.wikipedia.dump import (
    DumpFormatError,
    DumpReader,
    SiteInfo,
    dump_date_from_name,
    dump_form,
    find_bz2_streams,
)
from assets.wikipedia.pages.reuse import prepare_reuse

log = logging.getLogger(__name__)

__all__ = [
    "BATCH_BYTES",
    "FRAGMENT_BYTES",
    "PARSER_VERSION",
    "PART_FILE",
    "SHARD_BYTES",
    "DumpPart",
    "DumpPlan",
    "ParseSettings",
    "ParsedPart",
    "plan_dump_parts",
    "read_parsed_part",
    "stream_groups",
]


PARSER_VERSION = 2  # 2: text styles (kilt, clean), KILT history (url %20, pre_dump)
"""Version of the rules that turn dump XML into stage-1 rows (``dump_reader``, ``wikitext``, ``titles``,
this module): bump it when they change what a page parses to, so parsed parts of earlier code are not
reused. Moving code between files changes nothing."""


PART_FILE = "part.json"
PART_RECORD = "record-2"  # 2: its report counts ``input_bytes`` (was ``xml_bytes``)
"""The version of what a parsed part's ``part.json`` holds: a part an older version left is parsed anew."""
SHARD_BYTES = 16_000_000
"""Text bytes of a stage-1 shard, at most (beside ``rows_per_shard`` pages)."""
BATCH_BYTES = 2_000_000
"""Wikitext bytes per conversion batch (file parts)."""
FRAGMENT_BYTES = 4_000_000
"""Compressed bytes per conversion task (stream groups of a multistream dump)."""


@dataclass(frozen=True, slots=True)
class ParseSettings:
    """How pages are read and cut into stage-1 shards: the ``knowledge_source`` section as it is, and the
    sizes of the work (a parsed part is reused only for equal settings)."""

    section: KnowledgeSourceParams = field(default_factory=KnowledgeSourceParams)
    html_limits: HtmlLimits = field(default_factory=HtmlLimits)  # limits.html: one article's Parsoid HTML
    bytes_per_shard: int = SHARD_BYTES
    batch_bytes: int = BATCH_BYTES
    fragment_bytes: int = FRAGMENT_BYTES

    def to_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "section": self.section.model_dump(mode="json"),
            "html_limits": self.html_limits.model_dump(mode="json"),
        }

    def identity(self) -> dict[str, Any]:
        """What decides a part's output (which dump, its snapshot id and the processes that convert it
        do not)."""
        return {**self.to_dict(), "section": self.section.model_dump(mode="json", exclude=NOT_OUTPUT)}

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> ParseSettings:
        return cls(
            **{
                **values,
                "section": KnowledgeSourceParams.model_validate(values["section"]),
                "html_limits": HtmlLimits.model_validate(values.get("html_limits") or {}),
            }
        )


NOT_OUTPUT = {"dump", "snapshot", "workers", "part_bytes", "language"}
"""Fields of ``knowledge_source`` that change no parsed part (``part_bytes``: its bounds are in its key)."""


@dataclass(frozen=True, slots=True)
class DumpPart:
    """What one parse step reads: a whole file of the dump read in order (``streams`` is None), or a group
    of bz2 streams ``[start, end)`` of a multistream file (``header``: the byte range of the file's first
    stream, which holds ``<siteinfo>``). Its output goes to ``out_dir``; ``key`` says what it depends on."""

    index: int
    path: str
    start: int
    end: int
    streams: list[int] | None
    header: list[int] | None
    out_dir: str
    key: str
    settings: ParseSettings
    reuse_from: str | None = None  # an earlier snapshot's converted pages (:mod:`.page_reuse`)
    route: str = XML_FORM  # the dump's form (:mod:`assets.wikipedia.dump.forms`), told once by the plan

    def to_dict(self) -> dict[str, Any]:
        return {**{f: getattr(self, f) for f in self.__slots__}, "settings": self.settings.to_dict()}

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> DumpPart:
        return cls(**{**values, "settings": ParseSettings.from_dict(values["settings"])})


@dataclass(slots=True)
class ParsedPart:
    """What a parse step wrote into its ``out_dir``: stage-1 shards, ``redirects.parquet`` and this
    record (``part.json``) with the part's counters (:class:`KnowledgeSourceReport` fields)."""

    index: int
    key: str
    siteinfo: dict[str, Any]
    max_timestamp: str | None
    report: dict[str, Any]
    seconds: float = 0.0
    resumed: bool = False

    @property
    def site(self) -> SiteInfo:
        values = dict(self.siteinfo)
        values["namespaces"] = {int(k): v for k, v in values["namespaces"].items()}
        return SiteInfo(**values)


@dataclass(slots=True)
class DumpPlan:
    """The parse steps of a dump, in page order."""

    dumps: list[Path]
    parts: list[DumpPart]

    @property
    def route(self) -> str:
        """The dump's form, as the plan told it from the first file (``xml``, ``enterprise-html``): which
        reader its steps read with (:mod:`.readers`) and the route its manifest records."""
        return self.parts[0].route


def read_parsed_part(part: DumpPart) -> ParsedPart | None:
    """The finished output of ``part`` (of this or an earlier run with the same key), else None."""
    record = Path(part.out_dir) / PART_FILE
    if not record.is_file():
        return None
    parsed = ParsedPart(**json.loads(record.read_text()))
    return parsed if parsed.key == part.key else None


def stream_groups(offsets: list[int], end: int, min_bytes: int) -> list[tuple[list[int], int]]:
    """Consecutive bz2 streams (their offsets, the last one ending at ``end``) grouped until a group spans
    at least ``min_bytes`` compressed bytes: ``(stream offsets, end of the group)`` per group. Parse steps
    are such groups of a file's streams; conversion tasks are such groups of a step's streams."""
    bounds = [*offsets, end]
    groups: list[tuple[list[int], int]] = []
    current: list[int] = []
    for start, stop in pairwise(bounds):
        current.append(start)
        if stop - current[0] >= min_bytes or stop == end:
            groups.append((current, stop))
            current = []
    return groups


def _misaligned_stream(dump: Path, offsets: list[int], starts: list[int]) -> int | None:
    """The first of ``starts`` (stream offsets) whose stream does not begin with a ``<page>`` (streams of
    pbzip2 and other parallel compressors cut the XML anywhere), else None. The first piece of one stream
    is decompressed per start."""
    ends = dict(zip(offsets, [*offsets[1:], dump.stat().st_size], strict=True))
    for start in starts:
        pieces = range_pieces(dump, start, ends[start])
        try:  # its first piece is enough: a stream group starts with a page or it is misaligned
            head = next(pieces, b"").lstrip()
        except CompressedInputError:
            return start
        finally:
            pieces.close()
        if not head.startswith((b"<page>", b"<page ", b"</mediawiki>")):
            return start
    return None


def plan_dump_parts(
    dump: Path | str | Sequence[Path | str],
    data_dir: Path | str,
    settings: ParseSettings = ParseSettings(),
    *,
    part_bytes: int = PART_BYTES,
    reuse_for: str | None = None,
    form: str | None = None,
) -> DumpPlan:
    """Cut a dump into parse steps: one per part file of a multi-part dump; for one multistream bz2 file,
    groups of its streams of about ``part_bytes`` compressed bytes (when every group starts at a page);
    otherwise the file as one step. Outputs go under ``<data_dir>/snapshots/.parse/<dump key>/``.
    ``reuse_for``: the id of the snapshot being built, whose steps then copy the pages the previous
    snapshot of its wiki converted already (:mod:`.page_reuse`). ``form``: the dump's form when a caller
    told it already for the same ``knowledge_source.input`` (else it is told from the first file here)."""
    dumps = _dump_files(dump)
    if len(dumps) > 1:
        _check_parts_agree(dumps, settings.section.invalid_bytes)
    identity = [[str(d.resolve()), d.stat().st_size, d.stat().st_mtime_ns] for d in dumps]
    parts_dir = Path(data_dir) / "snapshots" / ".parse" / _digest(identity)
    common = [identity, settings.identity(), f"parser-{PARSER_VERSION}", PART_RECORD]

    reuse_from = prepare_reuse(Path(data_dir), reuse_for, parts_dir) if reuse_for else None
    route = form or dump_form(dumps[0], settings.section.input)  # the head read once per build

    def part(index: int, path: Path, start: int, end: int, streams: list[int] | None = None) -> DumpPart:
        header = None if streams is None else offsets[:2]
        key = _digest([common, index, start, end, streams is not None])  # reuse changes no output
        out_dir = str(parts_dir / f"part-{index:05d}")
        return DumpPart(
            index, str(path), start, end, streams, header, out_dir, key, settings, reuse_from, route
        )

    offsets: list[int] = []
    if len(dumps) == 1 and _is_bz2(dumps[0]):
        offsets = find_bz2_streams(dumps[0])
    if len(offsets) >= 3:
        size = dumps[0].stat().st_size
        groups = stream_groups(offsets, size, part_bytes)
        task_starts = [
            task[0]
            for streams, end in groups
            for task, _ in stream_groups(streams, end, settings.fragment_bytes)
        ]
        misaligned = _misaligned_stream(dumps[0], offsets, task_starts[1:])
        if misaligned is None:
            return DumpPlan(
                dumps,
                [part(i, dumps[0], streams[0], end, streams) for i, (streams, end) in enumerate(groups)],
            )
        log.warning(
            f"{dumps[0]}: the bz2 stream at byte {misaligned} does not start at a <page> (not a Wikipedia "
            "multistream file); it is read in order in one step"
        )
    return DumpPlan(dumps, [part(i, d, 0, d.stat().st_size) for i, d in enumerate(dumps)])


def _digest(value: Any) -> str:
    return hashlib.sha1(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def _is_bz2(path: Path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(3) == b"BZh"


def _check_parts_agree(dumps: list[Path], invalid_bytes: str) -> None:
    """Part files must be distinct and come from one wiki (``<dbname>``) and one date (file names);
    only the head of each part is read."""
    seen: set[Path] = set()
    for dump in dumps:
        if dump.resolve() in seen:
            raise ValueError(f"{dump}: part file listed twice")
        seen.add(dump.resolve())
    first_date = dump_date_from_name(dumps[0])
    first_dbname: str | None = None
    for index, dump in enumerate(dumps):
        reader = DumpReader(dump, invalid_bytes=invalid_bytes)
        pages = iter(reader)
        next(pages, None)  # parses <siteinfo>
        pages.close()  # type: ignore[attr-defined]
        dbname = reader.siteinfo.dbname
        if index == 0:
            first_dbname = dbname
        elif dbname is not None and first_dbname is not None and dbname != first_dbname:
            raise DumpFormatError(
                f"{dump}: <dbname> is {dbname!r} but the first part {dumps[0].name} has {first_dbname!r}; "
                "the parts of a dump must come from one wiki"
            )
        date = dump_date_from_name(dump)
        if date is not None and first_date is not None and date != first_date:
            raise DumpFormatError(
                f"{dump}: dump date {date} in the file name differs from {first_date} of the first part "
                f"{dumps[0].name}; the parts of a dump must come from one snapshot"
            )


def _dump_files(dump: Path | str | Sequence[Path | str]) -> list[Path]:
    """The dump as a list of files: one file, or the part files in the order given."""
    dumps = [Path(dump)] if isinstance(dump, str | os.PathLike) else [Path(part) for part in dump]
    if not dumps:
        raise ValueError("no dump file given (empty list of part files)")
    for path in dumps:
        if not path.is_file():
            raise FileNotFoundError(f"dump not found: {path}")
    return dumps
