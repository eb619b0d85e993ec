"""Tables and infoboxes searched: the structured passages' own BM25 and dense indices of the session's
``make demo`` build, searched alone or with the text passages (retriever, CLI, HTTP API), in the retrieval
evaluation's report, and the text passages' indices untouched."""

from __future__ import annotations

import json
import shutil
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from assets.indexes.collection_indexes import build_collection_indexes
from assets.indexes.collections import CollectionView, collection_built, collection_view
from assets.indexes.dense import Embeddings
from assets.indexes.evaluation import evaluate_indexes
from assets.indexes.retriever import Retriever
from assets.indexes.settings import IndexSettings
from assets.params import EvaluationParams
from assets.reading.serving import SearchApp, SearchService, serving_in_thread
from assets.storage import SnapshotPaths

SENATORS = "who are alabama's senators on the national level"  # NQ dev: answered by Alabama's infobox
QUERIES = [SENATORS, "population of Alaska by race", "Who developed the general theory of relativity?"]


@pytest.fixture(scope="module")
def retriever(demo_build):
    with Retriever(demo_build.paths, IndexSettings.from_params()) as opened:
        yield opened


def test_the_demo_build_indexes_every_structured_passage(demo_build) -> None:
    paths = demo_build.paths
    assert "structured_indexes" in demo_build.summary["assets"]
    view = collection_view(paths, "structured")
    assert view.bm25_index == paths.root / "indexes" / "structured" / "bm25"
    assert view.passages_parquet == paths.structured_parquet
    passages = pq.read_table(paths.structured_parquet, columns=["passage_id"]).column(0).to_pylist()
    embeddings = Embeddings.open(view.dense_embeddings)
    assert embeddings.ids() == passages and len(passages) == 391
    assert all(collection_built(paths, index, "structured") for index in ("bm25", "dense", "hybrid"))
    # the text passages' indices hold the text passages only (KILT-comparable, as they were)
    text_ids = set(Embeddings.open(paths.dense_embeddings).ids())
    assert text_ids and not text_ids & set(passages)


def test_each_collection_returns_its_kinds(retriever: Retriever) -> None:
    for index in ("bm25", "dense", "hybrid"):
        text = retriever.batch_search(index, QUERIES, 10, with_text=True)
        structured = retriever.batch_search(index, QUERIES, 10, with_text=True, collection="structured")
        both = retriever.batch_search(index, QUERIES, 10, with_text=True, collection="both")
        assert all(h.kind == "text" for hits in text for h in hits)
        assert all(h.kind in ("table", "infobox") for hits in structured for h in hits)
        assert all(hits for hits in structured)
        for hits in [*text, *structured, *both]:  # every hit has its title and text
            assert all(h.title and h.text for h in hits)
        kinds = {h.kind for hits in both for h in hits}
        assert "text" in kinds and kinds & {"table", "infobox"}, (index, kinds)
    assert retriever.searcher("bm25@both") is retriever.searcher("bm25@both")  # opened once


def test_dense_over_both_is_one_exact_search_over_the_union(retriever: Retriever, demo_build) -> None:
    """Flat FAISS: merging the two rankings by score is the ranking of every vector of both collections."""
    paths = demo_build.paths
    ids, vectors = [], []
    for where in (paths, collection_view(paths, "structured")):
        embeddings = Embeddings.open(where.dense_embeddings)
        ids += embeddings.ids()
        vectors += [np.asarray(a, dtype=np.float32) for a in embeddings.shard_arrays()]
    matrix = np.concatenate(vectors)
    queries = retriever.dense.encode_queries(QUERIES)
    merged = retriever.batch_search("dense", QUERIES, 10, collection="both")
    for query, hits in zip(queries, merged, strict=True):
        scores = matrix @ query
        order = np.argsort(-scores, kind="stable")[:10]
        assert [h.passage_id for h in hits] == [ids[i] for i in order]
        np.testing.assert_allclose([h.score for h in hits], scores[order], rtol=1e-5, atol=1e-5)


