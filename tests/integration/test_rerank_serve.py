"""Re2G's rerank index and the HTTP search server, end to end on the session's ``make demo`` build.

The cross-encoder is a small one built in the test (random weights, the real BERT tokenizer: see
``tests/tiny_models.py``): the ranking must follow its scores exactly, over exactly the union of the BM25
and dense candidates. The server runs in this process on a free loopback port and is queried over HTTP.
"""

from __future__ import annotations

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

from assets.indexes.dense.encoders import passage_text
from assets.indexes.evaluation import evaluate_indexes
from assets.indexes.rerank import CrossEncoderReranker
from assets.indexes.retriever import Retriever
from assets.indexes.settings import IndexSettings
from assets.params import EvaluationParams
from assets.reading.serving import SearchApp, SearchService, serving_in_thread
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
    defaults = IndexSettings.from_params()
    settings = defaults.replace(
        rerank=defaults.rerank.model_copy(update={"model": str(model), "depth": DEPTH})
    )
    with Retriever(demo_build.paths, settings) as retriever:
        yield retriever


def test_rerank_orders_the_union_of_bm25_and_dense_by_cross_encoder_score(
    rerank_retriever: Retriever,
) -> None:
    ranked = rerank_retriever.batch_search("rerank", [*QUERIES, "  "], 10)
    assert ranked[-1] == []
    judge = CrossEncoderReranker(rerank_retriever.settings.rerank.model, device="cpu")
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
    results = evaluate_indexes(
        rerank_retriever, tmp_path, EvaluationParams(indexes=["rerank", "bm25"], depth=20)
    )
    rows = {(r["dataset"], r["index"]): r for r in results["table"]}
    assert {index for _, index in rows} == {"rerank", "bm25"}
    for (dataset, _), row in rows.items():
        assert row["queries"] == rows[dataset, "bm25"]["queries"] > 0 and 0 <= row["Rprec"] <= 1


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
    return _post_raw(url, json.dumps(body).encode())


def _post_raw(url: str, raw: bytes) -> tuple[int, dict]:
    request = urllib.request.Request(url, raw, {"Content-Type": "application/json"})
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


# ------------------------------------------------------------------ one request cannot take the server
def test_a_request_for_too_many_hits_is_refused_naming_the_limit(server) -> None:
    """10,000 queries at k=1000, each within the documented limits, would hold 10M hits: a 413 that names
    the limit, answered at once (no search runs), and the server answers the next request as before."""
    from assets.limits import HttpLimits

    MAX_HITS, MAX_TEXT_HITS = HttpLimits().max_hits, HttpLimits().max_text_hits
    base, _ = server
    many = [f"{QUERIES[n % 3]} {n}" for n in range(10_000)]
    started = time.perf_counter()
    status, answer = _post(f"{base}/search", {"queries": many, "index": "dense", "k": 1000, "text": False})
    assert status == 413 and f"at most {MAX_HITS:,} per request without text" in answer["error"]
    assert "10,000,000 hits" in answer["error"] and time.perf_counter() - started < 5
    status, answer = _post(f"{base}/search", {"queries": many[:1000], "index": "bm25", "k": 21})
    assert status == 413 and f"at most {MAX_TEXT_HITS:,} per request with text" in answer["error"]
    status, answer = _post(
        f"{base}/search", {"queries": many[:1000], "index": "bm25", "k": 21, "text": False}
    )
    assert status == 200 and len(answer["results"]) == 1000  # the same without text: within the limit
    assert all(len(result["hits"]) == 21 for result in answer["results"])


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"query": "x", "k": Infinity}', "Infinity is not a JSON number"),
        (b'{"query": "x", "k": NaN}', "NaN is not a JSON number"),
        (b'{"query": "x", "k": 1e400}', "k must be an integer"),
        (b'{"query": "x", "k": 2.5}', "k must be an integer"),
        (b'{"query": "\\ud800"}', "query 0 is not valid Unicode: surrogates not allowed at character 0"),
        (b'{"queries": ["fine", "bad \\udfff"], "index": "dense"}', "query 1 is not valid Unicode"),
        (b'{"query": "x", "k": ' + b"9" * 5000 + b"}", "limits.http.max_number_chars"),
        (b"[" * 100_000 + b"]" * 100_000, "limits.http.max_json_depth"),
        (b'{"query": "x", "k": ' + b"[" * 100_000 + b"}", "limits.http.max_json_depth"),
    ],
)
def test_odd_values_are_400s_with_a_message(server, raw: bytes, message: str) -> None:
    base, _ = server
    status, answer = _post_raw(f"{base}/search", raw)
    assert status == 400 and message in answer["error"], answer


