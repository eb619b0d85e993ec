"""The structured_passages asset: tables and infoboxes of the embedded excerpt as passages, built by
``kiltpipe build`` as ``make demo`` builds it; their offsets point into the dump's wikitext; the text
passages are untouched; ``passages.structured: false`` builds nothing; a page that cannot be read is a
counted, named skip."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from assets.params import KnowledgeSourceParams
from assets.storage import SnapshotPaths
from assets.wikipedia.dump import DumpReader
from assets.wikipedia.pages import build_knowledge_source
from assets.wikipedia.passages import (
    STRUCTURED_SCHEMA,
    build_structured_passages,
    structured_build,
    structured_passages,
)
from assets.wikipedia.wikitext import find_structures

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wikitext(excerpt: Path) -> dict[str, str]:
    return {str(p.page_id): p.text for p in DumpReader(excerpt) if p.ns == 0 and p.redirect_target is None}


def test_the_demo_build_has_them(demo_build, wikitext: dict[str, str]) -> None:
    paths = demo_build.paths
    assert "structured_passages" in demo_build.summary["assets"]
    report = json.loads((paths.structured_passages / "report.json").read_text())
    assert report["pages"] == 106 and report["failed_pages"] == report["missing_pages"] == 0
    assert report["tables"] == 88 and report["infoboxes"] == 53
    table = pq.read_table(paths.structured_parquet)
    assert table.schema == STRUCTURED_SCHEMA
    assert table.num_rows == sum(report["passages"].values()) == 391
    rows = table.to_pylist()
    assert {r["kind"] for r in rows} == {"table", "infobox"}
    assert len({r["passage_id"] for r in rows}) == len(rows)
    starts: dict[str, dict[int, str]] = {}  # per page: where each cell (value) begins -> its text
    for page in {row["wikipedia_id"] for row in rows}:
        structures = find_structures(wikitext[page])
        starts[page] = {c.start: c.text for t in structures.tables for r in t.rows for c in r}
        starts[page] |= {f.start: f.text for b in structures.infoboxes for f in b.fields}
    for row in rows:
        text = wikitext[row["wikipedia_id"]]
        assert 0 <= row["start_character"] < row["end_character"] <= len(text)
        assert row["word_count"] <= 100
        # start_character is where a cell (value) the passage reads begins: its text is in the passage
        first = set(re.findall(r"\w+", starts[row["wikipedia_id"]][row["start_character"]]))
        assert not first or first & set(re.findall(r"\w+", row["text"])), (row["passage_id"], first)
    lines = [
        json.loads(line)
        for part in sorted((paths.structured_passages / "collection").glob("*.jsonl"))
        for line in part.read_text().splitlines()
    ]
    assert [line["id"] for line in lines] == [r["passage_id"] for r in rows]
    assert lines[0]["contents"] == f"{rows[0]['title']}\n{rows[0]['text']}"


def test_the_text_passages_stay_what_they_are(demo_build) -> None:
    """The demo's kilt-style passages are byte-identical to the committed build (dvc.lock's hash is
    checked by `make repro-check`; here: the same passage ids and texts as data/ when it is built)."""
    committed = REPO / "data" / "snapshots" / demo_build.paths.snapshot_id / "passages" / "parquet"
    built = pq.read_table(demo_build.paths.passages_parquet, columns=["passage_id", "text"])
    assert not any("-t" in pid or "-i" in pid for pid in built.column("passage_id").to_pylist())
    if committed.is_dir():
        assert pq.read_table(committed, columns=["passage_id", "text"]).equals(built)


def test_structured_false_builds_nothing(demo_build, kiltpipe, tmp_path: Path, monkeypatch) -> None:
    data_dir = demo_build.copy(tmp_path / "data")
    settings = yaml.safe_load((REPO / "params.yaml").read_text())
    settings["passages"]["structured"] = False
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(settings))
    monkeypatch.setenv("KILT_PARAMS", str(tmp_path / "params.yaml"))
    paths = SnapshotPaths(data_dir, demo_build.paths.snapshot_id)
    before = sorted(p.name for p in paths.structured_passages.rglob("*"))
    code, printed, err = kiltpipe(
        "build", "--data-dir", data_dir, "--snapshot", paths.snapshot_id,
        "--select", "key:structured_passages", "--quiet",
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(printed)["assets"]["structured_passages"]["structured"] is False
    assert sorted(p.name for p in paths.structured_passages.rglob("*")) == before  # left as it was


def test_a_page_that_cannot_be_read_is_a_named_skip(excerpt: Path, tmp_path: Path, monkeypatch) -> None:
    report = build_knowledge_source(excerpt, tmp_path, KnowledgeSourceParams(workers=0), progress=False)
    paths = SnapshotPaths(tmp_path, report.snapshot_id)
    real = structured_build.find_structures

    def failing(text: str, limits=None):
        if "Yellowhammer" in text:  # Alabama's wikitext
            raise RecursionError("maximum recursion depth exceeded")
        return real(text, limits)

    monkeypatch.setattr(structured_build, "find_structures", failing)
    said: list[str] = []
    built = build_structured_passages(
        paths, paths.structured_passages, dump_files=[excerpt], progress=said.append
    )
    assert built.failed_pages == 1 and built.pages == 106
    error = "RecursionError('maximum recursion depth exceeded')"
    assert built.failures == [{"wikipedia_id": "303", "title": "Alabama", "error": error}]
    assert "1 pages skipped" in said[-1]
    ids = pq.read_table(paths.structured_parquet, columns=["wikipedia_id"]).column(0).to_pylist()
    assert "303" not in ids and len(set(ids)) == 59
    on_disk = json.loads((paths.structured_passages / "report.json").read_text())
    assert on_disk["failures"] == built.failures and "seconds" not in on_disk  # run facts apart


def test_missing_dump_names_the_snapshot_and_the_way_out(excerpt: Path, tmp_path: Path) -> None:
    report = build_knowledge_source(excerpt, tmp_path, KnowledgeSourceParams(workers=0), progress=False)
    paths = SnapshotPaths(tmp_path, report.snapshot_id)
    with pytest.raises(FileNotFoundError, match=r"no dump registered .*`kiltpipe build`"):
        build_structured_passages(paths, paths.structured_passages)
    assert not paths.structured_passages.exists()


def test_passages_of_one_page_are_deterministic(wikitext: dict[str, str]) -> None:
    first = structured_passages("303", "Alabama", find_structures(wikitext["303"]), 100)
    again = structured_passages("303", "Alabama", find_structures(wikitext["303"]), 100)
    assert first == again and len(first) > 10


def test_the_provenance_store_answers_for_them(demo_build, kiltpipe) -> None:
    from assets.provenance_store import STRUCTURED_PASSAGES, ProvenanceStore

    paths = demo_build.paths
    rows = pq.read_table(paths.structured_parquet).to_pylist()
    alabama = [r for r in rows if r["wikipedia_id"] == "303"]
    with ProvenanceStore(paths) as store:
        assert store.holds(STRUCTURED_PASSAGES)
        assert store.passage("303-t0.0") == next(r for r in rows if r["passage_id"] == "303-t0.0")
        assert store.passage("303-0")["start_paragraph_id"] == 1  # text passages as before
        listed = store.passages_of_page("303", STRUCTURED_PASSAGES)
        assert sorted(r["passage_id"] for r in listed) == sorted(r["passage_id"] for r in alabama)
        assert [r["start_character"] for r in listed] == sorted(r["start_character"] for r in listed)
        texts = store.passage_texts(["303-t0.0", "303-0", "303-x9"])
        assert set(texts) == {"303-t0.0", "303-0"} and texts["303-t0.0"][0] == "Alabama"
    code, printed, err = kiltpipe("tables", "Alabama", "--data-dir", demo_build.data_dir)
    assert code == 0, err
    assert [r["passage_id"] for r in json.loads(printed)] == [r["passage_id"] for r in listed]
    code, printed, err = kiltpipe("passage", "303-i0.0", "--data-dir", demo_build.data_dir)
    assert code == 0 and json.loads(printed)["kind"] == "infobox", err