def test_a_question_only_the_infobox_answers(retriever: Retriever) -> None:
    """Alabama's senators are named in its infobox, in no text passage of the excerpt."""
    for index in ("dense", "hybrid"):
        both = retriever.search(index, SENATORS, 5, collection="both")
        infobox = [h for h in both if h.passage_id == "303-i0.0"]
        assert infobox and "Richard Shelby" in infobox[0].text, [h.passage_id for h in both]
        assert not any("Richard Shelby" in (h.text or "") for h in retriever.search(index, SENATORS, 5))


def test_the_evaluation_reports_text_and_both(retriever: Retriever, tmp_path: Path) -> None:
    said: list[str] = []
    results = evaluate_indexes(
        retriever, tmp_path, EvaluationParams(indexes=["bm25", "dense"], depth=20), progress=said.append
    )
    assert said and len(set(said)) == len(said)  # progress as it goes; no two lines read the same
    assert {"(collection text)", "(collection both)"} <= {
        line[line.index("(") : line.index(")") + 1] for line in said
    }
    assert results["indexes"] == ["bm25", "dense", "bm25@both", "dense@both"]
    assert results["collections"] == ["text", "both"] and "left_out" not in results
    rows = {(r["dataset"], r["index"], r["collection"]): r for r in results["table"]}
    datasets = {dataset for dataset, _, _ in rows}
    assert datasets and len(rows) == 4 * len(datasets)
    for (dataset, index, _collection), row in rows.items():
        assert row["queries"] == rows[dataset, index, "text"]["queries"] > 0
        assert 0 <= row["success_rate@5"] <= 1 and 0 <= row["answer_in_context@5"] <= 1
    report = (tmp_path / retriever.paths.snapshot_id / "retrieval" / "retrieval.md").read_text()
    assert any(line.startswith("| dataset | index | collection |") for line in report.splitlines())
    assert "| both |" in report
    text_only = evaluate_indexes(
        retriever, tmp_path / "text", EvaluationParams(indexes=["bm25"], depth=20, collections=["text"])
    )
    assert [r["collection"] for r in text_only["table"]] == ["text"] * len(datasets)
    assert [r["Rprec"] for r in text_only["table"]] == [
        rows[r["dataset"], "bm25", "text"]["Rprec"] for r in text_only["table"]
    ]


def test_a_snapshot_without_structured_indices_leaves_both_out(demo_build, tmp_path: Path) -> None:
    copy = SnapshotPaths(demo_build.copy(tmp_path / "copy"), demo_build.paths.snapshot_id)
    shutil.rmtree(collection_view(copy, "structured").indexes)
    with Retriever(copy, IndexSettings.from_params()) as retriever:
        results = evaluate_indexes(
            retriever, tmp_path / "reports", EvaluationParams(indexes=["bm25"], depth=5)
        )
        assert results["indexes"] == ["bm25"] and "bm25@both" in results["left_out"]
        with pytest.raises(FileNotFoundError, match="key:structured_indexes"):
            retriever.search("hybrid", "Alabama", collection="both")
    report = build_collection_indexes(copy, "structured", IndexSettings.from_params(), ["bm25"])
    assert report.built == ["bm25"] and report.documents == {"bm25": 391} and report.passages == 391
    assert (
        collection_view(copy, "structured").bm25_index.is_dir()
        and not collection_view(copy, "structured").dense_index.exists()
    )
    # an incremental build copies an earlier snapshot's vectors of the same passages: none encoded
    reused = build_collection_indexes(
        copy, "structured", IndexSettings.from_params(), ["dense"], reuse_from=demo_build.paths
    )
    assert reused.documents == {"dense": 391} and (reused.reused_passages, reused.encoded_passages) == (
        391,
        0,
    )
    built = Embeddings.open(collection_view(demo_build.paths, "structured").dense_embeddings)
    copied = Embeddings.open(collection_view(copy, "structured").dense_embeddings)
    assert copied.ids() == built.ids()
    for mine, theirs in zip(copied.shard_arrays(), built.shard_arrays(), strict=True):
        assert np.array_equal(np.asarray(mine), np.asarray(theirs))
    (copy.structured_passages / "report.json").unlink()  # what passages.structured: false leaves
    gone = build_collection_indexes(copy, "structured", IndexSettings.from_params())
    assert gone.built == [] and "passages.structured is false" in gone.skipped
    assert not collection_view(copy, "structured").indexes.exists()  # no stale tables left to find


