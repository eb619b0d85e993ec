"""Naming a dump's snapshot (the partition key) before it is built, on copies of the real excerpt."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from assets.wikipedia.dump import snapshot_id_of_dump
from support.dump_variants import read_xml, write_parts


def test_embedded_excerpt_is_its_known_snapshot(excerpt: Path) -> None:
    assert snapshot_id_of_dump([excerpt]) == "enwiki-20160501"


def test_date_from_the_name_and_dbname_from_siteinfo(tmp_path: Path, excerpt: Path) -> None:
    dated = shutil.copy(excerpt, tmp_path / "enwiki-20240601-pages-articles.xml.bz2")
    assert snapshot_id_of_dump([Path(dated)]) == "enwiki-20240601"
    (tmp_path / "parts").mkdir()
    parts = write_parts(tmp_path / "parts", read_xml(excerpt), "enwiki-20240701")
    assert snapshot_id_of_dump(parts) == "enwiki-20240701"


def test_undated_name_reads_the_newest_revision(tmp_path: Path, excerpt: Path) -> None:
    undated = Path(shutil.copy(excerpt, tmp_path / "my-wiki-copy.xml.bz2"))
    assert snapshot_id_of_dump([undated]) == "enwiki-20160501"  # newest revision in the excerpt


def test_truncated_or_missing_dump_is_a_clear_error(tmp_path: Path, excerpt: Path) -> None:
    truncated = tmp_path / "half.xml.bz2"
    truncated.write_bytes(excerpt.read_bytes()[:400_000])
    with pytest.raises(ValueError, match=r"half\.xml\.bz2: the bz2 stream is truncated"):
        snapshot_id_of_dump([truncated])
    with pytest.raises(FileNotFoundError, match="dump not found"):
        snapshot_id_of_dump([tmp_path / "nope.xml"])


def test_the_snapshot_a_dump_file_name_starts_with() -> None:
    from assets.snapshot_ids import snapshot_of_dump_name

    assert snapshot_of_dump_name("enwiki-20260201-pages-articles-multistream.xml.bz2") == "enwiki-20260201"
    assert snapshot_of_dump_name("dewiki-20240601-page_props.sql.gz") == "dewiki-20240601"
    assert snapshot_of_dump_name("enwiki-latest-pages-articles1.xml-p000000010p000030302.bz2") is None
    assert snapshot_of_dump_name("pages-enwiki-20260201.xml") is None  # the id must lead the name
