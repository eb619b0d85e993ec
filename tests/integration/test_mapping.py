"""Dataset remapping on the real excerpt: the embedded records, source-snapshot evidence, reports,
dataset tables, and snapshot-to-snapshot remapping onto a snapshot B derived in code."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from assets.datasets.outputs import build_datasets_db
from assets.datasets.pipeline import (
    DatasetSpec,
    embedded_specs,
    map_dataset,
    remap_snapshot,
)
from assets.datasets.queries import DatasetQueries
from assets.datasets.readers import DuplicateIdError
from assets.params import KnowledgeSourceParams, PassagesParams
from assets.provenance_store import ProvenanceStore, build_store
from assets.storage import SnapshotPaths
from assets.wikipedia.pages import build_knowledge_source
from assets.wikipedia.passages import build_passages
from support.dump_variants import page_with_title, read_xml, set_field, split_dump, write_dump
from support.real_data import real_file


@pytest.fixture(scope="module")
def mapped_a(built_store, tmp_path_factory: pytest.TempPathFactory):
    """The embedded records mapped onto the excerpt snapshot (A)."""
    paths, _ = built_store
    reports = tmp_path_factory.mktemp("reports")
    with ProvenanceStore(paths) as store:
        results = {spec.dataset: map_dataset(spec, store, reports) for spec in embedded_specs()}
    build_datasets_db(paths)
    return paths, results, reports


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_embedded_records(mapped_a) -> None:
    paths, results, reports = mapped_a
    hotpot = results["hotpotqa"].report
    assert (hotpot.records_in, hotpot.records_out) == (4, 3)
    assert hotpot.dropped["provenance_page_missing"] == 7  # their other pages are not in the excerpt
    assert hotpot.dropped["output_low_bleu"] == 1  # Angola: the answer string is not on the page
    records = {r["id"]: r for r in _lines(paths.datasets / "hotpotqa-dev-kilt.jsonl")}
    einstein = records["5a81f49c5542995ce29dcc9a"]["output"][0]["provenance"]
    assert [p["title"] for p in einstein] == ["Albert Einstein"]
    assert einstein[0]["bleu_score"] == 1.0 and einstein[0]["section"] == "Section::::Abstract."
    meta = records["5a81f49c5542995ce29dcc9a"]["meta"]["mapping"]
    assert meta["missing_pages"] == ["Cosmic catastrophe"] and meta["methods"] == {"answer:exact": 1}
    fever = results["fever"].report
    assert fever.records_in == fever.records_out == 19 and fever.evidence == {"page": 19}
    nq = results["nq_open"].report
    assert nq.records_in == nq.records_out == 3610 and nq.provenance_in == 0
    for name in ("hotpotqa-dev", "fever-dev", "nq_open-dev"):
        summary = json.loads((reports / paths.snapshot_id / "mapping" / f"{name}.json").read_text())
        assert summary["records_out"] <= summary["records_in"]
        assert (reports / paths.snapshot_id / "mapping" / f"{name}-bleu.png").read_bytes()[:4] == b"\x89PNG"
        assert "Dropped, by reason" in (reports / paths.snapshot_id / "mapping" / f"{name}.md").read_text()


def test_store_lookups(mapped_a) -> None:
    paths, _, _ = mapped_a
    with ProvenanceStore(paths) as store:
        records = DatasetQueries(store)
        found = records.provenance("5a81f49c5542995ce29dcc9a")
        assert found["dataset"] == "hotpotqa" and found["spans"][0]["text"] == "1921"
        assert found["spans"][0]["passages"] == [{"passage_id": "736-0", "covered_fraction": 1.0}]
        cites = records.cites("Aristotle")
        assert {r["dataset"] for r in cites["records"]} == {"fever"} and len(cites["records"]) == 12
        assert records.provenance("no-such-record") is None


def test_source_snapshot_evidence(mapped_a, tmp_path: Path) -> None:
    """Records with KILT coordinates into a source snapshot: the evidence is the source's span text."""
    paths, _, _ = mapped_a
    kilt_file = tmp_path / "hotpotqa-dev-kilt.jsonl"
    kilt_file.write_text((paths.datasets / "hotpotqa-dev-kilt.jsonl").read_text())
    with ProvenanceStore(paths) as store:
        before = {r["id"]: r for r in _lines(kilt_file)}
        result = map_dataset(
            DatasetSpec(str(kilt_file), "kilt", "hotpotqa", "dev"), store, tmp_path, source=store
        )
    assert result.report.evidence == {"source_snapshot": 3}
    after = {r["id"]: r for r in _lines(result.written.jsonl)}
    for record_id, record in after.items():
        old = before[record_id]["output"][0]["provenance"][0]
        new = record["output"][0]["provenance"][0]
        assert {k: new[k] for k in old if k != "meta"} == {k: old[k] for k in old if k != "meta"}


