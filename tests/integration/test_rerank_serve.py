"""Re2G's rerank index and the HTTP search server, end to end on the session's ``make demo`` build.

The cross-encoder is a small one built in the test (random weights, the real BERT tokenizer: see
``tests/tiny_models.py``): the ranking must follow its scores exactly, over exactly the union of the BM25
and dense candidates. The server runs in this process on a free loopback port and is queried over HTTP.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from assets.indexes.encoders import passage_text
from assets.indexes.rerank import CrossEncoderReranker
from assets.indexes.retrieval import IndexSettings, Retriever, evaluate_indexes
from assets.indexes.server import SearchService, make_server
from tests.tiny_models import tiny_cross_encoder

QUERIES = [
    "Who developed the general theory of relativity?",
    "What is the capital city of Albania?",
    "fraction of sunlight reflected by a surface",
]
DEPTH = 15


@pytest.fixture(scope="module")
def rerank_retriever(demo_build, tmp_path_factory: pytest.TempPathFactory):
    model = tiny_cross_encoder(tmp_path_factory.mktemp("cross-encoder") / "tiny")
    settings = dataclasses.replace(IndexSettings.from_params(), rerank_model=str(model), rerank_depth=DEPTH)
    with Retriever(demo_build.paths, settings) as retriever:
        yield retriever


def test_rerank_orders_the_union_of_bm25_and_dense_by_cross_encoder_score(
    rerank_retriever: Retriever,
) -> None:
    ranked = rerank_retriever.batch_search("rerank", [*QUERIES, "  "], 10)
    assert ranked[-1] == []
    judge = CrossEncoderReranker(rerank_retriever.settings.rerank_model, device="cpu")
    for query, hits in zip(QUERIES, ranked, strict=False):
        bm25 = rerank_retriever.search("bm25", query, DEPTH)
        dense = rerank_retriever.search("dense", query, DEPTH)
        pool = {h.passage_id: h for h in [*dense, *bm25]}
        assert DEPTH < len(pool) <= 2 * DEPTH  # the union: each ranking brings passages the other lacks
        # every candidate scored one pair at a time by the model itself
        scores = {
            pid: float(
                judge.model.predict([(query, passage_text(h.title, h.text))], convert_to_numpy=True)[0]
            )
            for pid, h in pool.items()
        }
        assert len(hits) == 10 and {h.passage_id for h in hits} <= set(pool)
        np.testing.assert_allclose([h.score for h in hits], [scores[h.passage_id] for h in hits], atol=1e-5)
        expected = sorted(scores.values(), reverse=True)[:10]
        np.testing.assert_allclose([h.score for h in hits], expected, atol=1e-5)  # the best 10, in order
        assert all(h.text and h.title for h in hits)


def test_rerank_is_an_evaluated_index(rerank_retriever: Retriever, tmp_path: Path) -> None:
    results = evaluate_indexes(rerank_retriever, tmp_path, indexes=["rerank", "bm25"], depth=20)
    rows = {(r["dataset"], r["index"]): r for r in results["table"]}
    assert {index for _, index in rows} == {"rerank", "bm25"}
    for (dataset, _), row in rows.items():
        assert row["queries"] == rows[dataset, "bm25"]["queries"] > 0 and 0 <= row["R-precision"] <= 1


@pytest.fixture(scope="module")
def server(demo_build):
    with Retriever(demo_build.paths, IndexSettings.from_params()) as retriever:
        service = SearchService(retriever, ["bm25", "dense"])
        http = make_server(service, "127.0.0.1", 0)
        thread = threading.Thread(target=http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{http.server_port}", retriever
        finally:
            http.shutdown()
            http.server_close()


def _get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _post(url: str, body: object) -> tuple[int, dict]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_server_answers_as_the_retriever_does(server) -> None:
    base, retriever = server
    status, health = _get(f"{base}/health")
    assert (
        status == 200
        and health["indexes"] == ["bm25", "dense"]
        and set(health["load_seconds"]) == {"bm25", "dense"}
    )
    for index in ("bm25", "dense"):
        expected = retriever.batch_search(index, QUERIES, 5, with_text=True)
        status, single = _get(
            f"{base}/search?" + urllib.parse.urlencode({"q": QUERIES[0], "index": index, "k": 5})
        )
        assert status == 200 and single["query"] == QUERIES[0]
        printed = [h.to_dict() for h in expected[0]]  # as `kiltpipe search` prints them
        assert [{**h, "score": None} for h in single["hits"]] == [{**h, "score": None} for h in printed]
        np.testing.assert_allclose(
            [h["score"] for h in single["hits"]], [h["score"] for h in printed], atol=1e-5
        )
        status, batch = _post(f"{base}/search", {"queries": QUERIES, "index": index, "k": 5, "text": False})
        assert status == 200 and [r["query"] for r in batch["results"]] == QUERIES
        for result, hits in zip(batch["results"], expected, strict=True):
            assert [h["passage_id"] for h in result["hits"]] == [h.passage_id for h in hits]
            assert all(h["text"] is None for h in result["hits"]) or index == "bm25"  # only BM25 stores text
    assert _get(f"{base}/health")[1]["requests"] == health["requests"] + 4


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        ("/search?q=x&index=splade", None, "not served"),
        ("/search?q=x&k=0", None, "k must be between"),
        ("/search?q=x&k=ten", None, "k must be an integer"),
        ("/search?index=bm25", None, "give a query"),
        ("/search", {"queries": "not a list"}, "list of strings"),
        ("/search", {"queries": [1, 2]}, "must be strings"),
        ("/search", ["not", "an", "object"], "JSON object"),
    ],
)
def test_server_refuses_bad_requests_with_the_reason(server, path: str, body: object, message: str) -> None:
    base, _ = server
    status, answer = _post(base + path, body) if body is not None else _get(base + path)
    assert status == 400 and message in answer["error"]
    assert _get(f"{base}/nowhere")[0] == 404
