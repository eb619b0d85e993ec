"""A dump split into part files (as Wikimedia publishes large wikis) builds the same knowledge source."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from assets.params import KnowledgeSourceParams
from assets.storage import SnapshotPaths, list_snapshots, run_facts_file
from assets.wikipedia.dump import DumpFormatError
from assets.wikipedia.pages import build_knowledge_source
from support.dump_variants import read_xml, set_field, split_dump, write_dump, write_parts

SNAP = "enwiki-20160501"


def test_parts_build_equals_single_file_build(built_excerpt, tmp_path: Path, excerpt: Path) -> None:
    paths, single = built_excerpt
    parts = write_parts(tmp_path, read_xml(excerpt), SNAP, 3)
    data_dir = tmp_path / "data"
    report = build_knowledge_source(
        [str(parts[0]), *parts[1:]],
        data_dir,
        KnowledgeSourceParams(workers=2, rows_per_shard=40),
        progress=False,
    )
    built = SnapshotPaths(data_dir, report.snapshot_id)
    assert report.snapshot_id == SNAP  # from the first part's name
    assert (report.pages_read, report.articles, report.redirects, report.skipped) == (
        single.pages_read,
        single.articles,
        single.redirects,
        single.skipped,
    )
    assert report.dump_bytes == sum(p.stat().st_size for p in parts)
    assert report.dump_files == [str(p) for p in parts] and report.compression == "bz2 (3 parts)"
    assert report.input_bytes > single.input_bytes  # each part repeats the header and footer

    # each part was its own parse step with its own shards; in page order they hold the same rows
    shards = sorted(built.pages_dir.glob("*.parquet"))
    reference = sorted(paths.pages_dir.glob("*.parquet"))
    assert [p.name for p in shards] == [f"part-{i:05d}.parquet" for i in range(len(shards))]
    assert len(shards) >= len(parts) and len(reference) == 3  # 106 articles, 40 per shard
    assert pa.concat_tables(pq.read_table(p) for p in shards).equals(
        pa.concat_tables(pq.read_table(p) for p in reference)
    )
    assert not (data_dir / "snapshots" / ".parse").exists()  # the parts' scratch folder is gone
    assert pq.read_table(built.redirects_file).equals(pq.read_table(paths.redirects_file))

    manifest = json.loads(built.manifest_file.read_text())
    expected = json.loads(paths.manifest_file.read_text())
    assert manifest["dump_files"] == [p.name for p in parts] and len(expected["dump_files"]) == 1
    run_facts = json.loads(run_facts_file(built.manifest_file).read_text())
    assert run_facts["dump_paths"] == [str(p.resolve()) for p in parts] and "built_at" in run_facts
    for key in ("dump_files", "dump_bytes"):
        manifest.pop(key)
        expected.pop(key)
    assert manifest == expected


def named(path: Path) -> str:
    """A ``match=`` pattern for an error message that starts with ``path``."""
    return re.escape(str(path)) + ": "


def test_parts_of_different_wikis_or_dates_are_refused(tmp_path: Path, excerpt: Path) -> None:
    xml = read_xml(excerpt)
    parts = write_parts(tmp_path, xml, SNAP, 3)
    header, pages, footer = split_dump(read_xml(parts[2]))
    write_dump(parts[2], set_field(header, "dbname", "dewiki") + b"".join(pages) + footer, "bz2")
    data_dir = tmp_path / "data"
    with pytest.raises(DumpFormatError, match=named(parts[2]) + "<dbname> is 'dewiki' but the first part"):
        build_knowledge_source(parts, data_dir, KnowledgeSourceParams(workers=0), progress=False)

    (tmp_path / "later").mkdir()
    later = write_parts(tmp_path / "later", xml, "enwiki-20160601", 3)
    with pytest.raises(DumpFormatError, match=named(later[1]) + "dump date 20160601 .* from 20160501"):
        build_knowledge_source(
            [parts[0], later[1]], data_dir, KnowledgeSourceParams(workers=0), progress=False
        )
    with pytest.raises(ValueError, match=named(parts[0]) + "part file listed twice"):
        build_knowledge_source(
            [parts[0], parts[0]], data_dir, KnowledgeSourceParams(workers=0), progress=False
        )
    with pytest.raises(FileNotFoundError, match=r"absent\.bz2"):
        build_knowledge_source(
            [parts[0], tmp_path / "absent.bz2"], data_dir, KnowledgeSourceParams(workers=0), progress=False
        )
    assert list_snapshots(data_dir) == []
