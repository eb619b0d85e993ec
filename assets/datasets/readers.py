"""Readers for KILT task datasets and for the original formats they come from.

Every reader yields :class:`DatasetRecord` objects in KILT's task interface::

    {"id": str,
     "input": str | None,
     "output": [{"answer": str, "provenance": [{...}, ...], "meta": {...}}, ...],
     "meta": {...}}

Shapes
------
``DatasetRecord`` is a slotted dataclass (``id``, ``input``, ``output``, ``meta`` and the source position
``line``, which is not part of the KILT form). ``output`` entries and provenance entries are **plain
dicts** (typed below as :class:`Output` and :class:`Provenance`, ``TypedDict``s with every key optional),
so KILT records round-trip unchanged: ``DatasetRecord.from_kilt(d).to_kilt() == d``. Keys follow KILT:

* ``Output``: ``answer`` (absent in KILT outputs that only carry provenance, e.g. NQ long answers,
  and in FEVER qrels records, which have no label), ``provenance``, ``meta``.
* ``Provenance`` from KILT files: ``wikipedia_id``, ``title``, ``section``, ``start_paragraph_id``,
  ``start_character``, ``end_paragraph_id``, ``end_character``, ``bleu_score``, ``meta``.
* ``Provenance`` from original formats: ``title`` (a Wikipedia title; FEVER page ids are un-escaped
  with :func:`fever_title`, the raw id kept as ``fever_page_id``) plus what the source provides:
  ``evidence_text`` (HotpotQA: the supporting sentence; TriviaQA: the first ``evidence_chars``
  characters of the page's evidence file (default 2000, recorded in the entry with
  ``evidence_truncated``), None when the text is not available), FEVER ``sentence_id`` /
  ``annotation_id`` / ``evidence_id`` (FEVER gives no sentence text), HotpotQA ``sent_id``, TriviaQA
  ``filename``/``doc_source``, qrels ``relevance``.

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

Errors
------
Malformed lines (bad JSON, missing or mistyped required fields) are skipped, counted (``skipped``) and
reported in ``problems`` as ``(line_number, message)``; for whole-document JSON formats (TriviaQA,
HotpotQA arrays) the number is the 1-based item position. ``strict=True`` raises
:class:`DatasetFormatError` ``"<file>:<line>: <message>"`` at the first one instead. A document that is
not JSON at all, an unknown format and a duplicated id (:class:`DuplicateIdError`, naming the id and both
lines) are always errors (``ValueError`` subclasses). ``problems`` also carries notes that skip nothing
(line 0 = the whole file): the TriviaQA missing-input summary, HotpotQA supporting facts outside the
context, qrels claims missing from the topics, a KILT file name with an unknown dataset.

Results are eager lists by default, so ``problems`` and ``counts`` are complete on return; pass
``lazy=True`` for huge files (T-REx train): ``records`` is then a one-shot iterator and the counters fill
as it is consumed. Pure standard library; compressed inputs (``.gz``, ``.bz2``, ``.xz``) are read
transparently.
"""

from __future__ import annotations

import bz2
import errno
import gzip
import json
import lzma
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any, TypedDict

from assets.wikipedia.titles import decode_fever_escapes

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
]

FORMATS: dict[str, str] = {
    "kilt": "KILT JSONL (<dataset>-<split>-kilt.jsonl, all eleven KILT datasets)",
    "nq_open": "NQ-open / EfficientQA / PAQ JSONL {question, answer: [...]}",
    "fever": "original FEVER JSONL {id, label, claim, evidence}",
    "fever_qrels": "FEVER topics TSV (id<TAB>claim) + TREC qrels (claim_id 0 Page 2)",
    "mkqa": "MKQA JSONL {example_id, query, queries, answers} (optionally .gz)",
    "triviaqa": "original TriviaQA JSON {Data: [{QuestionId, Question, Answer, EntityPages}]}",
    "hotpotqa": "original HotpotQA JSON [{_id, question, answer, supporting_facts, context}]",
}
_FORMAT_ALIASES = {
    "kilt_jsonl": "kilt",
    "nq-open": "nq_open",
    "nqopen": "nq_open",
    "paq": "nq_open",
    "efficientqa": "nq_open",
    "fever-qrels": "fever_qrels",
    "trivia_qa": "triviaqa",
    "hotpot_qa": "hotpotqa",
    "hotpot": "hotpotqa",
}

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
#: default bound on the evidence text read from a TriviaQA evidence file (characters, from the start)
TRIVIAQA_EVIDENCE_CHARS = 2000

