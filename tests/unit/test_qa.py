"""The QA-pair KB's reader, answer spans, factory budget and thresholds, on real QA files (DPR's NQ dev
topics, NQ-open dev) and variants derived from them in code: every format, compressed or not, and the
hostile lines a KB file can hold."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
from pathlib import Path

import pytest

from assets.indexes.dense.budget import budget_factory, factory_bytes
from assets.limits import QALimits
from assets.qa import (
    QAReadError,
    QAReadReport,
    check_threshold,
    embedded_qa_files,
    find_in_page,
    first_answer_in,
    iter_qa_pairs,
    iter_source_passages,
    question_f1,
)
from support.real_data import excerpt_dump, real_file


def _topics() -> list[str]:
    with lzma.open(embedded_qa_files()[0], "rt", encoding="utf-8") as handle:
        return handle.read().splitlines()


def _nq_open() -> list[dict]:
    with open(real_file("original", "nq_open", "NQ-open.dev.jsonl"), encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def test_dpr_topics_read_as_shipped_with_python_list_answers() -> None:
    report = QAReadReport()
    pairs = list(iter_qa_pairs(embedded_qa_files()[0], report=report))
    assert len(pairs) == 8757 and report.skipped == 0
    first = pairs[0]
    assert (first.question, first.answers) == ("who sings does he love me with reba", ("Linda Davis",))
    assert (first.file, first.line) == ("topics.dpr.nq.dev.txt.xz", 1)
    assert pairs[1].answers == ("581 ( second edition )",)


def test_dpr_triviaqa_topics_read_with_their_quoted_answer_lists() -> None:
    """DPR's TriviaQA topics quote an answer list holding a quote as a CSV field does (``"['Boxing',
    ""Gentleman's sport""]"``): read as the list, not as one long answer."""
    report = QAReadReport()
    pairs = list(
        iter_qa_pairs(real_file("original", "dpr_topics", "topics.dpr.trivia.dev.txt"), report=report)
    )
    assert len(pairs) == 8832 and report.skipped_by_reason == {"long_question": 5}
    boxing = pairs[2]
    assert boxing.question == "Ezzard Charles was a world champion in which sport?"
    assert "Boxing" in boxing.answers and "Gentleman's sport" in boxing.answers
    assert not any(a.startswith(("[", '"[')) for p in pairs for a in p.answers)


@pytest.mark.parametrize("opener", [open, gzip.open, bz2.open, lzma.open])
def test_nq_open_lines_in_every_compression(tmp_path, opener) -> None:
    records = _nq_open()[:200]
    path = tmp_path / "nq.jsonl"
    with opener(path, "wt", encoding="utf-8") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in records)
    pairs = list(iter_qa_pairs(path))
    assert [p.question for p in pairs] == [r["question"] for r in records]
    spaced = [[" ".join(a.split()) for a in r["answer"]] for r in records]  # whitespace runs made one space
    assert [list(p.answers) for p in pairs] == [list(dict.fromkeys(answers)) for answers in spaced]


def test_paq_metadata_lines_keep_their_passages(tmp_path) -> None:
    """PAQ's metadata shape, derived from real NQ-open lines: ``answers`` as dicts naming a passage and the
    answer's offsets there (here the line number and the answer's own length)."""
    records = _nq_open()[:50]
    path = tmp_path / "PAQ.metadata.jsonl"
    with open(path, "w", encoding="utf-8") as handle:
        for n, record in enumerate(records):
            answers = [
                {"text": a, "passage_id": str(n), "start": 3, "end": 3 + len(a)} for a in record["answer"]
            ]
            handle.write(
                json.dumps({"question": record["question"], "answers": answers, "subsets": ["L1"]}) + "\n"
            )
    pairs = list(iter_qa_pairs(path))
    assert len(pairs) == 50
    assert pairs[7].passages[0].passage_id == "7" and pairs[7].passages[0].answer == records[7]["answer"][0]
    assert pairs[7].passages[0].end - pairs[7].passages[0].start == len(records[7]["answer"][0])
    assert list(pairs[7].answers) == list(dict.fromkeys(records[7]["answer"]))


