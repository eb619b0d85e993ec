"""Mintaka JSON (a list of ``{id, question, translations, questionEntity, answer, category,
complexityType}``, optionally gzipped; Amazon's multilingual complex KBQA set): one record per question,
in English or the language asked for (``language``: ``en``, one of its eight translations, or a list).

Each answer is an output: an entity answer by its label with ``meta.entity`` (its QID, as MKQA's), a
number, date, string or yes/no answer by its value. The record's ``meta`` keeps the question entities
(QID, mention, span; ordinals, dates and quantities as Mintaka marks them), the answer entities, the
category and the complexity type: what a KB-path oracle needs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assets.datasets.formats.registry import DatasetFormat, ReadOptions, register
from assets.datasets.records import (
    DatasetReadResult,
    DatasetRecord,
    ReadContext,
    head_text,
    iter_json_items,
)

_NAME = re.compile(r"^mintaka_(?P<split>train|dev|test)(_v[0-9.]+)?\.json$")
_QID = re.compile(r"Q[1-9][0-9]*")


def _answer_outputs(answer: dict[str, Any], language: str) -> tuple[list[dict[str, Any]], list[str]] | str:
    """The outputs of a Mintaka answer and its entities' QIDs, or what is wrong with it."""
    kind, values = answer.get("answerType"), answer.get("answer")
    if values is None:
        return [], []
    if not isinstance(values, list):
        return "field 'answer.answer' must be a list"
    outputs: list[dict[str, Any]] = []
    entities: list[str] = []
    for value in values:
        if kind == "entity" and isinstance(value, dict) and _QID.fullmatch(str(value.get("name", ""))):
            label = value.get("label")
            text = label.get(language) or label.get("en") if isinstance(label, dict) else label
            entities.append(value["name"])
            outputs.append(
                {"answer": str(text or value["name"]), "meta": {"type": "entity", "entity": value["name"]}}
            )
        elif isinstance(value, str | int | float | bool) and not isinstance(value, dict):
            text = ("Yes" if value else "No") if isinstance(value, bool) else str(value)
            outputs.append({"answer": text, "meta": {"type": str(kind)}})
        else:
            return f"an answer of type {kind!r} that is neither an entity nor a value: {str(value)[:80]}"
    return outputs, entities


def _read(
    path: Path, ctx: ReadContext, options: ReadOptions, result: DatasetReadResult
) -> Iterator[DatasetRecord]:
    languages = [options.language] if isinstance(options.language, str) else list(options.language)
    for number, item in iter_json_items(path, ctx, "Mintaka"):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            ctx.problem(number, "expected a Mintaka question object with a string 'id'")
            continue
        qid = item["id"]
        answer = item.get("answer")
        if not isinstance(item.get("question"), str) or not isinstance(answer, dict):
            ctx.problem(
                number, f"question {qid}: fields 'question' (a string) and 'answer' (an object) needed"
            )
            continue
        entities = [e for e in item.get("questionEntity") or [] if isinstance(e, dict)]
        question_entities = [
            {key: e[key] for key in ("name", "entityType", "label", "mention", "span") if key in e}
            for e in entities
        ]
        for language in languages:
            question = (
                item["question"] if language == "en" else (item.get("translations") or {}).get(language)
            )
            if not isinstance(question, str):
                ctx.problem(number, f"question {qid}: no translation into {language!r}")
                continue
            read = _answer_outputs(answer, language)
            if isinstance(read, str):
                ctx.problem(number, f"question {qid}: {read}")
                continue
            outputs, answer_entities = read
            record = DatasetRecord(
                id=qid if len(languages) == 1 else f"{qid}-{language}",
                input=question,
                output=outputs,
                meta={
                    "language": language,
                    "question_entities": question_entities,
                    "entities": answer_entities,
                    "answer_type": answer.get("answerType"),
                    "answer_mention": answer.get("mention"),
                    "category": item.get("category"),
                    "complexity_type": item.get("complexityType"),
                },
                line=number,
            )
            yield ctx.emit(record)


def _match_name(name: str) -> tuple[str | None, str | None] | None:
    match = _NAME.match(name)
    return ("mintaka", match["split"]) if match else None


FORMAT = register(
    DatasetFormat(
        name="mintaka",
        description="Mintaka JSON [{id, question, questionEntity, answer, ...}] (optionally .gz)",
        read=_read,
        match_name=_match_name,
        sniff=lambda obj: {"questionEntity", "answer", "complexityType"} <= set(obj),
        sniff_text=lambda head, first_line: head.lstrip().startswith("[") and '"questionEntity"' in head,
        dataset_of=lambda name: "mintaka",
        unit=lambda path: "item" if head_text(path, 256).lstrip()[:1] == "[" else "line",
        priority=40,
        sniff_priority=35,
    )
)
