"""QA-pair files read as a stream of :class:`QAPair`: what a RePAQ-style knowledge base stores.

Formats, told apart per line (a file may mix them):

- NQ-open style JSON lines ``{"question", "answer": [...]}``: NQ-open, EfficientQA, PAQ's ``PAQ.jsonl``;
- PAQ's metadata lines ``{"question", "answer": [...], "answers": [{"text", "passage_id", "start",
  "end", ...}], ...}``: each answer with the passage it was generated from and its character offsets there
  (``answers`` alone, without ``answer``, reads as the answers too);
- ``question<TAB>answers`` topics (DPR's and pyserini's ``topics.dpr.*``, TriviaQA, CuratedTREC,
  WebQuestions as DPR writes them): answers a JSON or Python list literal, else one answer.

gzip, bz2 and xz are read streaming by the project's one opener (:mod:`assets.compressed`: the codec by
magic bytes, a truncated or damaged stream an error naming the file). Every line is bounded
(``limits.qa``): a line over ``max_line_bytes`` is read on in bounded pieces and skipped; bytes that are
not UTF-8, a line that is neither format, a blank or over-long question, no answer: a counted skip named
by file and line (:class:`QAReadReport`), never an exception. Numbers as answers become text, a list of
lists is flattened once; both are counted. A file without one pair is an error naming it.

Pure module: no Dagster import.
"""

from __future__ import annotations

import csv
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assets.compressed import CompressedInputError, bounded_lines, open_compressed
from assets.datasets.formats import answer_field
from assets.limits import QALimits
from assets.params import DECODE_THREADS
from assets.skips import SkipCounts
from assets.topics import dpr_answers, split_dpr_line

__all__ = ["QAPair", "QAReadError", "QAReadReport", "SourcePassage", "iter_qa_pairs", "iter_source_passages"]

log = logging.getLogger(__name__)


class QAReadError(ValueError):
    """A QA-pair file that cannot be read at all (missing, empty, a broken compressed stream)."""


@dataclass(frozen=True, slots=True)
class SourcePassage:
    """Where PAQ's metadata says an answer was found: a passage id and the answer's character offsets in
    that passage's text."""

    answer: str
    passage_id: str
    start: int | None = None
    end: int | None = None


@dataclass(frozen=True, slots=True)
class QAPair:
    """One line's question with its answers (in the file's order) and, from PAQ metadata, their passages."""

    question: str
    answers: tuple[str, ...]
    file: str
    line: int
    passages: tuple[SourcePassage, ...] = ()


@dataclass(slots=True)
class QAReadReport(SkipCounts):
    """What reading QA-pair files met (files by name; the log names their paths)."""

    files: list[str] = field(default_factory=list)
    lines: int = 0
    pairs: int = 0
    fixed: dict[str, int] = field(default_factory=dict)
    """Lines read with a repair: ``number_answers`` (made text), ``nested_answers`` (flattened),
    ``long_answers`` / ``extra_answers`` (dropped)."""

    def skip(self, path: Path, line: int, reason: str, detail: str) -> None:
        self.count_skip("QA pair", path, ("line", line), reason, detail)

    def fix(self, what: str, count: int = 1) -> None:
        self.fixed[what] = self.fixed.get(what, 0) + count

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "lines": self.lines,
            "pairs": self.pairs,
            **self.skip_counts(),
            "fixed": dict(sorted(self.fixed.items())),
        }


def _bounded_lines(
    path: Path, threads: int, limits: QALimits, report: QAReadReport
) -> Iterator[tuple[int, bytes]]:
    """``(line number, line)`` of ``path`` opened by the one opener; a line over ``max_line_bytes`` is read
    on in bounded pieces and skipped, a stream that breaks off a :class:`QAReadError` naming the file."""
    number = 0
    try:
        with open_compressed(path, threads) as handle:
            for number, _, line in bounded_lines(handle, limits.max_line_bytes):
                if line is None:
                    report.skip(path, number, "line_too_long", f"a line over {limits.max_line_bytes:,} bytes")
                    continue
                yield number, line
    except CompressedInputError as error:
        raise QAReadError(f"{error} (read to line {number:,})") from None


