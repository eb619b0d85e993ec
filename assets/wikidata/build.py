"""Wikidata aligned to a snapshot: the entities and statements of Wikidata's entity dump that the
snapshot's pages stand for, read in one streaming pass (two with the default scope), written to
``<snapshot>/wikidata/`` atomically.

- ``entities/part-*.parquet`` (:data:`ENTITIES_SCHEMA`): id, label, description and aliases in the
  snapshot's language and in English, the sitelink title to the snapshot's wiki and the ``wikipedia_id``
  of that page in the snapshot (redirects followed), the count of statements kept, ``role``
  (``subject``: its statements are kept; ``object``: only named by them, labelled).
- ``statements/part-*.parquet`` (:data:`STATEMENTS_SCHEMA`): one row per statement of a subject: its id,
  property, rank, typed value (:class:`~assets.wikidata.values.Value`), qualifiers point in time / start /
  end. Deprecated statements are dropped; ``somevalue``/``novalue`` snaks and unknown value types are
  counted skips.
- ``graph/``: the statements between entities as a compressed adjacency (:mod:`assets.wikidata.graph`).
- ``report.json``: what was read, kept and skipped (by reason, with file and byte offset).

Scope (``wikidata.scope``): ``sitelinked`` (default) keeps the statements of the entities with a sitelink
to the snapshot's wiki and labels the entities and properties they name (a second pass reads only
their terms); ``all`` keeps every entity's. Property labels come from the dump's property entities.

Pure module: no Dagster import.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa
import pyarrow.parquet as pq

from assets.compressed import CompressedInputError, bounded_lines, open_compressed
from assets.files import atomic_path
from assets.limits import WikidataLimits
from assets.params import WikidataParams
from assets.storage import SnapshotPaths, write_report_json
from assets.wikidata.graph import write_graph
from assets.wikidata.linker import build_mentions
from assets.wikidata.reader import (
    Entity,
    EntityTerms,
    ReadReport,
    WikidataReadError,
    aliases,
    iter_entities,
    mapping,
    qualifier_snaks,
    sitelink_title,
    term,
)
from assets.wikidata.values import Value, snak_value

__all__ = [
    "ENTITIES_SCHEMA",
    "LABELS_FILE",
    "STATEMENTS_SCHEMA",
    "WikidataReport",
    "build_wikidata",
    "embedded_entity_files",
    "snapshot_wiki",
]

log = logging.getLogger(__name__)

ROWS_PER_PART = 200_000
EXAMPLES = 20  # entities over limits.wikidata.max_statements named in the report (all are counted)
QUALIFIERS = {"P585": "point_in_time", "P580": "start_time", "P582": "end_time"}
"""The qualifiers a statement row keeps (a time each)."""
ENGLISH = "en"

ENTITIES_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("type", pa.string()),
        ("label", pa.string()),
        ("description", pa.string()),
        ("aliases", pa.list_(pa.string())),
        ("label_en", pa.string()),
        ("description_en", pa.string()),
        ("aliases_en", pa.list_(pa.string())),
        ("datatype", pa.string()),
        ("sitelink", pa.string()),
        ("wikipedia_id", pa.string()),
        ("statements", pa.int32()),
        ("role", pa.string()),
    ]
)
STATEMENTS_SCHEMA = pa.schema(
    [
        ("statement_id", pa.string()),
        ("subject", pa.string()),
        ("property", pa.string()),
        ("rank", pa.string()),
        ("datatype", pa.string()),
        ("kind", pa.string()),
        ("value", pa.string()),
        ("object", pa.string()),
        ("precision", pa.float64()),
        ("unit", pa.string()),
        ("language", pa.string()),
        ("point_in_time", pa.string()),
        ("start_time", pa.string()),
        ("end_time", pa.string()),
    ]
)


@dataclass(slots=True)
class WikidataReport:
    """What :func:`build_wikidata` read, kept and skipped."""

    snapshot_id: str
    wiki: str
    language: str
    scope: str
    files: list[str] = field(default_factory=list)
    entities_read: int = 0
    subjects: int = 0
    """Entities whose statements were kept (with a sitelink to the wiki, or every one with scope all)."""
    linked_to_pages: int = 0
    """Subjects whose sitelink is a page (or redirect) of the snapshot."""
    sitelinks_not_in_snapshot: int = 0
    objects: int = 0
    """Entities named by kept statements and labelled (second pass)."""
    objects_from_label_files: int = 0
    """Entities and properties named by kept statements that the dump does not hold, labelled from
    ``wikidata.label_files``."""
    objects_missing: int = 0
    """Entities named by kept statements that neither the dump nor a label file holds (rendered by their
    id: the kb passages' report counts their uses)."""
    statements: int = 0
    statements_by_kind: dict[str, int] = field(default_factory=dict)
    deprecated: int = 0
    skipped_snaks: dict[str, int] = field(default_factory=dict)
    statements_over_limit: int = 0
    entities_over_limit: list[str] = field(default_factory=list)
    edges: int = 0
    mentions: int = 0
    """Rows of the entity linker's mention dictionary (:mod:`assets.wikidata.linker`)."""
    read: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        values = {name: getattr(self, name) for name in self.__slots__}  # type: ignore[attr-defined]
        values["statements_by_kind"] = dict(sorted(self.statements_by_kind.items()))
        values["skipped_snaks"] = dict(sorted(self.skipped_snaks.items()))
        return values


EMBEDDED_ENTITY_FILES = (
    "opentapioca_sample_wikidata_items.json.bz2",
    "wikibase-dump-filter_first50.json.gz",
    "opentapioca_short_stream.ndjson.bz2",
    "entitybase_entity_metadata_labels.jsonl.xz",
)


LABELS_FILE = resources.files("assets.wikidata") / "fixtures" / "labels.tsv.xz"
"""The labels ``wikidata.label_files: null`` reads (made by ``support/wikidata_labels.py``)."""


def embedded_entity_files() -> list[Path]:
    """The real entities the embedded default snapshot's KB is built from: three slices of Wikidata's dumps
    as public test suites publish them (the first read of an entity wins) and 838 English labels (package
    data; origins in ``assets/wikidata/fixtures/NOTICE.md``)."""
    folder = Path(str(resources.files("assets.wikidata") / "fixtures"))
    return [folder / name for name in EMBEDDED_ENTITY_FILES]


def snapshot_wiki(paths: SnapshotPaths) -> tuple[str, str]:
    """``(dbname, language)`` of the snapshot (its knowledge source's manifest: ``enwiki``, ``en``)."""
    manifest = json.loads(paths.manifest_file.read_text(encoding="utf-8"))
    return str(manifest["dbname"]), str(manifest.get("language") or ENGLISH)


def page_ids(paths: SnapshotPaths) -> dict[str, str]:
    """``{title: wikipedia_id}`` of the snapshot's pages, and of its redirects to their target pages."""
    ids: dict[str, str] = {}
    redirects = paths.redirects_file
    if redirects.is_file():
        table = pq.read_table(redirects, columns=["source_title", "target_wikipedia_id"])
        for title, target in zip(*(c.to_pylist() for c in table.columns), strict=True):
            if target is not None:
                ids[title] = str(target)
    for shard in sorted(paths.pages_dir.glob("*.parquet")):
        table = pq.read_table(shard, columns=["wikipedia_title", "wikipedia_id"])
        ids.update(zip(table.column(0).to_pylist(), map(str, table.column(1).to_pylist()), strict=True))
    return ids


class _Parts:
    """Parquet parts of one table, written as they fill (``part-00000.parquet`` ...)."""

    def __init__(self, folder: Path, schema: pa.Schema) -> None:
        self.folder, self.schema = folder, schema
        folder.mkdir(parents=True)
        self.rows: list[tuple[Any, ...]] = []
        self.count = 0

    def add(self, row: tuple[Any, ...]) -> None:
        self.rows.append(row)
        if len(self.rows) >= ROWS_PER_PART:
            self.flush()

    def flush(self) -> None:
        if not self.rows and self.count:
            return
        columns = list(zip(*self.rows, strict=True)) if self.rows else [[] for _ in self.schema.names]
        table = pa.table(dict(zip(self.schema.names, columns, strict=True)), schema=self.schema)
        pq.write_table(table, self.folder / f"part-{self.count:05d}.parquet", compression="zstd")
        self.count += 1
        self.rows = []


ENTITY_ERRORS = (msgspec.ValidationError, msgspec.DecodeError, RecursionError, ValueError)
"""What reading one entity's lazily decoded parts (terms, sitelinks, qualifiers) may raise on a malformed
entity: a label without its value, a sitelink given as a string, nesting past the decoder's depth, bytes
that are not UTF-8. The entity is skipped, counted and named by file and offset."""


@dataclass
class _Build:
    """One build's state: the wiki, the snapshot's titles, the outputs and what is still to label."""

    settings: WikidataParams
    limits: WikidataLimits
    report: WikidataReport
    titles: dict[str, str]
    entities: _Parts
    statements: _Parts
    wanted: set[str] = field(default_factory=set)
    labelled: set[str] = field(default_factory=set)

    def entity_row(self, entity: Any, kept: int, role: str) -> tuple[Any, ...]:
        language, wiki = self.report.language, self.report.wiki
        title = sitelink_title(entity.sitelinks, wiki)
        return (
            entity.id,
            entity.type,
            term(entity.labels, language),
            term(entity.descriptions, language),
            aliases(entity.aliases, language),
            term(entity.labels, ENGLISH),
            term(entity.descriptions, ENGLISH),
            aliases(entity.aliases, ENGLISH),
            entity.datatype,
            title,
            self.titles.get(title) if title is not None else None,
            kept,
            role,
        )

    def subject(self, entity: Entity) -> None:
        """Keep ``entity``'s statements (deprecated dropped, at most ``max_statements``) and its row. All of
        it is read before anything is kept: an entity whose terms or values cannot be read raises one of
        :data:`ENTITY_ERRORS` and leaves the build as it was."""
        report, limit = self.report, self.limits.max_statements
        rows: list[tuple[Any, ...]] = []
        kinds: Counter = Counter()
        skipped: Counter = Counter()
        wanted: set[str] = set()
        deprecated = over_limit = 0
        for statements in mapping(entity.claims).values():
            for statement in statements:
                if statement.rank == "deprecated":
                    deprecated += 1
                    continue
                if len(rows) >= limit:
                    over_limit += 1
                    continue
                value = snak_value(statement.mainsnak)
                if isinstance(value, str):
                    skipped[value.partition(":")[0] if value.startswith("malformed") else value] += 1
                    continue
                rows.append(self.statement_row(entity.id, statement, value))
                kinds[value.kind] += 1
                wanted.update(
                    name for name in (statement.mainsnak.property, value.object, value.unit) if name
                )
        kept = len(rows)
        row = self.entity_row(entity, kept, "subject")
        # nothing above changed the build: all of it is kept now
        report.deprecated += deprecated
        report.statements_over_limit += over_limit
        report.statements += kept
        for counts, into in ((skipped, report.skipped_snaks), (kinds, report.statements_by_kind)):
            for name, count in counts.items():
                into[name] = into.get(name, 0) + count
        for statement_row in rows:
            self.statements.add(statement_row)
        self.wanted.update(wanted)
        if kept >= self.limits.max_statements and len(report.entities_over_limit) < EXAMPLES:
            report.entities_over_limit.append(entity.id)
        report.subjects += 1
        report.linked_to_pages += row[10] is not None
        report.sitelinks_not_in_snapshot += row[9] is not None and row[10] is None
        self.entities.add(row)
        self.labelled.add(entity.id)

    def statement_row(self, subject: str, statement: Any, value: Value) -> tuple[Any, ...]:
        qualifiers = {}
        for prop, name in QUALIFIERS.items():
            for snak in qualifier_snaks(statement, prop):
                typed = snak_value(snak)
                if isinstance(typed, Value) and typed.kind == "time":
                    qualifiers[name] = typed.value
                    break
        return (
            statement.id,
            subject,
            statement.mainsnak.property,
            statement.rank,
            statement.mainsnak.datatype,
            value.kind,
            value.value,
            value.object,
            value.precision,
            value.unit,
            value.language,
            qualifiers.get("point_in_time"),
            qualifiers.get("start_time"),
            qualifiers.get("end_time"),
        )


def build_wikidata(
    paths: SnapshotPaths,
    files: Iterable[Path],
    settings: WikidataParams | None = None,
    *,
    limits: WikidataLimits | None = None,
    label_files: Iterable[Path] | None = None,
    progress: Callable[[str], None] | None = None,
) -> WikidataReport:
    """Read the entity files ``files`` and publish ``paths.wikidata`` for the snapshot (its wiki from the
    knowledge source's manifest, its pages' titles for the sitelinks); what the statements name and no
    entity file labels is labelled from ``label_files`` (None: the shipped labels, :data:`LABELS_FILE`)."""
    started = time.perf_counter()
    settings = settings or WikidataParams()
    limits = limits or WikidataLimits()
    files = [Path(f) for f in files]
    wiki, language = snapshot_wiki(paths)
    report = WikidataReport(paths.snapshot_id, wiki, settings.language or language, settings.scope)
    report.files = [f.name for f in files]
    read = ReadReport()
    with atomic_path(paths.wikidata) as work:
        build = _Build(
            settings,
            limits,
            report,
            page_ids(paths),
            _Parts(work / "entities", ENTITIES_SCHEMA),
            _Parts(work / "statements", STATEMENTS_SCHEMA),
        )
        last_said = time.monotonic()
        for path in files:
            for entity in iter_entities(path, Entity, limits=limits, report=read, threads=settings.threads):
                report.entities_read += 1
                if entity.id in build.labelled:
                    continue  # an entity in two files: the first one read
                if settings.scope == "all" or wiki in mapping(entity.sitelinks):
                    try:
                        build.subject(entity)
                    except ENTITY_ERRORS as error:
                        read.skip(
                            path, read.offset, "bad_entity", f"{entity.id}: {error or type(error).__name__}"
                        )
                if progress is not None and time.monotonic() - last_said >= 10:
                    progress(f"wikidata: {report.entities_read:,} entities read, {report.subjects:,} kept")
                    last_said = time.monotonic()
        missing = _label_objects(build, files, read)
        shipped = [Path(str(LABELS_FILE))]
        _label_from_files(build, missing, shipped if label_files is None else list(label_files), read)
        build.entities.flush()
        build.statements.flush()
        report.edges = write_graph(work / "graph", _statement_edges(work / "statements"))
        report.mentions = build_mentions(paths, work / "mentions.parquet", work / "entities")
        report.read = read.to_dict()
        report.seconds = round(time.perf_counter() - started, 3)
        write_report_json(work / "report.json", report.to_dict())
    if progress is not None:
        progress(
            f"wikidata: {report.entities_read:,} entities read; {report.subjects:,} subjects "
            f"({report.linked_to_pages:,} on pages of {paths.snapshot_id}), {report.statements:,} "
            f"statements, {report.objects:,} objects labelled in {report.seconds:.1f} s"
            + (f"; {read.skipped:,} lines skipped (report.json names them)" if read.skipped else "")
        )
    return report


def _statement_edges(folder: Path) -> Iterator[pa.RecordBatch]:
    """The statements of ``folder`` as batches of ``subject``, ``property``, ``object`` and ``row`` (the
    statement's position in the table): what the KB graph is built from, read a part at a time."""
    row = 0
    for part in sorted(folder.glob("*.parquet")):
        for batch in pq.ParquetFile(part).iter_batches(
            batch_size=1 << 20, columns=["subject", "property", "object"]
        ):
            rows = pa.array(range(row, row + batch.num_rows), pa.int64())
            row += batch.num_rows
            yield pa.RecordBatch.from_arrays([*batch.columns, rows], ["subject", "property", "object", "row"])


def _label_objects(build: _Build, files: list[Path], read: ReadReport) -> set[str]:
    """The rows of the entities and properties the kept statements name (their terms only: a second pass
    that decodes no statements); those the dump lacks are counted."""
    missing = build.wanted - build.labelled
    if missing and build.settings.scope != "all":
        terms_read = ReadReport()
        for path in files:
            for entity in iter_entities(
                path, EntityTerms, limits=build.limits, report=terms_read, threads=build.settings.threads
            ):
                if entity.id in missing:
                    try:
                        row = build.entity_row(entity, 0, "object")
                    except ENTITY_ERRORS as error:
                        read.skip(
                            path,
                            terms_read.offset,
                            "bad_entity",
                            f"{entity.id}: {error or type(error).__name__}",
                        )
                        continue
                    missing.discard(entity.id)
                    build.labelled.add(entity.id)
                    build.entities.add(row)
                    build.report.objects += 1
    return missing


def _label_from_files(build: _Build, missing: set[str], label_files: list[Path], read: ReadReport) -> None:
    """Rows for the ids still ``missing`` that a label file labels (in English; a property with its
    datatype); the rest are counted as missing. A line is at most ``max_key_chars`` characters (4 bytes
    each); one over it, not UTF-8 or not ``id<TAB>label`` is a counted skip named by file and line."""
    english = build.report.language == ENGLISH
    most = 4 * build.limits.max_key_chars
    for path in map(Path, label_files):
        try:
            with open_compressed(path, 1) as handle:
                for number, _, raw in bounded_lines(handle, most):
                    if number == 1 or not missing:
                        continue  # the header; or nothing left to label (the file read to its end)
                    if (
                        raw is not None
                        and raw.rstrip(b"\r\n").partition(b"\t")[0].decode("ascii", "replace") not in missing
                    ):
                        continue
                    try:
                        fields = raw.decode("utf-8").rstrip("\r\n").split("\t") if raw is not None else []
                    except UnicodeDecodeError:
                        fields = []
                    if len(fields) < 2 or not fields[1].strip():
                        why = f"over {most:,} bytes" if raw is None else "not UTF-8 id<TAB>label"
                        read.count_skip("label", path, ("line", number), "bad_label", why)
                        continue
                    label = " ".join(fields[1].split())
                    datatype = fields[2] if len(fields) > 2 and fields[2] else None
                    kind = "property" if fields[0].startswith("P") else "item"
                    row = (fields[0], kind, label if english else None, None, [], label, None, [], datatype)
                    build.entities.add((*row, None, None, 0, "object"))
                    build.labelled.add(fields[0])
                    missing.discard(fields[0])
                    build.report.objects_from_label_files += 1
        except CompressedInputError as error:
            raise WikidataReadError(str(error)) from None
    build.report.objects_missing = len(missing)
