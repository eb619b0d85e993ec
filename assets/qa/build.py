"""The QA-pair knowledge base of a snapshot (RePAQ's KB): its stored questions, their answers and where the
snapshot supports each answer.

:func:`build_qa_pairs` reads every configured QA-pair file (:mod:`assets.qa.reader`), groups the pairs by
question as KILT normalises answers (lower case, no punctuation or articles; the first spelling is kept),
keeps every answer (in the order first seen; a question whose lines disagree is counted ``conflicting``),
and gives each question its provenance on the snapshot:

1. ``metadata``: PAQ's metadata names the passage an answer was generated from; when that passage is one
   of the snapshot's, the answer's span in it (nearest PAQ's offset) in KILT's coordinates;
2. ``bm25``: else the first of the question's top ``qa.provenance_depth`` BM25 passages whose text holds
   an answer, and the answer's span there;
3. ``none``: the answer is nowhere in those passages (counted: the snapshot does not support it).

The grouping runs in DuckDB (spilling to disk, not held in Python), the provenance a batch of questions at a
time. Output, under ``qa_pairs/`` (the ``qa`` collection: its questions are indexed by the ``qa_indexes``
asset like any collection's passages):

    parquet/part-NNNNN.parquet   one row per question: passage_id ``qa-q<n>``, text (the question), its
                                 answers, sources (file:line), provenance
    collection/part-NNNNN.jsonl  the questions for Anserini (``{"id", "contents"}``)
    report.json                  counts, provenance by method, the dense index's factory

Pure module: no Dagster import.
"""

from __future__ import annotations

import json
import shutil
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from assets.check_outcome import CheckOutcome
from assets.files import atomic_path
from assets.indexes.evaluation import normalize_answer
from assets.limits import QALimits
from assets.params import QAParams
from assets.qa.reader import QAPair, QAReadReport, SourcePassage, iter_qa_pairs
from assets.qa.spans import AnswerSpan, find_in_page, first_answer_in
from assets.storage import SnapshotPaths, duckdb_memory_limit, write_report_json

__all__ = [
    "EMBEDDED_QA_FILES",
    "PROVENANCE_METHODS",
    "QA_SCHEMA",
    "QAReport",
    "build_qa_pairs",
    "embedded_qa_files",
    "qa_pairs_consistent",
    "question_id",
]

EMBEDDED_QA_FILES = ("topics.dpr.nq.dev.txt.xz",)
"""The real QA pairs the embedded default snapshot's QA KB holds (``assets/qa/fixtures``): DPR's NQ dev
topics, 8,757 questions of Natural Questions' train split with their answers."""
PROVENANCE_METHODS = ("metadata", "bm25", "none")
ROWS_PER_PART = 100_000
BATCH = 2_000  # questions whose provenance is looked up together
PAGES_CACHED = 512

QA_SCHEMA = pa.schema(
    [
        ("passage_id", pa.string()),
        ("wikipedia_id", pa.string()),
        ("title", pa.string()),
        ("text", pa.string()),
        ("question_norm", pa.string()),
        ("answers", pa.list_(pa.string())),
        ("sources", pa.list_(pa.string())),
        ("conflicting", pa.bool_()),
        ("provenance_method", pa.string()),
        ("provenance_passage_id", pa.string()),
        ("provenance_title", pa.string()),
        ("provenance_answer", pa.string()),
        ("start_paragraph_id", pa.int32()),
        ("start_character", pa.int32()),
        ("end_paragraph_id", pa.int32()),
        ("end_character", pa.int32()),
        ("provenance_text", pa.string()),
    ]
)
"""A stored question: ``text`` is the question (what both indices hold), ``wikipedia_id`` the page of its
provenance (empty: none), ``provenance_text`` the answer as the page writes it."""


def embedded_qa_files() -> list[Path]:
    """The real QA-pair files of the embedded default snapshot (package data; origins in
    ``assets/qa/fixtures/NOTICE.md``)."""
    folder = Path(str(resources.files("assets.qa") / "fixtures"))
    return [folder / name for name in EMBEDDED_QA_FILES]


