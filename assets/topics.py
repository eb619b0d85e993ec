"""Topics files, the one reader of each: queries as ``kiltpipe search --topics`` reads them (TSV
``id<TAB>text``, KILT JSONL ``id``/``input``, DPR's QA TSV ``question<TAB>answers``), and DPR's line split
(:func:`split_dpr_line`, :func:`dpr_answers`), which the QA-pair KB's reader uses for the same files.

Every line is read by the one bounded line reader (:func:`~assets.compressed.text_lines`) within
``limits.input.max_line_bytes``; a longer one, or one of another shape, is an error naming the file and
line (a topics file is the user's own input, read whole before any search).
"""

from __future__ import annotations

import ast
import errno
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assets.compressed import strict_lines
from assets.limits import input_line_bytes

__all__ = ["TOPIC_FORMATS", "Topic", "dpr_answers", "read_topics", "split_dpr_line"]

TOPIC_FORMATS = ("tsv", "kilt", "dpr")
_TSV_HEADERS = {("id", "text"), ("qid", "query"), ("id", "query")}


@dataclass(frozen=True, slots=True)
class Topic:
    """One query of a topics file."""

    id: str
    text: str


def split_dpr_line(text: str) -> tuple[str, str] | None:
    """A DPR QA TSV line as ``(question, answers field)``, the field stripped and unquoted as a CSV field
    (DPR's TriviaQA topics quote it); None when the line has no tab."""
    question, tab, answers = text.partition("\t")
    if not tab:
        return None
    answers = answers.strip()
    if len(answers) > 1 and answers[0] == answers[-1] == '"':
        answers = answers[1:-1].replace('""', '"')
    return question, answers


def dpr_answers(field: str) -> Any:
    """The answers of a DPR answers field: a JSON or Python list literal, parsed, else the field as one
    answer; None when it opens a list that neither parses."""
    if not field.startswith("["):
        return field
    try:
        return json.loads(field)
    except (ValueError, RecursionError):
        try:
            return ast.literal_eval(field)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None


def read_topics(path: Path | str, fmt: str | None = None, max_line_bytes: int | None = None) -> list[Topic]:
    """Queries from a TSV (``id<TAB>text``), KILT JSONL (``id``, ``input``) or DPR QA TSV file.

    ``fmt`` is ``"tsv"``, ``"kilt"`` or ``"dpr"`` (``question<TAB>['answer', ...]``: ids are 0-based
    line numbers); by default ``.jsonl``/``.json`` mean KILT and anything else TSV. Ids must be unique.
    ``max_line_bytes``: a line's bound (default ``limits.input.max_line_bytes``).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(errno.ENOENT, "topics file not found", str(path))
    fmt = fmt or ("kilt" if path.name.endswith((".jsonl", ".json", ".jsonl.gz")) else "tsv")
    if fmt not in TOPIC_FORMATS:
        raise ValueError(f"unknown topics format {fmt!r} (tsv, kilt or dpr)")
    bound = input_line_bytes(max_line_bytes)
    topics: list[Topic] = []
    for number, line in strict_lines(path, bound):
        if not line.strip():
            continue
        topic = _topic(path, number, line, fmt)
        if topic is not None:
            topics.append(topic)
    seen: set[str] = set()
    for topic in topics:
        if topic.id in seen:
            raise ValueError(f"{path}: duplicate topic id {topic.id!r}")
        seen.add(topic.id)
    return topics


def _topic(path: Path, number: int, line: str, fmt: str) -> Topic | None:
    """One line's topic (None: a TSV header line); a line of another shape is a ValueError naming it."""
    if fmt == "kilt":
        try:
            record = json.loads(line)
            return Topic(str(record["id"]), str(record["input"]))
        except RecursionError:
            raise ValueError(f"{path}:{number}: not a KILT record (JSON nested too deeply)") from None
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(f"{path}:{number}: not a KILT record with id and input ({error})") from None
    if fmt == "dpr":
        split = split_dpr_line(line)
        if split is None:
            raise ValueError(f"{path}:{number}: expected question<TAB>answers")
        return Topic(str(number - 1), split[0].strip())
    qid, tab, text = line.partition("\t")
    if not tab or not qid.strip():
        raise ValueError(f"{path}:{number}: expected id<TAB>text")
    if number == 1 and (qid.strip().lower(), text.strip().lower()) in _TSV_HEADERS:
        return None
    return Topic(qid.strip(), text.strip())
