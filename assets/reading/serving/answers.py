"""``/answer`` of ``kiltpipe serve``: questions answered from the snapshot's QA-pair KB (RePAQ), as
``kiltpipe answer`` answers them.

- ``GET /answer?q=TEXT[&index=dense][&k=5][&abstain_below=0.8][&fallback=bm25]``: one question.
- ``POST /answer`` with ``{"query": "..."}`` or ``{"queries": [...]}`` and the same options: one record per
  question, in order.

The answerer (``service.answerer``: an object with ``answer(questions, index=, k=, abstain_below=,
fallback=)``, :class:`assets.qa.QAAnswerer`) is the service's, opened with it; a snapshot without a QA KB
answers 404. The request is bounded as a search is (``limits.http``, ``limits.search``: the questions, k,
the body), ``abstain_below`` is a confidence in [0, 1], ``fallback`` a served index.

The questions of concurrent requests that ask the same way (index, k, abstain_below, fallback) are answered
together (:class:`AnswerBatcher`): one worker thread, off the event loop, runs one batch at a time (the
answerer's store connection is one), so the encoder sees every waiting question at once and no request
holds a lock while others queue behind it. A batch that fails is answered again request by request, so
only the request whose question fails learns of it. Pure module: no Dagster import.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from assets.reading.serving.batching import settle
from assets.reading.serving.protocol import (
    NO_QUERY,
    BadRequest,
    capped_body,
    compact_json,
    off_loop,
    parse_int,
    parse_search_body,
    too_large,
)

__all__ = ["ANSWER_BATCH", "AnswerBatcher", "add_answer_routes"]

QA_COLLECTION = "qa"
ANSWER_BATCH = 256
"""Questions answered in one batch, at most (a request with more is answered in several)."""


@dataclass(slots=True)
class _Ask:
    questions: list[str]
    options: tuple[tuple[str, Hashable], ...]
    future: asyncio.Future


class AnswerBatcher:
    """The questions of concurrent ``/answer`` requests, answered in batches of requests asking the same
    way (see the module's docstring). ``answer``: ``(questions, **options) -> records`` in order."""

    def __init__(self, answer: Callable[..., list[dict[str, Any]]], max_batch: int = ANSWER_BATCH) -> None:
        self.answer = answer
        self.max_batch = max_batch
        self.waiting: deque[_Ask] = deque()
        self.batches = 0
        self.largest = 0
        self.running = 0
        self._wake: asyncio.Event | None = None
        self._worker: asyncio.Task | None = None
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="answers")

    async def submit(self, questions: list[str], **options: Hashable) -> list[dict[str, Any]]:
        """The records of ``questions``, answered with the other waiting requests that ask the same way."""
        loop = asyncio.get_running_loop()
        if self._wake is None:
            self._wake = asyncio.Event()
            self._worker = loop.create_task(self._run(), name="answer-batcher")
        key = tuple(sorted(options.items()))
        asks = [
            _Ask(questions[i : i + self.max_batch], key, loop.create_future())
            for i in range(0, len(questions), self.max_batch)
        ] or [_Ask([], key, loop.create_future())]
        self.waiting.extend(asks)
        self._wake.set()
        results = await asyncio.gather(*(ask.future for ask in asks))
        return [record for part in results for record in part]

    def _take(self) -> list[_Ask]:
        """The first waiting request and the others asking the same way, up to ``max_batch`` questions."""
        first = self.waiting.popleft()
        taken, size, rest = [first], len(first.questions), deque()
        while self.waiting:
            ask = self.waiting.popleft()
            if ask.options == first.options and size + len(ask.questions) <= self.max_batch:
                taken.append(ask)
                size += len(ask.questions)
            else:
                rest.append(ask)
        self.waiting = rest
        return taken

    async def _run(self) -> None:
        assert self._wake is not None
        loop = asyncio.get_running_loop()
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self.waiting:
                asks = self._take()
                self.running += 1
                try:
                    answered = await loop.run_in_executor(self._thread, self._isolated, asks)
                finally:
                    self.running -= 1
                self.batches += 1
                self.largest = max(self.largest, sum(len(ask.questions) for ask in asks))
                settle([ask.future for ask in asks], answered)

    def _isolated(self, asks: list[_Ask]) -> list[list[dict[str, Any]] | Exception]:
        """The records of each request; when the batch fails, each request is answered alone."""
        try:
            return self._answer(asks)
        except Exception as error:
            if len(asks) == 1:
                return [error]
        answered: list[list[dict[str, Any]] | Exception] = []
        for ask in asks:
            try:
                answered.extend(self._answer([ask]))
            except Exception as error:
                answered.append(error)
        return answered

    def _answer(self, asks: list[_Ask]) -> list[list[dict[str, Any]]]:
        questions = [q for ask in asks for q in ask.questions]
        records = self.answer(questions, **dict(asks[0].options)) if questions else []
        out, offset = [], 0
        for ask in asks:
            out.append(records[offset : offset + len(ask.questions)])
            offset += len(ask.questions)
        return out

    async def close(self, wait: bool = False, timeout: float = 60.0) -> None:
        """Stop the worker: with ``wait``, once the waiting requests are answered (at most ``timeout``
        seconds); the requests still waiting then are refused."""
        deadline = time.monotonic() + timeout
        while wait and (self.waiting or self.running) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        for ask in self.waiting:
            if not ask.future.done():
                ask.future.set_exception(RuntimeError("the server is shutting down; retry later"))
        self.waiting.clear()
        if self._worker is not None:
            self._worker.cancel()
        self._thread.shutdown(wait=False)