def test_hostile_lines_are_counted_skips_named_by_line(tmp_path) -> None:
    record = _nq_open()[0]
    question = record["question"]
    lines = [
        json.dumps(record),  # 1: fine
        json.dumps({"question": "   ", "answer": record["answer"]}),  # 2: blank question
        json.dumps({"question": " ".join([question] * 2000), "answer": record["answer"]}),  # 3: 10k+ words
        json.dumps({"question": question, "answer": [record["answer"], [1999, "x"]]}),  # 4: nested: flattened
        json.dumps({"question": question, "answer": 1999}),  # 5: a number: made text
        json.dumps({"question": question, "answer": [{"nested": {"deep": [1]}}]}),  # 6: not answers
        "{" + json.dumps(record)[1:-1],  # 7: broken JSON
        json.dumps({"question": question, "answer": [True]}),  # 8: a boolean
        json.dumps({"question": question}),  # 9: no answer field
    ]
    path = tmp_path / "hostile.jsonl"
    data = "\n".join(lines).encode() + b"\n"
    data += question.encode() + b"\xff\xfe\t['x']\n"  # 10: not UTF-8
    data += b'{"question": "' + b"a" * 300_000 + b'", "answer": ["x"]}\n'  # 11: over the line limit
    data += (
        b'{"question": "' + question.encode() + b'", "answer": ' + b"9" * 5000 + b"}\n"
    )  # 12: 5,000 digits
    data += question.encode() + b"\t" + b"[" * 50_000 + b"]" * 50_000 + b"\n"  # 13: a 50,000-deep list
    data += b'{"question": "' + question.encode() + b'", "answer": ' + b"[" * 50_000 + b"}\n"  # 14: deep JSON
    path.write_bytes(data)
    report = QAReadReport()
    pairs = list(iter_qa_pairs(path, limits=QALimits(max_line_bytes=200_000), report=report))
    assert [p.line for p in pairs] == [1, 4, 5]
    assert pairs[1].answers == (*record["answer"], "1999", "x") and pairs[2].answers == ("1999",)
    assert report.skipped_by_reason == {
        "bad_answers": 2,
        "empty_question": 1,
        "line_too_long": 1,
        "long_question": 1,
        "not_a_pair": 5,
        "not_utf8": 1,
    }
    assert report.fixed == {"nested_answers": 2, "number_answers": 1}  # line 4: two lists; line 5
    assert {(s["line"], s["reason"]) for s in report.skips} >= {(3, "long_question"), (10, "not_utf8")}
    assert {(s["line"], s["reason"]) for s in report.skips} >= {(n, "not_a_pair") for n in (12, 13, 14)}


def test_an_empty_or_missing_file_is_an_error_naming_it(tmp_path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    with pytest.raises(QAReadError, match=r"empty\.jsonl: holds no line"):
        list(iter_qa_pairs(empty))
    with pytest.raises(QAReadError, match="no such QA-pair file"):
        list(iter_qa_pairs(tmp_path / "missing.jsonl"))


def test_answers_are_found_as_themselves_on_real_paragraphs() -> None:
    from support.dump_variants import read_xml

    text = read_xml(excerpt_dump())
    text = text.decode("utf-8") if isinstance(text, bytes) else text
    start = text.index("Angola")
    paragraph = text[start : start + 3000]
    assert first_answer_in(paragraph, ["angolA"]) == "angolA"
    assert first_answer_in(paragraph, ["Angol"]) is None  # word boundaries
    span = find_in_page(["x", paragraph], "angola", (1, 0), (1, len(paragraph)))
    assert span is not None and (span.paragraph_id, span.start_character, span.text) == (1, 0, "Angola")
    assert find_in_page(["x", paragraph], "angola", (1, 1), (1, 20)) is None  # outside the passage


def test_the_factory_budget_picks_what_fits() -> None:
    assert budget_factory("Flat", 10**9, 384) == "Flat"  # not a budget: unchanged
    assert budget_factory("budget:500MB", 8757, 384) == "Flat"
    assert budget_factory("budget:500MB", 1_000_000, 384).endswith(",SQ8")
    paq = budget_factory("budget:500MB", 65_000_000, 384)
    assert paq == "PQ6" and factory_bytes(paq, 65_000_000, 384) <= 500_000_000
    with pytest.raises(ValueError, match="fit in no FAISS index"):
        budget_factory("budget:10MB", 65_000_000, 384)


def test_thresholds_and_question_overlap() -> None:
    assert check_threshold(None) is None and check_threshold(0.0) == 0.0 and check_threshold(1) == 1
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError, match="between 0 and 1"):
            check_threshold(bad)
    topic = _topics()[0].split("\t")[0]
    assert question_f1(topic, topic) == 1.0 and question_f1(topic, "") == 0.0
    assert 0 < question_f1(topic, topic.rsplit(" ", 1)[0]) < 1