def question_id(number: int) -> str:
    """The passage id of the ``number``-th stored question (from 0, in the order first read)."""
    return f"qa-q{number}"


@dataclass(slots=True)
class QAReport:
    """What :func:`build_qa_pairs` read, kept and found."""

    snapshot_id: str
    read: QAReadReport = field(default_factory=QAReadReport)
    questions: int = 0
    duplicate_lines: int = 0
    conflicting: int = 0
    provenance: Counter = field(default_factory=Counter)
    metadata_passages_missing: int = 0
    """PAQ metadata passage ids that are no passage of the snapshot (those questions searched by BM25)."""
    dense_factory: str = ""
    skipped: str = ""
    seconds: float = 0.0
    parts: int = 0

    def to_dict(self) -> dict[str, Any]:
        found = self.questions - self.provenance.get("none", 0)
        return {
            "snapshot_id": self.snapshot_id,
            "passages": self.questions,
            "pairs_read": self.read.pairs,
            "duplicate_lines": self.duplicate_lines,
            "conflicting": self.conflicting,
            "provenance": {method: self.provenance.get(method, 0) for method in PROVENANCE_METHODS},
            "with_provenance": round(found / self.questions, 4) if self.questions else 0.0,
            "answers_not_in_snapshot": self.provenance.get("none", 0),
            "metadata_passages_missing": self.metadata_passages_missing,
            "dense_factory": self.dense_factory,
            "skipped": self.skipped,
            "read": self.read.to_dict(),
            "parts": self.parts,
            "seconds": self.seconds,
        }


class _Pages:
    """Page paragraphs and passage coordinates from the provenance store, the recent ones kept."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.pages: OrderedDict[str, tuple[str, list[str]] | None] = OrderedDict()

    def page(self, wikipedia_id: str) -> tuple[str, list[str]] | None:
        if wikipedia_id in self.pages:
            self.pages.move_to_end(wikipedia_id)
            return self.pages[wikipedia_id]
        match = self.store.page(wikipedia_id, by="id")
        found = (match.record["wikipedia_title"], list(match.record["text"])) if match else None
        self.pages[wikipedia_id] = found
        if len(self.pages) > PAGES_CACHED:
            self.pages.popitem(last=False)
        return found

    def span(self, passage_id: str, answer: str, near: int | None = None) -> tuple[dict, AnswerSpan] | None:
        """The passage's row and the answer's span in it; None when the passage or the answer is not there."""
        row = self.store.passage(passage_id)
        if row is None or row.get("kind") not in (None, "text"):
            return None
        page = self.page(str(row["wikipedia_id"]))
        if page is None:
            return None
        found = find_in_page(
            page[1],
            answer,
            (row["start_paragraph_id"], row["start_character"]),
            (row["end_paragraph_id"], row["end_character"]),
            near=near,
        )
        return (row, found) if found else None


def _grouped(
    files: Sequence[Path], limits: QALimits, report: QAReadReport, work: Path
) -> Iterator[dict[str, Any]]:
    """The questions of ``files`` grouped by normalised question, in the order first read: ``question``
    (its first spelling), ``norm``, ``answer_lists``, ``sources``, ``passages`` (JSON lists)."""
    con = duckdb.connect(config={"memory_limit": duckdb_memory_limit(), "temp_directory": str(work)})
    try:
        con.execute(
            "CREATE TABLE raw (seq BIGINT, norm VARCHAR, question VARCHAR, answers VARCHAR[], "
            "source VARCHAR, passages VARCHAR)"
        )
        pending: list[QAPair] = []
        seq = 0

        def flush() -> None:
            nonlocal seq
            table = pa.table(
                {
                    "seq": pa.array(range(seq, seq + len(pending)), pa.int64()),
                    "norm": [normalize_answer(p.question) or p.question.lower() for p in pending],
                    "question": [p.question for p in pending],
                    "answers": [list(p.answers) for p in pending],
                    "source": [f"{p.file}:{p.line}" for p in pending],
                    "passages": [_passages_json(p.passages) for p in pending],
                }
            )
            con.register("pending", table)
            con.execute("INSERT INTO raw SELECT * FROM pending")
            con.unregister("pending")
            seq += len(pending)
            pending.clear()

        for path in files:
            for pair in iter_qa_pairs(path, limits=limits, report=report):
                pending.append(pair)
                if len(pending) >= ROWS_PER_PART:
                    flush()
        if pending:
            flush()
        reader = con.sql(
            "SELECT min(seq) AS first, arg_min(question, seq) AS question, norm, "
            "list(answers ORDER BY seq) AS answer_lists, list(source ORDER BY seq) AS sources, "
            "list(passages ORDER BY seq) FILTER (WHERE passages IS NOT NULL) AS passages "
            "FROM raw GROUP BY norm ORDER BY first"
        ).to_arrow_reader(BATCH)
        for batch in reader:
            yield from batch.to_pylist()
    finally:
        con.close()


def _passages_json(passages: tuple[SourcePassage, ...]) -> str | None:
    if not passages:
        return None
    return json.dumps([[p.answer, p.passage_id, p.start, p.end] for p in passages])


def _merged(group: dict[str, Any]) -> tuple[list[str], bool, list[SourcePassage]]:
    """The group's answers (first seen first), whether its lines disagree, its metadata passages."""
    answers = list(dict.fromkeys(a for answers in group["answer_lists"] for a in answers))
    sets = {frozenset(normalize_answer(a) for a in answers) for answers in group["answer_lists"]}
    passages = [SourcePassage(*item) for text in group["passages"] or [] for item in json.loads(text)]
    return answers, len(sets) > 1, passages


