"""Incremental rebuilds on the real excerpt: snapshot B (enwiki-20160601) derived in code from snapshot A
(the excerpt, enwiki-20160501) with ~10% of the articles edited, one removed and one added.

B's passages built with ``reuse_from=A`` must be byte-identical to a full build of B; B's embeddings
built with reuse must match a full encode (same ids in the same order, allclose vectors) and give the
same FAISS results. The embedding tests run the real encoder on a 16-article subset of the excerpt
(~300 passages); the bookkeeping tests (resume, refusals) use a deterministic hash encoder on all of it.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from assets.incremental import SortedRows, previous_snapshot
from assets.indexes.dense import (
    DenseSearcher,
    DenseSettings,
    Embeddings,
    ReuseSource,
    build_dense,
    build_faiss_index,
    encode_passages,
)
from assets.indexes.dense.encoders import load_encoder
from assets.indexes.evaluation import first_sentence, sample_passages
from assets.params import KnowledgeSourceParams, PassagesParams
from assets.snapshot_ids import split_snapshot_id
from assets.storage import SnapshotPaths
from assets.wikipedia.pages import build_knowledge_source
from assets.wikipedia.passages import build as passage_build
from assets.wikipedia.passages import build_passages
from support.dump_variants import (
    article_subset,
    field,
    is_article,
    later_snapshot,
    read_xml,
    split_dump,
    write_dump,
)
from tests.integration.test_dense import HashEncoder, Interrupt, interrupt_after
from tests.tiny_models import tiny_sentence_transformer

A_ID, B_ID = "enwiki-20160501", "enwiki-20160601"
VOLATILE_REPORT_KEYS = {
    "seconds",
    "passages_per_second",
    "reuse_source",
    "reuse_skipped",
    "reused_pages",
    "reused_passages",
    "reuse_ratio",
}


# ------------------------------------------------------------------------------------- helpers
def copy_knowledge_source(paths: SnapshotPaths, data_dir: Path) -> SnapshotPaths:
    """The snapshot's knowledge source copied into another data dir (passages are built there)."""
    target = SnapshotPaths(data_dir, paths.snapshot_id)
    shutil.copytree(paths.knowledge_source, target.knowledge_source)
    return target


def page_keys(paths: SnapshotPaths) -> set[tuple[str, str, str]]:
    table = pq.read_table(paths.pages_dir, columns=["wikipedia_id", "wikipedia_title", "text_sha1"])
    return set(zip(*(table.column(i).to_pylist() for i in range(3)), strict=True))


def passage_rows(paths: SnapshotPaths) -> list[tuple[str, str, str, str]]:
    """``(passage_id, wikipedia_id, title, text)`` of the snapshot's passages, in file order."""
    files = sorted(paths.passages_parquet.glob("*.parquet"))
    rows = []
    for path in files:
        table = pq.read_table(path, columns=["passage_id", "wikipedia_id", "title", "text"])
        rows.extend(zip(*(table.column(i).to_pylist() for i in range(4)), strict=True))
    return rows


def output_files(directory: Path) -> dict[str, bytes]:
    """Every file under ``directory`` but the report (which counts what was reused) and its run facts."""
    return {
        str(path.relative_to(directory)): path.read_bytes()
        for path in sorted(directory.rglob("*"))
        if path.is_file() and path.name not in ("report.json", "report.run.json")
    }


def build_pair(dump_a: Path, dump_b: Path, data_dir: Path) -> tuple[SnapshotPaths, SnapshotPaths]:
    for dump, snapshot_id in ((dump_a, A_ID), (dump_b, B_ID)):
        build_knowledge_source(
            dump,
            data_dir,
            KnowledgeSourceParams(snapshot=snapshot_id, workers=2, rows_per_shard=40),
            progress=False,
        )
    return SnapshotPaths(data_dir, A_ID), SnapshotPaths(data_dir, B_ID)


