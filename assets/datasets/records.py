"""The records every dataset reader yields, and what readers share: errors, the read context, text I/O.

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
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypedDict

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


def require_file(path: str | Path, what: str) -> Path:
    """``path`` when it is a file, else ``FileNotFoundError`` naming it (the CLI prints the file and what
    is wrong with it)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(errno.ENOENT, f"{what} not found", str(path))
    return path


class ReadContext:
    """Shared bookkeeping of one read, which a format's reader reports into: problems, counters,
    strictness, duplicate ids."""

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


def open_text(path: Path) -> IO[str]:
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


def plain_name(path: Path) -> str:
    name = path.name.lower()
    for suffix in _COMPRESSION:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def head_text(path: Path, chars: int = 65536) -> str:
    with open_text(path) as handle:
        return handle.read(chars)


def iter_json_lines(path: Path, ctx: ReadContext) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every parseable JSON-object line; bad lines go to ``ctx.problem``."""
    with open_text(path) as handle:
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


def load_json_document(path: Path) -> Any:
    with open_text(path) as handle:
        try:
            return json.load(handle)
        except json.JSONDecodeError as exc:
            raise DatasetFormatError(
                f"{path}:{exc.lineno}: not a valid JSON document: {exc.msg} (column {exc.colno})"
            ) from None


def split_from_name(name: str) -> str | None:
    match = _SPLIT_TOKEN.search(name)
    if not match:
        return None
    token = match.group(1)
    return "dev" if token in ("validation", "val") else token


def is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)
