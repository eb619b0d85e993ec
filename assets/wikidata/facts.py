"""The ``kb`` collection: each entity's statements written as text, in passages of at most
``passages.max_words`` words ("Angola. capital: Luanda. continent: Africa. population: 25789024 (2016).").

An entity's statements are grouped by property in the dump's order; a property's values are joined with
``;``, a qualifier's time follows its value in brackets; labels are the snapshot's language, else
English, else the id. A passage starts with the entity's label, so it reads on its own, and cites what it
states: the entity's id (``qid``), the page of the snapshot it has (``wikipedia_id``), the properties and
the statement ids. Passage ids are ``<wikipedia_id>-k<n>`` for an entity with a page in the snapshot (a
search that ranks pages counts its facts as evidence of that page) and ``<QID>-k<n>`` for one without.

An entity the kept statements only name (an object, with no statements of its own kept) gets passages
from the statements that name it, one sentence per property with its subjects first ("Azerbaijan.
People's Republic of China; Germany; Israel: diplomatic relation Azerbaijan."), so a question about it can
find it too; the report counts them (``named_only``).

Written to ``<snapshot>/kb_facts/`` atomically as every collection is: ``parquet/`` (:data:`FACTS_SCHEMA`),
``collection/`` (pyserini's ``{"id", "contents"}``, the label on the first line) and ``report.json``.

Pure module: no Dagster import.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from assets.files import atomic_path
from assets.params import PassagesParams, WikidataParams
from assets.storage import SnapshotPaths, write_report_json
from assets.wikidata.values import render_value, row_value, time_text

__all__ = ["FACTS_SCHEMA", "EntityLabels", "FactsReport", "build_kb_facts", "entity_facts"]

ROWS_PER_PART = 100_000
FACTS_SCHEMA = pa.schema(
    [
        ("passage_id", pa.string()),
        ("qid", pa.string()),
        ("wikipedia_id", pa.string()),
        ("title", pa.string()),
        ("text", pa.string()),
        ("word_count", pa.int32()),
        ("properties", pa.list_(pa.string())),
        ("statement_ids", pa.list_(pa.string())),
    ]
)
STATEMENT_COLUMNS = [
    "statement_id",
    "subject",
    "property",
    "datatype",
    "kind",
    "value",
    "object",
    "precision",
    "unit",
    "language",
    "point_in_time",
    "start_time",
    "end_time",
]


class EntityLabels:
    """The label of every entity of a snapshot's Wikidata tables: in the snapshot's language, else English,
    else its page's title (its sitelink), else its id."""

    def __init__(self, wikidata: Path) -> None:
        self.labels: dict[str, str] = {}
        self.pages: dict[str, str] = {}
        self.objects: set[str] = set()
        """The entities only named by kept statements (role ``object``: no statements of their own)."""
        columns = ["id", "label", "label_en", "sitelink", "wikipedia_id", "role"]
        for part in sorted((wikidata / "entities").glob("*.parquet")):
            table = pq.read_table(part, columns=columns)
            ids, labels, english, sitelinks, pages, roles = (column.to_pylist() for column in table.columns)
            for qid, label, label_en, sitelink, page, role in zip(
                ids, labels, english, sitelinks, pages, roles, strict=True
            ):
                name = label or label_en or sitelink
                if name:
                    self.labels[qid] = name
                if page is not None:
                    self.pages[qid] = page
                if role == "object":
                    self.objects.add(qid)

    def __call__(self, entity: str) -> str:
        return self.labels.get(entity, entity)


@dataclass(slots=True)
class FactsReport:
    snapshot_id: str
    max_words: int
    entities: int = 0
    passages: int = 0
    statements: int = 0
    words: int = 0
    not_written: int = 0
    """Statements of the datatypes ``wikidata.facts_skip_datatypes`` names (identifiers, media, URLs), and
    texts in languages other than the snapshot's and English."""
    parts: int = 0
    seconds: float = 0.0
    named_only: int = 0
    """Entities without statements of their own (objects of the kept statements) given passages from the
    statements that name them."""
    unlabelled: dict[str, int] = field(default_factory=dict)
    """Entities and properties rendered by their id (no label in the dump), with their uses."""

    def to_dict(self) -> dict[str, Any]:
        top = sorted(self.unlabelled.items(), key=lambda item: (-item[1], item[0]))[:20]
        return {
            "snapshot_id": self.snapshot_id,
            "max_words": self.max_words,
            "entities": self.entities,
            "named_only": self.named_only,
            "passages": self.passages,
            "statements": self.statements,
            "words": self.words,
            "not_written": self.not_written,
            "parts": self.parts,
            "seconds": self.seconds,
            "unlabelled": len(self.unlabelled),
            "unlabelled_most_used": dict(top),
        }


