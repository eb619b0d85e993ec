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
from assets.datasets import find_best_span
from assets.files import atomic_path
from assets.indexes.evaluation import normalize_answer
from assets.iterables import batched
from assets.limits import QALimits
from assets.params import BLEU_THRESHOLD, QAParams
from assets.provenance_store import report_stamp, write_parquet_rows
from assets.qa.reader import QAPair, QAReadReport, SourcePassage, iter_qa_pairs, iter_source_passages
from assets.qa.spans import AnswerSpan, find_in_page, first_answer_in
from assets.storage import SnapshotPaths, duckdb_memory_limit, write_report_json

__all__ = [
    "EMBEDDED_QA_FILES",
    "PROVENANCE_METHODS",
    "QA_SCHEMA",
    "QAReport",
    "build_qa_pairs",
    "embedded_qa_files",
    "grouped_questions",
    "qa_pairs_consistent",
    "question_id",
    "write_qa_lookup",
]

EMBEDDED_QA_FILES = ("topics.dpr.nq.dev.txt.xz",)
"""The real QA pairs the embedded default snapshot's QA KB holds (``assets/qa/fixtures``): DPR's NQ dev
topics, 8,757 questions of Natural Questions' train split with their answers."""
PROVENANCE_METHODS = ("metadata", "mapped", "bm25", "none")
ROWS_PER_PART = 100_000
BATCH = 2_000  # questions whose provenance is looked up together
PAGES_CACHED = 512
SPAN_FIELDS = ("start_paragraph_id", "start_character", "end_paragraph_id", "end_character")
MAPPED_WINDOWS = (80, 30)
"""Characters either side of an answer that locate another snapshot's passage: the first that maps (a
narrower one keeps to a short paragraph, a list item)."""

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
    """PAQ metadata passage ids found neither in the snapshot nor in the passage file (searched by BM25)."""
    source_passages_kept: int = 0
    """Rows of the passage file (``qa.source_passages``) that the metadata names."""
    bleu_threshold: float = BLEU_THRESHOLD
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
            "source_passages_kept": self.source_passages_kept,
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
        return self.span_in(self.store.passage(passage_id), answer, near)

    def span_in(
        self, row: dict | None, answer: str, near: int | None = None
    ) -> tuple[dict, AnswerSpan] | None:
        """The answer's span in a text passage's ``row`` (None: no row, or the answer is not in it)."""
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

    def mapped(
        self, title: str, text: str, answer: str, near: int | None, threshold: float
    ) -> tuple[dict, AnswerSpan] | None:
        """Another snapshot's passage (``title``, ``text``) found on this one as KILT maps provenance (the
        page by title, redirects followed; the span of the highest BLEU to the passage's words around the
        answer, at least ``threshold``), and the answer in that paragraph nearest its offset; the passage of
        this snapshot that holds it."""
        try:
            match = self.store.page(title, by="title")
        except LookupError:  # a redirect to a page the snapshot does not have
            return None
        if match is None:
            return None
        paragraphs = match.record["text"]
        for window in MAPPED_WINDOWS:  # the passage's words around the answer: one paragraph, mostly
            lo, hi = _around(text, near, window)
            best = find_best_span(text[lo:hi], paragraphs)
            if best is not None and best.bleu >= threshold:
                break
        else:
            return None
        paragraph = best.paragraph_id
        at = best.start_character + (near - lo if near is not None else 0)
        found = find_in_page(
            paragraphs, answer, (paragraph, 0), (paragraph, len(paragraphs[paragraph])), near=at
        )
        if found is None:
            return None
        wikipedia_id = match.record["wikipedia_id"]
        covering = self.store.span(
            wikipedia_id, paragraph, found.start_character, paragraph, found.end_character
        )
        if not covering or not covering["passages"]:
            return None
        row = self.store.passage(covering["passages"][0]["passage_id"])
        return (row, found) if row is not None else None


def _around(text: str, offset: int | None, chars: int) -> tuple[int, int]:
    """Bounds of ``text`` within ``chars`` characters of ``offset`` (on word boundaries; the whole text
    without one): a passage crossing paragraphs is mapped by the part that holds the answer."""
    if offset is None or len(text) <= 2 * chars:
        return 0, len(text)
    lo = max(0, min(offset, len(text)) - chars)
    hi = min(len(text), offset + chars)
    lo = text.find(" ", lo) + 1 if lo else 0
    space = text.rfind(" ", 0, hi)
    return lo, hi if hi == len(text) or space <= lo else space


