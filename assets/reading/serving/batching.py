"""Dynamic batching of search requests: the queries of concurrent requests to one index run as one batch.

Each index has one :class:`IndexBatcher` and one worker thread. While a batch runs, new requests wait in
two queues; when it ends, the next batch takes every waiting *interactive* request (up to ``max_batch``
queries), or else chunks of *bulk* requests (those of more than ``chunk`` queries, split into chunks of
``chunk``), never more than ``chunk`` queries in a batch that holds bulk ones. A *heavy* request (its
queries cut to the index's limit: a BM25 query of 1,024 terms costs a hundred normal ones) goes with the
bulk work, one query per batch, so interactive batches run between its queries and never wait for more
than one of them. A batch that fails is searched again job by job, so only the request whose query fails
learns of it. So a dense encoder sees
many queries at once under load (throughput), and a 10,000-query POST cannot hold the index: a single
query waits for at most one short batch. Requests that ask for different ``k`` or text share a batch (the
deepest ``k`` is searched, each request gets its own cut).

A lone client's query starts at once. Under concurrent load, clients whose answers a batch just sent come
back within a millisecond or two; a batch that started without them would leave them to the next one, and
the load would settle into two half-full batches taking turns. So before a batch starts, when fewer
requests wait than were in flight at the peak of the last second, the worker waits for the rest, at most
``max_wait`` seconds and at most half the last batch's time (never while bulk work waits).

Pure module: no Dagster or web import.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

BATCH_QUERIES = 64
"""Queries of interactive requests in one batch, at most."""
BULK_CHUNK = 16
"""Bulk requests (more queries than this) are searched in chunks of this many queries."""
MAX_WAIT = 0.004
"""Seconds a batch may wait for the clients the recent load says are coming back."""
PEAK_WINDOW = 1.0
"""Seconds over which the peak of requests in flight is remembered."""

SearchBatch = Callable[[list[str], int, bool], list[list[Any]]]
"""``(queries, k, with_text) -> hits per query``: one call of an index's batch search."""


def settle(futures: Sequence[asyncio.Future], results: Sequence[Any]) -> None:
    """Each waiting request's future given its result, or its exception where the result is one (a future
    already done, a request that went away, is left as it is)."""
    for future, result in zip(futures, results, strict=True):
        if future.done():
            continue
        if isinstance(result, BaseException):
            future.set_exception(result)
        else:
            future.set_result(result)


class BatcherClosed(RuntimeError):
    """The index's batcher takes no more requests (the index is being replaced, or the server stops)."""


@dataclass(slots=True)
class _Job:
    queries: list[str]
    k: int
    with_text: bool
    future: asyncio.Future
    bulk: bool
    heavy: bool = False


@dataclass(slots=True)
class BatchStats:
    """What an index's batcher did: batches run, queries in them, the largest batch."""

    batches: int = 0
    queries: int = 0
    largest: int = 0


