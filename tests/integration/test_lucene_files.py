"""Pinning Lucene segment info files: real ``.si`` files from the excerpt's BM25 index, varied in code."""

from __future__ import annotations

import shutil
import zlib
from pathlib import Path

import pytest

from assets.indexes.bm25 import (
    LuceneFileError,
    build_bm25_index,
    pin_segment_diagnostics,
    pin_segment_info,
    pinned_diagnostics,
    segment_id_seed,
)


@pytest.fixture(scope="module")
def segment_info(built_store, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``_0.si`` of a BM25 index of the excerpt's passages, as Lucene wrote it (before pinning)."""
    paths, _ = built_store
    index_dir = tmp_path_factory.mktemp("lucene") / "index"
    report = build_bm25_index(paths.passages_collection, index_dir, threads=1, heap="1g", progress=False)
    ((name, original),) = report.unpinned_diagnostics.items()
    si = index_dir / name
    # put back the values Lucene wrote (its maps stay sorted)
    pin_segment_info(si, original)
    return si


def _fresh(segment_info: Path, tmp_path: Path) -> Path:
    copy = tmp_path / segment_info.name
    shutil.copy(segment_info, copy)
    return copy


def test_pinning_is_idempotent_and_keeps_a_valid_footer(segment_info: Path, tmp_path: Path) -> None:
    si = _fresh(segment_info, tmp_path)
    original = pin_segment_info(si, {"timestamp": "0", "os.version": "unrecorded"})
    assert set(original) == {"timestamp", "os.version"} and original["timestamp"] != "0"
    once = si.read_bytes()
    assert zlib.crc32(once[:-8]) == int.from_bytes(once[-8:], "big")
    assert pin_segment_info(si, {"timestamp": "0", "os.version": "unrecorded"}) == {
        "timestamp": "0",
        "os.version": "unrecorded",
    }
    assert si.read_bytes() == once
    # a segment written at another time, once pinned, has the same bytes
    (tmp_path / "other").mkdir()
    other = _fresh(segment_info, tmp_path / "other")
    pin_segment_info(other, {"timestamp": str(int(original["timestamp"]) + 123_456)})
    assert other.read_bytes() != segment_info.read_bytes()
    pin_segment_info(other, {"timestamp": "0", "os.version": "unrecorded"})
    assert other.read_bytes() == once


def test_a_damaged_or_foreign_file_is_refused_untouched(segment_info: Path, tmp_path: Path) -> None:
    si = _fresh(segment_info, tmp_path)
    data = bytearray(si.read_bytes())
    data[60] ^= 0xFF  # one flipped byte: the CRC32 footer no longer matches
    si.write_bytes(bytes(data))
    with pytest.raises(LuceneFileError, match="CRC32"):
        pin_segment_info(si, {"timestamp": "0"})
    assert si.read_bytes() == bytes(data)
    foreign = bytearray(segment_info.read_bytes())
    foreign[5:24] = b"Lucene80SegmentInfo"  # another codec name of the same length, checksum renewed
    foreign[-8:] = zlib.crc32(bytes(foreign[:-8])).to_bytes(8, "big")
    si.write_bytes(bytes(foreign))
    with pytest.raises(LuceneFileError, match="Lucene80SegmentInfo"):
        pin_segment_info(si, {"timestamp": "0"})
    not_lucene = tmp_path / "not-lucene"
    not_lucene.mkdir()
    (not_lucene / "_9.si").write_bytes(b"not lucene")
    with pytest.raises(LuceneFileError, match="no Lucene codec footer"):
        pin_segment_diagnostics(not_lucene)


def test_pinned_values_and_seed() -> None:
    assert pinned_diagnostics({}) == {"timestamp": "0", "os.version": "unrecorded"}
    assert pinned_diagnostics({"SOURCE_DATE_EPOCH": "1462060800"})["timestamp"] == "1462060800000"
    with pytest.raises(ValueError, match="SOURCE_DATE_EPOCH"):
        pinned_diagnostics({"SOURCE_DATE_EPOCH": "2016-05-01"})


def test_segment_id_seed_follows_the_collection(tmp_path: Path) -> None:
    a, b = tmp_path / "part-00000.jsonl", tmp_path / "part-00001.jsonl"
    a.write_text("x\n")
    seed = segment_id_seed([a])
    assert len(seed) == 16 and int(seed, 16) >= 0 and seed == segment_id_seed([a])
    b.write_text("x\n")
    assert segment_id_seed([a, b]) == segment_id_seed([b, a]) != seed
    a.write_text("xy\n")
    assert segment_id_seed([a]) != seed
