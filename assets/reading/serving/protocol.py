"""The search API's requests and answers: their models (OpenAPI), the body parsed within ``limits.http``
(:func:`parse_search_body`, :func:`assets.limits.bounded_json`), values checked as they are read, a
batch's answer written in pieces, and who a request comes from (:func:`forwarded_for`,
:func:`is_loopback`). Pure module: no Dagster import."""

from __future__ import annotations

import asyncio
import ipaddress
import json
from collections.abc import Callable, Iterator
from typing import Any

from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from assets.indexes import DEFAULT_COLLECTION
from assets.limits import LimitExceeded, Limits, bounded_json

__all__ = [
    "DEFAULT_LIMITS",
    "NO_QUERY",
    "BadRequest",
    "ContentLengthCap",
    "ErrorResponse",
    "SearchRequest",
    "SearchResponse",
    "SearchResult",
    "TooMuchWork",
    "capped_body",
    "compact_json",
    "flag",
    "forwarded_for",
    "is_loopback",
    "off_loop",
    "parse_int",
    "parse_search_body",
    "streamed_results",
    "too_large",
]

DEFAULT_LIMITS = Limits()
STREAM_RESULTS = 256
"""A batch's response is written in pieces of this many queries' results."""
INLINE_BODY_BYTES = 64 * 1024
"""A request body up to this size is parsed on the event loop (microseconds); a larger one in a worker
thread, so a large body never holds up the other clients' requests."""
NO_QUERY = "give a query (q= or {'query': ...}) or {'queries': [...]}"


class BadRequest(ValueError):
    """A request the API cannot answer (400, with this message)."""

    status = 400


class TooMuchWork(BadRequest):
    """A request over the work one request may ask for (413, naming the limit)."""

    status = 413


class SearchRequest(BaseModel):
    """The body of ``POST /search``: ``query`` or ``queries``."""

    query: str | None = Field(None, description="one query (or use queries)")
    queries: list[str] | None = Field(
        None, max_length=DEFAULT_LIMITS.http.max_queries, description="a batch of queries"
    )
    index: str | None = Field(None, description="a served index (default: the first served)")
    collection: str | None = Field(
        None, description="text (default: the text passages), structured (tables, infoboxes) or both"
    )
    k: int = Field(10, ge=1, le=DEFAULT_LIMITS.search.max_k, description="hits per query")
    text: bool = Field(True, description="include each hit's title and text")


class SearchResult(BaseModel):
    query: str
    hits: list[dict[str, Any]]


class SearchResponse(BaseModel):
    """One query: ``query`` and ``hits``; a batch: ``results``."""

    index: str
    collection: str = DEFAULT_COLLECTION
    k: int
    took_ms: float
    query: str | None = None
    hits: list[dict[str, Any]] | None = None
    results: list[SearchResult] | None = None


class ErrorResponse(BaseModel):
    error: str


def too_large(limit: int) -> dict[str, str]:
    return {"error": f"the body is over {limit:,} bytes (limits.http.max_body_bytes)"}


async def capped_body(request: Any, limit: int) -> bytes | None:
    """A request's body read as it comes (one without Content-Length too); None once it is over ``limit``
    bytes (answer :func:`too_large`): nothing past the limit is read."""
    raw = bytearray()
    async for piece in request.stream():
        raw += piece
        if len(raw) > limit:
            return None
    return bytes(raw)


