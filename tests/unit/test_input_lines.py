"""One bounded line reader for every line-oriented input (issue 55): ``limits.input.max_line_bytes`` bounds a
line of a dataset file (a longer one is a counted skip named by line), of a topics file and of KILT JSONL
pages (an error naming the file and line), and a line far over the bound is never held in memory. The files
are real ones (NQ-open dev, KILT's HotpotQA dev), a line made long in code from their own text."""

from __future__ import annotations

import gzip
import json
import lzma
import tracemalloc
from pathlib import Path

import pytest

from assets.compressed import PIECE_BYTES, READ_AHEAD, text_lines
from assets.datasets.readers import ReadOptions, read_dataset
from assets.limits import Limits
from assets.params import load_params
from assets.topics import read_topics, split_dpr_line
from assets.wikipedia.pages.kilt_compare import read_kilt_pages
from support.real_data import real_file

NQ_OPEN = ("original", "nq_open", "NQ-open.dev.jsonl")
BOUND = 4096


def _with_long_line(tmp_path: Path, name: str, lines: list[str], at: int, size: int) -> Path:
    """The real ``lines`` with line ``at`` (0-based) made ``size`` bytes long from its own text: its question
    repeated (a line a hostile or broken file could hold), written gzip-compressed."""
    record = json.loads(lines[at])
    question = record["question"]
    record["question"] = (question + " ") * (size // (len(question) + 1) + 1)
    lines = [*lines[:at], json.dumps(record), *lines[at + 1 :]]
    path = tmp_path / name
    with gzip.open(path, "wt", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")
    return path


def test_a_dataset_line_over_the_bound_is_a_counted_skip(tmp_path: Path) -> None:
    lines = real_file(*NQ_OPEN).read_text(encoding="utf-8").splitlines()[:20]
    path = _with_long_line(tmp_path, "nq-open.dev.jsonl.gz", lines, 6, 3 * BOUND)
    result = read_dataset(path, ReadOptions(max_line_bytes=BOUND), format="nq_open")
    assert len(result.records) == 19 and result.counts["skipped"] == 1
    assert result.problems == [(7, f"a line over {BOUND:,} bytes (limits.input.max_line_bytes)")]
    plain = read_dataset(real_file(*NQ_OPEN), ReadOptions(max_line_bytes=BOUND), format="nq_open")
    assert [r.input for r in result.records] == [r.input for r in plain.records[:20] if r.line != 7]
    with pytest.raises(ValueError, match=r"nq-open.dev.jsonl.gz:7: a line over 4,096 bytes"):
        read_dataset(path, ReadOptions(max_line_bytes=BOUND, strict=True), format="nq_open")


def test_a_topics_line_over_the_bound_is_an_error_naming_it(tmp_path: Path) -> None:
    questions = [json.loads(line)["question"] for line in real_file(*NQ_OPEN).read_text().splitlines()[:5]]
    topics = tmp_path / "topics.tsv"
    topics.write_text("".join(f"q{n}\t{q}\n" for n, q in enumerate(questions)))
    assert [t.text for t in read_topics(topics, max_line_bytes=BOUND)] == questions
    topics.write_text(f"q0\t{questions[0]}\nq1\t{(questions[1] + ' ') * 400}\n")
    with pytest.raises(
        ValueError, match=r"topics.tsv:2: a line over 4,096 bytes \(limits.input.max_line_bytes\)"
    ):
        read_topics(topics, max_line_bytes=BOUND)


def test_kilt_pages_lines_are_bounded(tmp_path: Path) -> None:
    records = [
        json.loads(line)
        for line in real_file("kilt", "kilt_dev_full", "hotpotqa-dev-kilt.jsonl").read_text().splitlines()[:3]
    ]
    pages = tmp_path / "pages.jsonl"
    pages.write_text(
        "".join(
            json.dumps({"wikipedia_id": str(n), "text": [r["input"]]}) + "\n" for n, r in enumerate(records)
        )
    )
    assert [p["wikipedia_id"] for p in read_kilt_pages(pages, max_line_bytes=BOUND)] == ["0", "1", "2"]
    long_text = {"wikipedia_id": "9", "text": [records[0]["input"] * 100]}
    pages.write_text(pages.read_text() + json.dumps(long_text) + "\n")
    with pytest.raises(ValueError, match=r"pages.jsonl:4: a line over 4,096 bytes"):
        list(read_kilt_pages(pages, max_line_bytes=BOUND))


def test_a_line_far_over_the_bound_is_never_held(tmp_path: Path) -> None:
    """A 64 MB line (the real first line's question repeated) read with a 1 MB bound: skipped, the lines
    after it read, and the reader's peak allocation (a few bounds and the gzip decoder's read-ahead) far
    below the line."""
    lines = real_file(*NQ_OPEN).read_text(encoding="utf-8").splitlines()[:3]
    path = _with_long_line(tmp_path, "huge.jsonl.gz", lines, 0, 64 * 1024 * 1024)
    tracemalloc.start()
    try:
        read = list(text_lines(path, 1024 * 1024))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [line is None for _, line in read] == [True, False, False]
    held_ahead = READ_AHEAD * PIECE_BYTES  # the gzip thread's read-ahead, bounded on its own
    assert read[1][1] == lines[1] and peak < held_ahead + 12 * 1024 * 1024 < 64 * 1024 * 1024, peak


def test_the_bound_is_a_setting_and_dpr_lines_are_read_once() -> None:
    """The bound is params.yaml's; DPR's QA TSV lines (the embedded real NQ dev topics) split the same way
    for ``search --topics --topics-format dpr`` and for the QA-pair KB."""
    from assets.qa import embedded_qa_files, iter_qa_pairs
    from assets.topics import dpr_answers

    assert load_params().limits.input.max_line_bytes == Limits().input.max_line_bytes == 64 * 1024 * 1024
    with lzma.open(embedded_qa_files()[0], "rt", encoding="utf-8") as handle:
        lines = [next(handle).rstrip("\n") for _ in range(50)]
    pairs = list(iter_qa_pairs(embedded_qa_files()[0]))[:50]
    for line, pair in zip(lines, pairs, strict=True):
        question, field = split_dpr_line(line)
        assert " ".join(question.split()) == pair.question and list(dpr_answers(field)) == list(pair.answers)
    assert split_dpr_line(lines[0].replace("\t", " ")) is None