def test_bad_inputs(built_store, tmp_path: Path) -> None:
    paths, _ = built_store
    source = real_file("kilt", "kilt_hf_dummy_first5", "nq-dev-kilt.jsonl")
    lines = source.read_text().splitlines()
    duplicated = tmp_path / "nq-dev-kilt.jsonl"
    duplicated.write_text("\n".join([*lines, lines[0]]) + "\n")
    malformed = tmp_path / "trex-dev-kilt.jsonl"
    trex = real_file("kilt", "kilt_hf_dummy_first5", "trex-dev-kilt.jsonl").read_text().splitlines()
    malformed.write_text("\n".join([trex[0], trex[1][:40], *trex[2:]]) + "\n")
    with ProvenanceStore(paths) as store:
        with pytest.raises(DuplicateIdError, match="duplicate id"):
            map_dataset(DatasetSpec(str(duplicated)), store, tmp_path)
        mapped = map_dataset(DatasetSpec(str(malformed)), store, tmp_path)
        assert mapped.report.records_in == 4 and mapped.read_problems[0][0] == 2
        with pytest.raises(ValueError, match=r"trex-dev-kilt\.jsonl:2"):
            map_dataset(DatasetSpec(str(malformed)), store, tmp_path, strict=True)
        with pytest.raises(ValueError, match="supported formats"):
            map_dataset(DatasetSpec(str(source), format="squad"), store, tmp_path)


def _snapshot_b(excerpt: Path, tmp_path: Path) -> Path:
    """Snapshot B derived from the real excerpt: Ayn Rand edited (her lead paragraph repeated on
    top), Albert Einstein moved to a new title leaving a redirect, Aristotle deleted."""
    header, pages, footer = split_dump(read_xml(excerpt))
    rand = page_with_title(pages, "Ayn Rand")
    lead = re.search(rb"\n'''Ayn Rand'''[^\n]*\n", rand).group(0)
    edited = rand.replace(lead, lead + b"\n" + lead[1:], 1)  # a new paragraph: later ids shift by one
    einstein = page_with_title(pages, "Albert Einstein")
    moved = set_field(einstein, "title", "Albert Einstein (physicist)")
    redirect = page_with_title(pages, "AccessibleComputing")
    redirect = set_field(set_field(redirect, "title", "Albert Einstein"), "id", "90000010")
    redirect = redirect.replace(b'title="Computer accessibility"', b'title="Albert Einstein (physicist)"')
    redirect = redirect.replace(b"[[Computer accessibility]]", b"[[Albert Einstein (physicist)]]")
    aristotle = page_with_title(pages, "Aristotle")
    changed = {rand: edited, einstein: moved, aristotle: b""}
    body = b"".join(changed.get(page, page) for page in pages) + redirect
    return write_dump(tmp_path / "enwiki-b.xml", header + body + footer)


