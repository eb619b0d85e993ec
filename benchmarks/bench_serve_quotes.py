"""``kiltpipe serve`` while a client sends bodies of escaped quotes in an unclosed string (issue 53): what
it costs the other clients, against the server as it was before (the tree at ``PEER_COMMIT``, whose bounds
check backtracked quadratically on the event loop), both measured in this run over the built excerpt
(``make demo``), each in its own process serving BM25.

Per server: one client polls ``GET /health`` in a loop (the other clients' view) while another POSTs
``{"query": "`` followed by ``N`` pairs of a backslash and a quote to ``/search`` and ``/answer``, one
after the other, ``--bodies`` times (``--peer-bodies`` to the peer); then the same polling without the
hostile client. Reported: the hostile requests' statuses and seconds, and the pollers' p50/p99/max latency
with and without them. The
peer gets the small body only (80 KB froze it for 12 s; 1 MB would take hours): a ``--timeout`` bounds
each of its requests.

    .venv/bin/python benchmarks/bench_serve_quotes.py [--bytes 1000000] [--peer-bytes 80000] [--bodies 40]
        [--peer-bodies 3]
"""

from __future__ import annotations

import argparse
import http.client
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from assets import params
from assets.storage import resolve_snapshot
from benchmarks.common import format_table, machine_info, peer_worktree, start_server, tree_env, write_results
from support.workspace import REPO_ROOT, log

PEER_COMMIT = "9aed128"
"""The last commit before the linear bounds check of issue 53."""


def hostile_body(size: int) -> bytes:
    """``{"query": "`` and ``size`` bytes of backslash-quote pairs, never closed."""
    return b'{"query": "' + b'\\"' * (size // 2)


def _post(port: int, path: str, body: bytes, timeout: float) -> tuple[int | str, float]:
    started = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("POST", path, body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        response.read()
        status: int | str = response.status
    except TimeoutError:
        status = "timeout"
    finally:
        connection.close()
    return status, time.perf_counter() - started


def _poll(port: int, stop: threading.Event, latencies: list[float], timeout: float) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    while not stop.is_set():
        started = time.perf_counter()
        try:
            connection.request("GET", "/health")
            connection.getresponse().read()
        except (TimeoutError, OSError):
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        latencies.append((time.perf_counter() - started) * 1000)
        time.sleep(0.002)
    connection.close()


def _percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"p50_ms": float("nan"), "p99_ms": float("nan"), "max_ms": float("nan"), "polls": 0}
    return {
        "p50_ms": round(float(np.percentile(values, 50)), 2),
        "p99_ms": round(float(np.percentile(values, 99)), 2),
        "max_ms": round(max(values), 2),
        "polls": len(values),
    }


def _measure(
    name: str, tree: Path, data_dir: Path, size: int, bodies: int, args: argparse.Namespace
) -> dict[str, Any]:
    env = tree_env(tree, data_dir)
    command = [sys.executable, "-m", "orchestration.cli", "serve", "--index", "bm25", "--port", "0"]
    process, port, _ = start_server(command, cwd=tree, env=env)
    try:
        body = hostile_body(size)
        rounds: dict[str, list[float]] = {"hostile": [], "quiet": []}
        statuses: list[int | str] = []
        seconds: list[float] = []
        for phase in ("hostile", "quiet"):
            stop = threading.Event()
            poller = threading.Thread(target=_poll, args=(port, stop, rounds[phase], args.timeout))
            poller.start()
            if phase == "hostile":
                log(f"{name}: {bodies} bodies of {len(body):,} bytes while /health is polled")
                for n in range(bodies):
                    status, took = _post(port, ("/search", "/answer")[n % 2], body, args.timeout)
                    statuses.append(status)
                    seconds.append(round(took, 3))
            else:
                time.sleep(max(2.0, sum(seconds)))
            stop.set()
            poller.join()
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    return {
        "server": name,
        "body_bytes": len(body),
        "statuses": statuses,
        "hostile_seconds": seconds,
        "others_with_hostile": _percentiles(rounds["hostile"]),
        "others_quiet": _percentiles(rounds["quiet"]),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bytes", type=int, default=1_000_000, help="our server's hostile body size")
    parser.add_argument("--peer-bytes", type=int, default=80_000, help="the peer's (0: no peer)")
    parser.add_argument("--bodies", type=int, default=40, help="hostile bodies sent to our server")
    parser.add_argument("--peer-bodies", type=int, default=3, help="to the peer (each takes it ~13 s)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds one request may take")
    args = parser.parse_args(argv)
    data_dir = params.data_dir()
    paths = resolve_snapshot(data_dir, None)
    rows = [_measure("ours", REPO_ROOT, data_dir, args.bytes, args.bodies, args)]
    if args.peer_bytes:
        rows.append(_measure("ours, peer's body", REPO_ROOT, data_dir, args.peer_bytes, args.bodies, args))
        with peer_worktree(PEER_COMMIT) as peer:
            peer_row = _measure(
                f"peer ({PEER_COMMIT})", peer, data_dir, args.peer_bytes, args.peer_bodies, args
            )
            rows.append(peer_row)
    print(
        format_table(
            ["server", "body bytes", "statuses", "s each (max)", "others p50", "p99", "max", "quiet p99"],
            [
                [
                    r["server"],
                    f"{r['body_bytes']:,}",
                    " ".join(map(str, sorted(set(r["statuses"]), key=str))),
                    max(r["hostile_seconds"]),
                    r["others_with_hostile"]["p50_ms"],
                    r["others_with_hostile"]["p99_ms"],
                    r["others_with_hostile"]["max_ms"],
                    r["others_quiet"]["p99_ms"],
                ]
                for r in rows
            ],
        )
    )
    if len(rows) == 3:
        ours, peer = rows[1]["others_with_hostile"], rows[2]["others_with_hostile"]
        print(
            f"other clients' p99 beside {args.peer_bytes:,}-byte bodies, peer/ours: "
            f"{peer['p99_ms'] / ours['p99_ms']:,.0f}x"
        )
    write_results(
        "serve_quotes",
        {
            "snapshot_id": paths.snapshot_id,
            "peer_commit": PEER_COMMIT,
            "machine": machine_info(),
            "servers": rows,
        },
    )


if __name__ == "__main__":
    main()
