"""kiltpipe serve: a snapshot's indices behind an HTTP search API.

FastAPI on uvicorn; the queries of concurrent requests to one index are searched as one batch
(:mod:`~assets.reading.serving.batching`), what a request may carry is bounded (:mod:`assets.limits`).
"""

from __future__ import annotations

from assets.reading.serving.batching import BULK_CHUNK, IndexBatcher
from assets.reading.serving.protocol import BadRequest, is_loopback, parse_search_body
from assets.reading.serving.server import (
    SearchApp,
    SearchService,
    bind,
    server_for,
    serving_in_thread,
)

__all__ = [
    "BULK_CHUNK",
    "BadRequest",
    "IndexBatcher",
    "SearchApp",
    "SearchService",
    "bind",
    "is_loopback",
    "parse_search_body",
    "server_for",
    "serving_in_thread",
]