def test_a_k_of_thousands_of_digits_in_a_url_is_a_400(server) -> None:
    base, _ = server
    status, answer = _get(f"{base}/search?" + urllib.parse.urlencode({"q": "x", "k": "9" * 5000}))
    assert status == 400 and "limits.http.max_number_chars" in answer["error"]


def test_a_query_over_the_character_limit_is_refused_naming_it(server) -> None:
    from assets.limits import SearchLimits

    base, _ = server
    query = "a " * (SearchLimits().max_query_chars // 2 + 1)
    status, answer = _post(f"{base}/search", {"query": query})
    assert status == 413 and "limits.search.max_query_chars" in answer["error"]


def test_one_long_query_among_60_clients_fails_nobody(server, demo_build) -> None:
    """Three rounds of 60 concurrent requests to BM25, 6 of them a 2,000-word query (over Lucene's 1,024
    clauses): every request is answered 200 (the old server answered 500 to most of the others: 240 of 270
    in five rounds), and each long query's answer says it was cut to the limit."""
    from support.hostile_load import long_query, poisoned_rounds

    base, retriever = server
    query = long_query(demo_build.paths.passages_parquet, 2000)
    result = poisoned_rounds(base, query, clients=60, long_per_round=6, rounds=3)
    assert result.normal == {"200": 162} and result.long == {"200": 18}, result
    assert result.long_cut == 18
    cut = retriever.query_cuts("bm25", [query])[0]
    assert cut is not None and cut["terms"] <= 1024 < cut["of"]
    assert len(retriever.search("hybrid", query, 3)) == 3  # the API: hybrid searches the cut query too
    assert retriever.query_cuts("hybrid", [query, QUERIES[0]]) == [cut, None]


def test_a_query_that_fails_fails_only_its_own_request() -> None:
    """A batch whose search raises: the batcher searches each request alone, so the others are answered."""
    import asyncio

    from assets.reading.serving import IndexBatcher

    def search(queries: list[str], k: int, with_text: bool) -> list[list[str]]:
        if "poison" in queries:
            raise RuntimeError("TooManyClauses")
        return [[q] * k for q in queries]

    async def main() -> list:
        batcher = IndexBatcher("bm25", search, max_wait=0.05)
        jobs = [batcher.submit([q], 1, False) for q in ("a", "poison", "b", "c")]
        return await asyncio.gather(*jobs, return_exceptions=True)

    answers = asyncio.run(main())
    assert answers[0] == [["a"]] and answers[2] == [["b"]] and answers[3] == [["c"]]
    assert isinstance(answers[1], RuntimeError)


def test_a_small_budget_server_refuses_what_it_cannot_hold(demo_build) -> None:
    """A server started with a small budget (limits of 30 hits, 12 with text)."""
    from assets.limits import HttpLimits, Limits

    with Retriever(demo_build.paths, IndexSettings.from_params()) as retriever:
        small = Limits(http=HttpLimits(max_hits=30, max_text_hits=12))
        app = SearchApp(SearchService(retriever, ["bm25"]), limits=small)
        with serving_in_thread(app) as base:
            assert _post(f"{base}/search", {"queries": QUERIES, "k": 10, "text": False})[0] == 200
            status, answer = _post(f"{base}/search", {"queries": QUERIES, "k": 11, "text": False})
            assert status == 413 and "33 hits (3 queries x k=11); at most 30 per request" in answer["error"]
            status, answer = _get(f"{base}/search?" + urllib.parse.urlencode({"q": QUERIES[0], "k": 13}))
            assert status == 413 and "at most 12 per request with text" in answer["error"]


def test_admin_routes_answer_loopback_or_the_token_only(server) -> None:
    """A client on another machine may not reload the server without the admin token."""
    from starlette.requests import Request

    def request(client: str, token: str | None = None) -> Request:
        headers = [(b"authorization", f"Bearer {token}".encode())] if token else []
        return Request({"type": "http", "client": (client, 5000), "headers": headers})

    with Retriever(server[1].paths, IndexSettings.from_params()) as retriever:
        open_app = SearchApp(SearchService(retriever, ["bm25"]))
        guarded = SearchApp(open_app.current.service, admin_token="s3cret")
        assert open_app._admin_refusal(request("127.0.0.1")) is None
        assert open_app._admin_refusal(request("::1")) is None
        assert "--admin-token" in open_app._admin_refusal(request("10.1.2.3"))
        assert "--admin-token" in open_app._admin_refusal(request("10.1.2.3", "s3cret"))
        assert guarded._admin_refusal(request("10.1.2.3", "s3cret")) is None
        assert "Bearer" in guarded._admin_refusal(request("10.1.2.3", "wrong"))
        assert guarded._admin_refusal(request("127.0.0.1")) is None
        # a proxy on this machine forwarding another client's request: by RFC 7239 or X-Forwarded-For
        for header, value in [
            ("forwarded", 'for="[2001:db8:cafe::17]:4711"'),
            ("forwarded", "for=192.0.2.60;proto=http;by=203.0.113.43"),
            ("forwarded", "for=127.0.0.1, for=198.51.100.17"),
            ("forwarded", "for=unknown"),
            ("forwarded", 'for="_hidden"'),
            ("x-forwarded-for", "127.0.0.1, 203.0.113.9"),
        ]:
            forwarded = request("127.0.0.1")
            forwarded.scope["headers"] = [(header.encode(), value.encode())]
            assert "--admin-token" in open_app._admin_refusal(forwarded), value
            assert "Bearer" in guarded._admin_refusal(forwarded), value
        local = request("127.0.0.1")
        local.scope["headers"] = [(b"forwarded", b'for=127.0.0.1;proto=https, for="[::1]:80"')]
        assert open_app._admin_refusal(local) is None


def test_a_body_of_escaped_quotes_does_not_hold_up_other_clients(server) -> None:
    """A megabyte of escaped quotes in an unclosed string (once quadratic: 80 KB held every client for
    12 s) is refused as not JSON at the cost of reading it, parsed beside the event loop, while /health
    keeps answering."""
    base, _ = server
    port = int(base.rsplit(":", 1)[1])
    hostile = b'{"query": "' + b'\\"' * 500_000  # 1 MB: a backslash and a quote, 500,000 times
    latencies: list[float] = []
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            started = time.perf_counter()
            status, _ = _get(f"{base}/health")
            latencies.append(time.perf_counter() - started)
            assert status == 200

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        for path in ("/search", "/search", "/search"):
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            started = time.perf_counter()
            connection.request("POST", path, hostile, {"Content-Type": "application/json"})
            response = connection.getresponse()
            answer = json.loads(response.read())
            connection.close()
            assert response.status == 400 and "unterminated string" in answer["error"], answer
            assert time.perf_counter() - started < 5
    finally:
        done.set()
        poller.join()
    assert latencies and max(latencies) < 2.0, max(latencies)


def test_sigterm_stops_a_busy_server_within_seconds(demo_build, tmp_path: Path) -> None:
    """``kiltpipe serve`` with large requests in flight and queued: SIGTERM refuses them with a 503 (the one
    in flight used to get a 500) and the process exits within seconds (it used to run them all)."""
    import os
    import re
    import signal
    import subprocess
    import sys

    env = {**demo_build.env, "DAGSTER_HOME": str(tmp_path)}
    command = [sys.executable, "-m", "orchestration.cli", "serve", "--data-dir", str(demo_build.data_dir)]
    server_process = subprocess.Popen(
        [*command, "--index", "dense", "--port", "0"],
        env=env, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        line = ""
        while "serving" not in line:
            line = server_process.stderr.readline()
            assert line or server_process.poll() is None, "the server exited before serving"
        base = re.search(r"(http://[^/]+)/search", line)[1]
        many = [f"{QUERIES[n % 3]} {n}" for n in range(10_000)]
        statuses: list[int] = []
        clients = [
            threading.Thread(
                target=lambda: statuses.append(
                    _post(f"{base}/search", {"queries": many, "k": 10, "text": False})[0]
                ),
                daemon=True,
            )
            for _ in range(4)  # four bulk requests: minutes of work, in flight and queued
        ]
        for client in clients:
            client.start()
        time.sleep(2)
        server_process.send_signal(signal.SIGTERM)
        started = time.monotonic()
        server_process.wait(timeout=30)
        assert time.monotonic() - started < 15
        for client in clients:
            client.join(timeout=30)
        assert sorted(set(statuses)) == [503] and len(statuses) == 4, statuses  # refused, never a 500
    finally:
        if server_process.poll() is None:
            os.killpg(server_process.pid, signal.SIGKILL)
            server_process.wait()


def test_serve_without_index_serves_every_type_its_built_indices_allow(demo_build) -> None:
    """Both indices built: bm25, dense and their fusion (hybrid); rerank loads a model of its own and is
    served when asked for. Only BM25 built: BM25 alone."""
    from assets.indexes.registry import servable_types

    assert servable_types(demo_build.paths, ["bm25", "dense"]) == ["bm25", "dense", "hybrid"]
    assert servable_types(demo_build.paths, ["bm25"]) == ["bm25"]