def _row(number: int, group: dict[str, Any], answers: list[str], conflicting: bool) -> dict[str, Any]:
    return {
        "passage_id": question_id(number),
        "wikipedia_id": "",
        "title": "",
        "text": group["question"],
        "question_norm": group["norm"],
        "answers": answers,
        "sources": group["sources"],
        "conflicting": conflicting,
        "provenance_method": "none",
        "provenance_passage_id": None,
        "provenance_title": None,
        "provenance_answer": None,
        "start_paragraph_id": None,
        "start_character": None,
        "end_paragraph_id": None,
        "end_character": None,
        "provenance_text": None,
    }


def _place(row: dict[str, Any], method: str, passage: dict[str, Any], span: AnswerSpan) -> None:
    row.update(
        wikipedia_id=str(passage["wikipedia_id"]),
        provenance_method=method,
        provenance_passage_id=passage["passage_id"],
        provenance_title=passage["title"],
        provenance_answer=span.answer,
        start_paragraph_id=span.paragraph_id,
        start_character=span.start_character,
        end_paragraph_id=span.paragraph_id,
        end_character=span.end_character,
        provenance_text=span.text,
    )


def _provenance(
    rows: list[dict[str, Any]],
    passages: list[list[SourcePassage]],
    pages: _Pages,
    search: Callable[[list[str], int], list[list[Any]]],
    depth: int,
    report: QAReport,
) -> None:
    """Fill each row's provenance: its metadata passage, else its BM25 passages, else none."""
    unplaced = []
    for row, sources in zip(rows, passages, strict=True):
        for source in sources:
            found = pages.span(source.passage_id, source.answer, source.start)
            if found is None:
                report.metadata_passages_missing += pages.store.passage(source.passage_id) is None
                continue
            _place(row, "metadata", *found)
            break
        else:
            unplaced.append(row)
    if unplaced:
        for row, hits in zip(unplaced, search([row["text"] for row in unplaced], depth), strict=True):
            for hit in hits:
                answer = first_answer_in(hit.text or "", row["answers"])
                found = pages.span(hit.passage_id, answer) if answer else None
                if found is not None:
                    _place(row, "bm25", *found)
                    break
    report.provenance.update(row["provenance_method"] for row in rows)


