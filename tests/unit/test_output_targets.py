"""Issue 63, part 5: no writer a user points somewhere writes into a snapshot's own data (one rule,
assets.storage.check_output_target): export-ks, export-hf, export-beir, search --output, answer --output,
--reports-dir."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from assets.exports.target import check_export_target
from assets.indexes.runs import write_trec_run
from assets.storage import ProtectedTargetError, check_output_target


def _snapshot(data: Path, snapshot_id: str = "enwiki-20160501", staging: bool = False) -> Path:
    root = data / "snapshots" / (".staging/" if staging else "") / snapshot_id
    (root / "knowledge_source" / "pages").mkdir(parents=True)
    (root / "knowledge_source" / "pages" / "part-00000.parquet").write_bytes(b"PAR1")
    (root / "exports").mkdir()
    return root


def test_a_path_in_a_snapshots_own_data_is_refused_naming_it(tmp_path: Path) -> None:
    root = _snapshot(tmp_path / "data")
    staging = _snapshot(tmp_path / "data", "jawiki-20220720", staging=True)
    for target in (
        root / "knowledge_source" / "pages" / "part-00000.parquet",
        root / "knowledge_source",
        root,
        root / "indexes" / "bm25" / "run.trec",  # not there yet: still the snapshot's
        staging / "passages" / "x.jsonl",
    ):
        with pytest.raises(ProtectedTargetError, match=re.escape(f"{target} is")):
            check_output_target(target, "export-ks")
    assert check_output_target(root / "exports" / "ks.jsonl", "export-ks") == root / "exports" / "ks.jsonl"
    assert (
        check_output_target(tmp_path / "elsewhere" / "ks.jsonl", "x") == tmp_path / "elsewhere" / "ks.jsonl"
    )
    # a folder named snapshots that holds no snapshot is not one
    assert check_output_target(tmp_path / "snapshots" / "mine" / "run.trec", "x")


def test_every_writer_goes_through_the_rule(tmp_path: Path) -> None:
    root = _snapshot(tmp_path / "data")
    parquet = root / "knowledge_source" / "pages" / "part-00000.parquet"
    with pytest.raises(ProtectedTargetError, match="search --output"):
        write_trec_run({}, parquet)
    for kind in ("huggingface", "beir"):
        with pytest.raises(ProtectedTargetError, match="export-"):
            check_export_target(root / "knowledge_source", kind)
    assert parquet.read_bytes() == b"PAR1"


def test_export_ks_into_a_published_parquet_is_refused_and_the_file_kept(kiltpipe, built_excerpt) -> None:
    paths, _ = built_excerpt
    target = sorted(paths.pages_dir.glob("*.parquet"))[0]
    before = target.read_bytes()
    code, _, err = kiltpipe("export-ks", "--data-dir", paths.data_dir, "--out", target, "--quiet")
    assert code == 2 and f"{target}" in err and "never writes there" in err
    assert target.read_bytes() == before