_KILT_NAME = re.compile(
    r"^(?P<dataset>[a-z0-9_]+?)-(?P<split>" + "|".join(sorted(KILT_SPLITS, key=len, reverse=True)) + r")"
    r"-kilt\.jsonl$"
)
_FEVER_QRELS_NAME = re.compile(r"^(?P<kind>topics|qrels)\.fever\.(?P<split>[a-z0-9_-]+)\.txt$")
_TRIVIAQA_NAME = re.compile(
    r"^(?:verified-)?(?:unfiltered-)?(?P<domain>wikipedia|web)-(?P<split>train|dev|test-without-answers|test)"
    r"\.json$"
)
_HOTPOT_NAME = re.compile(r"^hotpot_(?P<split>train|dev|test)_[a-z0-9_.]*\.json$")
_SPLIT_TOKEN = re.compile(r"(?:^|[^a-z])(train|dev|test|validation|val)(?:[^a-z]|$)")
_COMPRESSION = (".gz", ".bz2", ".xz")


class DatasetFormatError(ValueError):
    """A malformed dataset file or record; the message starts with ``<file>:<line>:``."""


class DuplicateIdError(DatasetFormatError):
    """The same record id twice in one file."""


class Provenance(TypedDict, total=False):
    """One provenance entry (plain dict; every key optional, extra keys allowed)."""

    wikipedia_id: str
    title: str
    section: str
    start_paragraph_id: int
    start_character: int
    end_paragraph_id: int
    end_character: int
    bleu_score: float
    meta: dict[str, Any]
    evidence_text: str | None
    evidence_truncated: bool
    evidence_chars: int
    sentence_id: int
    sent_id: int
    fever_page_id: str
    relevance: int


class Output(TypedDict, total=False):
    """One output entry (plain dict): an answer and/or the provenance supporting it."""

    answer: str
    provenance: list[Provenance]
    meta: dict[str, Any]


@dataclass(slots=True)
class DatasetRecord:
    """One task example. ``line`` is its position in the source (not part of the KILT form)."""

    id: str
    input: str | None
    output: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    line: int | None = field(default=None, compare=False)

    def to_kilt(self) -> dict[str, Any]:
        """The KILT JSON form; ``input``/``output``/``meta`` are left out when None/empty, as in KILT."""
        record: dict[str, Any] = {"id": self.id}
        if self.input is not None:
            record["input"] = self.input
        if self.output:
            record["output"] = self.output
        if self.meta:
            record["meta"] = self.meta
        return record

    @classmethod
    def from_kilt(cls, data: dict[str, Any], line: int | None = None) -> DatasetRecord:
        """Build from a KILT JSON object (not validated; :func:`read_kilt` validates)."""
        return cls(
            id=str(data["id"]),
            input=data.get("input"),
            output=list(data.get("output") or []),
            meta=dict(data.get("meta") or {}),
            line=line,
        )

    @property
    def answers(self) -> list[str]:
        """The answer strings, in output order (outputs without an answer are skipped)."""
        return [o["answer"] for o in self.output if isinstance(o.get("answer"), str)]

    @property
    def provenance(self) -> list[dict[str, Any]]:
        """Every provenance entry of every output, flattened."""
        return [p for o in self.output for p in (o.get("provenance") or [])]

    @property
    def titles(self) -> list[str]:
        """Distinct provenance titles, first-seen order."""
        return list(dict.fromkeys(p["title"] for p in self.provenance if p.get("title")))


@dataclass
class DatasetReadResult:
    """What a reader returns. Iterating the result iterates ``records``."""

    path: Path
    format: str
    dataset: str | None
    split: str | None
    records: list[DatasetRecord] | Iterator[DatasetRecord]
    problems: list[tuple[int, str]] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)

    def __iter__(self) -> Iterator[DatasetRecord]:
        return iter(self.records)

    @property
    def n_records(self) -> int:
        return self.counts["records"]

    @property
    def n_skipped(self) -> int:
        return self.counts["skipped"]

    @property
    def missing_input(self) -> int:
        """Records without ``input`` (KILT TriviaQA id-only files)."""
        return self.counts["missing_input"]