class IndexBatcher:
    """The queue and worker of one index (see the module docstring)."""

    def __init__(
        self,
        index: str,
        search: SearchBatch,
        *,
        max_batch: int = BATCH_QUERIES,
        chunk: int = BULK_CHUNK,
        max_wait: float = MAX_WAIT,
        on_batch: Callable[[str, int, float], None] | None = None,
    ) -> None:
        self.index = index
        self.search = search
        self.max_batch = max_batch
        self.chunk = chunk
        self.max_wait = max_wait
        self.on_batch = on_batch
        self.interactive: deque[_Job] = deque()
        self.bulk: deque[_Job] = deque()
        self.stats = BatchStats()
        self.running = 0
        self.in_flight = 0  # requests submitted and not yet answered
        self._peaks: deque[tuple[float, int]] = deque()  # (time, requests in flight) at each submit
        self._last_batch_seconds = 0.0
        self._wake = asyncio.Event()
        self._worker: asyncio.Task | None = None
        self._thread = ThreadPoolExecutor(1, thread_name_prefix=f"search-{index}")
        self._closed = False

    @property
    def waiting(self) -> int:
        """Queries queued (not yet in a batch)."""
        return sum(len(j.queries) for j in self.interactive) + sum(len(j.queries) for j in self.bulk)

    def start(self) -> None:
        if self._worker is None:
            self._worker = asyncio.get_running_loop().create_task(self._run(), name=f"batcher-{self.index}")

    async def submit(
        self, queries: Sequence[str], k: int, with_text: bool, heavy: bool = False
    ) -> list[list[Any]]:
        """The hits of ``queries`` (in order), searched in batches with other requests' queries;
        ``heavy``: with the bulk work, a query per batch (see the module docstring)."""
        if self._closed:
            raise BatcherClosed(f"the {self.index} index is being replaced; retry")
        self.start()
        loop = asyncio.get_running_loop()
        queries = list(queries)
        bulk = heavy or len(queries) > self.chunk
        size = 1 if heavy else self.chunk
        jobs = [
            _Job(queries[i : i + size], k, with_text, loop.create_future(), bulk, heavy)
            for i in range(0, len(queries), size)
        ]
        (self.bulk if bulk else self.interactive).extend(jobs)
        self.in_flight += 1
        self._peaks.append((time.monotonic(), self.in_flight))
        self._wake.set()
        try:
            results = await asyncio.gather(*(job.future for job in jobs))
        finally:
            self.in_flight -= 1
        return [hits for chunk in results for hits in chunk]

    def expected_requests(self) -> int:
        """The most requests in flight at once over the last ``PEAK_WINDOW`` seconds."""
        horizon = time.monotonic() - PEAK_WINDOW
        while self._peaks and self._peaks[0][0] < horizon:
            self._peaks.popleft()
        return max((count for _, count in self._peaks), default=0)

    async def _gather(self) -> None:
        """Before a batch: wait (briefly) for the clients that were in flight with the waiting ones."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + min(self.max_wait, self._last_batch_seconds / 2)
        while (
            not self.bulk
            and len(self.interactive) < self.expected_requests()
            and self.waiting < self.max_batch
        ):
            remaining = deadline - loop.time()
            if remaining <= 0:
                return
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), remaining)

    def _take(self) -> list[_Job]:
        """Waiting interactive requests (up to ``max_batch`` queries); else bulk chunks (up to ``chunk``)."""
        taken: list[_Job] = []
        size = 0
        queue, limit = (self.interactive, self.max_batch) if self.interactive else (self.bulk, self.chunk)
        while queue and (not taken or (size + len(queue[0].queries) <= limit and not queue[0].heavy)):
            job = queue.popleft()
            taken.append(job)
            size += len(job.queries)
            if job.heavy:  # alone in its batch
                break
        return taken

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self.interactive or self.bulk:
                await self._gather()
                jobs = self._take()
                self.running += 1
                try:
                    started = time.perf_counter()
                    answers = await loop.run_in_executor(self._thread, self._isolated, jobs)
                    size = sum(len(j.queries) for j in jobs)
                    self._last_batch_seconds = time.perf_counter() - started
                    self.stats.batches += 1
                    self.stats.queries += size
                    self.stats.largest = max(self.stats.largest, size)
                    if self.on_batch is not None:
                        self.on_batch(self.index, size, time.perf_counter() - started)
                    settle([job.future for job in jobs], answers)
                except Exception as error:  # every request of the batch learns why
                    for job in jobs:
                        if not job.future.done():
                            job.future.set_exception(error)
                finally:
                    self.running -= 1

    def _isolated(self, jobs: list[_Job]) -> list[list[list[Any]] | Exception]:
        """The answers of a batch's jobs; when the batch fails, each job is searched alone, so a query that
        fails (or puts the searcher in a bad state for its batch) fails its own request only."""
        try:
            return list(self._search_jobs(jobs))
        except Exception as error:
            if len(jobs) == 1:
                return [error]
        answers: list[list[list[Any]] | Exception] = []
        for job in jobs:
            try:
                answers.extend(self._search_jobs([job]))
            except Exception as error:
                answers.append(error)
        return answers

    def _search_jobs(self, jobs: list[_Job]) -> list[list[list[Any]]]:
        """One search per (with_text) group at the deepest ``k`` asked; each job gets its own cut."""
        answers: dict[int, list[list[Any]]] = {}
        for with_text in (False, True):
            group = [i for i, job in enumerate(jobs) if job.with_text == with_text]
            if not group:
                continue
            queries = [q for i in group for q in jobs[i].queries]
            hits = self.search(queries, max(jobs[i].k for i in group), with_text)
            offset = 0
            for i in group:
                count = len(jobs[i].queries)
                answers[i] = [h[: jobs[i].k] for h in hits[offset : offset + count]]
                offset += count
        return [answers[i] for i in range(len(jobs))]

    async def drain(self, timeout: float = 60.0, cancel_waiting: bool = False) -> None:
        """Refuse new requests, then wait until every queued and running batch is done; with
        ``cancel_waiting`` (a server shutting down) the queued requests are answered with an error at once
        and only the running batch is waited for."""
        self._closed = True
        if cancel_waiting:
            for job in [*self.interactive, *self.bulk]:
                if not job.future.done():
                    job.future.set_exception(BatcherClosed("the server is shutting down; retry later"))
            self.interactive.clear()
            self.bulk.clear()
        deadline = time.monotonic() + timeout
        while (self.interactive or self.bulk or self.running) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        if self._worker is not None:
            self._worker.cancel()
        self._thread.shutdown(wait=False)