def _fact_value(row: dict[str, Any], label: Callable[[str], str]) -> str:
    text = render_value(row_value(row), label)
    when = row["point_in_time"]
    start, end = row["start_time"], row["end_time"]
    if when:
        text += f" ({time_text(when, 9)})"
    elif start or end:
        span = " to ".join(time_text(t, 9) if t else "?" for t in (start, end))
        text += f" ({span if end else 'from ' + time_text(start, 9)})"
    return text


@dataclass(slots=True)
class _Unit:
    """One property's values (or a part of them) as the words of one sentence."""

    words: list[str]
    property: str
    statement_ids: list[str]


def _units(rows: list[dict[str, Any]], label: Callable[[str], str], room: int) -> list[_Unit]:
    """One sentence per property (``capital: Luanda.``), cut where it is longer than ``room`` words."""
    units: list[_Unit] = []
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row["property"], []).append(row)
    for prop, group in groups.items():
        head = f"{label(prop)}:".split()
        words, ids = list(head), []
        for row in group:
            value = _fact_value(row, label).split() or ["?"]
            if len(words) + len(value) > room and len(words) > len(head):
                words[-1] = words[-1].rstrip(";") + "."
                units.append(_Unit(words, prop, ids))
                words, ids = list(head), []
            words.extend(value[: max(1, room - len(head))])
            words[-1] += ";"
            ids.append(row["statement_id"])
        words[-1] = words[-1].rstrip(";") + "."
        units.append(_Unit(words, prop, ids))
    return units


def _inverse_units(qid: str) -> Callable[[list[dict[str, Any]], Callable[[str], str], int], list[_Unit]]:
    """Units of the statements that name ``qid`` as their value, one sentence per property with its
    subjects first (``Armenia; Georgia: shares border with Azerbaijan.``), cut where longer than ``room``."""

    def units(rows: list[dict[str, Any]], label: Callable[[str], str], room: int) -> list[_Unit]:
        found: list[_Unit] = []
        groups: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            groups.setdefault(row["property"], []).append(row)
        for prop, group in groups.items():
            tail = f"{label(prop)} {label(qid)}.".split()
            words: list[str] = []
            ids: list[str] = []
            for row in group:
                subject = label(row["subject"]).split()[: max(1, room - len(tail))]
                if words and len(words) + len(subject) + len(tail) > room:
                    found.append(_Unit([*words[:-1], words[-1].rstrip(";") + ":", *tail], prop, ids))
                    words, ids = [], []
                words.extend(subject)
                words[-1] += ";"
                ids.append(row["statement_id"])
            found.append(_Unit([*words[:-1], words[-1].rstrip(";") + ":", *tail], prop, ids))
        return found

    return units


def entity_facts(
    qid: str,
    rows: list[dict[str, Any]],
    label: EntityLabels,
    max_words: int,
    units: Callable[[list[dict[str, Any]], Callable[[str], str], int], list[_Unit]] = _units,
) -> list[dict[str, Any]]:
    """The passages of one entity's statement rows (statements table rows, in order); ``units`` writes
    them as sentences (default: the entity's own statements, one sentence per property)."""
    title = label(qid)
    lead = f"{title}.".split()
    room = max(1, max_words - len(lead))
    passages: list[dict[str, Any]] = []
    words: list[str] = []
    properties: list[str] = []
    ids: list[str] = []

    def close() -> None:
        passages.append(
            {
                "passage_id": f"{label.pages.get(qid) or qid}-k{len(passages)}",
                "qid": qid,
                "wikipedia_id": label.pages.get(qid),
                "title": title,
                "text": " ".join(lead + words),
                "word_count": len(lead) + len(words),
                "properties": list(dict.fromkeys(properties)),
                "statement_ids": list(ids),
            }
        )

    for unit in units(rows, label, room):
        if words and len(words) + len(unit.words) > room:
            close()
            words, properties, ids = [], [], []
        words.extend(unit.words)
        properties.append(unit.property)
        ids.extend(unit.statement_ids)
    if words:
        close()
    return passages


