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
from dataclasses import replace
from pathlib import Path

from assets.datasets.formats import (
    DEFAULT_READ,
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
    "ReadOptions",
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
    path: str | Path, options: ReadOptions = DEFAULT_READ, *, format: str | None = None
) -> DatasetReadResult:
    """Read any supported dataset file; ``format=None`` detects it (see :func:`detect_format`).

    ``options`` (:class:`ReadOptions`): ``dataset``/``split`` override what the file name says;
    ``strict`` makes a problem an error, ``lazy`` streams the records; ``max_line_bytes`` bounds a line
    (default ``limits.input.max_line_bytes``; a longer line is a problem, skipped and counted);
    format-specific: ``language`` (MKQA), ``evidence_dir``/``evidence_chars`` (TriviaQA), ``qrels_path``
    (FEVER topics; defaults to the sibling ``qrels.*`` file of a ``topics.*`` file, and vice versa).
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
    options = replace(
        options,
        dataset=options.dataset or detected_ds,
        split=options.split or detected_split,
        max_line_bytes=input_line_bytes(options.max_line_bytes),
    )
    if chosen.read_result is not None:
        return chosen.read_result(path, options)
    result = DatasetReadResult(
        path=path, format=chosen.name, dataset=options.dataset, split=options.split, records=[]
    )
    ctx = ReadContext(
        path,
        options.strict,
        result.skips,
        result.counts,
        unit=chosen.unit(path),
        max_line_bytes=options.max_line_bytes,
    )
    generator = chosen.read(path, ctx, options, result)
    result.records = generator if options.lazy else list(generator)
    return result


def read_kilt(path: str | Path, options: ReadOptions = DEFAULT_READ) -> DatasetReadResult:
    """KILT JSONL (``format="kilt"``); see :func:`read_dataset` for the options."""
    return read_dataset(path, options, format="kilt")


def read_nq_open(
    path: str | Path, options: ReadOptions = DEFAULT_READ, *, format: str = "nq_open"
) -> DatasetReadResult:
    """NQ-open / EfficientQA / PAQ JSONL (``format="nq_open"``, or ``"paq"`` to name the dataset PAQ)."""
    return read_dataset(path, options, format=format)


def read_fever(path: str | Path, options: ReadOptions = DEFAULT_READ) -> DatasetReadResult:
    """Original FEVER JSONL (``format="fever"``)."""
    return read_dataset(path, options, format="fever")


def read_mkqa(path: str | Path, options: ReadOptions = DEFAULT_READ) -> DatasetReadResult:
    """MKQA JSONL (``format="mkqa"``); ``options.language`` is a code, a list of codes, or ``"all"``."""
    return read_dataset(path, options, format="mkqa")


def read_triviaqa(path: str | Path, options: ReadOptions = DEFAULT_READ) -> DatasetReadResult:
    """Original TriviaQA JSON (``format="triviaqa"``).

    ``id`` = ``QuestionId``, ``input`` = ``Question``; outputs: ``Answer.Value`` (with one provenance
    entry per ``EntityPages`` page) then each distinct alias of ``Answer.Aliases`` (``meta.alias``).
    Provenance ``evidence_text`` is the first ``options.evidence_chars`` characters of the page's evidence
    file ``<evidence_dir>/wikipedia/<Filename>`` (default ``options.evidence_dir``: ``evidence/`` next to
    the ``qa/`` folder) when that file exists, else None; ``evidence_truncated`` says whether it was cut.
    Record meta keeps the answer's normalized forms/type, ``entity_pages`` and ``search_results`` (web
    domain)."""
    return read_dataset(path, options, format="triviaqa")


def read_hotpotqa(path: str | Path, options: ReadOptions = DEFAULT_READ) -> DatasetReadResult:
    """Original HotpotQA JSON (``format="hotpotqa"``): a list of questions, or JSONL of them.

    One output (answer) whose provenance has one entry per supporting fact: ``title``, ``sent_id`` and
    ``evidence_text`` = that sentence of the question's ``context`` (None, counted as
    ``supporting_facts_without_text`` and noted, when the title or sentence is not in the context).
    Record meta keeps ``type``, ``level`` and ``context_titles``. Test files without answers give no output.
    """
    return read_dataset(path, options, format="hotpotqa")
