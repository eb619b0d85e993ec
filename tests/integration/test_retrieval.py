"""A snapshot's indices end to end on the real excerpt (the session's ``make demo`` build): searched through
one Retriever (bm25, dense, hybrid), gated by the checks' measurements, evaluated with KILT's metrics on
the embedded real dataset records mapped onto the same snapshot."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from assets.indexes.bm25 import build_bm25
from assets.indexes.dense import DenseSearcher, Embeddings, build_faiss_index
from assets.indexes.evaluation import (
    approximate_recall,
    eval_queries,
    evaluate_indexes,
    exact_top_k,
    first_sentence,
    passage_count,
    recall_against_exact,
    sample_passages,
    self_retrieval,
)
from assets.indexes.hybrid import reciprocal_rank_fusion
from assets.indexes.retriever import Retriever, passage_rows
from assets.indexes.settings import IndexSettings
from assets.params import EvaluationParams
from assets.storage import SnapshotPaths, split_run_facts

QUERIES = [
    "Who developed the general theory of relativity?",
    "What is the capital city of Albania?",
    "fraction of sunlight reflected by a surface",
    "Greek hero of the Trojan War killed by an arrow in the heel",
]


@pytest.fixture(scope="module")
def indexed(demo_build):
    """Both indices of the excerpt and the embedded real dataset records mapped onto it: the session's
    ``make demo`` build (read-only), with the settings it was built with and its summary."""
    return demo_build.paths, IndexSettings.from_params(), demo_build.summary


@pytest.fixture(scope="module")
def retriever(indexed):
    paths, settings, _ = indexed
    with Retriever(paths, settings) as opened:
        yield opened


def test_indices_hold_every_passage_once(indexed, retriever: Retriever) -> None:
    paths, _, summary = indexed
    passages = passage_count(paths)
    assert passages > 6000
    bm25, dense = summary["assets"]["bm25_index"], summary["assets"]["dense_index"]
    assert bm25["documents"] == retriever.bm25.num_docs == passages
    assert bm25["language"] == "en"  # from the dump's siteinfo
    assert dense["encoded_passages"] == dense["vectors"] == retriever.dense.count == passages
    docids = (paths.dense_index / "docid").read_text().splitlines()
    assert len(set(docids)) == passages


def test_bm25_analyzer_follows_the_dump_language(indexed, tmp_path: Path) -> None:
    """A copy of the snapshot whose siteinfo says German gets Anserini's German analyzer; a language
    Anserini has no analyzer for falls back to English with a warning."""
    paths, settings, _ = indexed
    for language, expected in (("de", "de"), ("la", "en")):
        copy = SnapshotPaths(tmp_path / language, paths.snapshot_id)
        copy.knowledge_source.mkdir(parents=True)
        manifest = json.loads(paths.manifest_file.read_text())
        copy.manifest_file.write_text(json.dumps({**manifest, "language": language}))
        shutil.copytree(paths.passages_collection, copy.passages_collection)
        report = build_bm25(copy, settings.bm25)
        assert report.requested_language == language and report.language == expected
        assert bool(report.warnings) == (language != expected)


def test_search_returns_pages_with_text(retriever: Retriever) -> None:
    expected_titles = ["Albert Einstein", "Albania", "Albedo", "Achilles"]
    for index in ("bm25", "dense", "hybrid"):
        for query, title in zip(QUERIES, expected_titles, strict=True):
            hits = retriever.search(index, query, 10)
            assert len(hits) == 10, (index, query)
            assert hits[0].title == title, (index, query, hits[0])
            assert all(h.text and h.wikipedia_id == h.passage_id.rpartition("-")[0] for h in hits)
            assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_batch_equals_single_searches(retriever: Retriever) -> None:
    for index in ("bm25", "dense", "hybrid"):
        batch = retriever.batch_search(index, [*QUERIES, "   "], 20)
        assert batch[-1] == []
        for query, hits in zip(QUERIES, batch, strict=False):
            single = retriever.search(index, query, 20, with_text=False)
            assert [h.passage_id for h in hits] == [h.passage_id for h in single], (index, query)


def test_hybrid_is_reciprocal_rank_fusion_of_both_rankings(retriever: Retriever) -> None:
    depth, constant = retriever.settings.hybrid.depth, retriever.settings.hybrid.constant
    for query in QUERIES:
        lexical = [h.passage_id for h in retriever.search("bm25", query, depth, with_text=False)]
        semantic = [h.passage_id for h in retriever.search("dense", query, depth, with_text=False)]
        by_hand: dict[str, float] = {}
        for ranking in (lexical, semantic):
            for rank, pid in enumerate(ranking, 1):
                by_hand[pid] = by_hand.get(pid, 0.0) + 1 / (constant + rank)
        fused = retriever.search("hybrid", query, 10, with_text=False)
        assert [(h.passage_id, h.score) for h in fused] == reciprocal_rank_fusion(
            [lexical, semantic], depth=depth, constant=constant, k=10
        )
        assert all(abs(h.score - by_hand[h.passage_id]) < 1e-12 for h in fused)
        assert max(by_hand.values()) == pytest.approx(fused[0].score)


def test_text_comes_from_the_store_or_the_parquet(indexed, tmp_path: Path) -> None:
    paths, _, _ = indexed
    ids = {pid for pid, _ in sample_passages(paths, 25, seed=3)}
    from_store = passage_rows(paths, ids)
    without_store = SnapshotPaths(tmp_path, paths.snapshot_id)
    shutil.copytree(paths.passages_parquet, without_store.passages_parquet)
    assert not without_store.provenance_store.exists()
    assert passage_rows(without_store, ids) == from_store and set(from_store) == ids


def test_first_sentence_of_real_passages(indexed) -> None:
    paths, _, _ = indexed
    texts = [text for _, text in sample_passages(paths, 400, seed=1)]
    mid_sentence = next(t for t in texts if t[:1].islower() and ". " in t[:300])
    sentence = first_sentence(mid_sentence)
    assert sentence != mid_sentence.split(". ")[0] + "." and sentence in mid_sentence
    assert len(sentence.split()) >= 4
    starts_clean = next(t for t in texts if t[:1].isupper() and ". " in t)
    assert starts_clean.startswith(first_sentence(starts_clean))


@pytest.mark.parametrize("index", ["bm25", "dense"])
def test_self_retrieval_reaches_the_floor(retriever: Retriever, index: str) -> None:
    result = self_retrieval(retriever, index, sample=200, seed=0)
    assert result.queried == 200 and result.fraction >= 0.95, result.misses
    assert len(result.misses) == result.queried - result.found


def test_sample_is_repeatable_and_uniform(indexed) -> None:
    paths, _, _ = indexed
    first, again = sample_passages(paths, 300, seed=5), sample_passages(paths, 300, seed=5)
    assert first == again and len({pid for pid, _ in first}) == 300
    pages = {pid.rpartition("-")[0] for pid, _ in first}
    assert len(pages) > 50  # drawn across the whole excerpt, not from its first pages


def test_exact_top_k_streams_shards_like_a_flat_index(indexed, retriever: Retriever) -> None:
    paths, _, _ = indexed
    vectors = retriever.dense.encode_queries(QUERIES)
    _, flat_rows = DenseSearcher(paths.dense_index).search_vectors(vectors, 10)
    exact = exact_top_k(paths.dense_embeddings, vectors, 10)
    assert exact.shape == flat_rows.shape
    assert [set(row) for row in exact.tolist()] == [set(row) for row in flat_rows.tolist()]


def test_approximate_recall_separates_good_from_poor_indices(indexed, retriever: Retriever, tmp_path) -> None:
    """The check's measurement: the configured Flat index is exact (1.0); IVF+SQ8 probing a quarter of
    its lists passes the 0.95 floor; a coarse PQ probing one list of 64 does not."""
    paths, _, _ = indexed
    exact = approximate_recall(retriever, queries=300)
    assert exact.exact_index and exact.recall == 1.0
    texts = [first_sentence(t) for _, t in sample_passages(paths, 300, seed=0)]
    vectors = retriever.dense.encode_queries(texts)
    assert Embeddings.open(paths.dense_embeddings).count == passage_count(paths)
    measured = {}
    for factory, params in (("IVF32,SQ8", "nprobe=8"), ("IVF64,PQ16", "nprobe=1")):
        out = tmp_path / factory.replace(",", "_")
        build_faiss_index(paths.dense_embeddings, out, factory)
        searcher = DenseSearcher(out, params=params)
        measured[factory] = recall_against_exact(searcher, paths.dense_embeddings, vectors)
    assert measured["IVF32,SQ8"] >= 0.95, measured
    assert measured["IVF64,PQ16"] < 0.95, measured


def test_eval_queries_keep_every_provenance_set(indexed) -> None:
    paths, _, _ = indexed
    splits = {(q.dataset, q.split): q for q in eval_queries(paths)}
    assert set(splits) == {("fever", "dev"), ("hotpotqa", "dev")}
    fever = splits["fever", "dev"]
    assert len(fever.gold) == len(fever.queried) == 19  # every record counts, as in KILT's evaluation
    assert all(any(o.get("provenance") for o in r["output"]) for r in fever.gold)
    hotpot = splits["hotpotqa", "dev"]
    assert all(all(o.get("provenance") for o in r["output"]) for r in hotpot.gold)


def test_evaluation_reports(indexed, retriever: Retriever, tmp_path: Path) -> None:
    paths, _, _ = indexed
    results = evaluate_indexes(retriever, tmp_path, EvaluationParams(depth=100))
    out = tmp_path / paths.snapshot_id / "retrieval"
    saved = json.loads((out / "retrieval.json").read_text())
    content, timings = split_run_facts(results)
    assert saved["splits"] == content["splits"] and (out / "r_precision.png").stat().st_size > 1000
    assert json.loads((out / "retrieval.run.json").read_text())["splits"] == timings["splits"]
    assert all("seconds" in scores for split in timings["splits"] for scores in split["indexes"].values())
    markdown = (out / "retrieval.md").read_text()
    assert "| fever-dev | bm25 |" in markdown and "| hotpotqa-dev | hybrid |" in markdown
    by_key = {(r["dataset"], r["index"]): r for r in results["table"]}
    assert set(by_key) == {(d, i) for d in ("fever-dev", "hotpotqa-dev") for i in ("bm25", "dense", "hybrid")}
    for row in results["table"]:
        assert row["queries"] == (19 if row["dataset"] == "fever-dev" else 3)
        assert 0 <= row["Rprec"] <= 1 and "R-precision" not in row and "success@20" not in row
        assert row["recall@5"] <= row["recall@10"] <= row["recall@20"] <= row["success_rate@20"] <= 1
        assert row["precision@1"] <= 1 and 0 <= row["answer_in_context@20"] <= 1
    assert by_key["fever-dev", "bm25"]["Rprec"] >= 0.8  # FEVER claims name their page
    # scored a few records at a time (as a large split is, to keep memory flat): the same metrics
    bm25 = evaluate_indexes(
        retriever, tmp_path / "chunked", EvaluationParams(indexes=["bm25"], depth=100), chunk=4
    )
    assert bm25["table"] == [r for r in results["table"] if r["index"] == "bm25"]
    first = evaluate_indexes(
        retriever, tmp_path / "first", EvaluationParams(indexes=["bm25"], depth=100, max_queries=5)
    )
    assert [(s["queries"], s["records"]) for s in first["splits"]] == [(5, 19), (3, 3)]
    assert (
        "Only the first 5 records"
        in (tmp_path / "first" / paths.snapshot_id / "retrieval" / "retrieval.md").read_text()
    )


def test_bad_requests_are_refused(retriever: Retriever, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown index"):
        retriever.search("splade", "anything")
    with pytest.raises(ValueError, match="k must be"):
        retriever.search("bm25", "anything", 0)
    missing = Retriever(SnapshotPaths(tmp_path, "nothing-built"))
    with pytest.raises(FileNotFoundError, match="no BM25 index"):
        missing.search("bm25", "anything")
    with pytest.raises(FileNotFoundError, match="no dense index"):
        missing.search("dense", "anything")
