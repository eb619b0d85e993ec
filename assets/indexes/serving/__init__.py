"""kiltpipe serve: a snapshot's indices behind an HTTP search API.

``kiltpipe serve``: a snapshot's indices behind an HTTP search API (FastAPI on uvicorn), the queries of
concurrent requests to one index searched as one batch (:mod:`~assets.indexes.serving.batching`).
"""

from __future__ import annotations

from assets.indexes.serving.server import SearchApp, SearchService, bind, is_loopback, server_for

__all__ = ["SearchApp", "SearchService", "bind", "is_loopback", "server_for"]
