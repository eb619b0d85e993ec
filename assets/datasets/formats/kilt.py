"""KILT JSONL, all eleven KILT datasets (``<dataset>-<split>-kilt.jsonl``).

``test_without_answers`` files have no ``output``; TriviaQA ``*_id-kilt.jsonl`` files have no ``input``:
their records are yielded with ``input=None``, counted as ``missing_input`` and reported once in
``problems`` (fill them with :func:`assets.datasets.formats.triviaqa.merge_triviaqa_ids`).
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
    iter_json_lines,
)

#: dataset name in KILT file names -> (task, original dataset)
KILT_DATASETS: dict[str, tuple[str, str]] = {
    "fever": ("fact checking", "FEVER"),
    "aidayago2": ("entity linking", "AIDA CoNLL-YAGO"),
    "wned": ("entity linking", "WNED-WIKI"),
    "cweb": ("entity linking", "WNED-CWEB"),
    "trex": ("slot filling", "T-REx"),
    "structured_zeroshot": ("slot filling", "Zero-Shot RE (zsRE)"),
    "nq": ("open-domain QA", "Natural Questions"),
    "hotpotqa": ("open-domain QA", "HotpotQA"),
    "triviaqa": ("open-domain QA", "TriviaQA"),
    "eli5": ("open-domain QA", "ELI5"),
    "wow": ("dialogue", "Wizard of Wikipedia"),
}

#: split in KILT file names -> (base split, has answers, ids only (TriviaQA: no input))
KILT_SPLITS: dict[str, tuple[str, bool, bool]] = {
    "train": ("train", True, False),
    "dev": ("dev", True, False),
    "test": ("test", True, False),
    "test_without_answers": ("test", False, False),
    "test_input": ("test", False, False),
    "train_id": ("train", True, True),
    "dev_id": ("dev", True, True),
    "test_id_without_answers": ("test", False, True),
    "test_id_input": ("test", False, True),
}

TRIVIAQA_MISSING_INPUT = (
    "needs the TriviaQA questions (input missing) — merge with the original TriviaQA files"
)

_KILT_NAME = re.compile(
    r"^(?P<dataset>[a-z0-9_]+?)-(?P<split>" + "|".join(sorted(KILT_SPLITS, key=len, reverse=True)) + r")"
    r"-kilt\.jsonl$"
)


def _check_kilt(obj: dict[str, Any]) -> str | None:
    """The first problem with a KILT record, or None."""
    if "id" not in obj or obj["id"] is None:
        return "missing required field 'id'"
    if not isinstance(obj["id"], str | int) or isinstance(obj["id"], bool):
        return f"field 'id' must be a string, got {type(obj['id']).__name__}"
    if "input" in obj and not isinstance(obj["input"], str):
        return f"field 'input' must be a string, got {type(obj['input']).__name__}"
    output = obj.get("output", [])
    if not isinstance(output, list):
        return f"field 'output' must be a list, got {type(output).__name__}"
    for i, out in enumerate(output):
        if not isinstance(out, dict):
            return f"output[{i}] must be an object, got {type(out).__name__}"
        if "answer" in out and not isinstance(out["answer"], str):
            return f"output[{i}].answer must be a string, got {type(out['answer']).__name__}"
        prov = out.get("provenance", [])
        if prov is not None and not (isinstance(prov, list) and all(isinstance(p, dict) for p in prov)):
            return f"output[{i}].provenance must be a list of objects"
    if "meta" in obj and obj["meta"] is not None and not isinstance(obj["meta"], dict):
        return f"field 'meta' must be an object, got {type(obj['meta']).__name__}"
    return None


def _read(
    path: Path, ctx: ReadContext, options: ReadOptions, result: DatasetReadResult
) -> Iterator[DatasetRecord]:
    dataset, split = options.dataset, options.split
    id_only_split = KILT_SPLITS.get(split or "", ("", True, False))[2]
    input_optional = dataset == "triviaqa" or id_only_split
    if dataset is not None and dataset not in KILT_DATASETS:
        ctx.note(
            0, f"dataset {dataset!r} is not one of the eleven KILT datasets ({', '.join(KILT_DATASETS)})"
        )
    first_missing: int | None = None
    for number, obj in iter_json_lines(path, ctx):
        message = _check_kilt(obj)
        if message is None and "input" not in obj and not input_optional:
            message = "missing required field 'input'"
        if message is not None:
            ctx.problem(number, message)
            continue
        record = DatasetRecord.from_kilt(obj, line=number)
        if record.input is None:
            ctx.counts["missing_input"] += 1
            first_missing = first_missing or number
        yield ctx.emit(record)
    if ctx.counts["missing_input"]:
        ctx.note(
            first_missing or 0,
            f"{ctx.counts['missing_input']} record(s) without input: {TRIVIAQA_MISSING_INPUT}"
            " (use merge_triviaqa_ids)",
        )


def _match_name(name: str) -> tuple[str | None, str | None] | None:
    match = _KILT_NAME.match(name)
    return (match["dataset"], match["split"]) if match else None


FORMAT = register(
    DatasetFormat(
        name="kilt",
        description="KILT JSONL (<dataset>-<split>-kilt.jsonl, all eleven KILT datasets)",
        read=_read,
        aliases=("kilt_jsonl",),
        match_name=_match_name,
        sniff=lambda obj: "id" in obj and set(obj) <= {"id", "input", "output", "meta"},
        dataset_of=lambda name: next((d for d in KILT_DATASETS if name.startswith(d + "-")), None),
        priority=10,
        sniff_priority=60,
    )
)
