"""``kiltpipe serve``: a snapshot's indices behind an HTTP search API (FastAPI on uvicorn), loaded once.

Every index named at start is opened and warmed up before the server answers (the JVM, the FAISS index,
the query encoder, the cross-encoder), so a query costs a search, not a cold start. The API (JSON; the
models and their limits at ``/openapi.json``, pages at ``/docs``):

- ``GET /search?q=TEXT&index=bm25&k=10[&collection=both][&text=0]``: one query; the hits as ``kiltpipe
  search`` prints them (each with its ``kind``: text, table, infobox or kb).
- ``POST /search`` with ``{"index": "dense", "k": 10, "queries": ["...", ...], "text": true}`` (or
  ``"query": "..."``; ``"collection"``: ``text``, the default, ``structured``, ``kb`` or ``both``): a
  batch, one ``{"query", "hits"}`` entry per query in order.
- ``GET /answer?q=TEXT`` and ``POST /answer``: questions answered from the QA-pair KB (:mod:`.answers`).
- ``GET /health``: the snapshot and its version, the open indices, the requests served.
- ``GET /metrics``: Prometheus text: requests by index and status, latency histograms per index, queue
  depth and batch sizes.
- ``POST /admin/reload`` (or ``SIGHUP``): open the snapshot again (the newest complete one, unless one was
  named) beside the one in use, swap it in when it is warm, and close the old one once its requests are
  answered. Until then every request is answered from the version loaded: a rebuild swapping a new version
  into the data dir does not disturb the server.

Queries of concurrent requests to one index are searched together (:mod:`.batching`); large POSTs are
split so single queries are not starved, and a query that fails is searched alone, so it fails only its
own request. Every bound is a setting of :mod:`assets.limits` (``limits.http``, ``limits.search``): bad
requests get a 4xx with the reason and the setting: a body over ``max_body_bytes``, nested deeper than
``max_json_depth`` or with a number longer than ``max_number_chars``, a query over ``max_query_chars``,
more than ``max_hits`` hits (queries x k; ``max_text_hits`` with text), so one request cannot take the
server's memory; a BM25 query over ``max_query_terms`` distinct terms is cut, and the answer says so
(``cut``). A batch's response is streamed. uvicorn's listen backlog is 2048; on SIGTERM or Ctrl-C it stops
taking requests, refuses the queued ones (503) and answers those in flight, or 503 when they are still
running as ``shutdown_seconds`` ends. Binds ``127.0.0.1`` unless told otherwise; admin routes answer
loopback clients (not a request a proxy forwarded for another client: RFC 7239 ``Forwarded`` and
``X-Forwarded-For`` are read), and others only with the admin token. Pure module: no Dagster import.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import signal
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import asdict
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from assets.indexes import key_of, split_searcher_key
from assets.limits import LimitExceeded, Limits, check_query
from assets.reading.serving.answers import add_answer_routes
from assets.reading.serving.batching import BATCH_QUERIES, BULK_CHUNK, BatcherClosed, IndexBatcher
from assets.reading.serving.protocol import (
    DEFAULT_LIMITS,
    NO_QUERY,
    BadRequest,
    ContentLengthCap,
    ErrorResponse,
    SearchRequest,
    SearchResponse,
    TooMuchWork,
    capped_body,
    flag,
    forwarded_for,
    is_loopback,
    off_loop,
    parse_int,
    parse_search_body,
    streamed_results,
    too_large,
)

STOP_SHARE = 0.6
"""After SIGTERM, a request still running after this share of ``limits.http.shutdown_seconds`` is
answered 503 (before uvicorn cancels what is left at the end of it)."""
ADMIN_TOKEN_HEADER = "authorization"
BACKLOG = 2048


class SearchService:
    """One retriever with its indices opened and warmed up (a version of the snapshot). ``owner``: what
    :meth:`close` closes instead of the retriever and the answerer (the :class:`~assets.reading.Snapshot`
    that handed them out, see :meth:`of`)."""

    def __init__(
        self, retriever: Any, indexes: Sequence[str], default_index: str | None = None, *, owner: Any = None
    ) -> None:
        if not indexes:
            raise ValueError("serve at least one index")
        self.retriever = retriever
        self.owner = owner
        self.indexes = list(dict.fromkeys(indexes))
        self.default_index = default_index or self.indexes[0]
        self.load_seconds: dict[str, float] = {}
        self.answerer: Any = None  # the QA-pair KB's (``/answer``), when the snapshot has one
        self._text_lock = threading.Lock()  # one provenance-store connection: one text lookup at a time
        for index in self.indexes:  # opened and warmed up (first JIT, first allocation) before serving
            began = time.perf_counter()
            retriever.open(index)
            retriever.with_text(retriever.batch_search(index, ["warm up"], 10))
            self.load_seconds[index] = round(time.perf_counter() - began, 3)
        self.loaded_at = time.time()

    def check(
        self,
        index: str | None,
        queries: Sequence[Any],
        k: int,
        with_text: bool = True,
        limits: Limits = DEFAULT_LIMITS,
        collection: str | None = None,
    ) -> str:
        """The searcher key to search (the index and the collection); :class:`BadRequest` naming what is
        wrong with the request, or :class:`TooMuchWork` when it asks for more than ``limits`` allow."""
        index = self.key(index, collection)
        if index not in self.indexes:
            raise BadRequest(f"index {index!r} is not served; served: {', '.join(self.indexes)}")
        if not 1 <= k <= limits.search.max_k:
            raise BadRequest(f"k must be between 1 and {limits.search.max_k} (limits.search.max_k), not {k}")
        if len(queries) > limits.http.max_queries:
            raise TooMuchWork(
                f"at most {limits.http.max_queries} queries per request (limits.http.max_queries), "
                f"not {len(queries)}"
            )
        for position, query in enumerate(queries):
            if not isinstance(query, str):
                raise BadRequest("queries must be strings")
            try:
                query.encode("utf-8")
                check_query(query, limits.search)
            except UnicodeEncodeError as error:
                raise BadRequest(
                    f"query {position} is not valid Unicode: {error.reason} at character {error.start}"
                ) from None
            except LimitExceeded as error:
                raise TooMuchWork(f"query {position}: {error}") from None
        most = (
            (limits.http.max_text_hits, "max_text_hits") if with_text else (limits.http.max_hits, "max_hits")
        )
        if len(queries) * k > most[0]:
            raise TooMuchWork(
                f"this request asks for {len(queries) * k:,} hits ({len(queries):,} queries x k={k}); "
                f"at most {most[0]:,} per request {'with' if with_text else 'without'} text "
                f"(limits.http.{most[1]}; limits: {limits.http.max_hits:,} hits, "
                f"{limits.http.max_text_hits:,} with text): send fewer queries per request, or a lower k"
                + ("" if not with_text else ', or "text": false')
            )
        return index

    def cuts(self, index: str, queries: list[str]) -> list[dict[str, int] | None]:
        """Per query, how the index cuts it (``{"terms", "of"}``: the distinct terms searched and those it
        had) or None: a BM25 query over ``limits.search.max_query_terms`` terms."""
        return self.retriever.query_cuts(index, queries)

    def key(self, index: str | None, collection: str | None) -> str:
        """The searcher key of a request's ``index`` and ``collection`` (:class:`BadRequest` if unknown)."""
        try:
            return key_of(index or self.default_index, collection)
        except ValueError as error:
            raise BadRequest(str(error)) from None

    def search_batch(self, index: str, queries: list[str], k: int, with_text: bool) -> list[list[Any]]:
        """One batch on one index (called from that index's worker thread)."""
        results = self.retriever.searcher(index).batch_search(queries, k, with_text=with_text)
        if with_text:  # the index fills title and text when it stores them (BM25); the rest from the store
            with self._text_lock:
                results = self.retriever.with_text(results)
        return results

    @classmethod
    def of(cls, snapshot: Any, indexes: Sequence[str], *, answers: bool = False) -> SearchService:
        """The service of an open :class:`~assets.reading.Snapshot`: its retriever, and with ``answers``
        its QA-pair answerer (``/answer``); closing the service closes the snapshot."""
        service = cls(snapshot.retriever, indexes, owner=snapshot)
        if answers:
            service.answerer = snapshot.answerer
        return service

    def close(self) -> None:
        if self.owner is not None:
            self.owner.close()
            return
        if self.answerer is not None:
            self.answerer.close()
        self.retriever.close()

    @property
    def snapshot_id(self) -> str:
        return self.retriever.paths.snapshot_id


