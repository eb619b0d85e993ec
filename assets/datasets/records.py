"""The records every dataset reader yields, and what readers share: errors, the read context, text I/O.

Shapes
------
``DatasetRecord`` is a slotted dataclass (``id``, ``input``, ``output``, ``meta`` and the source position
``line``, which is not part of the KILT form); its outputs are :class:`Output` records and their provenance
:class:`Provenance` records, slotted dataclasses too. Each remembers the keys of the JSON object it came
from, in order (and keeps any key beyond KILT's in ``extra``), so KILT records round-trip unchanged:
``DatasetRecord.from_kilt(d).to_kilt() == d``, and a KILT file written back is the same bytes. Readers build
outputs in KILT's JSON shape and the record types them. Keys follow KILT:

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

import dataclasses
import errno
import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assets.compressed import open_text, text_lines
from assets.skips import SkipLog

_SPLIT_TOKEN = re.compile(r"(?:^|[^a-z])(train|dev|test|validation|val)(?:[^a-z]|$)")
_COMPRESSION = (".gz", ".bz2", ".xz")


class DatasetFormatError(ValueError):
    """A malformed dataset file or record; the message starts with ``<file>:<line>:``."""


class DuplicateIdError(DatasetFormatError):
    """The same record id twice in one file."""


_PROVENANCE_FIELDS = (
    "wikipedia_id",
    "title",
    "section",
    "start_paragraph_id",
    "start_character",
    "end_paragraph_id",
    "end_character",
    "bleu_score",
    "meta",
    "evidence_text",
)
_OUTPUT_FIELDS = ("answer", "provenance", "meta")


def _ordered(record: Any, names: tuple[str, ...]) -> dict[str, Any]:
    """The KILT JSON object of a typed entry: its keys in the order they were read or given."""
    return {key: getattr(record, key) if key in names else record.extra[key] for key in record.keys}


def _given_keys(record: Any, names: tuple[str, ...]) -> tuple[str, ...]:
    """The keys of an entry built without ``keys``: its fields that are set (not None), then ``extra``'s."""
    return (*(name for name in names if getattr(record, name) is not None), *record.extra)


