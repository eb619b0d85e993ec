"""Dynamic batching (``assets.reading.serving.batching``): who shares a batch; bulk work cannot hold an index.

The search function is a stand-in that takes a fixed time per batch (as a dense encoder nearly does for
small batches); the clients are asyncio tasks that send their next query when the previous one is answered,
as the keep-alive clients of ``kiltpipe serve`` do.
"""

from __future__ import annotations

import asyncio
import threading
import time

from assets.reading.serving import BULK_CHUNK, IndexBatcher

BATCH_SECONDS = 0.02


def _timed_search(sizes: list[int]):
    def search(queries: list[str], k: int, with_text: bool) -> list[list[str]]:
        sizes.append(len(queries))
        time.sleep(BATCH_SECONDS)
        return [[f"{q}#{i}" for i in range(k)] for q in queries]

    return search


async def _clients(batcher: IndexBatcher, clients: int, each: int) -> list[list[list[str]]]:
    async def client(number: int) -> list[list[str]]:
        answers = []
        for i in range(each):
            answers += await batcher.submit([f"c{number}q{i}"], 2, False)
        return answers

    return await asyncio.gather(*(client(n) for n in range(clients)))


def test_concurrent_clients_share_full_batches() -> None:
    """Eight clients in lockstep: after the first batches, every batch holds all eight (not two halves
    taking turns), and every client gets its own answers in order."""
    sizes: list[int] = []

    async def main() -> list[list[list[str]]]:
        batcher = IndexBatcher("dense", _timed_search(sizes))
        answers = await _clients(batcher, 8, 12)
        await batcher.drain()
        return answers

    answers = asyncio.run(main())
    assert answers[3][5] == ["c3q5#0", "c3q5#1"] and all(len(a) == 12 for a in answers)
    assert sum(sizes) == 96
    steady = sizes[3:]
    assert sum(steady) / len(steady) >= 7, sizes


def test_lone_client_is_not_held_back() -> None:
    """One client: every batch holds its one query and none waits for clients that are not there."""
    sizes: list[int] = []

    async def main() -> float:
        batcher = IndexBatcher("dense", _timed_search(sizes))
        started = time.perf_counter()
        await _clients(batcher, 1, 10)
        elapsed = time.perf_counter() - started
        await batcher.drain()
        return elapsed

    elapsed = asyncio.run(main())
    assert sizes == [1] * 10
    assert elapsed < 10 * BATCH_SECONDS * 1.5  # no wait of its own per query (the stand-in sleeps 20 ms)


def test_a_single_query_overtakes_bulk_work() -> None:
    """A 640-query request is searched in chunks; a single query sent meanwhile runs in the next batch,
    alone, not after the bulk request."""
    sizes: list[int] = []
    search = _timed_search(sizes)
    second, came = threading.Event(), threading.Event()

    def second_chunk_waits(queries: list[str], k: int, with_text: bool) -> list[list[str]]:
        if len(sizes) == 1:  # the second chunk runs until the single query has come (a loaded machine
            second.set()  # may run the loop late: the order is what is tested, not the scheduler)
            came.wait(10)
        return search(queries, k, with_text)

    async def main() -> None:
        batcher = IndexBatcher("dense", second_chunk_waits)
        bulk = asyncio.ensure_future(batcher.submit([f"b{i}" for i in range(640)], 1, False))
        while not second.is_set():  # the bulk request's second chunk is running
            await asyncio.sleep(0.001)
        single = asyncio.ensure_future(batcher.submit(["single"], 1, False))
        await asyncio.sleep(0)  # the single query is queued
        came.set()
        assert await single == [["single#0"]]
        assert len(await bulk) == 640
        await batcher.drain()

    asyncio.run(main())
    assert len(sizes) == 640 // BULK_CHUNK + 1 and max(sizes) == BULK_CHUNK
    assert sizes.index(1) == 2, sizes  # right after the chunk that was running when it came


def test_a_heavy_request_goes_a_query_per_batch_behind_interactive_ones() -> None:
    """A heavy request (queries the index cut) of 4 queries and 8 interactive clients at once: the
    interactive queries share one batch that runs first, each heavy query runs in a batch of its own, and
    every request gets its own answers."""
    batches: list[list[str]] = []

    def search(queries: list[str], k: int, with_text: bool) -> list[list[str]]:
        batches.append(list(queries))
        time.sleep(BATCH_SECONDS)
        return [[q] for q in queries]

    async def main() -> list:
        batcher = IndexBatcher("bm25", search, max_wait=0.05)
        heavy = batcher.submit([f"long{n}" for n in range(4)], 1, False, heavy=True)
        normal = [batcher.submit([f"n{n}"], 1, False) for n in range(8)]
        return await asyncio.gather(heavy, *normal)

    answers = asyncio.run(main())
    assert answers[0] == [["long0"], ["long1"], ["long2"], ["long3"]]
    assert answers[1:] == [[[f"n{n}"]] for n in range(8)]
    assert batches[0] == [f"n{n}" for n in range(8)]
    assert batches[1:] == [["long0"], ["long1"], ["long2"], ["long3"]]