class _Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "kiltpipe_requests", "Search requests", ["index", "status"], registry=self.registry
        )
        self.latency = Histogram(
            "kiltpipe_request_seconds",
            "Search request latency",
            ["index"],
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
            registry=self.registry,
        )
        self.queue = Gauge(
            "kiltpipe_queue_depth", "Queries waiting for a batch", ["index"], registry=self.registry
        )
        self.batch = Histogram(
            "kiltpipe_batch_queries",
            "Queries per search batch",
            ["index"],
            buckets=(1, 2, 4, 8, 16, 32, 64, 128),
            registry=self.registry,
        )


class _Generation:
    """A loaded service and its batchers: what requests are answered from until a reload swaps it."""

    def __init__(self, service: SearchService, metrics: _Metrics, max_batch: int, chunk: int) -> None:
        self.service = service
        self.batchers = {
            index: IndexBatcher(
                index,
                lambda queries, k, text, index=index: service.search_batch(index, queries, k, text),
                max_batch=max_batch,
                chunk=chunk,
                on_batch=lambda name, size, _seconds: metrics.batch.labels(name).observe(size),
            )
            for index in service.indexes
        }

    async def retire(self) -> None:
        for batcher in self.batchers.values():
            await batcher.drain()
        await asyncio.get_running_loop().run_in_executor(None, self.service.close)