@dataclass
class TriviaQAMergeResult:
    """KILT TriviaQA records with ``input`` filled from the original questions."""

    records: list[DatasetRecord]
    merged: int
    missing_ids: list[str]


def require_file(path: str | Path, what: str) -> Path:
    """``path`` when it is a file, else ``FileNotFoundError`` naming it (the CLI prints the file and what
    is wrong with it)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(errno.ENOENT, f"{what} not found", str(path))
    return path


class _Context:
    """Shared bookkeeping of one read: problems, counters, strictness, duplicate ids."""

    def __init__(self, path: Path, strict: bool, problems: list, counts: Counter, unit: str = "line"):
        self.path = path
        self.strict = strict
        self.problems = problems
        self.counts = counts
        self.unit = unit
        self.seen: dict[str, int] = {}

    def problem(self, line: int, message: str) -> None:
        """A malformed line: raise when strict, else record and count it as skipped."""
        if self.strict:
            raise DatasetFormatError(f"{self.path}:{line}: {message}")
        self.problems.append((line, message))
        self.counts["skipped"] += 1

    def note(self, line: int, message: str) -> None:
        """Something worth reporting that does not skip the record."""
        self.problems.append((line, message))

    def emit(self, record: DatasetRecord) -> DatasetRecord:
        first = self.seen.get(record.id)
        if first is not None:
            raise DuplicateIdError(
                f"{self.path}: duplicate id {record.id!r} at {self.unit}s {first} and {record.line}"
            )
        self.seen[record.id] = record.line or 0
        self.counts["records"] += 1
        self.counts["outputs"] += len(record.output)
        self.counts["provenance"] += sum(len(o.get("provenance") or []) for o in record.output)
        if not record.output:
            self.counts["records_without_output"] += 1
        return record


# ---------------------------------------------------------------------------------------------- I/O


def _open_text(path: Path) -> IO[str]:
    """Open text, decompressing by magic bytes (gzip, bz2, xz); UTF-8 with an optional BOM."""
    with open(path, "rb") as probe:
        magic = probe.read(6)
    if magic[:2] == b"\x1f\x8b":
        return gzip.open(path, "rt", encoding="utf-8-sig")
    if magic[:3] == b"BZh":
        return bz2.open(path, "rt", encoding="utf-8-sig")
    if magic == b"\xfd7zXZ\x00":
        return lzma.open(path, "rt", encoding="utf-8-sig")
    return open(path, encoding="utf-8-sig")


def _plain_name(path: Path) -> str:
    name = path.name.lower()
    for suffix in _COMPRESSION:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _head(path: Path, chars: int = 65536) -> str:
    with _open_text(path) as handle:
        return handle.read(chars)


def _iter_json_lines(path: Path, ctx: _Context) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every parseable JSON-object line; bad lines go to ``ctx.problem``."""
    with _open_text(path) as handle:
        for number, raw in enumerate(handle, start=1):
            text = raw.strip()
            if not text:
                ctx.counts["blank_lines"] += 1
                continue
            ctx.counts["lines"] += 1
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as exc:
                ctx.problem(number, f"invalid JSON: {exc.msg} (column {exc.colno})")
                continue
            if not isinstance(obj, dict):
                ctx.problem(number, f"expected a JSON object, got {type(obj).__name__}")
                continue
            yield number, obj


def _load_json_document(path: Path) -> Any:
    with _open_text(path) as handle:
        try:
            return json.load(handle)
        except json.JSONDecodeError as exc:
            raise DatasetFormatError(
                f"{path}:{exc.lineno}: not a valid JSON document: {exc.msg} (column {exc.colno})"
            ) from None


def _split_from_name(name: str) -> str | None:
    match = _SPLIT_TOKEN.search(name)
    if not match:
        return None
    token = match.group(1)
    return "dev" if token in ("validation", "val") else token


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


# ----------------------------------------------------------------------------------------- detection


def _format_from_keys(obj: Any) -> str | None:
    if not isinstance(obj, dict):
        return None
    keys = set(obj)
    if isinstance(obj.get("Data"), list):
        return "triviaqa"
    if "claim" in keys:
        return "fever"
    if {"queries", "answers"} <= keys:
        return "mkqa"
    if "_id" in keys and "question" in keys:
        return "hotpotqa"
    if "question" in keys and ("answer" in keys or "answers" in keys):
        return "nq_open"
    if "id" in keys and keys <= {"id", "input", "output", "meta"}:
        return "kilt"
    return None


