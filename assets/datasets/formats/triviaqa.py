"""Original TriviaQA JSON ``{Data: [{QuestionId, Question, Answer, EntityPages}]}`` with optional
evidence files, and the merge that fills KILT's id-only TriviaQA records with their questions."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from assets.datasets.formats.registry import DatasetFormat, ReadOptions, register
from assets.datasets.records import (
    DatasetFormatError,
    DatasetReadResult,
    DatasetRecord,
    ReadContext,
    load_json_document,
)

_TRIVIAQA_NAME = re.compile(
    r"^(?:verified-)?(?:unfiltered-)?(?P<domain>wikipedia|web)-(?P<split>train|dev|test-without-answers|test)"
    r"\.json$"
)


@dataclass
class TriviaQAMergeResult:
    """KILT TriviaQA records with ``input`` filled from the original questions."""

    records: list[DatasetRecord]
    merged: int
    missing_ids: list[str]


def _read_evidence(path: Path, limit: int) -> tuple[str, bool] | None:
    if not path.is_file():
        return None
    with open(path, encoding="utf-8", errors="replace") as handle:
        text = handle.read(limit + 1)
    return text[:limit], len(text) > limit


def _triviaqa_provenance(
    entity_pages: list[dict[str, Any]], root: Path, evidence_chars: int, ctx: ReadContext
) -> list[dict[str, Any]]:
    provenance = []
    for page in entity_pages:
        entry: dict[str, Any] = {"title": page.get("Title"), "filename": page.get("Filename")}
        if page.get("DocSource"):
            entry["doc_source"] = page["DocSource"]
        filename = page.get("Filename")
        evidence = _read_evidence(root / "wikipedia" / filename, evidence_chars) if filename else None
        if evidence is None:
            ctx.counts["evidence_files_missing"] += 1
            entry["evidence_text"] = None
        else:
            ctx.counts["evidence_files_read"] += 1
            entry["evidence_text"], entry["evidence_truncated"] = evidence
            entry["evidence_chars"] = evidence_chars
        provenance.append(entry)
    return provenance


def _read(
    path: Path, ctx: ReadContext, options: ReadOptions, result: DatasetReadResult
) -> Iterator[DatasetRecord]:
    evidence_dir, evidence_chars = options.evidence_dir, options.evidence_chars
    document = load_json_document(path)
    if not isinstance(document, dict) or not isinstance(document.get("Data"), list):
        raise DatasetFormatError(f"{path}:1: not a TriviaQA file: expected an object with a 'Data' list")
    root = Path(evidence_dir) if evidence_dir is not None else path.resolve().parent.parent / "evidence"
    domain = document.get("Domain")
    if result.split is None and isinstance(document.get("Split"), str):
        result.split = document["Split"]
    for number, item in enumerate(document["Data"], start=1):
        ctx.counts["items"] += 1
        if not isinstance(item, dict):
            ctx.problem(number, f"expected a JSON object, got {type(item).__name__}")
            continue
        qid, question = item.get("QuestionId"), item.get("Question")
        if qid is None:
            ctx.problem(number, "missing required field 'QuestionId'")
            continue
        if not isinstance(question, str):
            ctx.problem(number, f"question {qid}: missing required field 'Question'")
            continue
        entity_pages = [p for p in item.get("EntityPages") or [] if isinstance(p, dict)]
        answer = item.get("Answer")
        outputs: list[dict[str, Any]] = []
        meta: dict[str, Any] = {"domain": domain, "question_source": item.get("QuestionSource")}
        if isinstance(answer, dict) and isinstance(answer.get("Value"), str):
            value = answer["Value"]
            first: dict[str, Any] = {"answer": value}
            provenance = _triviaqa_provenance(entity_pages, root, evidence_chars, ctx)
            if provenance:
                first["provenance"] = provenance
            outputs.append(first)
            for alias in dict.fromkeys(answer.get("Aliases") or []):
                if isinstance(alias, str) and alias != value:
                    outputs.append({"answer": alias, "meta": {"alias": True}})
            meta["answer"] = {
                k: answer.get(k)
                for k in (
                    "Type",
                    "NormalizedValue",
                    "NormalizedAliases",
                    "MatchedWikiEntityName",
                    "NormalizedMatchedWikiEntityName",
                )
                if k in answer
            }
        elif answer is not None:
            ctx.problem(number, f"question {qid}: 'Answer' must be an object with a 'Value' string")
            continue
        meta["entity_pages"] = entity_pages
        if item.get("SearchResults"):
            meta["search_results"] = [
                {k: r.get(k) for k in ("Title", "Url", "Filename", "Rank", "Description")}
                for r in item["SearchResults"]
                if isinstance(r, dict)
            ]
        record = DatasetRecord(id=str(qid), input=question, output=outputs, meta=meta, line=number)
        yield ctx.emit(record)


def merge_triviaqa_ids(
    kilt_id_records: Iterable[DatasetRecord],
    triviaqa_records: Iterable[DatasetRecord],
    *,
    drop_missing: bool = False,
) -> TriviaQAMergeResult:
    """Fill ``input`` of KILT TriviaQA id-only records from original TriviaQA questions (by id).

    ``triviaqa_records`` may come from several original files (e.g. web + wikipedia); the same id with a
    different question is a ``ValueError``. Records whose id is not found keep ``input=None`` and are
    listed in ``missing_ids`` (dropped from ``records`` when ``drop_missing``). Returns new records; the
    inputs are not modified.
    """
    questions: dict[str, str] = {}
    for record in triviaqa_records:
        if record.input is None:
            continue
        known = questions.setdefault(record.id, record.input)
        if known != record.input:
            raise ValueError(
                f"TriviaQA id {record.id!r} has two different questions: {known!r} / {record.input!r}"
            )
    merged, missing, records = 0, [], []
    for record in kilt_id_records:
        question = questions.get(record.id)
        if question is None:
            if record.input is None:
                missing.append(record.id)
                if drop_missing:
                    continue
            records.append(record)
            continue
        merged += 1
        records.append(replace(record, input=question))
    return TriviaQAMergeResult(records=records, merged=merged, missing_ids=missing)


def _match_name(name: str) -> tuple[str | None, str | None] | None:
    match = _TRIVIAQA_NAME.match(name)
    return ("triviaqa", match["split"].replace("-", "_")) if match else None


FORMAT = register(
    DatasetFormat(
        name="triviaqa",
        description="original TriviaQA JSON {Data: [{QuestionId, Question, Answer, EntityPages}]}",
        read=_read,
        aliases=("trivia_qa",),
        match_name=_match_name,
        sniff=lambda obj: isinstance(obj.get("Data"), list),
        sniff_text=lambda head, first_line: (
            head.startswith("{") and '"Data"' in head and '"QuestionId"' in head
        ),
        dataset_of=lambda name: "triviaqa",
        unit=lambda path: "item",
        priority=30,
        sniff_priority=10,
    )
)
