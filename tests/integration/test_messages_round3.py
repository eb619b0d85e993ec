"""Issue 63, part 8: what the messages say when the input is wrong, derived in code from real files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assets.params import KnowledgeSourceParams
from assets.topics import read_topics
from assets.wikipedia.pages import ParseSettings, build_knowledge_source
from support.enterprise_dump import real_records, write_enterprise_dump
from support.real_data import real_file


def test_a_deeply_nested_topics_line_names_its_file_and_line(tmp_path: Path) -> None:
    """A real KILT record whose input is a 100,000-deep list: a ValueError naming the file and the line,
    not Python's RecursionError."""
    source = real_file("kilt", "kilt_hf_dummy_first5", "nq-dev-kilt.jsonl")
    lines = source.read_text(encoding="utf-8").splitlines()[:3]
    record = json.loads(lines[1])
    deep = "[" * 100_000 + "]" * 100_000
    lines[1] = json.dumps({**record, "input": "x"})[:-1] + f', "deep": {deep}}}'
    topics = tmp_path / "topics.jsonl"
    topics.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"{topics}:2: not a KILT record \(JSON nested too deeply\)"):
        read_topics(topics)


def test_an_empty_html_dump_says_it_holds_no_record(tmp_path: Path) -> None:
    dump = write_enterprise_dump(tmp_path / "enwiki-NS0-20240101-ENTERPRISE-HTML.json.tar.gz", [])
    with pytest.raises(ValueError, match="holds no article record") as refused:
        build_knowledge_source(dump, tmp_path / "data", ParseSettings(KnowledgeSourceParams(workers=0)))
    assert "<page>" not in str(refused.value)


def test_a_skipped_tar_entry_is_named_by_its_member(tmp_path: Path) -> None:
    """A directory entry inside the tar (derived: the real records' dump with one added) is a skip named
    ``member N``, not ``line ?``."""
    import io
    import tarfile

    dump = write_enterprise_dump(
        tmp_path / "enwiki-NS0-20240101-ENTERPRISE-HTML.json.tar.gz", real_records(), 1
    )
    with tarfile.open(dump) as archive:
        members = [(m, archive.extractfile(m).read()) for m in archive.getmembers()]
    with tarfile.open(dump, "w:gz") as archive:
        archive.addfile(_dir("folder"))
        for member, data in members:
            archive.addfile(member, io.BytesIO(data))
    report = build_knowledge_source(dump, tmp_path / "data", ParseSettings(KnowledgeSourceParams(workers=0)))
    examples = " ".join(report.skipped_examples)
    assert "member 1: not_a_file" in examples and "line ?" not in examples


def _dir(name: str):
    import tarfile

    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    return info


def test_a_lookup_on_a_snapshot_without_passages_names_the_build_that_makes_them(
    kiltpipe, tmp_path: Path, small_excerpt: Path
) -> None:
    """Eight real articles built as a knowledge source only: ``kiltpipe page`` names the passages it lacks
    and the build that makes them and the store; ``restore-stores`` (which can build nothing) says the
    same, exit 1 (it answered ``"built": []``, exit 0)."""
    data = tmp_path / "data"
    build_knowledge_source(small_excerpt, data, KnowledgeSourceParams(workers=0), progress=False)
    code, _, err = kiltpipe("page", "Anarchism", "--data-dir", data)
    assert code == 1 and "passages" in err and "--select +key:provenance_store" in err, err
    code, _, err = kiltpipe("restore-stores", "--data-dir", data)
    assert code == 1 and "passages" in err and "--select +key:provenance_store" in err, err