def _text_answers(value: Any, report: QAReadReport) -> list[str] | None:
    """The answers of a field as strings: a string, a number, a list of them, a list of lists of them
    (flattened once); None when it is none of these."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        report.fix("number_answers")
        return [str(value)]
    if not isinstance(value, list):
        return None
    answers: list[str] = []
    for item in value:
        if isinstance(item, list):
            report.fix("nested_answers")
            inner = [a for a in item if isinstance(a, str | int | float) and not isinstance(a, bool)]
            if len(inner) != len(item):
                return None
            answers.extend(str(a) for a in inner)
        elif isinstance(item, dict):
            text = item.get("text")
            if not isinstance(text, str):
                return None
            answers.append(text)
        elif isinstance(item, str):
            answers.append(item)
        elif isinstance(item, int | float) and not isinstance(item, bool):
            report.fix("number_answers")
            answers.append(str(item))
        else:
            return None
    return answers


def _source_passages(value: Any) -> tuple[SourcePassage, ...]:
    """PAQ metadata's ``answers``: those that name a passage id."""
    if not isinstance(value, list):
        return ()
    found = []
    for item in value:
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            continue
        passage = item.get("passage_id")
        if not isinstance(passage, str | int) or isinstance(passage, bool):
            continue
        start, end = item.get("start"), item.get("end")
        offsets = isinstance(start, int) and isinstance(end, int) and 0 <= start <= end
        found.append(
            SourcePassage(item["text"], str(passage), start if offsets else None, end if offsets else None)
        )
    return tuple(found)


def _json_pair(obj: Any) -> tuple[Any, Any, tuple[SourcePassage, ...]] | str:
    if not isinstance(obj, dict):
        return f"a JSON {type(obj).__name__}, not an object"
    if "question" not in obj:
        return "no 'question' field"
    answers = answer_field(obj)  # where NQ-open and PAQ put their answers (the dataset format's own reading)
    if answers is None:
        return "no 'answer' field"
    return obj["question"], answers, _source_passages(obj.get("answers"))


def _tsv_pair(text: str) -> tuple[Any, Any, tuple[SourcePassage, ...]] | str:
    split = split_dpr_line(text)  # DPR's QA TSV, read as search --topics reads it
    if split is None:
        return "neither a JSON object nor question<TAB>answers"
    answers = dpr_answers(split[1])
    if answers is None:
        return "answers that are neither a JSON nor a Python list"
    return split[0], answers, ()


def iter_qa_pairs(
    path: Path,
    *,
    limits: QALimits | None = None,
    report: QAReadReport | None = None,
    threads: int = DECODE_THREADS,
) -> Iterator[QAPair]:
    """Every QA pair of ``path`` (any format above, compressed or not); what is not one is counted in
    ``report`` and skipped. A file that holds no pair at all is a :class:`QAReadError` naming it."""
    limits = limits or QALimits()
    report = report if report is not None else QAReadReport()
    path = Path(path)
    if not path.exists():
        raise QAReadError(f"{path.absolute()}: no such QA-pair file (qa.files in params.yaml)")
    if not path.is_file():
        raise QAReadError(
            f"{path.absolute()}: not a regular file (a folder, device or pipe); give a QA-pair file"
        )
    report.files.append(path.name)
    found, lines_before, skipped_before = 0, report.lines, dict(report.skipped_by_reason)
    for number, raw in _bounded_lines(path, threads, limits, report):
        try:
            text = raw.decode("utf-8-sig" if number == 1 else "utf-8").strip()
        except UnicodeDecodeError as error:
            report.skip(path, number, "not_utf8", str(error))
            continue
        if not text:
            continue
        report.lines += 1
        parsed: tuple[Any, Any, tuple[SourcePassage, ...]] | str
        if text.startswith("{"):
            try:
                parsed = _json_pair(json.loads(text))
            except (ValueError, RecursionError) as error:  # bad JSON, 5,000-digit numbers, deep nesting
                parsed = f"invalid JSON: {str(error)[:200] or type(error).__name__}"
        else:
            parsed = _tsv_pair(text)
        if isinstance(parsed, str):
            report.skip(path, number, "not_a_pair", parsed)
            continue
        pair = _checked(path, number, *parsed, limits, report)
        if pair is not None:
            found += 1
            report.pairs += 1
            yield pair
    if not found:
        lines = report.lines - lines_before
        skipped = {
            reason: count - skipped_before.get(reason, 0)
            for reason, count in report.skipped_by_reason.items()
            if count > skipped_before.get(reason, 0)
        }
        if not lines and not skipped:
            raise QAReadError(
                f"{path.absolute()}: holds no line (an empty QA-pair file; qa.files in params.yaml)"
            )
        why = ", ".join(f"{count:,} {reason}" for reason, count in sorted(skipped.items()))
        raise QAReadError(
            f"{path.absolute()}: holds no QA pair: {sum(skipped.values()):,} line(s) skipped ({why}); "
            f"limits.qa in params.yaml bounds a line ({limits.max_line_bytes:,} bytes), a question and its "
            "answers"
        )