def test_cli_searches_each_collection(demo_build, kiltpipe, tmp_path: Path) -> None:
    data = ["--data-dir", str(demo_build.data_dir)]
    code, out, _ = kiltpipe(
        "search", *data, "--index", "bm25", "--collection", "structured", "--k", "3", SENATORS
    )
    hits = json.loads(out)
    assert code == 0 and len(hits) == 3 and {h["kind"] for h in hits} <= {"table", "infobox"}
    topics = tmp_path / "topics.tsv"
    topics.write_text("".join(f"q{i}\t{q}\n" for i, q in enumerate(QUERIES)))
    out_file = tmp_path / "run.jsonl"
    code, out, _ = kiltpipe(
        "search", *data, "--index", "dense", "--collection", "both", "--topics", topics, "--output", out_file
    )
    assert code == 0 and json.loads(out)["collection"] == "both"
    records = [json.loads(line) for line in out_file.read_text().splitlines()]
    provenance = [p for r in records for p in r["output"][0]["provenance"]]
    structured = [p for p in provenance if p.get("kind") in ("table", "infobox")]
    assert structured and all(p["end_character"] > p["start_character"] >= 0 for p in structured)
    assert all("structure_index" in p and "start_paragraph_id" not in p for p in structured)
    assert all("start_paragraph_id" in p for p in provenance if "kind" not in p)
    code, out, _ = kiltpipe(
        "eval", *data, "--index", "bm25", "--collection", "both", "--reports-dir", tmp_path
    )
    assert code == 0 and {r["collection"] for r in json.loads(out)["table"]} == {"both"}


def test_the_http_api_searches_each_collection(demo_build) -> None:
    retriever = Retriever(demo_build.paths, IndexSettings.from_params())
    service = SearchService(retriever, ["bm25", "bm25@structured", "bm25@both", "dense"])
    with serving_in_thread(SearchApp(service)) as base:

        def get(**query: str) -> tuple[int, dict]:
            url = f"{base}/search?" + urllib.parse.urlencode({"q": SENATORS, **query})
            try:
                with urllib.request.urlopen(url, timeout=60) as response:
                    return response.status, json.loads(response.read())
            except urllib.error.HTTPError as error:
                return error.code, json.loads(error.read())

        status, body = get(collection="structured", k="3")
        assert status == 200 and body["index"] == "bm25" and body["collection"] == "structured"
        assert {h["kind"] for h in body["hits"]} <= {"table", "infobox"}
        status, body = get(collection="both", k="10")
        expected = retriever.batch_search("bm25", [SENATORS], 10, collection="both")[0]
        assert status == 200 and [h["passage_id"] for h in body["hits"]] == [h.passage_id for h in expected]
        assert get()[1]["collection"] == "text"
        status, body = get(index="dense", collection="both")
        assert status == 400 and "dense@both" in body["error"] and "not served" in body["error"]
        status, body = get(collection="tables")
        assert status == 400 and "unknown collection 'tables'" in body["error"]
    service.close()  # its provenance-store connection too


def test_structured_view_is_a_snapshot_paths(demo_build) -> None:
    view = collection_view(demo_build.paths, "structured")
    assert isinstance(view, CollectionView) and collection_view(view, "structured") is view
    assert view.passages_collection == demo_build.paths.structured_passages / "collection"
    assert view.dense_index.parent.parent == demo_build.paths.indexes / "structured"
