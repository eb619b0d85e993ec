"""The dataset-format registry: a new format is one module's worth of code, registered once, and then
detected by name and by content, read by ``read_dataset`` and named in errors like the built-in ones.

The toy format here ("qa_tsv": ``question<TAB>answer|answer``) is written in the test from the real
NQ-open dev file, and must read back to the same questions and answers as the original."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from assets.compressed import open_text
from assets.datasets.formats import DatasetFormat, ReadOptions, formats, get_format, register, unregister
from assets.datasets.readers import detect_format, read_dataset
from assets.datasets.records import DatasetReadResult, DatasetRecord, ReadContext, split_from_name
from support.real_data import real_file


def _read_qa_tsv(
    path: Path, ctx: ReadContext, options: ReadOptions, result: DatasetReadResult
) -> Iterator[DatasetRecord]:
    with open_text(path) as handle:
        for number, raw in enumerate(handle, start=1):
            question, tab, answers = raw.rstrip("\n").partition("\t")
            if not tab or not answers:
                ctx.problem(number, "expected 'question<TAB>answer|answer'")
                continue
            record = DatasetRecord(
                id=f"{options.dataset}-{number}",
                input=question,
                output=[{"answer": a} for a in answers.split("|")],
                line=number,
            )
            yield ctx.emit(record)


QA_TSV = DatasetFormat(
    name="qa_tsv",
    description="question<TAB>answer|answer",
    read=_read_qa_tsv,
    aliases=("qa-tsv",),
    match_name=lambda name: ("qa", split_from_name(name)) if name.endswith(".qa.tsv") else None,
    sniff_text=lambda head, first_line: first_line.count("\t") == 1 and "|" in head,
    dataset_of=lambda name: "qa",
)


@pytest.fixture
def qa_tsv():
    register(QA_TSV)
    yield QA_TSV
    unregister(QA_TSV.name)


@pytest.fixture(scope="module")
def nq_open_dev() -> list[DatasetRecord]:
    return read_dataset(real_file("original", "nq_open", "NQ-open.dev.jsonl")).records[:300]


def _write_tsv(records: list[DatasetRecord], path: Path) -> Path:
    lines = [f"{r.input}\t{'|'.join(r.answers)}" for r in records if "|" not in "".join(r.answers)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_registered_format_is_detected_and_read(qa_tsv, nq_open_dev, tmp_path: Path) -> None:
    named = _write_tsv(nq_open_dev, tmp_path / "nq-dev.qa.tsv")
    assert detect_format(named) == ("qa_tsv", "qa", "dev")
    unnamed = _write_tsv(nq_open_dev, tmp_path / "questions.txt")
    assert detect_format(unnamed)[0] == "qa_tsv"  # by content
    result = read_dataset(named)
    expected = [(r.input, r.answers) for r in nq_open_dev if "|" not in "".join(r.answers)]
    assert [(r.input, r.answers) for r in result.records] == expected and len(expected) > 250
    assert read_dataset(unnamed, format="QA-TSV").format == "qa_tsv"  # aliases, any case
    assert "qa_tsv" in [f.name for f in formats()] and get_format("qa-tsv") is qa_tsv


def test_unregistered_it_is_unknown_and_names_clash(qa_tsv, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="already registered"):
        register(DatasetFormat(name="other", description="x", read=_read_qa_tsv, aliases=("qa_tsv",)))
    unregister(qa_tsv.name)
    with pytest.raises(ValueError, match="unknown dataset format 'qa_tsv'; supported formats: kilt"):
        get_format("qa_tsv")
    register(qa_tsv)  # the fixture unregisters it again


def test_built_in_formats_are_one_module_each() -> None:
    from assets.datasets import formats as package

    names = {module.FORMAT.name for module in package.BUILT_IN}
    assert names == {"kilt", "nq_open", "fever", "fever_qrels", "mkqa", "triviaqa", "hotpotqa", "mintaka"}
    assert all(module.__name__.rsplit(".", 1)[1] == module.FORMAT.name for module in package.BUILT_IN)
