"""Readers for KILT task datasets and for the original formats they come from.

Every reader yields :class:`DatasetRecord` objects in KILT's task interface::

    {"id": str,
     "input": str | None,
     "output": [{"answer": str, "provenance": [{...}, ...], "meta": {...}}, ...],
     "meta": {...}}

Formats (``read_dataset(path, format=...)``; ``None`` detects it from the file name, then the content)
-----------------------------------------------------------------------------------------------------
``kilt``        KILT JSONL, all eleven datasets; dataset and split from ``<dataset>-<split>-kilt.jsonl``.
                ``test_without_answers`` files have no ``output``; TriviaQA ``*_id-kilt.jsonl`` files
                have no ``input``: their records are yielded with ``input=None``, counted as
                ``missing_input`` and reported once in ``problems`` (fill them with
                :func:`merge_triviaqa_ids`).
``nq_open``     NQ-open / EfficientQA / PAQ JSONL ``{"question", "answer": [...]}``; extra fields
                (EfficientQA prediction lists, PAQ ``passage_score``/``answers``/``subsets``) go to
                ``meta``; id = the record's ``id`` or ``"{dataset}-{split}-{line}"``.
``fever``       Original FEVER JSONL claims; one output per evidence set (answer = label).
``fever_qrels`` Anserini FEVER topics (``id<TAB>claim``) + TREC qrels pair (:func:`read_fever_qrels`).
``mkqa``        MKQA JSONL (optionally gzipped); one record per (example, language), id
                ``"{example_id}-{lang}"``; ``language="en"`` by default, ``"all"`` or a list for more.
``triviaqa``    Original TriviaQA JSON (``{"Data": [...]}``) with optional evidence files.
``hotpotqa``    Original HotpotQA JSON (a list, or JSONL, of ``{"_id", "question", ...}``).
``mintaka``     Mintaka JSON (a list of ``{"id", "question", "questionEntity", "answer", ...}``, optionally
                gzipped); answers with their Wikidata QIDs, the question's entities in ``meta``.

Each format is one module of :mod:`assets.datasets.formats`, registered in its registry; this module
detects a file's format and dispatches to it. Record shapes and errors: :mod:`assets.datasets.records`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from assets.datasets.formats import (
    KILT_DATASETS,
    KILT_SPLITS,
    TRIVIAQA_EVIDENCE_CHARS,
    TRIVIAQA_MISSING_INPUT,
    ReadOptions,
    TriviaQAMergeResult,
    described,
    fever_title,
    formats,
    get_format,
    merge_triviaqa_ids,
    read_fever_qrels,
)
from assets.datasets.records import (
    DatasetFormatError,
    DatasetReadResult,
    DatasetRecord,
    DuplicateIdError,
    Output,
    Provenance,
    ReadContext,
    head_text,
    plain_name,
    require_file,
    split_from_name,
)
from assets.limits import input_line_bytes

__all__ = [
    "FORMATS",
    "KILT_DATASETS",
    "KILT_SPLITS",
    "TRIVIAQA_EVIDENCE_CHARS",
    "TRIVIAQA_MISSING_INPUT",
    "DatasetFormatError",
    "DatasetReadResult",
    "DatasetRecord",
    "DuplicateIdError",
    "Output",
    "Provenance",
    "TriviaQAMergeResult",
    "detect_format",
    "fever_title",
    "merge_triviaqa_ids",
    "read_dataset",
    "read_fever",
    "read_fever_qrels",
    "read_hotpotqa",
    "read_kilt",
    "read_mkqa",
    "read_nq_open",
    "read_triviaqa",
    "require_file",
]


FORMATS: dict[str, str] = {f.name: f.description for f in formats()}
"""Name -> description of the built-in dataset formats (:func:`assets.datasets.formats.formats` lists every
registered one, yours included)."""


def detect_format(path: str | Path) -> tuple[str, str | None, str | None]:
    """``(format, dataset, split)`` of a file: from its name by the first format whose ``match_name``
    knows it, else from its content (first JSON object, else its head) by the formats' sniffers.

    Raises ``ValueError`` listing the supported formats when nothing matches.
    """
    path = Path(path)
    name = plain_name(path)
    for dataset_format in formats():
        if dataset_format.match_name is not None and (found := dataset_format.match_name(name)) is not None:
            return dataset_format.name, found[0], found[1]
    head = head_text(path).lstrip()
    first_line = head.split("\n", 1)[0].strip()
    by_content = sorted(formats(), key=lambda f: (f.sniff_priority, f.name))
    detected = None
    try:
        first = json.loads(first_line)
    except json.JSONDecodeError:
        detected = next((f for f in by_content if f.sniff_text and f.sniff_text(head, first_line)), None)
    else:
        if isinstance(first, dict):
            detected = next((f for f in by_content if f.sniff and f.sniff(first)), None)
    if detected is None:
        raise ValueError(
            f"cannot detect the dataset format of {path}; supported formats: {described()}. "
            "Pass format=... explicitly."
        )
    split = split_from_name(name) if detected.split_in_name else None
    return detected.name, detected.dataset_of(name), split


def read_dataset(
    path: str | Path,
    *,
    format: str | None = None,
    strict: bool = False,
    dataset: str | None = None,
    split: str | None = None,
    lazy: bool = False,
    language: str | Iterable[str] = "en",
    evidence_dir: str | Path | None = None,
    evidence_chars: int = TRIVIAQA_EVIDENCE_CHARS,
    qrels_path: str | Path | None = None,
    max_line_bytes: int | None = None,
) -> DatasetReadResult:
    """Read any supported dataset file; ``format=None`` detects it (see :func:`detect_format`).
    ``max_line_bytes``: a line's bound (default ``limits.input.max_line_bytes``); a longer line is a
    problem, skipped and counted.

    ``dataset``/``split`` override what the file name says. Format-specific options: ``language``
    (MKQA), ``evidence_dir``/``evidence_chars`` (TriviaQA), ``qrels_path`` (FEVER topics; defaults to
    the sibling ``qrels.*`` file of a ``topics.*`` file, and vice versa).
    """
    path = require_file(path, "dataset file")
    if format is not None:
        chosen = get_format(format)
        try:
            detected, detected_ds, detected_split = detect_format(path)
        except ValueError:
            detected, detected_ds, detected_split = chosen.name, None, None
        if detected != chosen.name:
            detected_ds, detected_split = None, split_from_name(plain_name(path))
        detected_ds = chosen.alias_datasets.get(format.strip().lower(), detected_ds)
    else:
        name, detected_ds, detected_split = detect_format(path)
        chosen = get_format(name)
    options = ReadOptions(
        dataset=dataset or detected_ds,
        split=split or detected_split,
        strict=strict,
        lazy=lazy,
        language=language,
        evidence_dir=evidence_dir,
        evidence_chars=evidence_chars,
        qrels_path=qrels_path,
        max_line_bytes=input_line_bytes(max_line_bytes),
    )
    if chosen.read_result is not None:
        return chosen.read_result(path, options)
    result = DatasetReadResult(
        path=path, format=chosen.name, dataset=options.dataset, split=options.split, records=[]
    )
    ctx = ReadContext(
        path,
        strict,
        result.skips,
        result.counts,
        unit=chosen.unit(path),
        max_line_bytes=options.max_line_bytes,
    )
    generator = chosen.read(path, ctx, options, result)
    result.records = generator if lazy else list(generator)
    return result


def read_kilt(path: str | Path, **kwargs: Any) -> DatasetReadResult:
    """KILT JSONL (``format="kilt"``); see :func:`read_dataset` for the keyword arguments."""
    return read_dataset(path, format="kilt", **kwargs)


def read_nq_open(path: str | Path, **kwargs: Any) -> DatasetReadResult:
    """NQ-open / EfficientQA / PAQ JSONL (``format="nq_open"``, or ``"paq"`` to name the dataset PAQ)."""
    kwargs.setdefault("format", "nq_open")
    return read_dataset(path, **kwargs)


def read_fever(path: str | Path, **kwargs: Any) -> DatasetReadResult:
    """Original FEVER JSONL (``format="fever"``)."""
    return read_dataset(path, format="fever", **kwargs)


def read_mkqa(path: str | Path, *, language: str | Iterable[str] = "en", **kwargs: Any) -> DatasetReadResult:
    """MKQA JSONL (``format="mkqa"``); ``language`` is a code, a list of codes, or ``"all"``."""
    return read_dataset(path, format="mkqa", language=language, **kwargs)


def read_triviaqa(
    path: str | Path,
    *,
    evidence_dir: str | Path | None = None,
    evidence_chars: int = TRIVIAQA_EVIDENCE_CHARS,
    **kwargs: Any,
) -> DatasetReadResult:
    """Original TriviaQA JSON (``format="triviaqa"``).

    ``id`` = ``QuestionId``, ``input`` = ``Question``; outputs: ``Answer.Value`` (with one provenance
    entry per ``EntityPages`` page) then each distinct alias of ``Answer.Aliases`` (``meta.alias``).
    Provenance ``evidence_text`` is the first ``evidence_chars`` characters of the page's evidence file
    ``<evidence_dir>/wikipedia/<Filename>`` (default ``evidence_dir``: ``evidence/`` next to the ``qa/``
    folder) when that file exists, else None; ``evidence_truncated`` says whether it was cut. Record meta
    keeps the answer's normalized forms/type, ``entity_pages`` and ``search_results`` (web domain).
    """
    return read_dataset(
        path, format="triviaqa", evidence_dir=evidence_dir, evidence_chars=evidence_chars, **kwargs
    )


def read_hotpotqa(path: str | Path, **kwargs: Any) -> DatasetReadResult:
    """Original HotpotQA JSON (``format="hotpotqa"``): a list of questions, or JSONL of them.

    One output (answer) whose provenance has one entry per supporting fact: ``title``, ``sent_id`` and
    ``evidence_text`` = that sentence of the question's ``context`` (None, counted as
    ``supporting_facts_without_text`` and noted, when the title or sentence is not in the context).
    Record meta keeps ``type``, ``level`` and ``context_titles``. Test files without answers give no output.
    """
    return read_dataset(path, format="hotpotqa", **kwargs)
