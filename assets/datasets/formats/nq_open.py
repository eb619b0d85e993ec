"""NQ-open / EfficientQA / PAQ JSONL ``{"question", "answer": [...]}``.

Extra fields (EfficientQA prediction lists, PAQ ``passage_score``/``answers``/``subsets``) go to ``meta``;
id = the record's ``id`` or ``"{dataset}-{split}-{line}"``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assets.datasets.formats.registry import DatasetFormat, ReadOptions, register
from assets.datasets.records import (
    DatasetReadResult,
    DatasetRecord,
    ReadContext,
    is_str_list,
    iter_json_lines,
    split_from_name,
)


def answer_field(obj: dict) -> Any:
    """The answers of an NQ-open / PAQ line as written: ``answer``, else PAQ metadata's ``answers`` (a list
    of ``{"text", "passage_id", ...}``). The one place the format says where its answers are: the dataset
    reader below and the QA-pair KB's reader (:mod:`assets.qa.reader`) both read them here."""
    answer = obj.get("answer")
    return answer if answer is not None else obj.get("answers")


def _read(
    path: Path, ctx: ReadContext, options: ReadOptions, result: DatasetReadResult
) -> Iterator[DatasetRecord]:
    dataset, split = options.dataset or "nq_open", options.split
    for number, obj in iter_json_lines(path, ctx):
        question = obj.get("question")
        if not isinstance(question, str):
            ctx.problem(
                number,
                "missing required field 'question'"
                if question is None
                else f"field 'question' must be a string, got {type(question).__name__}",
            )
            continue
        answers = answer_field(obj)
        if obj.get("answer") is None and isinstance(answers, list):
            # PAQ-style: answers = [{"text", "passage_id", "offset", ...}] or plain strings
            answers = [a.get("text") if isinstance(a, dict) else a for a in answers]
            answers = [a for a in answers if isinstance(a, str)]
        if isinstance(answers, str):
            answers = [answers]
        if answers is None:
            ctx.problem(number, "missing required field 'answer'")
            continue
        if not is_str_list(answers):
            ctx.problem(number, "field 'answer' must be a list of strings")
            continue
        rid = obj.get("id", obj.get("example_id"))
        record = DatasetRecord(
            id=str(rid) if rid is not None else f"{dataset}-{split or 'all'}-{number}",
            input=question,
            output=[{"answer": a} for a in dict.fromkeys(answers)],
            meta={k: v for k, v in obj.items() if k not in ("question", "answer", "id")},
            line=number,
        )
        yield ctx.emit(record)


def _match_name(name: str) -> tuple[str | None, str | None] | None:
    if not name.startswith("nq-open"):
        return None
    dataset = "efficientqa" if "efficientqa" in name else "nq_open"
    return dataset, split_from_name(name.removeprefix("nq-open"))


FORMAT = register(
    DatasetFormat(
        name="nq_open",
        description="NQ-open / EfficientQA / PAQ JSONL {question, answer: [...]}",
        read=_read,
        aliases=("nq-open", "nqopen", "paq", "efficientqa"),
        alias_datasets={"paq": "paq", "efficientqa": "efficientqa"},
        match_name=_match_name,
        sniff=lambda obj: "question" in obj and ("answer" in obj or "answers" in obj),
        dataset_of=lambda name: "paq" if "paq" in name else "nq_open",
        priority=50,
        sniff_priority=50,
    )
)
