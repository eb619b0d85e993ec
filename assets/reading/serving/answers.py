"""``/answer`` of ``kiltpipe serve``: questions answered from the snapshot's QA-pair KB (RePAQ), as
``kiltpipe answer`` answers them.

- ``GET /answer?q=TEXT[&index=dense][&k=5][&abstain_below=0.8][&fallback=bm25]``: one question.
- ``POST /answer`` with ``{"query": "..."}`` or ``{"queries": [...]}`` and the same options: one record per
  question, in order.

The answerer (``service.answerer``: an object with ``answer(questions, index=, k=, abstain_below=,
fallback=)``, :class:`assets.qa.QAAnswerer`) is the service's, opened with it; a snapshot without a QA KB
answers 404. The request is bounded as a search is (``limits.http``, ``limits.search``: the questions, k,
the body), ``abstain_below`` is a confidence in [0, 1], ``fallback`` a served index. Answers run one
request at a time, off the event loop. Pure module: no Dagster import.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

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

__all__ = ["add_answer_routes"]

QA_COLLECTION = "qa"


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
    """Add ``GET`` and ``POST /answer`` to ``api`` over ``app`` (a :class:`~.server.SearchApp`)."""
    lock = threading.Lock()  # one answer at a time: the answerer's store connection is one

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
            options = {"index": index, "k": request["k"], "abstain_below": request["abstain_below"]}

            def run() -> list[dict[str, Any]]:
                with lock:
                    return answerer.answer(request["queries"], fallback=fallback, **options)

            records = await asyncio.get_running_loop().run_in_executor(None, run)
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
