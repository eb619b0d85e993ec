"""Re2G's rerank index and the HTTP search server, end to end on the session's ``make demo`` build.

The cross-encoder is a small one built in the test (random weights, the real BERT tokenizer: see
``tests/tiny_models.py``): the ranking must follow its scores exactly, over exactly the union of the BM25
and dense candidates. The server runs in this process on a free loopback port and is queried over HTTP.
"""

from __future__ import annotations

import dataclasses
import http.client
import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from assets.indexes.encoders import passage_text
from assets.indexes.rerank import CrossEncoderReranker
from assets.indexes.retrieval import IndexSettings, Retriever, evaluate_indexes
from assets.indexes.server import SearchApp, SearchService, serving_in_thread
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
    retriever = Retriever(demo_build.paths, IndexSettings.from_params())

    def load() -> SearchService:  # what /admin/reload opens: the same snapshot, again
        return SearchService(Retriever(demo_build.paths, IndexSettings.from_params()), ["bm25", "dense"])

    app = SearchApp(SearchService(retriever, ["bm25", "dense"]), load=load, version=lambda s: str(id(s)))
    with serving_in_thread(app) as base:
        yield base, retriever


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


def test_server_holds_200_concurrent_clients(server) -> None:
    """200 clients connect at once, each sends 3 queries on its keep-alive connection: no connection is
    reset or refused (the backlog is 2048, not 5), every answer is a 200."""
    base, _ = server
    port = int(base.rsplit(":", 1)[1])
    errors: list[str] = []
    answered = [0]
    lock = threading.Lock()
    barrier = threading.Barrier(200)

    def client(number: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        try:
            barrier.wait()
            for query in QUERIES[:3]:
                index = "bm25" if number % 2 else "dense"
                connection.request("GET", "/search?" + urllib.parse.urlencode({"q": query, "index": index}))
                response = connection.getresponse()
                response.read()
                with lock:
                    answered[0] += response.status == 200
        except OSError as error:
            with lock:
                errors.append(repr(error))
        finally:
            connection.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(200)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and answered[0] == 600


def test_a_large_post_does_not_starve_single_queries(server) -> None:
    """A 2,000-query POST to the dense index and single GETs at the same time: the GETs are answered
    while the POST runs (its queries go in chunks behind them), and the POST answers every query."""
    base, _ = server
    many = [f"{q} {n}" for n in range(2000) for q in QUERIES][:2000]
    result: dict = {}
    post = threading.Thread(
        target=lambda: result.update(
            answer=_post(f"{base}/search", {"queries": many, "index": "dense", "k": 3})
        )
    )
    post.start()
    time.sleep(0.3)
    started = time.perf_counter()
    singles = [_get(f"{base}/search?" + urllib.parse.urlencode({"q": q, "index": "dense"})) for q in QUERIES]
    single_seconds = time.perf_counter() - started
    post.join()
    status, answer = result["answer"]
    assert status == 200 and len(answer["results"]) == 2000
    assert all(code == 200 for code, _ in singles)
    assert post_running_when(single_seconds, answer["took_ms"] / 1000)


def post_running_when(single_seconds: float, post_seconds: float) -> bool:
    """The singles took a small part of the POST's time: they did not wait for it to finish."""
    return single_seconds < 0.5 * post_seconds


def test_metrics_openapi_body_cap_and_reload(server) -> None:
    base, _ = server
    with urllib.request.urlopen(f"{base}/metrics", timeout=60) as response:
        text = response.read().decode()
    assert 'kiltpipe_requests_total{index="bm25",status="200"}' in text
    assert "kiltpipe_request_seconds_bucket" in text and "kiltpipe_queue_depth" in text
    assert "kiltpipe_batch_queries_bucket" in text
    status, spec = _get(f"{base}/openapi.json")
    assert status == 200 and {"/search", "/health", "/metrics", "/admin/reload"} <= set(spec["paths"])
    body = spec["paths"]["/search"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body["properties"]["k"]["maximum"] == 1000
    connection = http.client.HTTPConnection("127.0.0.1", int(base.rsplit(":", 1)[1]), timeout=60)
    connection.putrequest("POST", "/search")  # a body over 16 MiB is refused before it is read
    connection.putheader("Content-Type", "application/json")
    connection.putheader("Content-Length", str(16 * 1024 * 1024 + 1))
    connection.endheaders()
    response = connection.getresponse()
    assert response.status == 413 and "over" in json.loads(response.read())["error"]
    connection.close()
    before = _get(f"{base}/health")[1]
    status, reloaded = _post(f"{base}/admin/reload", {})
    after = _get(f"{base}/health")[1]
    assert status == 200 and reloaded["previous"]["version"] == before["version"] != after["version"]
    assert after["reloads"] == before["reloads"] + 1 and after["snapshot_id"] == before["snapshot_id"]
    assert _get(f"{base}/search?q=Achilles&index=bm25")[0] == 200  # answered by the new version