@pytest.mark.parametrize("fraction", [0.05, 0.6, 0.999])
@pytest.mark.parametrize("codec", [gzip, bz2, lzma])
def test_a_truncated_compressed_file_is_an_error_naming_it(tmp_path, codec, fraction: float) -> None:
    """NQ-open's lines compressed by each codec and cut: an error naming the file, the offsets and the
    line reached, never a short success (a gzip cut at 60 % once gave 2,154 of 3,610 pairs with rc 0)."""
    whole = "".join(json.dumps(r) + "\n" for r in _nq_open()).encode()
    data = codec.compress(whole)
    cut = tmp_path / f"cut.jsonl.{codec.__name__}"
    cut.write_bytes(data[: int(len(data) * fraction)])
    with pytest.raises(
        QAReadError, match=rf"cut\.jsonl\.{codec.__name__}: the .* stream is truncated.*read to line"
    ):
        list(iter_qa_pairs(cut, threads=2))


def test_what_is_not_a_qa_pair_file_is_named_for_what_it_is(tmp_path) -> None:
    """/dev/zero is not "no such file"; a file whose one line is over the line limit is not "empty"."""
    with pytest.raises(QAReadError, match="/dev/zero: not a regular file"):
        list(iter_qa_pairs(Path("/dev/zero")))
    long_line = tmp_path / "one-line.tsv"
    question = _nq_open()[0]["question"]
    long_line.write_text(question + "\t" + "x" * 3_000_000 + "\n")
    with pytest.raises(QAReadError, match=r"holds no QA pair: 1 line\(s\) skipped \(1 line_too_long\)"):
        list(iter_qa_pairs(long_line))


def test_a_topics_file_is_read_a_chunk_at_a_time() -> None:
    """``kiltpipe answer --topics`` answers a file of any length a chunk at a time: 8,757 topics in 9."""
    from assets.limits import QALimits
    from assets.qa import topic_chunks

    chunks = list(topic_chunks(embedded_qa_files()[0], QALimits(), chunk=1000))
    assert [len(c) for c in chunks] == [1000] * 8 + [757]
    assert chunks[0][0] == ("topics-1", "who sings does he love me with reba", ["Linda Davis"])
    short = list(topic_chunks(embedded_qa_files()[0], QALimits(max_line_bytes=80), chunk=1000))
    assert 0 < sum(map(len, short)) < 8757  # the limits it is given, not the built-in ones


def test_a_dpr_passage_file_keeps_the_named_rows_and_counts_hostile_ones(tmp_path) -> None:
    """``qa.source_passages`` (DPR's ``psgs_w100.tsv`` format) derived from real NQ-open records, with an
    over-long row, a row that is not UTF-8 and a row of two fields, all named: only the named rows are
    kept, the hostile ones are counted by line, never read whole."""
    import csv

    records = _nq_open()[:60]
    rows = [(str(i), f'{r["question"]} "{r["answer"][0]}"', r["answer"][0]) for i, r in enumerate(records)]
    limits = QALimits(max_line_bytes=4096)
    path = tmp_path / "psgs.tsv"
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
        writer.writerow(["id", "text", "title"])
        writer.writerows(rows)
    with open(path, "ab") as handle:
        handle.write(b"1000\t" + (rows[0][1].encode() + b" ") * 400 + b"\tlong\n")  # line 62
        handle.write(b"1001\t" + rows[1][1].encode()[:10] + b"\xff\xfe" + b"\tbad\n")  # line 63
        handle.write(b"1002\t" + rows[2][1].replace('"', "").encode() + b"\n")  # line 64: two fields
    wanted = {str(i) for i in range(0, 60, 3)} | {"1000", "1001", "1002", "no-such-passage"}
    report = QAReadReport()
    kept = list(iter_source_passages(path, wanted, limits=limits, report=report))
    assert kept == [(i, title, text) for i, text, title in rows if i in wanted]
    assert report.skipped_by_reason == {"bad_passage_row": 2, "line_too_long": 1}
    assert [(s["line"], s["reason"]) for s in report.skips] == [
        (62, "line_too_long"),
        (63, "bad_passage_row"),
        (64, "bad_passage_row"),
    ]