def test_snapshot_to_snapshot(mapped_a, excerpt: Path, tmp_path: Path) -> None:
    paths_a, _, _ = mapped_a
    dump_b = _snapshot_b(excerpt, tmp_path)
    build_knowledge_source(
        dump_b, paths_a.data_dir, KnowledgeSourceParams(snapshot="enwiki-b", workers=0), progress=False
    )
    paths_b = SnapshotPaths(paths_a.data_dir, "enwiki-b")
    build_passages(paths_b, PassagesParams(workers=0), progress=False)
    build_store(paths_b)
    with ProvenanceStore(paths_a) as a, ProvenanceStore(paths_b) as b:
        report = remap_snapshot(a, b, tmp_path / "reports")
    outcomes = report.outcomes
    assert outcomes["renamed"] == 1 and report.pages["renamed"] == ["Albert Einstein"]
    assert outcomes["deleted"] == 12 and set(report.pages["deleted"]) == {"Aristotle"}
    assert outcomes["edited"] == 2 and set(report.pages["edited"]) == {"Ayn Rand"}
    assert outcomes["unchanged"] == report.provenance - 15
    assert (tmp_path / "reports" / "enwiki-b" / "remap" / "from-enwiki-20160501.json").is_file()
    with ProvenanceStore(paths_b) as store_b:
        b = DatasetQueries(store_b)
        moved = b.provenance("5a81f49c5542995ce29dcc9a")
        assert (
            moved["spans"][0]["title"] == "Albert Einstein (physicist)"
            and moved["spans"][0]["text"] == "1921"
        )
        assert b.provenance("64721") is None  # its only page, Aristotle, is gone: dropped


def _tree(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in sorted(root.rglob("*"))}


def test_a_mapping_never_writes_into_its_source_snapshot(mapped_a, tmp_path: Path) -> None:
    """The source snapshot (published, maybe read by others) lacks its DuckDB store, as after a ``dvc
    pull``: the mapping fails naming ``kiltpipe restore-stores`` and writes nothing there; with its store,
    the mapping reads it while other readers look pages up in it, and leaves it as it was."""
    import shutil
    import threading

    from assets.datasets.pipeline import map_datasets
    from assets.params import DATASETS_STORE_MEMORY
    from assets.reading import mapping_stores
    from assets.storage import building

    paths, _, _ = mapped_a
    target_dir = shutil.copytree(paths.data_dir, tmp_path / "target", symlinks=True)
    source_dir = shutil.copytree(paths.data_dir, tmp_path / "source", symlinks=True)
    source = SnapshotPaths(source_dir, paths.snapshot_id)
    kilt_file = tmp_path / "hotpotqa-dev-kilt.jsonl"  # records with KILT coordinates: the source is read
    kilt_file.write_text((paths.datasets / "hotpotqa-dev-kilt.jsonl").read_text())
    spec = DatasetSpec(str(kilt_file), "kilt", "hotpotqa", "dev")
    source.provenance_store.unlink()
    before = _tree(source.root)
    with (
        pytest.raises(LookupError, match="kiltpipe restore-stores --snapshot enwiki-20160501"),
        building(target_dir, paths.snapshot_id) as session,
        mapping_stores(SnapshotPaths(target_dir, paths.snapshot_id, session.root), source) as (target, read),
    ):
        map_datasets([spec], target, tmp_path, source=read)
    assert _tree(source.root) == before and not source.provenance_store.exists()

    shutil.copy2(paths.provenance_store, source.provenance_store)
    before = _tree(source.root)
    stop, looked_up, errors = threading.Event(), [0], []

    def lookups() -> None:
        try:
            with ProvenanceStore(source, memory_limit=DATASETS_STORE_MEMORY) as store:  # as the mapping's
                while not stop.is_set():
                    assert store.page("Albert Einstein").record["wikipedia_id"] == "736"
                    looked_up[0] += 1
        except Exception as error:
            errors.append(repr(error))

    readers = [threading.Thread(target=lookups) for _ in range(2)]
    for reader in readers:
        reader.start()
    try:
        with (
            building(target_dir, paths.snapshot_id) as session,
            mapping_stores(SnapshotPaths(target_dir, paths.snapshot_id, session.root), source) as (
                target,
                read,
            ),
        ):
            (mapped,), _ = map_datasets([spec], target, tmp_path, source=read)
            session.materialized("remapped_datasets")
    finally:
        stop.set()
        for reader in readers:
            reader.join()
    assert errors == [] and looked_up[0] > 0
    assert mapped.report.evidence == {"source_snapshot": 3} and _tree(source.root) == before
