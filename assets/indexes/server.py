"""``kiltpipe serve``: a snapshot's indices behind a small HTTP search API, loaded once.

Every index named at start is opened before the server answers (the JVM, the FAISS index, the query
encoder, the cross-encoder), so a query costs a search, not a cold start. The API (JSON in, JSON out):

- ``GET /search?q=TEXT&index=bm25&k=10[&text=0]``: one query; the hits as ``kiltpipe search`` prints them.
- ``POST /search`` with ``{"index": "dense", "k": 10, "queries": ["...", ...], "text": true}`` (or
  ``"query": "..."``): a batch, one ``{"query", "hits"}`` entry per query in order.
- ``GET /health``: the snapshot, the open indices and the requests served.

Searches of one index run one at a time (a lock per index: the JVM searcher and the encoders are not
shared across threads), searches of different indices at once. Bad requests get a 400 with the reason.
Binds ``127.0.0.1`` unless told otherwise. Pure module: no Dagster import.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Sequence
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

MAX_K = 1000
MAX_BATCH = 10_000
MAX_BODY = 16 * 1024 * 1024


class BadRequest(ValueError):
    """A request the API cannot answer (400, with this message)."""


class SearchService:
    """The searches behind the HTTP API: one retriever, its indices opened once, a lock per index."""

    def __init__(self, retriever: Any, indexes: Sequence[str], default_index: str | None = None) -> None:
        if not indexes:
            raise ValueError("serve at least one index")
        self.retriever = retriever
        self.indexes = list(dict.fromkeys(indexes))
        self.default_index = default_index or self.indexes[0]
        self.locks = {index: threading.Lock() for index in self.indexes}
        self.requests = 0
        self.started = time.time()
        self.load_seconds: dict[str, float] = {}
        for index in self.indexes:  # opened and warmed up (first JIT, first allocation) before serving
            began = time.perf_counter()
            retriever.open(index)
            retriever.with_text(retriever.batch_search(index, ["warm up"], 10))
            self.load_seconds[index] = round(time.perf_counter() - began, 3)
        self._text_lock = threading.Lock()

    def search(
        self, index: str | None, queries: Sequence[str], k: int, with_text: bool
    ) -> list[dict[str, Any]]:
        index = index or self.default_index
        if index not in self.locks:
            raise BadRequest(f"index {index!r} is not served; served: {', '.join(self.indexes)}")
        if not 1 <= k <= MAX_K:
            raise BadRequest(f"k must be between 1 and {MAX_K}, not {k}")
        if len(queries) > MAX_BATCH:
            raise BadRequest(f"at most {MAX_BATCH} queries per request, not {len(queries)}")
        if any(not isinstance(q, str) for q in queries):
            raise BadRequest("queries must be strings")
        if not queries:
            return []
        with self.locks[index]:  # the index fills title and text when it stores them (BM25)
            results = self.retriever.searcher(index).batch_search(list(queries), k, with_text=with_text)
        if with_text:  # the rest from the provenance store (one connection: one lookup at a time)
            with self._text_lock:
                results = self.retriever.with_text(results)
        self.requests += 1
        return [
            {"query": query, "hits": [hit.to_dict() for hit in hits]}
            for query, hits in zip(queries, results, strict=True)
        ]

    def health(self) -> dict[str, Any]:
        return {
            "status": "ok",
            "snapshot_id": self.retriever.paths.snapshot_id,
            "indexes": self.indexes,
            "default_index": self.default_index,
            "load_seconds": self.load_seconds,
            "requests": self.requests,
            "uptime_seconds": round(time.time() - self.started, 1),
        }


def _flag(value: Any, default: bool = True) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    return str(value).lower() not in ("0", "false", "no", "off")


def _int(value: Any, name: str, default: int) -> int:
    if value is None:
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        raise BadRequest(f"{name} must be an integer, not {value!r}") from None


def make_handler(service: SearchService, default_k: int = 10) -> type[BaseHTTPRequestHandler]:
    """The request handler class of an HTTP server answering for ``service``."""

    class SearchHandler(BaseHTTPRequestHandler):
        server_version = "kiltpipe-serve"
        protocol_version = "HTTP/1.1"  # keep-alive: a client's queries reuse one connection

        def setup(self) -> None:
            super().setup()
            # small responses on a keep-alive connection: without this, Nagle's algorithm and the client's
            # delayed ACK hold each response ~40 ms
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # one line per request would dominate a load test; /health counts them

        def _send(self, status: int, payload: Any) -> None:
            body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _answer(self, request: dict[str, Any]) -> None:
            started = time.perf_counter()
            if "queries" in request:
                queries, single = request["queries"], False
                if not isinstance(queries, list):
                    raise BadRequest("queries must be a list of strings")
            elif "query" in request or "q" in request:
                queries, single = [request.get("query", request.get("q"))], True
            else:
                raise BadRequest("give a query (q= or {'query': ...}) or {'queries': [...]}")
            k = _int(request.get("k"), "k", default_k)
            results = service.search(request.get("index"), queries, k, _flag(request.get("text")))
            took = round((time.perf_counter() - started) * 1000, 3)
            index = request.get("index") or service.default_index
            if single:
                self._send(HTTPStatus.OK, {"index": index, "k": k, "took_ms": took, **results[0]})
            else:
                self._send(HTTPStatus.OK, {"index": index, "k": k, "took_ms": took, "results": results})

        def _guarded(self, action: Any) -> None:
            try:
                action()
            except BadRequest as error:
                self._send(HTTPStatus.BAD_REQUEST, {"error": str(error)})
            except Exception as error:  # a failed search must not kill the server; the client learns why
                self._send(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"{type(error).__name__}: {error}"})

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            if url.path == "/health":
                self._send(HTTPStatus.OK, service.health())
            elif url.path == "/search":
                values = {key: items[-1] for key, items in parse_qs(url.query).items()}
                self._guarded(lambda: self._answer(values))
            else:
                self._send(HTTPStatus.NOT_FOUND, {"error": f"no route {url.path}; use /search or /health"})

        def do_POST(self) -> None:
            if urlsplit(self.path).path != "/search":
                self._send(HTTPStatus.NOT_FOUND, {"error": "POST /search"})
                return

            def answer() -> None:
                length = _int(self.headers.get("Content-Length"), "Content-Length", 0)
                if not 0 < length <= MAX_BODY:
                    raise BadRequest(f"a JSON body of 1 to {MAX_BODY} bytes is needed")
                try:
                    request = json.loads(self.rfile.read(length))
                except json.JSONDecodeError as error:
                    raise BadRequest(f"the body is not JSON: {error}") from None
                if not isinstance(request, dict):
                    raise BadRequest("the body must be a JSON object")
                self._answer(request)

            self._guarded(answer)

    return SearchHandler


def make_server(service: SearchService, host: str = "127.0.0.1", port: int = 8080) -> ThreadingHTTPServer:
    """A threaded HTTP server for ``service`` (``port`` 0: any free port, see ``server.server_port``)."""
    server = ThreadingHTTPServer((host, port), make_handler(service))
    server.daemon_threads = True
    return server