def _threshold(value: Any, max_chars: int) -> float | None:
    """``abstain_below`` as given in a URL (a string) or a JSON body (a number): a confidence in [0, 1];
    a string over ``max_chars`` characters and a JSON ``true``/``false`` are refused, not read as 1.0/0.0."""
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise BadRequest(f"abstain_below must be a number in [0, 1], not {compact_json(value)[:40]}")
    if isinstance(value, str) and len(value) > max_chars:
        raise BadRequest(
            f"abstain_below must be a number of at most {max_chars} characters, not one of {len(value):,} "
            "(limits.http.max_number_chars)"
        )
    try:
        number = float(value)
    except ValueError:
        raise BadRequest(f"abstain_below must be a number in [0, 1], not {value!r}") from None
    if not 0.0 <= number <= 1.0:
        raise BadRequest(f"abstain_below must be between 0 and 1 (a confidence), not {number}")
    return number


def _post_request(raw: bytes, limits: Any) -> dict[str, Any]:
    """A ``POST /answer`` body as the request :func:`add_answer_routes` answers (:class:`BadRequest` saying
    what is wrong)."""
    if not raw:
        raise BadRequest("a JSON body is needed")
    parsed = parse_search_body(raw, limits)
    body = parsed["body"]
    fallback = body.get("fallback")
    if fallback is not None and not isinstance(fallback, str):
        raise BadRequest(f"fallback must be an index name, not {fallback!r}")
    return {
        "queries": parsed["queries"],
        "index": parsed["index"],
        "k": parse_int(body.get("k"), "k", 5, limits.http.max_number_chars),
        "abstain_below": _threshold(body.get("abstain_below"), limits.http.max_number_chars),
        "fallback": fallback,
        "single": "queries" not in parsed["given"],
    }


def add_answer_routes(api: FastAPI, app: Any) -> None:
    """Add ``GET`` and ``POST /answer`` to ``api`` over ``app`` (a :class:`~.server.SearchApp`): the
    questions go through the answerer's :class:`AnswerBatcher` (one per answerer: a reload brings its own)."""
    batchers: dict[int, tuple[Any, AnswerBatcher]] = {}
    app.answer_batchers = batchers  # what /answer batched: read by the tests and /health's readers

    def batcher_of(answerer: Any) -> AnswerBatcher:
        found = batchers.get(id(answerer))
        if found is None or found[0] is not answerer:
            for _, old in batchers.values():  # the previous answerer's (a reload): its work ends, then it
                asyncio.get_running_loop().create_task(old.close(wait=True))
            batchers.clear()
            found = batchers[id(answerer)] = (answerer, AnswerBatcher(answerer.answer))
        return found[1]

    async def answer(request: dict[str, Any]) -> JSONResponse:
        service = app.current.service
        answerer = getattr(service, "answerer", None)
        if answerer is None:
            return JSONResponse(
                {"error": f"snapshot {service.snapshot_id} has no QA-pair KB (qa.files; kiltpipe build)"}, 404
            )
        started = time.perf_counter()
        try:
            index = request["index"] or "dense"
            service.check(index, request["queries"], request["k"], True, app.limits, QA_COLLECTION)
            fallback = request["fallback"]
            if fallback is not None and service.key(fallback, None) not in service.indexes:
                raise BadRequest(f"fallback {fallback!r} is not served; served: {', '.join(service.indexes)}")
            records = await batcher_of(answerer).submit(
                list(request["queries"]),
                index=index,
                k=request["k"],
                abstain_below=request["abstain_below"],
                fallback=fallback,
            )
        except BadRequest as error:
            return JSONResponse({"error": str(error)}, status_code=error.status)
        app.requests += 1
        took = round((time.perf_counter() - started) * 1000, 3)
        if request["single"]:
            return JSONResponse({**records[0], "took_ms": took})
        return JSONResponse({"took_ms": took, "answers": records})

    @api.get("/answer", summary="Answer one question from the QA-pair KB")
    async def get_answer(
        q: str | None = None,
        index: str | None = None,
        k: str | None = None,
        abstain_below: str | None = None,
        fallback: str | None = None,
    ) -> JSONResponse:
        if q is None:
            return JSONResponse({"error": NO_QUERY}, 400)
        try:
            request = {
                "queries": [q],
                "index": index,
                "k": parse_int(k, "k", 5, app.limits.http.max_number_chars),
                "abstain_below": _threshold(abstain_below, app.limits.http.max_number_chars),
                "fallback": fallback or None,
                "single": True,
            }
        except BadRequest as error:
            return JSONResponse({"error": str(error)}, 400)
        return await answer(request)

    @api.post("/answer", summary="Answer one question or a batch from the QA-pair KB")
    async def post_answer(request: Request) -> JSONResponse:
        raw = await capped_body(request, app.limits.http.max_body_bytes)
        if raw is None:
            return JSONResponse(too_large(app.limits.http.max_body_bytes), 413)
        try:
            wanted = await off_loop(_post_request, raw, app.limits)
        except BadRequest as error:
            return JSONResponse({"error": str(error)}, 400)
        return await answer(wanted)