def detect_format(path: str | Path) -> tuple[str, str | None, str | None]:
    """``(format, dataset, split)`` of a file, from its name first, then from its first records.

    Raises ``ValueError`` listing the supported formats when nothing matches.
    """
    path = Path(path)
    name = _plain_name(path)
    if match := _KILT_NAME.match(name):
        return "kilt", match["dataset"], match["split"]
    if match := _FEVER_QRELS_NAME.match(name):
        return "fever_qrels", "fever", match["split"]
    if match := _TRIVIAQA_NAME.match(name):
        return "triviaqa", "triviaqa", match["split"].replace("-", "_")
    if match := _HOTPOT_NAME.match(name):
        return "hotpotqa", "hotpotqa", match["split"]
    if name.startswith("nq-open"):
        dataset = "efficientqa" if "efficientqa" in name else "nq_open"
        return "nq_open", dataset, _split_from_name(name.removeprefix("nq-open"))
    if "mkqa" in name:
        return "mkqa", "mkqa", None

    head = _head(path).lstrip()
    detected = None
    first_line = head.split("\n", 1)[0].strip()
    try:
        detected = _format_from_keys(json.loads(first_line))
    except json.JSONDecodeError:
        if head.startswith("[") and '"_id"' in head and '"question"' in head:
            detected = "hotpotqa"
        elif head.startswith("{") and '"Data"' in head and '"QuestionId"' in head:
            detected = "triviaqa"
        elif re.match(r"^\d+\t[^\t\[]+$", first_line):
            detected = "fever_qrels"
    if detected is None:
        raise ValueError(
            f"cannot detect the dataset format of {path}; supported formats: "
            + "; ".join(f"{k} ({v})" for k, v in FORMATS.items())
            + ". Pass format=... explicitly."
        )
    default_dataset = {
        "fever": "fever",
        "fever_qrels": "fever",
        "mkqa": "mkqa",
        "triviaqa": "triviaqa",
        "hotpotqa": "hotpotqa",
    }
    dataset = default_dataset.get(detected)
    if detected == "nq_open":
        dataset = "paq" if "paq" in name else "nq_open"
    if detected == "kilt":
        dataset = next((d for d in KILT_DATASETS if name.startswith(d + "-")), None)
    split = None if detected == "mkqa" else _split_from_name(name)
    return detected, dataset, split


def _normalise_format(fmt: str) -> str:
    key = fmt.strip().lower()
    key = _FORMAT_ALIASES.get(key, key)
    if key not in FORMATS:
        raise ValueError(
            f"unknown dataset format {fmt!r}; supported formats: "
            + "; ".join(f"{k} ({v})" for k, v in FORMATS.items())
        )
    return key


# ----------------------------------------------------------------------------------------- dispatch


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
) -> DatasetReadResult:
    """Read any supported dataset file; ``format=None`` detects it (see :func:`detect_format`).

    ``dataset``/``split`` override what the file name says. Format-specific options: ``language``
    (MKQA), ``evidence_dir``/``evidence_chars`` (TriviaQA), ``qrels_path`` (FEVER topics; defaults to
    the sibling ``qrels.*`` file of a ``topics.*`` file, and vice versa).
    """
    path = require_file(path, "dataset file")
    if format is not None:
        fmt = _normalise_format(format)
        try:
            detected_fmt, detected_ds, detected_split = detect_format(path)
        except ValueError:
            detected_fmt, detected_ds, detected_split = fmt, None, None
        if detected_fmt != fmt:
            detected_ds, detected_split = None, _split_from_name(_plain_name(path))
        if fmt == "nq_open" and format.strip().lower() in ("paq", "efficientqa"):
            detected_ds = format.strip().lower()
    else:
        fmt, detected_ds, detected_split = detect_format(path)
    dataset = dataset or detected_ds
    split = split or detected_split

    if fmt == "fever_qrels":
        topics, qrels = _fever_pair(path, qrels_path)
        return read_fever_qrels(topics, qrels, strict=strict, split=split, lazy=lazy)

    result = DatasetReadResult(path=path, format=fmt, dataset=dataset, split=split, records=[])
    unit = (
        "item"
        if fmt == "triviaqa" or (fmt == "hotpotqa" and _head(path, 256).lstrip()[:1] == "[")
        else "line"
    )
    ctx = _Context(path, strict, result.problems, result.counts, unit=unit)
    generator: Iterator[DatasetRecord]
    if fmt == "kilt":
        generator = _gen_kilt(path, ctx, dataset, split)
    elif fmt == "nq_open":
        generator = _gen_nq_open(path, ctx, dataset or "nq_open", split)
    elif fmt == "fever":
        generator = _gen_fever(path, ctx)
    elif fmt == "mkqa":
        generator = _gen_mkqa(path, ctx, language)
    elif fmt == "triviaqa":
        generator = _gen_triviaqa(path, ctx, evidence_dir, evidence_chars, result)
    else:
        generator = _gen_hotpotqa(path, ctx)
    result.records = generator if lazy else list(generator)
    return result