def build_qa_pairs(
    paths: SnapshotPaths,
    files: Sequence[Path],
    store: Any,
    search: Callable[[list[str], int], list[list[Any]]],
    qa: QAParams | None = None,
    limits: QALimits | None = None,
    *,
    progress: Callable[[str], None] | None = None,
) -> QAReport:
    """Write the QA-pair KB of ``paths`` from ``files`` (none: an empty collection whose report says so).
    ``store``: the snapshot's open :class:`~assets.provenance_store.ProvenanceStore`; ``search(questions,
    k)``: their top ``k`` text passages with text (BM25)."""
    started = time.perf_counter()
    qa = qa or QAParams()
    report = QAReport(paths.snapshot_id, dense_factory=qa.factory or f"budget:{qa.index_memory}")
    if not files:
        report.skipped = "qa.files is empty"
    with atomic_path(paths.qa_pairs) as work:
        (work / "parquet").mkdir(parents=True)
        (work / "collection").mkdir()
        spill = work / "spill"
        spill.mkdir()
        pages = _Pages(store)
        pending: list[dict[str, Any]] = []
        batch: list[tuple[dict[str, Any], list[SourcePassage]]] = []

        def place() -> None:
            _provenance(
                [r for r, _ in batch], [s for _, s in batch], pages, search, qa.provenance_depth, report
            )
            pending.extend(r for r, _ in batch)
            batch.clear()
            if progress is not None:
                progress(f"qa pairs: {report.questions:,} questions, {dict(report.provenance)}")

        def flush() -> None:
            name = f"part-{report.parts:05d}"
            pq.write_table(
                pa.Table.from_pylist(pending, schema=QA_SCHEMA), work / "parquet" / f"{name}.parquet",
                compression="zstd",
            )  # fmt: skip
            with open(work / "collection" / f"{name}.jsonl", "w", encoding="utf-8") as handle:
                for row in pending:
                    handle.write(
                        json.dumps({"id": row["passage_id"], "contents": row["text"]}, ensure_ascii=False)
                    )
                    handle.write("\n")
            report.parts += 1
            pending.clear()

        for group in _grouped(files, limits or QALimits(), report.read, spill):
            answers, conflicting, sources = _merged(group)
            report.duplicate_lines += len(group["sources"]) - 1
            report.conflicting += conflicting
            batch.append((_row(report.questions, group, answers, conflicting), sources))
            report.questions += 1
            if len(batch) >= BATCH:
                place()
                if len(pending) >= ROWS_PER_PART:
                    flush()
        if batch:
            place()
        if pending or not report.parts:
            flush()
        shutil.rmtree(spill, ignore_errors=True)  # DuckDB's spill files, gone with its connection
        report.seconds = round(time.perf_counter() - started, 3)
        write_report_json(work / "report.json", report.to_dict())
    if progress is not None:
        progress(
            f"qa pairs: {report.read.pairs:,} pairs -> {report.questions:,} questions, provenance "
            f"{dict(report.provenance)} in {report.seconds:.1f} s"
        )
    return report


def qa_pairs_consistent(paths: SnapshotPaths, store: Any) -> CheckOutcome:
    """Every stored question has an answer and a unique id, and every provenance span is its answer: the
    page's paragraph at those offsets reads as the answer (as KILT normalises it)."""
    folder = paths.qa_pairs / "parquet"
    table = pq.read_table(folder, columns=["passage_id", "answers", "provenance_method"])
    ids = table.column("passage_id").to_pylist()
    unanswered = sum(1 for answers in table.column("answers").to_pylist() if not answers)
    duplicates = len(ids) - len(set(ids))
    pages = _Pages(store)
    wrong: list[str] = []
    spans = 0
    placed = pq.read_table(folder).filter(pc.field("provenance_method") != "none")
    for row in placed.to_pylist():
        spans += 1
        page = pages.page(row["wikipedia_id"])
        text = (
            page[1][row["start_paragraph_id"]][row["start_character"] : row["end_character"]] if page else ""
        )
        if normalize_answer(text) != normalize_answer(row["provenance_answer"]):
            wrong.append(row["passage_id"])
    return CheckOutcome(
        passed=not (unanswered or duplicates or wrong),
        description=f"{len(ids):,} questions, {spans:,} provenance spans: {unanswered} without an answer, "
        f"{duplicates} duplicate ids, {len(wrong)} spans that are not their answer",
        metadata={"questions": len(ids), "spans": spans, "wrong_spans": wrong[:20]},
    )