class SearchApp:
    """The ASGI application over a :class:`SearchService`; ``load`` (a function that opens a new service)
    makes ``/admin/reload`` and ``SIGHUP`` work."""

    def __init__(
        self,
        service: SearchService,
        *,
        load: Callable[[], SearchService] | None = None,
        version: Callable[[SearchService], str | None] | None = None,
        max_batch: int = BATCH_QUERIES,
        chunk: int = BULK_CHUNK,
        limits: Limits = DEFAULT_LIMITS,
        admin_token: str | None = None,
    ) -> None:
        self.metrics = _Metrics()
        self.limits = limits
        self._loop: asyncio.AbstractEventLoop | None = None
        self.admin_token = admin_token
        self.max_batch, self.chunk = max_batch, chunk
        self.current = _Generation(service, self.metrics, max_batch, chunk)
        self.load = load
        self.version = version or (lambda _service: None)
        self.requests = 0
        self.reloads = 0
        self.started = time.time()
        self._reloading = asyncio.Lock()
        self.stopping: asyncio.Event | None = None  # set (in the server's loop) when SIGTERM arrives
        self._refusing: asyncio.Future | None = None  # done STOP_SHARE of shutdown_seconds after it
        self.api = self._build()

    async def _cuts(
        self, service: SearchService, index: str, queries: list[str]
    ) -> list[dict[str, int] | None]:
        """What the index cuts of each query: nothing where no query has characters enough for more terms
        than ``limits.search.max_query_terms`` (each term takes one), else asked off the event loop (an
        over-long query is analysed in Java)."""
        if all(len(query) <= self.limits.search.max_query_terms for query in queries):
            return [None] * len(queries)
        return await asyncio.get_running_loop().run_in_executor(None, service.cuts, index, queries)

    def stop(self) -> None:
        """The server is stopping (SIGTERM, Ctrl-C): requests still running after ``STOP_SHARE`` of
        ``limits.http.shutdown_seconds`` are answered 503 (thread-safe; :func:`server_for` calls it)."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._stop_now)

    def _stop_now(self) -> None:
        if self.stopping is None or self._refusing is None or self.stopping.is_set():
            return
        self.stopping.set()
        refusing = self._refusing
        grace = self.limits.http.shutdown_seconds * STOP_SHARE
        asyncio.get_running_loop().call_later(grace, lambda: refusing.done() or refusing.set_result(None))

    async def _answered_or_refused(self, work: Any) -> Any:
        """``work``'s result, or :class:`BatcherClosed` when the server stops before it is done."""
        if self._refusing is None:
            return await work
        task = asyncio.ensure_future(work)
        await asyncio.wait({task, self._refusing}, return_when=asyncio.FIRST_COMPLETED)  # one shared future
        if task.done():
            return task.result()
        task.cancel()
        raise BatcherClosed("the server is stopping; retry on the next one")

    # ------------------------------------------------------------------------------------- handlers
    async def _search(self, request: dict[str, Any], single: bool) -> Response:
        generation = self.current
        service = generation.service
        started = time.perf_counter()
        index_label = str(request.get("index") or service.default_index)
        status = 200
        try:
            queries = request["queries"]
            k = request["k"]
            index = service.check(
                request.get("index"), queries, k, request["text"], self.limits, request.get("collection")
            )
            index_label = index
            cuts = await self._cuts(service, index, queries)
            results = (
                await self._answered_or_refused(
                    generation.batchers[index].submit(queries, k, request["text"], heavy=any(cuts))
                )
                if queries
                else []
            )
            self.requests += 1
            took = round((time.perf_counter() - started) * 1000, 3)
            kind, collection = split_searcher_key(index)
            body: dict[str, Any] = {
                "index": kind,
                "collection": collection,
                "k": k,
                "took_ms": took,
            }
            if single:
                body.update({"query": queries[0], "hits": [hit.to_dict() for hit in results[0]]})
                if cuts[0]:
                    body["cut"] = cuts[0]
                return JSONResponse(body)
            return StreamingResponse(
                streamed_results(body, queries, results, cuts), media_type="application/json"
            )
        except BadRequest as error:
            status = error.status
            return JSONResponse({"error": str(error)}, status_code=error.status)
        except BatcherClosed as error:  # a reload swapped the index, or the server is stopping
            status = 503
            return JSONResponse({"error": str(error)}, status_code=503, headers={"Retry-After": "1"})
        except Exception as error:  # a failed search must not kill the server; the client learns why
            if self.stopping is not None and self.stopping.is_set():  # the searchers are closing
                status = 503
                return JSONResponse(
                    {"error": "the server is stopping; retry on the next one"},
                    status_code=503,
                    headers={"Retry-After": "1"},
                )
            status = 500
            return JSONResponse({"error": f"{type(error).__name__}: {error}"}, status_code=500)
        finally:
            label = index_label if index_label in service.indexes else "unknown"
            self.metrics.requests.labels(label, str(status)).inc()
            self.metrics.latency.labels(label).observe(time.perf_counter() - started)

    def _build(self) -> FastAPI:
        @contextlib.asynccontextmanager
        async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
            loop = asyncio.get_running_loop()
            self._loop, self.stopping, self._refusing = loop, asyncio.Event(), loop.create_future()
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # not the main thread
                loop.add_signal_handler(signal.SIGHUP, lambda: loop.create_task(self.reload()))
            yield
            self._stop_now()
            for batcher in self.current.batchers.values():  # queued work is refused, not searched
                await batcher.drain(timeout=self.limits.http.shutdown_seconds, cancel_waiting=True)

        api = FastAPI(
            title="kiltpipe serve",
            summary="Search a KILT snapshot's BM25, dense, hybrid and rerank indices.",
            lifespan=lifespan,
        )

        api.add_middleware(ContentLengthCap, limit=self.limits.http.max_body_bytes)

        self._add_search_routes(api)
        add_answer_routes(api, self)
        self._add_status_routes(api)
        return api

    def _add_search_routes(self, api: FastAPI) -> None:
        """``GET /search`` (one query) and ``POST /search`` (one query or a batch)."""

        @api.get(
            "/search",
            response_model=SearchResponse,
            responses={400: {"model": ErrorResponse}},
            summary="One query",
        )
        async def get_search(
            q: str | None = None,
            index: str | None = None,
            k: str | None = None,
            text: str | None = None,
            collection: str | None = None,
        ) -> JSONResponse:
            if q is None:
                return JSONResponse({"error": NO_QUERY}, 400)
            try:
                parsed_k = parse_int(k, "k", 10, self.limits.http.max_number_chars)
            except BadRequest as error:
                return JSONResponse({"error": str(error)}, 400)
            request = {
                "queries": [q],
                "index": index,
                "collection": collection,
                "k": parsed_k,
                "text": flag(text),
            }
            return await self._search(request, single=True)

        @api.post(
            "/search",
            response_model=SearchResponse,
            responses={400: {"model": ErrorResponse}, 413: {"model": ErrorResponse}},
            summary="One query or a batch",
            openapi_extra={
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": SearchRequest.model_json_schema()}},
                }
            },
        )
        async def post_search(request: Request) -> JSONResponse:
            raw = await capped_body(request, self.limits.http.max_body_bytes)
            if raw is None:
                return JSONResponse(too_large(self.limits.http.max_body_bytes), 413)
            if not raw:
                return JSONResponse({"error": "a JSON body is needed"}, 400)
            try:
                parsed = await off_loop(parse_search_body, raw, self.limits)
            except BadRequest as error:
                return JSONResponse({"error": str(error)}, 400)
            return await self._search(parsed, single="queries" not in parsed["given"])

    def _add_status_routes(self, api: FastAPI) -> None:
        """``/health``, ``/metrics``, ``/admin/reload`` and the answer to an unknown route."""

        @api.get("/health", summary="The snapshot served and what was answered")
        async def health() -> dict[str, Any]:
            service = self.current.service
            return {
                "status": "ok",
                "snapshot_id": service.snapshot_id,
                "version": self.version(service),
                "indexes": service.indexes,
                "default_index": service.default_index,
                "load_seconds": service.load_seconds,
                "loaded_at": service.loaded_at,
                "reloads": self.reloads,
                "requests": self.requests,
                "uptime_seconds": round(time.time() - self.started, 1),
                "batches": {name: asdict(b.stats) for name, b in self.current.batchers.items()},
            }

        @api.get("/metrics", summary="Prometheus metrics")
        async def metrics() -> Response:
            for name, batcher in self.current.batchers.items():
                self.metrics.queue.labels(name).set(batcher.waiting)
            return Response(generate_latest(self.metrics.registry), media_type=CONTENT_TYPE_LATEST)

        @api.post("/admin/reload", summary="Open the snapshot again and swap it in")
        async def reload(request: Request) -> JSONResponse:
            refused = self._admin_refusal(request)
            if refused is not None:
                return JSONResponse({"error": refused}, 403)
            try:
                return JSONResponse(await self.reload())
            except Exception as error:
                return JSONResponse({"error": f"reload failed, still serving: {error}"}, 500)

        @api.exception_handler(404)
        async def not_found(request: Request, _error: Exception) -> JSONResponse:
            return JSONResponse(
                {"error": f"no route {request.url.path}; use /search, /answer or /health"}, 404
            )

    def _admin_refusal(self, request: Request) -> str | None:
        """Why ``request`` may not use an admin route (None: it may): a client on this machine may; any
        other needs ``Authorization: Bearer <admin token>``, and none may when the server has no token."""
        presented = request.headers.get(ADMIN_TOKEN_HEADER, "")
        if self.admin_token and secrets.compare_digest(presented, f"Bearer {self.admin_token}"):
            return None
        client = request.client.host if request.client else ""
        if is_loopback(client) and all(is_loopback(hop) for hop in forwarded_for(request.headers)):
            return None
        if not self.admin_token:
            return (
                "admin routes answer clients on this machine only; start the server with --admin-token "
                "(or $KILT_ADMIN_TOKEN) to allow others"
            )
        return "admin routes need the header 'Authorization: Bearer <admin token>'"

    async def reload(self) -> dict[str, Any]:
        """Open a new service beside the one in use, swap it in, retire the old one (module docstring)."""
        if self.load is None:
            raise RuntimeError("this server was started without a way to reload")
        async with self._reloading:
            loop = asyncio.get_running_loop()
            new_service = await loop.run_in_executor(None, self.load)
            old = self.current
            self.current = _Generation(new_service, self.metrics, self.max_batch, self.chunk)
            self.reloads += 1
            await old.retire()
            return {
                "snapshot_id": new_service.snapshot_id,
                "version": self.version(new_service),
                "previous": {"snapshot_id": old.service.snapshot_id, "version": self.version(old.service)},
                "load_seconds": new_service.load_seconds,
            }