def _fever_pair(path: Path, qrels_path: str | Path | None) -> tuple[Path, Path]:
    name = path.name
    if qrels_path is not None:
        return path, Path(qrels_path)
    if name.startswith("topics."):
        return path, path.with_name("qrels." + name.removeprefix("topics."))
    if name.startswith("qrels."):
        return path.with_name("topics." + name.removeprefix("qrels.")), path
    raise ValueError(f"{path}: pass qrels_path= (no sibling qrels.* file can be derived from the name)")


# ------------------------------------------------------------------------------------------- KILT


def read_kilt(path: str | Path, **kwargs: Any) -> DatasetReadResult:
    """KILT JSONL (``format="kilt"``); see :func:`read_dataset` for the keyword arguments."""
    return read_dataset(path, format="kilt", **kwargs)


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


def _gen_kilt(path: Path, ctx: _Context, dataset: str | None, split: str | None) -> Iterator[DatasetRecord]:
    id_only_split = KILT_SPLITS.get(split or "", ("", True, False))[2]
    input_optional = dataset == "triviaqa" or id_only_split
    if dataset is not None and dataset not in KILT_DATASETS:
        ctx.note(
            0, f"dataset {dataset!r} is not one of the eleven KILT datasets ({', '.join(KILT_DATASETS)})"
        )
    first_missing: int | None = None
    for number, obj in _iter_json_lines(path, ctx):
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


# ---------------------------------------------------------------------------------- NQ-open / PAQ


def read_nq_open(path: str | Path, **kwargs: Any) -> DatasetReadResult:
    """NQ-open / EfficientQA / PAQ JSONL (``format="nq_open"``, or ``"paq"`` to name the dataset PAQ)."""
    kwargs.setdefault("format", "nq_open")
    return read_dataset(path, **kwargs)


def _gen_nq_open(path: Path, ctx: _Context, dataset: str, split: str | None) -> Iterator[DatasetRecord]:
    for number, obj in _iter_json_lines(path, ctx):
        question = obj.get("question")
        if not isinstance(question, str):
            ctx.problem(
                number,
                "missing required field 'question'"
                if question is None
                else f"field 'question' must be a string, got {type(question).__name__}",
            )
            continue
        answers = obj.get("answer")
        if answers is None and isinstance(obj.get("answers"), list):
            # PAQ-style: answers = [{"text", "passage_id", "offset", ...}] or plain strings
            answers = [a.get("text") if isinstance(a, dict) else a for a in obj["answers"]]
            answers = [a for a in answers if isinstance(a, str)]
        if isinstance(answers, str):
            answers = [answers]
        if answers is None:
            ctx.problem(number, "missing required field 'answer'")
            continue
        if not _is_str_list(answers):
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


# ------------------------------------------------------------------------------------------ FEVER


def fever_title(page: str) -> str:
    """A FEVER page id as a Wikipedia title: ``Soul_Food_-LRB-film-RRB-`` -> ``Soul Food (film)``."""
    return decode_fever_escapes(page).replace("_", " ")


def read_fever(path: str | Path, **kwargs: Any) -> DatasetReadResult:
    """Original FEVER JSONL (``format="fever"``)."""
    return read_dataset(path, format="fever", **kwargs)