class _Staging:
    """The pairs read, in DuckDB (spilling to disk, not held in Python): grouped by normalised question, and
    the rows of another snapshot's passage file that PAQ's metadata names."""

    def __init__(self, work: Path) -> None:
        self.con = duckdb.connect(config={"memory_limit": duckdb_memory_limit(), "temp_directory": str(work)})
        self.con.execute(
            "CREATE TABLE raw (seq BIGINT, norm VARCHAR, question VARCHAR, answers VARCHAR[], "
            "source VARCHAR, passages VARCHAR)"
        )
        self.con.execute("CREATE TABLE named (passage_id VARCHAR)")
        self.lookups = self.con.cursor()  # its own connection: the grouped rows stream on the first
        self.seq = 0
        self.loaded = False

    def add(self, pairs: list[QAPair]) -> None:
        table = pa.table(
            {
                "seq": pa.array(range(self.seq, self.seq + len(pairs)), pa.int64()),
                "norm": [normalize_answer(p.question) or p.question.lower() for p in pairs],
                "question": [p.question for p in pairs],
                "answers": [list(p.answers) for p in pairs],
                "source": [f"{p.file}:{p.line}" for p in pairs],
                "passages": [_passages_json(p.passages) for p in pairs],
            }
        )
        named = pa.table({"passage_id": [s.passage_id for p in pairs for s in p.passages]})
        self.con.register("pending", table)
        self.con.register("pending_named", named)
        self.con.execute("INSERT INTO raw SELECT * FROM pending")
        self.con.execute("INSERT INTO named SELECT * FROM pending_named")
        self.con.unregister("pending")
        self.con.unregister("pending_named")
        self.seq += len(pairs)

    def load_sources(self, path: Path, limits: QALimits, report: QAReadReport) -> int:
        """Keep the rows of the passage file ``path`` (``id<TAB>text<TAB>title``, DPR's) that the metadata
        names (read line by line within ``limits``, bad rows counted in ``report``); returns how many."""
        wanted = {row[0] for row in self.con.execute("SELECT DISTINCT passage_id FROM named").fetchall()}
        self.con.execute("CREATE TABLE sources (passage_id VARCHAR, title VARCHAR, text VARCHAR)")
        for rows in batched(iter_source_passages(path, wanted, limits=limits, report=report), BATCH):
            ids, titles, texts = zip(*rows, strict=True)
            self.con.register("pending", pa.table({"passage_id": ids, "title": titles, "text": texts}))
            self.con.execute("INSERT INTO sources SELECT * FROM pending")
            self.con.unregister("pending")
        self.loaded = True
        return self.con.execute("SELECT count(DISTINCT passage_id) FROM sources").fetchall()[0][0]

    def sources(self, ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        """``{id: (title, text)}`` of the named passages found in the passage file."""
        if not ids:
            return {}
        rows = self.lookups.execute(
            "SELECT passage_id, title, text FROM sources WHERE passage_id IN (SELECT unnest(?::VARCHAR[]))",
            [list(ids)],
        ).fetchall()
        return {passage_id: (title, text) for passage_id, title, text in rows}

    def groups(self, max_lines: int) -> Iterator[dict[str, Any]]:
        """:func:`grouped_questions` of the pairs read."""
        yield from grouped_questions(self.con, max_lines)

    def close(self) -> None:
        self.lookups.close()
        self.con.close()


def grouped_questions(con: duckdb.DuckDBPyConnection, max_lines: int) -> Iterator[dict[str, Any]]:
    """The pairs of ``con``'s table ``raw`` (``seq, norm, question, answers, source, passages``) grouped by
    question, in the order first read: ``question`` (its first spelling), ``norm``, ``lines`` (how many),
    and of its first ``max_lines`` lines only (a row bounded whatever the files repeat): ``answer_lists``,
    ``sources``, ``passages`` (JSON lists; None when none). The merge itself is bounded too: each group
    keeps its first ``max_lines`` lines as it goes (``arg_min`` with a count: a heap per question, not a
    window holding every line of it; 1M lines of one question cost 581 MB that way, 72 MB this way)."""
    n = int(max_lines)
    reader = con.sql(
        "SELECT min(seq) AS first, arg_min(question, seq) AS question, norm, count(*) AS lines, "
        f"arg_min(answers, seq, {n}) AS answer_lists, arg_min(source, seq, {n}) AS sources, "
        f"nullif(list_filter(list_transform(arg_min({{'p': passages}}, seq, {n}), lambda s: s.p), "
        "lambda x: x IS NOT NULL), []) AS passages "
        "FROM raw GROUP BY norm ORDER BY first"
    ).to_arrow_reader(BATCH)
    for batch in reader:
        yield from batch.to_pylist()


def _passages_json(passages: tuple[SourcePassage, ...]) -> str | None:
    if not passages:
        return None
    return json.dumps([[p.answer, p.passage_id, p.start, p.end] for p in passages])


def _merged(
    group: dict[str, Any], limits: QALimits, read: QAReadReport
) -> tuple[list[str], bool, list[SourcePassage]]:
    """The group's answers (first seen first, at most ``max_answers``: the rest counted as
    ``extra_answers``; lines past ``max_lines_per_question`` counted as ``extra_lines``), whether its lines
    disagree, its metadata passages."""
    if group["lines"] > limits.max_lines_per_question:
        read.fix("extra_lines", group["lines"] - limits.max_lines_per_question)
    answers = list(dict.fromkeys(a for answers in group["answer_lists"] for a in answers))
    if len(answers) > limits.max_answers:
        read.fix("extra_answers", len(answers) - limits.max_answers)
        answers = answers[: limits.max_answers]
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


def _from_metadata(
    row: dict[str, Any], sources: list[SourcePassage], pages: _Pages, named: dict, report: QAReport
) -> bool:
    """Place ``row`` by its metadata passages: one of this snapshot (``metadata``), else one of the
    passage file mapped onto it (``mapped``); whether one held the answer."""
    for source in sources:
        passage = pages.store.passage(source.passage_id)  # one lookup: this snapshot's passage, or none
        found = pages.span_in(passage, source.answer, source.start)
        if found is not None:
            _place(row, "metadata", *found)
            return True
        if source.passage_id in named:
            title, text = named[source.passage_id]
            found = pages.mapped(title, text, source.answer, source.start, report.bleu_threshold)
            if found is not None:
                _place(row, "mapped", *found)
                return True
        elif passage is None:
            report.metadata_passages_missing += 1
    return False


def _provenance(
    rows: list[dict[str, Any]],
    passages: list[list[SourcePassage]],
    pages: _Pages,
    search: Callable[[list[str], int], list[list[Any]]],
    depth: int,
    report: QAReport,
    staging: _Staging,
) -> None:
    """Fill each row's provenance: its metadata passage (this snapshot's, else one mapped onto it), else
    its BM25 passages, else none."""
    named = (
        staging.sources(sorted({s.passage_id for sources in passages for s in sources}))
        if staging.loaded
        else {}
    )
    unplaced = [
        row
        for row, sources in zip(rows, passages, strict=True)
        if not _from_metadata(row, sources, pages, named, report)
    ]
    if unplaced:
        for row, hits in zip(unplaced, search([row["text"] for row in unplaced], depth), strict=True):
            for hit in hits:
                answer = first_answer_in(hit.text or "", row["answers"])
                found = pages.span(hit.passage_id, answer) if answer else None
                if found is not None:
                    _place(row, "bm25", *found)
                    break
    report.provenance.update(row["provenance_method"] for row in rows)


class _Parts:
    """The output's parts: each a Parquet file and its Anserini JSON lines, :data:`ROWS_PER_PART` rows."""

    def __init__(self, work: Path) -> None:
        self.work, self.parts, self.pending = work, 0, []
        (work / "parquet").mkdir(parents=True)
        (work / "collection").mkdir()

    def add(self, rows: list[dict[str, Any]]) -> None:
        self.pending.extend(rows)
        if len(self.pending) >= ROWS_PER_PART:
            self.flush()

    def flush(self) -> None:
        name = f"part-{self.parts:05d}"
        table = pa.Table.from_pylist(self.pending, schema=QA_SCHEMA)
        pq.write_table(table, self.work / "parquet" / f"{name}.parquet", compression="zstd")
        with open(self.work / "collection" / f"{name}.jsonl", "w", encoding="utf-8") as handle:
            for row in self.pending:
                line = {"id": row["passage_id"], "contents": row["text"]}
                handle.write(json.dumps(line, ensure_ascii=False) + "\n")
        self.parts += 1
        self.pending = []


def _staged(
    files: Sequence[Path], limits: QALimits, report: QAReport, spill: Path, source_passages: Path | None
) -> _Staging:
    """Every pair of ``files`` in DuckDB, and the rows of ``source_passages`` their metadata names."""
    staging = _Staging(spill)
    pending: list[QAPair] = []
    for path in files:
        for pair in iter_qa_pairs(path, limits=limits, report=report.read):
            pending.append(pair)
            if len(pending) >= ROWS_PER_PART:
                staging.add(pending)
                pending = []
    if pending:
        staging.add(pending)
    if source_passages is not None:
        if not source_passages.is_file():
            raise FileNotFoundError(
                f"qa.source_passages names {source_passages.absolute()}, which does not exist"
            )
        report.source_passages_kept = staging.load_sources(source_passages, limits, report.read)
    return staging


def build_qa_pairs(
    paths: SnapshotPaths,
    files: Sequence[Path],
    store: Any,
    search: Callable[[list[str], int], list[list[Any]]],
    qa: QAParams | None = None,
    limits: QALimits | None = None,
    *,
    source_passages: Path | None = None,
    bleu_threshold: float = BLEU_THRESHOLD,
    progress: Callable[[str], None] | None = None,
) -> QAReport:
    """Write the QA-pair KB of ``paths`` from ``files`` (none: an empty collection whose report says so).
    ``store``: the snapshot's open :class:`~assets.provenance_store.ProvenanceStore`; ``search(questions,
    k)``: their top ``k`` text passages with text (BM25); ``source_passages``: the passage file PAQ's
    metadata ids name (``qa.source_passages``), mapped onto the snapshot at ``bleu_threshold``."""
    started = time.perf_counter()
    qa = qa or QAParams()
    report = QAReport(paths.snapshot_id, dense_factory=qa.factory or f"budget:{qa.index_memory}")
    report.bleu_threshold = bleu_threshold
    if not files:
        report.skipped = "qa.files is empty"
    with atomic_path(paths.qa_pairs) as work:
        parts, pages, spill = _Parts(work), _Pages(store), work / "spill"
        spill.mkdir()
        limits = limits or QALimits()
        staging = _staged(files, limits, report, spill, source_passages)
        batch: list[tuple[dict[str, Any], list[SourcePassage]]] = []

        def place() -> None:
            rows, sources = [r for r, _ in batch], [s for _, s in batch]
            _provenance(rows, sources, pages, search, qa.provenance_depth, report, staging)
            parts.add(rows)
            batch.clear()
            if progress is not None:
                progress(f"qa pairs: {report.questions:,} questions, {dict(report.provenance)}")

        try:
            for group in staging.groups(limits.max_lines_per_question):
                answers, conflicting, sources = _merged(group, limits, report.read)
                report.duplicate_lines += group["lines"] - 1
                report.conflicting += conflicting
                batch.append((_row(report.questions, group, answers, conflicting), sources))
                report.questions += 1
                if len(batch) >= BATCH:
                    place()
            if batch:
                place()
        finally:
            staging.close()
        if parts.pending or not parts.parts:
            parts.flush()
        report.parts = parts.parts
        shutil.rmtree(spill, ignore_errors=True)  # DuckDB's spill files, gone with its connection
        report.seconds = round(time.perf_counter() - started, 3)
        write_report_json(work / "report.json", report.to_dict())
    write_qa_lookup(paths)  # the stored questions by id and by text, for the answerer
    if progress is not None:
        progress(
            f"qa pairs: {report.read.pairs:,} pairs -> {report.questions:,} questions, provenance "
            f"{dict(report.provenance)} in {report.seconds:.1f} s"
        )
    return report


def write_qa_lookup(paths: SnapshotPaths) -> int:
    """Write the QA-pair KB's lookup file (:attr:`SnapshotPaths.qa_lookup`): every stored question by its
    id, and its id by its normalised text, stamped with the KB's build; returns the questions written."""
    return write_parquet_rows(
        paths.qa_pairs / "parquet", paths.qa_lookup, alias="question_norm", stamp=report_stamp(paths.qa_pairs)
    )


def qa_pairs_consistent(paths: SnapshotPaths, store: Any) -> CheckOutcome:
    """Every stored question has an answer and a unique id, and every provenance span is its answer: the
    page's paragraph at those offsets reads as the answer (as KILT normalises it)."""
    columns = ["passage_id", "answers", "provenance_method", "wikipedia_id", "provenance_answer"]
    table = pq.read_table(paths.qa_pairs / "parquet", columns=[*columns, *SPAN_FIELDS])  # read once
    ids = table.column("passage_id").to_pylist()
    unanswered = pc.sum(pc.equal(pc.list_value_length(table.column("answers")), 0)).as_py() or 0
    duplicates = len(ids) - len(set(ids))
    pages = _Pages(store)
    wrong: list[str] = []
    spans = 0
    placed = table.filter(pc.field("provenance_method") != "none")
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
