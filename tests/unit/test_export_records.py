"""The Hugging Face export's record shape on real KILT records of every task (KILT's own dev files and
the first records of each of its Hugging Face splits): Arrow rows of ``RECORD_SCHEMA`` that give the same
KILT record back, and the licence chosen by the dump's date."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from assets.exports.huggingface import RECORD_SCHEMA, kilt_record, licence_of, record_row
from support.real_data import real_file, unpacked_data

KILT_FILES = [
    *sorted((unpacked_data() / "kilt" / "kilt_hf_dummy_first5").glob("*.jsonl")),
    real_file("kilt", "kilt_dev_full", "hotpotqa-dev-kilt.jsonl"),
    real_file("kilt", "kilt_dev_full", "wow-dev-kilt.jsonl"),
]


@pytest.mark.parametrize("path", KILT_FILES, ids=lambda p: p.name)
def test_every_real_kilt_record_round_trips_through_the_arrow_schema(path) -> None:
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert records
    table = pa.Table.from_pylist([record_row(r) for r in records], schema=RECORD_SCHEMA)
    assert [kilt_record(row) for row in table.to_pylist()] == records


def test_keys_beyond_the_columns_and_explicit_nulls_are_kept() -> None:
    """Variants of a real record: a provenance key no column holds, a column's key set to null, a non-string
    answer (FEVER-style labels are strings; KILT allows other values under meta)."""
    path = real_file("kilt", "kilt_dev_full", "hotpotqa-dev-kilt.jsonl")
    record = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    variant = json.loads(json.dumps(record))
    variant["output"][0]["provenance"][0]["evidence_text"] = "kept as JSON"
    variant["output"][0]["provenance"][0]["section"] = None
    variant["output"].append({"answer": 3, "meta": {"score": 1}})
    variant["meta"] = {"source": "derived in the test"}
    row = pa.Table.from_pylist([record_row(variant)], schema=RECORD_SCHEMA).to_pylist()[0]
    assert kilt_record(row) == variant
    assert row["output"][0]["provenance"][0]["section"] is None


@pytest.mark.parametrize(
    ("snapshot", "licence"),
    [("enwiki-20160501", "cc-by-sa-3.0"), ("enwiki-20230628", "cc-by-sa-3.0"),
     ("enwiki-20230629", "cc-by-sa-4.0"), ("enwiki-latest", "cc-by-sa-4.0"),
     ("kilt-20190801", "cc-by-sa-3.0")],
)  # fmt: skip
def test_the_licence_follows_the_dump_date(snapshot: str, licence: str) -> None:
    assert licence_of(snapshot) == licence


def test_an_unbuilt_or_damaged_snapshot_is_named_and_nothing_is_left(tmp_path) -> None:
    """Exports of a snapshot without its artifacts, or with a damaged Parquet file, fail naming the file,
    and leave no half-written export behind."""
    import shutil

    from assets.exports.beir import export_beir
    from assets.exports.huggingface import ExportError, export_huggingface
    from assets.storage import SnapshotPaths

    paths = SnapshotPaths(tmp_path / "data", "enwiki-20160501")
    with pytest.raises(ExportError, match=r"passages.* is missing"):
        export_huggingface(paths, tmp_path / "hf")
    with pytest.raises(ExportError, match=r"datasets\.duckdb is missing"):
        export_beir(paths, "nq", tmp_path / "beir")
    for directory in (paths.passages_parquet, paths.pages_dir):
        directory.mkdir(parents=True)
    real = real_file("kilt", "kilt_dev_full", "hotpotqa-dev-kilt.jsonl")
    damaged = paths.passages_parquet / "part-00000.parquet"
    damaged.write_bytes(real.read_bytes()[:4096])  # real bytes, but no Parquet file
    shutil.copyfile(damaged, paths.redirects_file)
    paths.manifest_file.write_text("{}")
    with pytest.raises(ExportError, match=r"part-00000\.parquet: cannot be read"):
        export_huggingface(paths, tmp_path / "hf")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]