def _fever_outputs(label: str | None, evidence: Any) -> list[dict[str, Any]] | str:
    """Outputs for a FEVER claim, or an error message."""
    if evidence is None:
        evidence = []
    if not isinstance(evidence, list):
        return "field 'evidence' must be a list of evidence sets"
    outputs: list[dict[str, Any]] = []
    bare = False  # an evidence set without any page (NOT ENOUGH INFO), emitted once
    for s, evidence_set in enumerate(evidence):
        if not isinstance(evidence_set, list):
            return f"evidence[{s}] must be a list of [annotation_id, evidence_id, page, sentence_id]"
        provenance = []
        for item in evidence_set:
            if not isinstance(item, list) or len(item) != 4:
                return f"evidence[{s}] item must be [annotation_id, evidence_id, page, sentence_id]"
            annotation_id, evidence_id, page, sentence_id = item
            if page is None:
                continue
            if not isinstance(page, str):
                return f"evidence[{s}] page must be a string or null"
            provenance.append(
                {
                    "title": fever_title(page),
                    "fever_page_id": page,
                    "sentence_id": sentence_id,
                    "annotation_id": annotation_id,
                    "evidence_id": evidence_id,
                }
            )
        if provenance:
            out: dict[str, Any] = {} if label is None else {"answer": label}
            out["provenance"] = provenance
            outputs.append(out)
        else:
            bare = True
    if label is not None and (bare or not outputs):
        outputs.append({"answer": label})
    return outputs


def _gen_fever(path: Path, ctx: _Context) -> Iterator[DatasetRecord]:
    for number, obj in _iter_json_lines(path, ctx):
        if obj.get("id") is None:
            ctx.problem(number, "missing required field 'id'")
            continue
        claim = obj.get("claim")
        if not isinstance(claim, str):
            ctx.problem(
                number,
                "missing required field 'claim'" if claim is None else "field 'claim' must be a string",
            )
            continue
        label = obj.get("label")
        if label is not None and not isinstance(label, str):
            ctx.problem(number, "field 'label' must be a string")
            continue
        outputs = _fever_outputs(label, obj.get("evidence"))
        if isinstance(outputs, str):
            ctx.problem(number, outputs)
            continue
        record = DatasetRecord(
            id=str(obj["id"]),
            input=claim,
            output=outputs,
            meta={k: v for k, v in obj.items() if k not in ("id", "claim", "label", "evidence")},
            line=number,
        )
        yield ctx.emit(record)


def read_fever_qrels(
    topics_path: str | Path,
    qrels_path: str | Path,
    *,
    strict: bool = False,
    split: str | None = None,
    lazy: bool = False,
) -> DatasetReadResult:
    """FEVER claims (``id<TAB>claim``) with their TREC qrels pages (``claim_id 0 Page_Title rel``).

    One record per claim, in topics order: one answer-less output per relevant page (the qrels do not
    say which pages form one evidence set, so each page is an alternative provenance set, as in most
    FEVER claims), provenance ``title`` un-escaped, ``fever_page_id`` raw, ``relevance``; claims without
    qrels get no output (counted as ``claims_without_provenance``). Problems carry topics line numbers,
    or qrels line numbers prefixed ``qrels:`` in the message. Qrels for claims not in the topics are
    counted and noted.
    """
    topics_path, qrels_path = (
        require_file(topics_path, "FEVER topics file"),
        require_file(qrels_path, "qrels file"),
    )
    split = split or _split_from_name(_plain_name(topics_path))
    result = DatasetReadResult(
        path=topics_path, format="fever_qrels", dataset="fever", split=split, records=[]
    )
    qctx = _Context(qrels_path, strict, result.problems, result.counts)
    pages: dict[str, list[dict[str, Any]]] = {}
    with _open_text(qrels_path) as handle:
        for number, raw in enumerate(handle, start=1):
            parts = raw.split()
            if not parts:
                continue
            if len(parts) != 4 or not parts[3].lstrip("-").isdigit():
                qctx.problem(number, f"qrels: expected 'claim_id 0 page relevance', got {raw.strip()!r}")
                continue
            claim_id, _, page, relevance = parts
            result.counts["qrels"] += 1
            if int(relevance) <= 0:
                continue
            entries = pages.setdefault(claim_id, [])
            if any(e["fever_page_id"] == page for e in entries):
                continue
            entries.append({"title": fever_title(page), "fever_page_id": page, "relevance": int(relevance)})

    ctx = _Context(topics_path, strict, result.problems, result.counts)

    def generate() -> Iterator[DatasetRecord]:
        with _open_text(topics_path) as handle:
            for number, raw in enumerate(handle, start=1):
                line = raw.rstrip("\r\n")
                if not line.strip():
                    continue
                ctx.counts["lines"] += 1
                claim_id, tab, claim = line.partition("\t")
                if not tab or not claim_id.strip() or not claim.strip():
                    ctx.problem(number, f"expected 'id<TAB>claim', got {line[:80]!r}")
                    continue
                claim_id = claim_id.strip()
                provenance = pages.get(claim_id)
                if provenance:
                    ctx.counts["claims_with_provenance"] += 1
                else:
                    ctx.counts["claims_without_provenance"] += 1
                record = DatasetRecord(
                    id=claim_id,
                    input=claim,
                    output=[{"provenance": [entry]} for entry in provenance or []],
                    line=number,
                )
                yield ctx.emit(record)
        orphans = sorted(set(pages) - set(ctx.seen))
        if orphans:
            ctx.counts["qrels_claims_without_topic"] = len(orphans)
            ctx.note(0, f"{len(orphans)} qrels claims are not in {topics_path.name} (e.g. {orphans[0]})")

    generator = generate()
    result.records = generator if lazy else list(generator)
    return result