def iter_source_passages(
    path: Path,
    wanted: set[str],
    *,
    limits: QALimits | None = None,
    report: QAReadReport | None = None,
    threads: int = DECODE_THREADS,
) -> Iterator[tuple[str, str, str]]:
    """``(id, title, text)`` of the rows of a DPR-format passage file (``id<TAB>text<TAB>title`` after a
    header line, fields quoted as CSV quotes them: ``psgs_w100.tsv``) whose id is in ``wanted``; every
    line is read within ``limits.qa.max_line_bytes``, and a line that is not such a row (over-long, not
    UTF-8, another number of fields) is counted in ``report`` and skipped, named by line."""
    limits = limits or QALimits()
    report = report if report is not None else QAReadReport()
    path = Path(path)
    for number, raw in _bounded_lines(path, threads, limits, report):
        if number == 1:
            continue  # the header
        head = raw.partition(b"\t")[0].decode("utf-8", "replace")
        if head not in wanted:
            continue  # only the named rows are decoded
        try:
            fields = next(csv.reader([raw.decode("utf-8").rstrip("\r\n")], delimiter="\t"))
        except (UnicodeDecodeError, csv.Error) as error:
            report.skip(path, number, "bad_passage_row", str(error))
            continue
        if len(fields) != 3:
            report.skip(path, number, "bad_passage_row", f"{len(fields)} fields, not id, text, title")
            continue
        yield fields[0], fields[2], fields[1]


def _checked(
    path: Path,
    number: int,
    question: Any,
    raw_answers: Any,
    passages: tuple[SourcePassage, ...],
    limits: QALimits,
    report: QAReadReport,
) -> QAPair | None:
    if not isinstance(question, str):
        report.skip(path, number, "bad_question", f"a question that is a {type(question).__name__}")
        return None
    question = " ".join(question.split())
    if not question:
        report.skip(path, number, "empty_question", "a blank question")
        return None
    words = question.count(" ") + 1
    if words > limits.max_question_words:
        report.skip(
            path,
            number,
            "long_question",
            f"{words:,} words (limits.qa.max_question_words: {limits.max_question_words})",
        )
        return None
    answers = _text_answers(raw_answers, report)
    if answers is None:
        report.skip(
            path, number, "bad_answers", f"answers that are {type(raw_answers).__name__}s of other things"
        )
        return None
    kept = []
    for answer in answers:
        answer = " ".join(answer.split())
        if len(answer) > limits.max_answer_chars:
            report.fix("long_answers")
        elif answer:
            kept.append(answer)
    kept = list(dict.fromkeys(kept))
    if len(kept) > limits.max_answers:
        report.fix("extra_answers")
        kept = kept[: limits.max_answers]
    if not kept:
        report.skip(path, number, "no_answer", "no answer left")
        return None
    return QAPair(question, tuple(kept), path.name, number, passages)