# ------------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def later(excerpt: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list[str]]]:
    """B's dump: one article in ten edited (a paragraph duplicated or dropped), one removed, one added."""
    xml, summary = later_snapshot(read_xml(excerpt))
    return write_dump(tmp_path_factory.mktemp("dumps") / f"{B_ID}-pages-articles.xml", xml), summary


@pytest.fixture(scope="module")
def pair(
    excerpt: Path, later, tmp_path_factory: pytest.TempPathFactory
) -> tuple[SnapshotPaths, SnapshotPaths]:
    """The knowledge sources of A (the excerpt) and B, 40 pages per shard (3 shards each)."""
    return build_pair(excerpt, later[0], tmp_path_factory.mktemp("pair"))


@pytest.fixture(scope="module")
def small_pair(
    excerpt: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[SnapshotPaths, SnapshotPaths]:
    """A: 16 mid-sized articles of the excerpt (~300 passages); B: 4 of them edited, one removed, one added.
    Passages (kilt, 100 words) are built for both, B's by reuse."""
    xml = read_xml(excerpt)
    _, pages, _ = split_dump(xml)
    chosen = [
        field(page, "title")
        for page in pages
        if is_article(page) and 6_000 <= len(re.search(rb"<text[^>]*>(.*?)</text>", page, re.S)[1]) <= 30_000
    ][:16]
    subset = article_subset(xml, chosen)
    changed, summary = later_snapshot(subset, every=4)
    assert len(summary["changed"]) == 4
    work = tmp_path_factory.mktemp("small")
    dump_a = write_dump(work / f"{A_ID}-small.xml", subset)
    dump_b = write_dump(work / f"{B_ID}-small.xml", changed)
    a, b = build_pair(dump_a, dump_b, work / "data")
    build_passages(a, PassagesParams(workers=0), progress=False)
    report = build_passages(b, PassagesParams(workers=0), progress=False, reuse_from=a)
    assert report.reuse_source == A_ID and report.reused_pages == 16 - 4 - 1
    return a, b


@pytest.fixture(scope="module")
def torch_encoder(tmp_path_factory: pytest.TempPathFactory):
    """The torch backend (batched fp32, the one whose vectors shift with their batch mates) on a small
    sentence-transformers checkpoint built in code (``tests/tiny_models.py``): what reuse must keep holds for
    any model, and ~650 passages encode in a second instead of 20."""
    model = tiny_sentence_transformer(tmp_path_factory.mktemp("encoder") / "tiny-st", prompts={})
    return load_encoder(str(model), "torch")


# ------------------------------------------------------------------------------------- snapshots
def test_derived_snapshot_changes_about_ten_percent(pair, later) -> None:
    a, b = pair
    _, summary = later
    keys_a, keys_b = page_keys(a), page_keys(b)
    assert len(keys_a) == 106 and len(keys_b) == 106
    assert 10 <= len(summary["changed"]) <= 12
    unchanged = keys_a & keys_b
    assert len(unchanged) == 106 - len(summary["changed"]) - 1
    titles_b = {title for _, title, _ in keys_b}
    assert set(summary["added"]) <= titles_b and not set(summary["removed"]) & titles_b


def test_previous_snapshot(pair, tmp_path: Path) -> None:
    a, b = copy_knowledge_source(pair[0], tmp_path), copy_knowledge_source(pair[1], tmp_path)
    assert previous_snapshot(tmp_path, B_ID) is None  # A has no passages yet
    build_passages(a, PassagesParams(workers=0), progress=False)
    assert previous_snapshot(tmp_path, B_ID) == a
    assert previous_snapshot(tmp_path, "enwiki-20991231") == a  # B has no passages: not a candidate
    build_passages(b, PassagesParams(workers=0), progress=False, reuse_from=a)
    assert previous_snapshot(tmp_path, "enwiki-20991231") == b  # the newest
    assert previous_snapshot(tmp_path, A_ID) is None  # nothing older
    assert previous_snapshot(tmp_path, "frwiki-20991231") is None  # another wiki
    assert previous_snapshot(tmp_path, "custom") is None  # no date
    assert split_snapshot_id(B_ID) == ("enwiki", "20160601")


def test_sorted_rows_hands_out_rows_below_each_limit() -> None:
    keys = [0, 0, 2, 3, 3, 3, 7, 9, 9, 12]
    table = pa.table({"row": keys, "value": list(range(len(keys)))})
    rows = SortedRows(table.to_batches(max_chunksize=3), "row")
    taken = [rows.before(limit) for limit in (1, 3, 3, 8, 100, 200)]
    assert [t["row"].to_pylist() if t is not None else None for t in taken] == [
        [0, 0], [2], None, [3, 3, 3, 7], [9, 9, 12], None,
    ]  # fmt: skip
    assert SortedRows(None, "row").before(10) is None


# ------------------------------------------------------------------------------------- knowledge source
KS_OUTPUTS_VOLATILE = (
    "report.json",
    "report.run.json",
    "manifest.json",
    "manifest.run.json",
)  # timings, build time, reuse counts
KS_COUNTS = ("articles", "redirects", "paragraphs", "anchors", "anchors_resolved", "redirects_resolved",
             "residual_markup_paragraphs", "pages_with_qid", "skipped")  # fmt: skip


def knowledge_source_outputs(paths: SnapshotPaths) -> dict[str, bytes]:
    return {
        name: content
        for name, content in output_files(paths.knowledge_source).items()
        if name not in KS_OUTPUTS_VOLATILE
    }


def test_incremental_knowledge_source_is_byte_identical(excerpt: Path, later, pair, tmp_path: Path) -> None:
    """B built with A's converted pages (the excerpt read in order, two workers) publishes A full build's
    bytes; the pages it copied are exactly the unchanged ones; a text style other than A's is refused."""
    build_knowledge_source(
        excerpt, tmp_path, KnowledgeSourceParams(snapshot=A_ID, workers=2, rows_per_shard=40), progress=False
    )
    report = build_knowledge_source(
        later[0],
        tmp_path,
        KnowledgeSourceParams(snapshot=B_ID, workers=2, rows_per_shard=40),
        progress=False,
        incremental=True,
    )
    b, b_full = SnapshotPaths(tmp_path, B_ID), pair[1]
    produced, expected = knowledge_source_outputs(b), knowledge_source_outputs(b_full)
    assert sorted(produced) == sorted(expected) and len(expected) == 4  # 3 page shards, the redirects
    for name, content in expected.items():
        assert produced[name] == content, f"{name} differs from the full build"
    full = json.loads(b_full.knowledge_source.joinpath("report.json").read_text())
    assert {k: getattr(report, k) for k in KS_COUNTS} == {k: full[k] for k in KS_COUNTS}
    unchanged = page_keys(pair[0]) & page_keys(b_full)
    assert report.reuse == A_ID and report.pages_reused == len(unchanged) == 94 and full["pages_reused"] == 0
    assert json.loads(b.manifest_file.read_text())["conversion"]["text_style"] == "kilt"


def test_knowledge_source_reuse_refused_when_rules_differ(excerpt: Path, later, tmp_path: Path) -> None:
    """Pages are copied only from a snapshot converted by the same rules that records them."""
    first = build_knowledge_source(
        excerpt, tmp_path, KnowledgeSourceParams(snapshot=A_ID, workers=0), progress=False, incremental=True
    )
    assert first.reuse is None and first.pages_reused == 0  # no earlier snapshot
    b = KnowledgeSourceParams(snapshot=B_ID, workers=0)
    options = {"progress": False, "incremental": True, "replace": True}
    refused = build_knowledge_source(
        later[0], tmp_path, b.model_copy(update={"text_style": "clean"}), **options
    )
    assert refused.pages_reused == 0
    assert refused.reuse == f"refused: snapshot {A_ID} was converted with other text_style"
    manifest = SnapshotPaths(tmp_path, A_ID).manifest_file
    recorded = json.loads(manifest.read_text())
    # a snapshot built before the forms were named once: its route "wikitext", its rules naming none
    older_names = {k: v for k, v in recorded["conversion"].items() if k != "route"}
    manifest.write_text(json.dumps({**recorded, "route": "wikitext", "conversion": older_names}))
    kept = build_knowledge_source(later[0], tmp_path, b, **options)
    assert kept.reuse == A_ID and kept.pages_reused > 0
    del recorded["conversion"]  # a snapshot built before the rules were recorded
    manifest.write_text(json.dumps(recorded))
    older = build_knowledge_source(later[0], tmp_path, b, **options)
    assert older.pages_reused == 0 and older.reuse is None


# ------------------------------------------------------------------------------------- passages
@pytest.mark.parametrize(
    ("mode", "max_words", "workers"), [("kilt", 100, 2), ("dpr", 100, 0), ("kilt", 40, 0)]
)
def test_incremental_passages_are_byte_identical(
    pair, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, max_words: int, workers: int
) -> None:
    if workers == 0:  # in-process: copied rows are streamed in many small batches
        monkeypatch.setattr(passage_build, "REUSE_READ_ROWS", 97)
    a = copy_knowledge_source(pair[0], tmp_path / "incremental")
    b = copy_knowledge_source(pair[1], tmp_path / "incremental")
    b_full = copy_knowledge_source(pair[1], tmp_path / "full")
    settings = PassagesParams(max_words=max_words, mode=mode, workers=workers)
    build_passages(a, settings, progress=False)
    incremental = build_passages(b, settings, progress=False, reuse_from=a)
    full = build_passages(b_full, settings, progress=False)

    produced, expected = output_files(b.passages), output_files(b_full.passages)
    assert sorted(produced) == sorted(expected)
    assert len(produced) == 3 * 2 + 1  # parquet + jsonl per shard, the TSV
    for name, content in expected.items():
        assert produced[name] == content, f"{name} differs from the full build"
    strip = lambda report: {k: v for k, v in report.to_dict().items() if k not in VOLATILE_REPORT_KEYS}  # noqa: E731
    assert strip(incremental) == strip(full)  # statistics counted on copied rows are exact
    assert json.loads(b.passages_report.read_text())["reused_pages"] == incremental.reused_pages

    unchanged = {wid for wid, _, _ in page_keys(a) & page_keys(b)}
    assert incremental.reuse_source == A_ID and incremental.reuse_skipped is None
    assert incremental.reused_pages == len(unchanged) == 94
    assert incremental.reused_passages == sum(1 for row in passage_rows(a) if row[1] in unchanged)
    assert incremental.reuse_ratio == pytest.approx(94 / 106)
    assert full.reused_pages == 0 and full.reuse_source is None


def test_reuse_refused_for_other_settings(pair, tmp_path: Path) -> None:
    a, b = copy_knowledge_source(pair[0], tmp_path), copy_knowledge_source(pair[1], tmp_path)
    build_passages(a, PassagesParams(max_words=100, workers=0), progress=False)
    report = build_passages(b, PassagesParams(max_words=50, workers=0), progress=False, reuse_from=a)
    assert report.reuse_source is None and report.reused_pages == 0
    assert "max_words=100" in report.reuse_skipped and A_ID in report.reuse_skipped
    report = build_passages(b, PassagesParams(mode="dpr", workers=0), progress=False, reuse_from=a)
    assert report.reuse_source is None and "mode='kilt'" in report.reuse_skipped
    missing = SnapshotPaths(tmp_path, "enwiki-20100101")
    report = build_passages(b, PassagesParams(workers=0), progress=False, reuse_from=missing)
    assert report.reused_pages == 0 and "no complete passages" in report.reuse_skipped


# ------------------------------------------------------------------------------------- embeddings
def test_reused_embeddings_match_a_full_encode(small_pair, tmp_path: Path, torch_encoder) -> None:
    a, b = small_pair
    b_full = copy_knowledge_source(b, tmp_path)
    build_passages(b_full, PassagesParams(workers=0), progress=False)
    settings = DenseSettings.from_params().replace(shard_size=100, factory="Flat", metric="ip")
    built_a = build_dense(a, settings, encoder=torch_encoder)
    full = build_dense(b_full, settings, encoder=torch_encoder)
    incremental = build_dense(b, settings, encoder=torch_encoder, reuse_from=a)

    rows_a, rows_b = passage_rows(a), passage_rows(b)
    same_in_a = {(pid, title, text) for pid, _, title, text in rows_a}
    expected_reused = sum(1 for pid, _, title, text in rows_b if (pid, title, text) in same_in_a)
    unchanged = {wid for wid, _, _ in page_keys(a) & page_keys(b)}
    unchanged_passages = sum(1 for row in rows_b if row[1] in unchanged)
    assert built_a.encode.reused_passages == 0
    assert incremental.encode.reused_passages == expected_reused
    # every passage of an unchanged page is reused, and so are the passages of an edited page before the edit
    assert unchanged_passages <= expected_reused < len(rows_b)
    assert incremental.encode.encoded_passages == len(rows_b) - expected_reused
    assert incremental.encode.passages == full.encode.passages == len(rows_b)
    assert incremental.encode.reuse_source == str(a.dense_embeddings)

    reused, fresh = Embeddings.open(b.dense_embeddings), Embeddings.open(b_full.dense_embeddings)
    assert reused.ids() == fresh.ids() == [row[0] for row in rows_b]
    assert np.allclose(reused.load(), fresh.load(), atol=1e-5)

    queries = [first_sentence(text) for _, text in sample_passages(b, 50, seed=3)]
    searchers = [DenseSearcher(p.dense_index, torch_encoder) for p in (b, b_full)]
    results = [searcher.batch_search(queries, 10) for searcher in searchers]
    identical = 0
    for query, got, want in zip(queries, *results, strict=True):
        # exactly tied passages (a duplicated paragraph's two copies) may come in either order
        assert {h.passage_id for h in got} == {h.passage_id for h in want}, query
        assert np.allclose([h.score for h in got], [h.score for h in want], atol=1e-5), query
        identical += [h.passage_id for h in got] == [h.passage_id for h in want]
    assert identical >= len(queries) - 2


def test_int8_incremental_embeddings_equal_a_full_encode(small_pair, tmp_path: Path, fast_encoder) -> None:
    """The CPU int8 encoder (onnx) runs each text alone, so B's vectors reused from A and B's vectors of
    a full build are the same bytes, and so are the Flat indexes built on them."""
    a, b = small_pair
    a_copy, full, incremental = (
        copy_knowledge_source(paths, tmp_path / name)
        for paths, name in ((a, "a"), (b, "full"), (b, "incremental"))
    )
    for paths in (a_copy, full, incremental):
        build_passages(paths, PassagesParams(workers=0), progress=False)
    settings = DenseSettings.from_params().replace(
        backend="onnx", shard_size=100, factory="Flat", metric="ip"
    )
    build_dense(a_copy, settings, encoder=fast_encoder)
    built_full = build_dense(full, settings, encoder=fast_encoder)
    built = build_dense(incremental, settings, encoder=fast_encoder, reuse_from=a_copy)
    assert built.encode.reused_passages > built.encode.encoded_passages > 0
    assert built_full.encode.encoded_passages == built.encode.passages
    reused, fresh = Embeddings.open(incremental.dense_embeddings), Embeddings.open(full.dense_embeddings)
    assert reused.ids() == fresh.ids()
    assert np.array_equal(reused.load(), fresh.load())
    for name in ("index", "docid"):  # the FAISS file and its row -> passage id list
        assert (incremental.dense_index / name).read_bytes() == (full.dense_index / name).read_bytes()


def test_reuse_resumes_after_a_crash(pair, tmp_path: Path) -> None:
    a, b = (
        copy_knowledge_source(pair[0], tmp_path / "data"),
        copy_knowledge_source(pair[1], tmp_path / "data"),
    )
    build_passages(a, PassagesParams(workers=0), progress=False)
    build_passages(b, PassagesParams(workers=0), progress=False, reuse_from=a)
    encoder = HashEncoder()
    encode_passages(a.passages_parquet, a.dense_embeddings, encoder, shard_size=1000, progress=False)
    clean = encode_passages(b.passages_parquet, tmp_path / "clean", encoder, shard_size=1000, progress=False)
    source = ReuseSource(a.passages_parquet, a.dense_embeddings)
    out = tmp_path / "resumed"
    with pytest.raises(Interrupt):
        encode_passages(
            b.passages_parquet, out, encoder, shard_size=1000, progress=False,
            on_shard=interrupt_after(3), reuse_from=source,
        )  # fmt: skip
    assert not list(out.glob(".tmp-*"))  # the join's scratch database is gone
    resumed = encode_passages(
        b.passages_parquet, out, encoder, shard_size=1000, progress=False, reuse_from=source
    )
    assert resumed.resumed_shards == 3
    assert resumed.reused_passages + resumed.encoded_passages == resumed.passages - 3000
    assert resumed.reused_passages > 0.8 * (resumed.passages - 3000)
    got, want = Embeddings.open(out), Embeddings.open(tmp_path / "clean")
    assert got.ids() == want.ids() and got.count == clean.passages
    assert np.array_equal(got.load(), want.load())  # a deterministic encoder: copied vectors are exact
    # FAISS over the resumed embeddings answers like the clean one
    build_faiss_index(out, tmp_path / "index-resumed")
    build_faiss_index(tmp_path / "clean", tmp_path / "index-clean")
    queries = np.ascontiguousarray(want.load()[::97])
    _, rows_got = DenseSearcher(tmp_path / "index-resumed").search_vectors(queries, 10)
    _, rows_want = DenseSearcher(tmp_path / "index-clean").search_vectors(queries, 10)
    assert np.array_equal(rows_got, rows_want)


def test_embeddings_reuse_refused_for_another_model(pair, tmp_path: Path) -> None:
    a, b = copy_knowledge_source(pair[0], tmp_path), copy_knowledge_source(pair[1], tmp_path)
    build_passages(a, PassagesParams(workers=0), progress=False)
    build_passages(b, PassagesParams(workers=0), progress=False, reuse_from=a)
    encode_passages(a.passages_parquet, a.dense_embeddings, HashEncoder(name="other"), progress=False)
    report = encode_passages(
        b.passages_parquet, tmp_path / "b", HashEncoder(), progress=False,
        reuse_from=ReuseSource(a.passages_parquet, a.dense_embeddings),
    )  # fmt: skip
    assert report.reused_passages == 0 and report.encoded_passages == report.passages
    assert "model: 'other' != 'hash'" in report.reuse_skipped
    missing = ReuseSource(a.passages_parquet, tmp_path / "nowhere")
    report = encode_passages(
        b.passages_parquet, tmp_path / "c", HashEncoder(), progress=False, reuse_from=missing
    )
    assert report.reused_passages == 0 and "no manifest.json" in report.reuse_skipped
    # A's passages rebuilt after A was encoded: its vectors no longer line up with them
    build_passages(a, PassagesParams(max_words=60, workers=0), progress=False)
    report = encode_passages(
        b.passages_parquet, tmp_path / "d", HashEncoder(name="other"), progress=False,
        reuse_from=ReuseSource(a.passages_parquet, a.dense_embeddings),
    )  # fmt: skip
    assert report.reused_passages == 0 and "was not encoded from the passages" in report.reuse_skipped