# ------------------------------------------------------------------------------------------- MKQA


def read_mkqa(path: str | Path, *, language: str | Iterable[str] = "en", **kwargs: Any) -> DatasetReadResult:
    """MKQA JSONL (``format="mkqa"``); ``language`` is a code, a list of codes, or ``"all"``."""
    return read_dataset(path, format="mkqa", language=language, **kwargs)


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


def _gen_mkqa(path: Path, ctx: _Context, language: str | Iterable[str]) -> Iterator[DatasetRecord]:
    wanted: list[str] | None = (
        None if language == "all" else ([language] if isinstance(language, str) else list(language))
    )
    for number, obj in _iter_json_lines(path, ctx):
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


# --------------------------------------------------------------------------------------- TriviaQA


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


def _read_evidence(path: Path, limit: int) -> tuple[str, bool] | None:
    if not path.is_file():
        return None
    with open(path, encoding="utf-8", errors="replace") as handle:
        text = handle.read(limit + 1)
    return text[:limit], len(text) > limit


def _triviaqa_provenance(
    entity_pages: list[dict[str, Any]], root: Path, evidence_chars: int, ctx: _Context
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


def _gen_triviaqa(
    path: Path, ctx: _Context, evidence_dir: str | Path | None, evidence_chars: int, result: DatasetReadResult
) -> Iterator[DatasetRecord]:
    document = _load_json_document(path)
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


# ---------------------------------------------------------------------------------------- HotpotQA


def read_hotpotqa(path: str | Path, **kwargs: Any) -> DatasetReadResult:
    """Original HotpotQA JSON (``format="hotpotqa"``): a list of questions, or JSONL of them.

    One output (answer) whose provenance has one entry per supporting fact: ``title``, ``sent_id`` and
    ``evidence_text`` = that sentence of the question's ``context`` (None, counted as
    ``supporting_facts_without_text`` and noted, when the title or sentence is not in the context).
    Record meta keeps ``type``, ``level`` and ``context_titles``. Test files without answers give no output.
    """
    return read_dataset(path, format="hotpotqa", **kwargs)


def _hotpot_items(path: Path, ctx: _Context) -> Iterator[tuple[int, Any]]:
    if ctx.unit == "line":
        yield from _iter_json_lines(path, ctx)
        return
    document = _load_json_document(path)
    if not isinstance(document, list):
        raise DatasetFormatError(f"{path}:1: not a HotpotQA file: expected a JSON list of questions")
    for number, item in enumerate(document, start=1):
        ctx.counts["items"] += 1
        yield number, item


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
            and _is_str_list(entry[1])
        ):
            return "field 'context' must be a list of [title, [sentence, ...]]"
        sentences.setdefault(entry[0], entry[1])
    return sentences


def _gen_hotpotqa(path: Path, ctx: _Context) -> Iterator[DatasetRecord]:
    for number, item in _hotpot_items(path, ctx):
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
