"""The dataset-format registry: what a format module declares, and the one table of formats.

A format module builds one :class:`DatasetFormat` and passes it to :func:`register`; ``read_dataset``,
``detect_format``, the CLI's ``--format`` and ``datasets.files`` in params.yaml all go through this
registry, so adding a format is one new module (listed in ``formats/__init__.py``, or registered by the
user's own code before reading).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assets.datasets.records import DatasetReadResult, DatasetRecord, ReadContext

TRIVIAQA_EVIDENCE_CHARS = 2000
"""Default bound on the evidence text read from a TriviaQA evidence file (characters, from the start)."""


@dataclass(frozen=True)
class ReadOptions:
    """What a read asks for: the dataset and split (given, or from the file name) and the options some
    formats take (MKQA ``language``; TriviaQA ``evidence_dir``/``evidence_chars``; FEVER ``qrels_path``)."""

    dataset: str | None = None
    split: str | None = None
    strict: bool = False
    lazy: bool = False
    language: str | Iterable[str] = "en"
    evidence_dir: str | Path | None = None
    evidence_chars: int = TRIVIAQA_EVIDENCE_CHARS
    qrels_path: str | Path | None = None
    max_line_bytes: int | None = None
    """Bytes of one line (None: the built-in ``limits.input.max_line_bytes``; a door passes its params')."""


DEFAULT_READ = ReadOptions()
"""A read's options when it is given none."""


Reader = Callable[[Path, ReadContext, ReadOptions, DatasetReadResult], Iterator[DatasetRecord]]


@dataclass(frozen=True)
class DatasetFormat:
    """One dataset format.

    ``read`` yields the records of a file (reporting problems into the context). Detection, in
    ``priority`` order over all formats: ``match_name`` maps a file name (lower case, compression suffix
    removed) to ``(dataset, split)`` or None; failing every name, ``sniff`` is asked about the first JSON
    object of the file and ``sniff_text`` about the file's head and first line (for files that are not
    JSON lines). ``dataset_of`` names the dataset of a file detected by content; ``split_in_name`` says
    whether the split is read from the file name then. ``unit`` is what problem numbers count (``line``
    or ``item``) for a file. ``read_result`` replaces the generic read for formats that read more than one
    file (FEVER topics + qrels). ``alias_datasets``: aliases that also name the dataset (``paq``).
    """

    name: str
    description: str
    read: Reader | None = None
    aliases: tuple[str, ...] = ()
    alias_datasets: dict[str, str] = field(default_factory=dict)
    match_name: Callable[[str], tuple[str | None, str | None] | None] | None = None
    sniff: Callable[[dict[str, Any]], bool] | None = None
    sniff_text: Callable[[str, str], bool] | None = None
    dataset_of: Callable[[str], str | None] = lambda name: None
    split_in_name: bool = True
    unit: Callable[[Path], str] = lambda path: "line"
    read_result: Callable[[Path, ReadOptions], DatasetReadResult] | None = None
    priority: int = 100
    sniff_priority: int = 100


_FORMATS: dict[str, DatasetFormat] = {}


def register(dataset_format: DatasetFormat) -> DatasetFormat:
    """Add a format (its name and aliases must be new); returns it."""
    taken = {n for f in _FORMATS.values() for n in (f.name, *f.aliases)}
    clash = {dataset_format.name, *dataset_format.aliases} & taken
    if clash:
        raise ValueError(f"dataset format {dataset_format.name!r}: {sorted(clash)} already registered")
    if dataset_format.read is None and dataset_format.read_result is None:
        raise ValueError(f"dataset format {dataset_format.name!r} has neither read nor read_result")
    _FORMATS[dataset_format.name] = dataset_format
    return dataset_format


def unregister(name: str) -> None:
    """Remove a format (for code that registers one for a while, e.g. a test)."""
    _FORMATS.pop(name, None)


def formats() -> list[DatasetFormat]:
    """Every registered format, in detection order."""
    return sorted(_FORMATS.values(), key=lambda f: (f.priority, f.name))


def described() -> str:
    """``name (description); ...`` of every format, for error messages."""
    return "; ".join(f"{f.name} ({f.description})" for f in formats())


def get_format(name: str) -> DatasetFormat:
    """The format called ``name`` or one of its aliases (case-insensitive); ``ValueError`` listing the
    formats otherwise."""
    key = name.strip().lower()
    for dataset_format in _FORMATS.values():
        if key == dataset_format.name or key in dataset_format.aliases:
            return dataset_format
    raise ValueError(f"unknown dataset format {name!r}; supported formats: {described()}")