class ContentLengthCap:
    """ASGI middleware: a 413 before reading a body whose Content-Length is over ``limit`` bytes (a pure
    ASGI class: Starlette's ``@middleware("http")`` costs a task and two streams per request)."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            for name, value in scope["headers"]:
                if name == b"content-length" and value.isdigit() and int(value) > self.limit:
                    await JSONResponse(too_large(self.limit), 413)(scope, receive, send)
                    return
        await self.app(scope, receive, send)


def streamed_results(
    head: dict[str, Any], queries: list[str], results: list[list[Any]], cuts: list[dict[str, int] | None]
) -> Iterator[bytes]:
    """A batch's response body in pieces of :data:`STREAM_RESULTS` queries (the whole body is never one
    string in memory); a query the index cut carries ``cut``."""
    opening = compact_json(head)[:-1]
    yield f'{opening},"results":['.encode()
    for start in range(0, len(queries), STREAM_RESULTS):
        end = start + STREAM_RESULTS
        piece = [
            {"query": query, "hits": [hit.to_dict() for hit in hits], **({"cut": cut} if cut else {})}
            for query, hits, cut in zip(queries[start:end], results[start:end], cuts[start:end], strict=True)
        ]
        yield ("," if start else "").encode() + compact_json(piece)[1:-1].encode()
    yield b"]}"


async def off_loop(parse: Callable[[bytes, Any], Any], raw: bytes, limits: Any) -> Any:
    """``parse(raw, limits)``: at once for a small body, in a worker thread for one over
    :data:`INLINE_BODY_BYTES` (its bounds check and JSON parse then run beside the event loop)."""
    if len(raw) <= INLINE_BODY_BYTES:
        return parse(raw, limits)
    return await asyncio.to_thread(parse, raw, limits)


def compact_json(value: Any) -> str:
    """JSON as ``JSONResponse`` writes it (no spaces, no NaN)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def flag(value: Any, default: bool = True) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    return str(value).lower() not in ("0", "false", "no", "off")


def parse_int(value: Any, name: str, default: int, max_chars: int) -> int:
    if value is None:
        return default
    if isinstance(value, str) and len(value) > max_chars:
        raise BadRequest(
            f"{name} must be an integer of at most {max_chars} characters (limits.http.max_number_chars)"
        )
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise BadRequest(f"{name} must be an integer, not {value!r}")
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        raise BadRequest(f"{name} must be an integer, not {value!r}") from None


def parse_search_body(raw: bytes, limits: Limits) -> dict[str, Any]:
    """A POST body as ``{"queries", "index", "k", "text", "given", "body"}`` (``body``: all of it);
    :class:`BadRequest` saying what is wrong (a body over the JSON bounds of ``limits.http`` is one,
    checked before it is parsed)."""
    try:
        body = bounded_json(raw, limits.http)
    except LimitExceeded as error:
        raise BadRequest(str(error)) from None
    except (ValueError, RecursionError) as error:  # JSONDecodeError, UnicodeDecodeError, NaN/Infinity
        raise BadRequest(f"the body is not JSON: {error}") from None
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    if "queries" in body:
        queries = body["queries"]
        if not isinstance(queries, list):
            raise BadRequest("queries must be a list of strings")
    elif "query" in body or "q" in body:
        queries = [body.get("query", body.get("q"))]
    else:
        raise BadRequest(NO_QUERY)
    index = body.get("index")
    if index is not None and not isinstance(index, str):
        raise BadRequest(f"index must be a string, not {index!r}")
    collection = body.get("collection")
    if collection is not None and not isinstance(collection, str):
        raise BadRequest(f"collection must be a string, not {collection!r}")
    return {
        "queries": queries,
        "index": index,
        "collection": collection,
        "k": parse_int(body.get("k"), "k", 10, limits.http.max_number_chars),
        "text": flag(body.get("text")),
        "given": set(body),
        "body": body,
    }


def forwarded_for(headers: Any) -> list[str]:
    """The clients a proxy says it forwarded the request for: every ``for=`` of RFC 7239 ``Forwarded``
    headers and every address of ``X-Forwarded-For`` (ports, brackets and quotes stripped; ``unknown`` and
    obfuscated names kept as they are, so they are never taken for this machine)."""
    hops = []
    for value in headers.getlist("forwarded"):
        for element in value.split(","):
            for pair in element.split(";"):
                name, _, token = pair.strip().partition("=")
                if name.strip().lower() == "for":
                    hops.append(_address(token.strip().strip('"')))
    for value in headers.getlist("x-forwarded-for"):
        hops += [_address(hop.strip()) for hop in value.split(",")]
    return hops


def _address(node: str) -> str:
    """An RFC 7239 node (``192.0.2.1:80``, ``[2001:db8::1]:80``, ``unknown``) without its port."""
    if node.startswith("["):
        return node[1 : node.find("]")] if "]" in node else node
    if node.count(":") == 1:
        return node.partition(":")[0]
    return node


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is this machine's loopback interface."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
