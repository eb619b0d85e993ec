"""MKQA JSONL ``{example_id, query, queries, answers}`` (optionally gzipped): one record per (example,
language), id ``"{example_id}-{lang}"``; ``language="en"`` by default, ``"all"`` or a list for more."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assets.datasets.formats.registry import DatasetFormat, ReadOptions, register
from assets.datasets.records import (
    DatasetReadResult,
    DatasetRecord,
    ReadContext,
    iter_json_lines,
)


def _mkqa_outputs(answers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    outputs: list[dict[str, Any]] = []
    seen: set[str] = set()
    for answer in answers:
        text = answer.get("text")
        if not isinstance(text, str):
            continue  # long_answer / unanswerable: no short answer text
        info = {"type": answer.get("type")}
        if answer.get("entity"):
            info["entity"] = answer["entity"]
        if text not in seen:
            seen.add(text)
            outputs.append({"answer": text, "meta": dict(info)})
        for alias in answer.get("aliases") or []:
            if isinstance(alias, str) and alias not in seen:
                seen.add(alias)
                outputs.append({"answer": alias, "meta": {**info, "alias_of": text}})
    return outputs


def _read(
    path: Path, ctx: ReadContext, options: ReadOptions, result: DatasetReadResult
) -> Iterator[DatasetRecord]:
    language = options.language
    wanted: list[str] | None = (
        None if language == "all" else ([language] if isinstance(language, str) else list(language))
    )
    for number, obj in iter_json_lines(path, ctx):
        example_id = obj.get("example_id")
        queries, answers = obj.get("queries"), obj.get("answers")
        if example_id is None:
            ctx.problem(number, "missing required field 'example_id'")
            continue
        if not isinstance(queries, dict) or not isinstance(answers, dict):
            ctx.problem(number, "fields 'queries' and 'answers' must be objects keyed by language")
            continue
        languages = list(queries) if wanted is None else wanted
        for lang in languages:
            query = queries.get(lang)
            lang_answers = answers.get(lang)
            if not isinstance(query, str) or not isinstance(lang_answers, list):
                ctx.problem(
                    number,
                    f"example {example_id}: no query/answers for language {lang!r} "
                    f"(languages: {', '.join(sorted(queries))})",
                )
                continue
            lang_answers = [a for a in lang_answers if isinstance(a, dict)]
            outputs = _mkqa_outputs(lang_answers)
            if not outputs:
                ctx.counts["records_without_short_answer"] += 1
            record = DatasetRecord(
                id=f"{example_id}-{lang}",
                input=query,
                output=outputs,
                meta={
                    "example_id": example_id,
                    "language": lang,
                    "query_en": obj.get("query"),
                    "answer_types": [a.get("type") for a in lang_answers],
                    "entities": [a["entity"] for a in lang_answers if a.get("entity")],
                    "answers": lang_answers,
                },
                line=number,
            )
            yield ctx.emit(record)


FORMAT = register(
    DatasetFormat(
        name="mkqa",
        description="MKQA JSONL {example_id, query, queries, answers} (optionally .gz)",
        read=_read,
        match_name=lambda name: ("mkqa", None) if "mkqa" in name else None,
        sniff=lambda obj: {"queries", "answers"} <= set(obj),
        dataset_of=lambda name: "mkqa",
        split_in_name=False,
        priority=60,
        sniff_priority=30,
    )
)
