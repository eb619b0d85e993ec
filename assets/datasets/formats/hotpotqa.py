"""Original HotpotQA JSON (a list, or JSONL, of ``{_id, question, answer, supporting_facts, context}``)."""

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
    is_str_list,
    iter_json_items,
)

_HOTPOT_NAME = re.compile(r"^hotpot_(?P<split>train|dev|test)_[a-z0-9_.]*\.json$")


def _hotpot_context(context: Any) -> dict[str, list[str]] | str:
    if context is None:
        return {}
    if not isinstance(context, list):
        return "field 'context' must be a list of [title, sentences]"
    sentences: dict[str, list[str]] = {}
    for entry in context:
        if not (
            isinstance(entry, list)
            and len(entry) == 2
            and isinstance(entry[0], str)
            and is_str_list(entry[1])
        ):
            return "field 'context' must be a list of [title, [sentence, ...]]"
        sentences.setdefault(entry[0], entry[1])
    return sentences


def _read(
    path: Path, ctx: ReadContext, options: ReadOptions, result: DatasetReadResult
) -> Iterator[DatasetRecord]:
    for number, item in iter_json_items(path, ctx, "HotpotQA"):
        if not isinstance(item, dict):
            ctx.problem(number, f"expected a JSON object, got {type(item).__name__}")
            continue
        qid, question = item.get("_id"), item.get("question")
        if qid is None:
            ctx.problem(number, "missing required field '_id'")
            continue
        if not isinstance(question, str):
            ctx.problem(number, f"question {qid}: missing required field 'question'")
            continue
        context = _hotpot_context(item.get("context"))
        if isinstance(context, str):
            ctx.problem(number, f"question {qid}: {context}")
            continue
        facts = item.get("supporting_facts") or []
        if not (
            isinstance(facts, list)
            and all(
                isinstance(f, list) and len(f) == 2 and isinstance(f[0], str) and isinstance(f[1], int)
                for f in facts
            )
        ):
            ctx.problem(number, f"question {qid}: 'supporting_facts' must be a list of [title, sent_id]")
            continue
        provenance = []
        for title, sent_id in facts:
            sentences = context.get(title)
            text = sentences[sent_id] if sentences is not None and 0 <= sent_id < len(sentences) else None
            if text is None:
                ctx.counts["supporting_facts_without_text"] += 1
                ctx.note(
                    number, f"question {qid}: supporting fact [{title!r}, {sent_id}] is not in the context"
                )
            provenance.append({"title": title, "sent_id": sent_id, "evidence_text": text})
        answer = item.get("answer")
        outputs: list[dict[str, Any]] = []
        if isinstance(answer, str):
            outputs.append({"answer": answer, "provenance": provenance} if provenance else {"answer": answer})
        elif provenance:
            outputs.append({"provenance": provenance})
        meta = {k: item[k] for k in ("type", "level") if k in item}
        meta["context_titles"] = list(context)
        record = DatasetRecord(id=str(qid), input=question, output=outputs, meta=meta, line=number)
        yield ctx.emit(record)


def _match_name(name: str) -> tuple[str | None, str | None] | None:
    match = _HOTPOT_NAME.match(name)
    return ("hotpotqa", match["split"]) if match else None


FORMAT = register(
    DatasetFormat(
        name="hotpotqa",
        description="original HotpotQA JSON [{_id, question, answer, supporting_facts, context}]",
        read=_read,
        aliases=("hotpot_qa", "hotpot"),
        match_name=_match_name,
        sniff=lambda obj: "_id" in obj and "question" in obj,
        sniff_text=lambda head, first_line: head.startswith("[") and '"_id"' in head and '"question"' in head,
        dataset_of=lambda name: "hotpotqa",
        unit=lambda path: "item" if head_text(path, 256).lstrip()[:1] == "[" else "line",
        priority=40,
        sniff_priority=40,
    )
)
