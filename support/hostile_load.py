"""Hostile search load shared by the tests and ``benchmarks/bench_serve_hostile.py``: a long query made of
the distinct words of a snapshot's real passages, and rounds of concurrent clients among which a few send
it, against a running ``kiltpipe serve`` (its base URL)."""

from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq

NORMAL_QUERIES = (
    "Who developed the general theory of relativity?",
    "What is the capital city of Albania?",
    "fraction of sunlight reflected by a surface",
    "Which Greek hero was killed by an arrow in his heel?",
)


def long_query(passages_parquet: Path, words: int = 2000) -> str:
    """``words`` distinct words of the snapshot's passages, in the order they first appear (a query far
    over Lucene's 1,024-clause limit once analysed: distinct words make distinct terms)."""
    seen: dict[str, None] = {}
    for path in sorted(Path(passages_parquet).glob("*.parquet")):
        for text in pq.read_table(path, columns=["text"]).column("text").to_pylist():
            for word in text.split():
                token = "".join(ch for ch in word if ch.isalpha()).lower()
                if len(token) > 3:
                    seen.setdefault(token, None)
                if len(seen) >= words:
                    return " ".join(seen)
    raise ValueError(f"{passages_parquet}: fewer than {words:,} distinct words")


@dataclass
class LoadResult:
    """What the normal clients and the long queries got, by HTTP status (``error``: no answer)."""

    normal: dict[str, int] = field(default_factory=dict)
    long: dict[str, int] = field(default_factory=dict)
    long_cut: int = 0  # long queries whose answer says they were cut
    seconds: float = 0.0
    normal_latency_ms: list[float] = field(default_factory=list)

    @property
    def normal_errors(self) -> int:
        return sum(count for status, count in self.normal.items() if status != "200")


def poisoned_rounds(
    base: str,
    query: str,
    *,
    clients: int = 60,
    long_per_round: int = 6,
    rounds: int = 5,
    index: str = "bm25",
) -> LoadResult:
    """``rounds`` rounds of ``clients`` concurrent requests to ``index`` (all started at once), of which
    ``long_per_round`` send ``query`` and the others a normal question."""
    host, port = urllib.parse.urlsplit(base).hostname, urllib.parse.urlsplit(base).port
    result = LoadResult()
    lock = threading.Lock()
    started = time.perf_counter()

    def client(text: str, long: bool, barrier: threading.Barrier) -> None:
        connection = http.client.HTTPConnection(host, port, timeout=120)
        began = time.perf_counter()
        try:
            body = json.dumps({"query": text, "index": index, "k": 10, "text": False})
            barrier.wait()
            began = time.perf_counter()
            connection.request("POST", "/search", body, {"Content-Type": "application/json"})
            response = connection.getresponse()
            answer = response.read()
            status = str(response.status)
            cut = long and response.status == 200 and "cut" in json.loads(answer)
        except OSError as error:
            status, cut = f"error: {type(error).__name__}", False
        finally:
            connection.close()
        with lock:
            tally = result.long if long else result.normal
            tally[status] = tally.get(status, 0) + 1
            result.long_cut += cut
            if not long:
                result.normal_latency_ms.append((time.perf_counter() - began) * 1000)

    for _ in range(rounds):
        barrier = threading.Barrier(clients)
        threads = [
            threading.Thread(
                target=client,
                args=(
                    query if n < long_per_round else NORMAL_QUERIES[n % len(NORMAL_QUERIES)],
                    n < long_per_round,
                    barrier,
                ),
            )
            for n in range(clients)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    result.seconds = time.perf_counter() - started
    return result