def _named_rows(wikidata: Path, objects: set[str]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """``(object, the statement rows that name it)`` for each of ``objects`` that a statement names, in
    the order of the objects' ids, each object's rows in the table's order (DuckDB sorts, spilling)."""
    import duckdb

    if not objects:
        return
    con = duckdb.connect()
    try:
        con.execute("CREATE TEMP TABLE wanted AS SELECT unnest(?::VARCHAR[]) AS object", [sorted(objects)])
        statements = (
            f"read_parquet('{wikidata}/statements/*.parquet', filename = true, file_row_number = true)"
        )
        reader = con.sql(
            f"SELECT {', '.join(STATEMENT_COLUMNS)} FROM {statements} "
            "WHERE object IN (SELECT object FROM wanted) ORDER BY object, filename, file_row_number"
        )
    except duckdb.Error:
        con.close()
        raise
    try:
        yield from _grouped(reader.to_arrow_reader(65_536), "object")
    finally:
        con.close()


def _entity_rows(wikidata: Path) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """``(subject, its statement rows)`` in the statements table's order (each subject's rows are
    contiguous: the build writes an entity's statements together)."""
    parts = sorted((wikidata / "statements").glob("*.parquet"))
    batches = (
        batch
        for part in parts
        for batch in pq.ParquetFile(part).iter_batches(batch_size=65_536, columns=STATEMENT_COLUMNS)
    )
    yield from _grouped(batches, "subject")


def _grouped(batches: Iterable[Any], key: str) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """``(value, its rows)`` of record batches whose rows come grouped by the column ``key``."""
    current: str | None = None
    rows: list[dict[str, Any]] = []
    for batch in batches:
        for row in batch.to_pylist():
            if row[key] != current:
                if rows:
                    yield current, rows  # type: ignore[misc]
                current, rows = row[key], []
            rows.append(row)
    if rows:
        yield current, rows  # type: ignore[misc]


def build_kb_facts(
    paths: SnapshotPaths,
    settings: PassagesParams | None = None,
    kb: WikidataParams | None = None,
    *,
    progress: Callable[[str], None] | None = None,
) -> FactsReport:
    """Write the ``kb`` collection of ``paths`` from its Wikidata tables (none there: an empty collection,
    its report saying so)."""
    started = time.perf_counter()
    max_words = (settings or PassagesParams()).max_words
    skipped = set((kb or WikidataParams()).facts_skip_datatypes)
    report = FactsReport(paths.snapshot_id, max_words)
    with atomic_path(paths.kb_facts) as work:
        (work / "parquet").mkdir(parents=True)
        (work / "collection").mkdir()
        labels = EntityLabels(paths.wikidata) if paths.wikidata.is_dir() else None
        languages = {"en", _kb_language(paths.wikidata)}
        pending: list[dict[str, Any]] = []

        def flush() -> None:
            name = f"part-{report.parts:05d}"
            table = pa.Table.from_pylist(pending, schema=FACTS_SCHEMA)
            pq.write_table(table, work / "parquet" / f"{name}.parquet", compression="zstd")
            with open(work / "collection" / f"{name}.jsonl", "w", encoding="utf-8") as handle:
                for passage in pending:
                    contents = f"{passage['title']}\n{passage['text']}"
                    handle.write(
                        json.dumps({"id": passage["passage_id"], "contents": contents}, ensure_ascii=False)
                    )
                    handle.write("\n")
            report.parts += 1
            pending.clear()

        if labels is not None:
            counting = _CountingLabels(labels, report.unlabelled)
            for qid, all_rows in _entity_rows(paths.wikidata):
                rows = [
                    row
                    for row in all_rows
                    if row["datatype"] not in skipped
                    and (row["kind"] != "monolingualtext" or row["language"] in languages)
                ]
                report.not_written += len(all_rows) - len(rows)
                if not rows:
                    continue
                passages = entity_facts(qid, rows, counting, max_words)
                report.entities += 1
                report.statements += len(rows)
                report.passages += len(passages)
                report.words += sum(p["word_count"] for p in passages)
                pending.extend(passages)
                if len(pending) >= ROWS_PER_PART:
                    flush()
            named_only = {qid for qid in labels.objects if qid in labels.labels and qid[:1] == "Q"}
            for qid, all_rows in _named_rows(paths.wikidata, named_only):
                rows = [row for row in all_rows if row["datatype"] not in skipped]
                if not rows:
                    continue
                passages = entity_facts(qid, rows, counting, max_words, units=_inverse_units(qid))
                report.named_only += 1
                report.passages += len(passages)
                report.words += sum(p["word_count"] for p in passages)
                pending.extend(passages)
                if len(pending) >= ROWS_PER_PART:
                    flush()
        if pending or not report.parts:
            flush()
        report.seconds = round(time.perf_counter() - started, 3)
        write_report_json(work / "report.json", report.to_dict())
    if progress is not None:
        progress(
            f"kb facts: {report.entities:,} entities, {report.statements:,} statements -> "
            f"{report.passages:,} passages in {report.seconds:.1f} s"
        )
    return report


def _kb_language(wikidata: Path) -> str:
    """The language the Wikidata tables were labelled in (their report's)."""
    report = wikidata / "report.json"
    return json.loads(report.read_text(encoding="utf-8"))["language"] if report.is_file() else "en"


class _CountingLabels(EntityLabels):
    """Labels that count the ids they had to render as themselves."""

    def __init__(self, labels: EntityLabels, unlabelled: dict[str, int]) -> None:
        self.labels, self.pages, self.objects = labels.labels, labels.pages, labels.objects
        self.unlabelled = unlabelled

    def __call__(self, entity: str) -> str:
        found = self.labels.get(entity)
        if found is None:
            self.unlabelled[entity] = self.unlabelled.get(entity, 0) + 1
            return entity
        return found