def _fields_and_extra(data: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """The constructor arguments of a typed entry from its JSON object: the fields ``names``, every other
    key in ``extra``, and the keys' order."""
    known = {k: v for k, v in data.items() if k in names}
    return {**known, "extra": {k: v for k, v in data.items() if k not in names}, "keys": tuple(data)}


@dataclass(slots=True)
class Provenance:
    """One provenance entry: a page, and the span of it that supports an output.

    KILT's keys are fields; what a source adds beyond them (FEVER ``sentence_id``/``fever_page_id``,
    HotpotQA ``sent_id``, TriviaQA ``filename``, qrels ``relevance``...) is in ``extra``. ``keys`` is the
    order of the keys in the JSON object (a field left out of ``keys`` is absent, not null), so
    ``Provenance.from_kilt(d).to_kilt() == d`` key for key, and KILT files are written back byte for byte.
    """

    wikipedia_id: str | None = None
    title: str | None = None
    section: str | None = None
    start_paragraph_id: int | None = None
    start_character: int | None = None
    end_paragraph_id: int | None = None
    end_character: int | None = None
    bleu_score: float | None = None
    meta: dict[str, Any] | None = None
    evidence_text: str | None = None
    """The text that supports the output, where the source gives it (HotpotQA, TriviaQA); not a KILT key."""
    extra: dict[str, Any] = field(default_factory=dict)
    keys: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        self.keys = self.keys or _given_keys(self, _PROVENANCE_FIELDS)

    @classmethod
    def of(cls, **values: Any) -> Provenance:
        """An entry with these keys, in this order (KILT's as fields, any other in ``extra``)."""
        return cls.from_kilt(values)

    @classmethod
    def from_kilt(cls, data: dict[str, Any]) -> Provenance:
        return cls(**_fields_and_extra(data, _PROVENANCE_FIELDS))

    def to_kilt(self) -> dict[str, Any]:
        return _ordered(self, _PROVENANCE_FIELDS)

    @property
    def span(self) -> tuple[int, int, int, int] | None:
        """``(start_paragraph_id, start_character, end_paragraph_id, end_character)`` when all four are
        integers, else None (a page-level entry)."""
        values = (self.start_paragraph_id, self.start_character, self.end_paragraph_id, self.end_character)
        return values if all(isinstance(v, int) for v in values) else None


@dataclass(slots=True)
class Output:
    """One output of a record: an answer and/or the provenance that supports it (KILT's ``output`` entry).

    ``extra`` and ``keys`` as in :class:`Provenance`: ``Output.from_kilt(d).to_kilt() == d``."""

    answer: str | None = None
    provenance: list[Provenance] | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    keys: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        self.keys = self.keys or _given_keys(self, _OUTPUT_FIELDS)

    @classmethod
    def of(cls, **values: Any) -> Output:
        """An output with these keys, in this order (``provenance``: :class:`Provenance` entries)."""
        return cls.from_kilt(values)

    @classmethod
    def from_kilt(cls, data: dict[str, Any]) -> Output:
        values = _fields_and_extra(data, _OUTPUT_FIELDS)
        if isinstance(values.get("provenance"), list):
            values["provenance"] = [
                p if isinstance(p, Provenance) else Provenance.from_kilt(p) for p in values["provenance"]
            ]
        return cls(**values)

    def to_kilt(self) -> dict[str, Any]:
        data = _ordered(self, _OUTPUT_FIELDS)
        if isinstance(data.get("provenance"), list):
            data["provenance"] = [p.to_kilt() for p in data["provenance"]]
        return data

    def with_provenance(self, provenance: list[Provenance]) -> Output:
        """This output with ``provenance`` in place of its own (the key keeps its place, or comes last)."""
        keys = self.keys if "provenance" in self.keys else (*self.keys, "provenance")
        return dataclasses.replace(self, provenance=provenance, keys=keys)

    @property
    def entries(self) -> list[Provenance]:
        """The provenance entries (none when the output has no provenance)."""
        return self.provenance or []


@dataclass(slots=True)
class DatasetRecord:
    """One task example. ``line`` is its position in the source (not part of the KILT form)."""

    id: str
    input: str | None
    output: list[Output] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    line: int | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        # readers build outputs in KILT's JSON shape; the record holds them typed
        if any(not isinstance(o, Output) for o in self.output):
            self.output = [o if isinstance(o, Output) else Output.from_kilt(o) for o in self.output]

    def to_kilt(self) -> dict[str, Any]:
        """The KILT JSON form; ``input``/``output``/``meta`` are left out when None/empty, as in KILT."""
        record: dict[str, Any] = {"id": self.id}
        if self.input is not None:
            record["input"] = self.input
        if self.output:
            record["output"] = [o.to_kilt() for o in self.output]
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
        return [o.answer for o in self.output if isinstance(o.answer, str)]

    @property
    def provenance(self) -> list[Provenance]:
        """Every provenance entry of every output, flattened."""
        return [p for o in self.output for p in o.entries]

    @property
    def titles(self) -> list[str]:
        """Distinct provenance titles, first-seen order."""
        return list(dict.fromkeys(p.title for p in self.provenance if p.title))


@dataclass
class DatasetReadResult:
    """What a reader returns. Iterating the result iterates ``records``."""

    path: Path
    format: str
    dataset: str | None
    split: str | None
    records: list[DatasetRecord] | Iterator[DatasetRecord]
    skips: SkipLog = field(default_factory=SkipLog)
    """The reader's problems: lines skipped as malformed (``malformed``) and notes that skip nothing
    (``noted``), counted; the first :data:`~assets.skips.SKIPS_LISTED` kept as ``(line, message)``."""
    counts: Counter[str] = field(default_factory=Counter)

    def __iter__(self) -> Iterator[DatasetRecord]:
        return iter(self.records)

    @property
    def problems(self) -> list[tuple[int, str]]:
        """The first problems as ``(line, message)`` (all are counted: :attr:`n_problems`)."""
        return self.skips.named

    @property
    def n_problems(self) -> int:
        return self.skips.total

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

    def __init__(
        self,
        path: Path,
        strict: bool,
        skips: SkipLog,
        counts: Counter,
        unit: str = "line",
        *,
        max_line_bytes: int,
    ):
        self.path = path
        self.max_line_bytes = max_line_bytes
        """``limits.input.max_line_bytes``: a longer line is a problem (skipped, counted), never held."""
        self.strict = strict
        self.skips = skips
        self.counts = counts
        self.unit = unit
        self.seen: dict[str, int] = {}

    def problem(self, line: int, message: str) -> None:
        """A malformed line: raise when strict, else count it as skipped (the first few named)."""
        if self.strict:
            raise DatasetFormatError(f"{self.path}:{line}: {message}")
        self.skips.skip("malformed", (line, message))
        self.counts["skipped"] += 1

    def note(self, line: int, message: str) -> None:
        """Something worth reporting that does not skip the record (counted with the problems)."""
        self.skips.skip("noted", (line, message))

    def emit(self, record: DatasetRecord) -> DatasetRecord:
        first = self.seen.get(record.id)
        if first is not None:
            raise DuplicateIdError(
                f"{self.path}: duplicate id {record.id!r} at {self.unit}s {first} and {record.line}"
            )
        self.seen[record.id] = record.line or 0
        self.counts["records"] += 1
        self.counts["outputs"] += len(record.output)
        self.counts["provenance"] += sum(len(o.entries) for o in record.output)
        if not record.output:
            self.counts["records_without_output"] += 1
        return record


# ---------------------------------------------------------------------------------------------- I/O


def plain_name(path: Path) -> str:
    name = path.name.lower()
    for suffix in _COMPRESSION:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def head_text(path: Path, chars: int = 65536) -> str:
    with open_text(path) as handle:
        return handle.read(chars)


def iter_lines(path: Path, ctx: ReadContext) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of ``path`` within ``ctx.max_line_bytes`` (the one bounded line reader,
    :func:`~assets.compressed.text_lines`): a longer line is a problem (skipped and counted), never held."""
    for number, line in text_lines(path, ctx.max_line_bytes):
        if line is None:
            ctx.problem(number, f"a line over {ctx.max_line_bytes:,} bytes (limits.input.max_line_bytes)")
            continue
        yield number, line


def iter_json_lines(path: Path, ctx: ReadContext) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every parseable JSON-object line; bad lines go to ``ctx.problem``."""
    for number, raw in iter_lines(path, ctx):
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


def iter_json_items(path: Path, ctx: ReadContext, what: str) -> Iterator[tuple[int, Any]]:
    """``(number, item)`` of a file that is a JSON list (items numbered from 1, counted as ``items``) or,
    when the context reads lines, JSON lines; a document that is not a list is an error naming ``what``."""
    if ctx.unit == "line":
        yield from iter_json_lines(path, ctx)
        return
    document = load_json_document(path)
    if not isinstance(document, list):
        raise DatasetFormatError(f"{path}:1: not a {what} file: expected a JSON list of questions")
    for number, item in enumerate(document, start=1):
        ctx.counts["items"] += 1
        yield number, item


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