def bind(host: str = "127.0.0.1", port: int = 8080, backlog: int = BACKLOG) -> socket.socket:
    """A listening socket (``port`` 0: any free port) with a real backlog, for :func:`run`."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(backlog)
    sock.set_inheritable(True)
    return sock


def server_for(app: SearchApp, sock: socket.socket) -> Any:
    """A uvicorn server for ``app`` on ``sock`` (run it with ``server.run(sockets=[sock])``); SIGTERM or
    Ctrl-C tell ``app`` first, so the requests in flight are answered or refused with a 503 (never cut by
    uvicorn's own cancel, which answers 500)."""
    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            app.stop()
            super().handle_exit(sig, frame)

    config = uvicorn.Config(
        app.api,
        backlog=BACKLOG,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=app.limits.http.shutdown_seconds,
        timeout_keep_alive=30,
        lifespan="on",
    )
    return Server(config)


@contextlib.contextmanager
def serving_in_thread(app: SearchApp, host: str = "127.0.0.1") -> Any:
    """Serve ``app`` on a free port from a thread of this process (tests, benchmarks): yields the base
    URL, and stops the server gracefully at the end."""
    sock = bind(host, 0)
    server = server_for(app, sock)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the search server did not start")
        time.sleep(0.01)
    try:
        yield f"http://{host}:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
