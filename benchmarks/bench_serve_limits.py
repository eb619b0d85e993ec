"""``kiltpipe serve`` under requests that used to take it down (issue 35), against the server as it was
before the limits (the tree at ``PEER_COMMIT``, checked out as a git worktree), both measured in this
run over the built excerpt (``make demo``), each in its own process serving the dense index.

Measured per server:

- the hostile request: one ``POST /search`` of 10,000 queries at k=1000, each value within the documented
  limits: the status, the seconds to it, and the server's RSS growth (sampled every 0.2 s; the peer is
  given ``--hostile-seconds`` and then killed, as it would run until the machine is out of memory);
- the largest requests the limits allow (10,000 queries x k=10 without text; 2,000 x k=10 with text): the
  seconds, the response bytes and the RSS growth (ours streams the answer);
- SIGTERM with four 10,000-query requests in flight: the seconds until the process exits (capped).

    .venv/bin/python benchmarks/bench_serve_limits.py [--hostile-seconds 30] [--stop-cap 60] [--queries 10000]

``--queries`` scales every request (the hostile one, the largest ones, the load under SIGTERM; the text one
is a fifth of it): below 10,000 it is a smoke run, not the measurement.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import psutil

from benchmarks.common import (
    PEER_PREAMBLE,
    format_table,
    machine_info,
    nq_questions,
    peer_worktree,
    start_server,
    tree_env,
    write_results,
)
from support.workspace import REPO_ROOT, log

KILTPIPE = REPO_ROOT / ".venv" / "bin" / "kiltpipe"
PEER_COMMIT = "24e54d9"
PEER_SCRIPT = (
    PEER_PREAMBLE
    + """
app = peer.SearchApp(peer.SearchService(retriever, ["dense"]))
sock = peer.bind("127.0.0.1", 0)
print(f"serving on http://127.0.0.1:{sock.getsockname()[1]}/search", file=sys.stderr, flush=True)
peer.server_for(app, sock).run(sockets=[sock])
"""
)


def peer_command(tree: Path) -> tuple[list[str], dict[str, Any]]:
    """The command that serves with the peer, and how to start it: the whole tree as committed at
    PEER_COMMIT (its server imports modules of its own time), with that tree's own params.yaml."""
    env = tree_env(tree)
    command = [sys.executable, "-c", PEER_SCRIPT, str(tree / "assets" / "indexes" / "server.py")]
    return command, {"cwd": tree, "env": env}


def tree_rss(pid: int) -> int:
    """Resident bytes of a process and its children (the JVM, encoder workers)."""
    try:
        process = psutil.Process(pid)
        return sum(p.memory_info().rss for p in [process, *process.children(recursive=True)])
    except psutil.NoSuchProcess:
        return 0


class RssSampler:
    """The highest RSS of a process tree, sampled every 0.2 s while in use."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._stop = pid, tree_rss(pid), threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self.peak = max(self.peak, tree_rss(self.pid))

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def post(port: int, body: dict[str, Any], timeout: float) -> tuple[int | str, int, float]:
    """Status (or the error's name), response bytes and seconds of one POST /search."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/search", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, len(response.read()), time.perf_counter() - started
    except urllib.error.HTTPError as error:
        return error.code, len(error.read()), time.perf_counter() - started
    except OSError as error:
        return type(error).__name__, 0, time.perf_counter() - started


def measured(process: subprocess.Popen, port: int, body: dict[str, Any], timeout: float) -> dict[str, Any]:
    before = tree_rss(process.pid)
    with RssSampler(process.pid) as sampler:
        status, size, seconds = post(port, body, timeout)
    return {
        "status": status,
        "seconds": round(seconds, 2),
        "response_mb": round(size / 1e6, 2),
        "rss_growth_mib": round((sampler.peak - before) / 2**20),
    }


def stop_under_load(process: subprocess.Popen, port: int, many: list[str], cap: float) -> float:
    """Seconds from SIGTERM to the process's exit with four requests of ``many`` queries in flight (cap: gave
    up, killed)."""
    body = {"queries": many, "index": "dense", "k": 10, "text": False}
    for _ in range(4):
        threading.Thread(target=post, args=(port, body, cap + 60), daemon=True).start()
    time.sleep(2)
    started = time.perf_counter()
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=cap)
        return round(time.perf_counter() - started, 2)
    except subprocess.TimeoutExpired:
        return float("inf")


def measure(
    name: str,
    command: list[str],
    questions: list[str],
    args: argparse.Namespace,
    popen: dict[str, Any] | None = None,
) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    process, port, startup = start_server(command, **(popen or {}))
    log(f"{name}: serving after {startup:.1f}s on port {port}")
    try:
        many = (questions * args.queries)[: args.queries]
        hostile = {"queries": many, "index": "dense", "k": 1000, "text": False}
        rows["hostile"] = measured(process, port, hostile, args.hostile_seconds)
        log(f"{name}: {len(many):,} x k=1000: {rows['hostile']}")
        if rows["hostile"]["status"] != 413:  # the peer: still at it; it is stopped with the process
            process.kill()
            process.wait()
            process, port, _ = start_server(command, **(popen or {}))
        rows["largest_without_text"] = measured(
            process, port, {"queries": many, "index": "dense", "k": 10, "text": False}, 600
        )
        rows["largest_with_text"] = measured(
            process, port, {"queries": many[: len(many) // 5], "index": "dense", "k": 10, "text": True}, 600
        )
        log(f"{name}: largest allowed: {rows['largest_without_text']}, {rows['largest_with_text']}")
        rows["sigterm_seconds"] = stop_under_load(process, port, many, args.stop_cap)
        log(f"{name}: SIGTERM under load: {rows['sigterm_seconds']} s")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hostile-seconds", type=float, default=30)
    parser.add_argument("--stop-cap", type=float, default=60)
    parser.add_argument("--queries", type=int, default=10_000, help="queries per request (smoke runs: fewer)")
    args = parser.parse_args()
    questions = nq_questions(200)
    ours = [str(KILTPIPE), "serve", "--index", "dense", "--port", "0"]
    with peer_worktree(PEER_COMMIT) as tree:
        peer_server, popen = peer_command(tree)
        results = {
            "ours": measure("ours", ours, questions, args),
            f"peer ({PEER_COMMIT})": measure("peer", peer_server, questions, args, popen),
        }
    peer = results[f"peer ({PEER_COMMIT})"]
    table = []
    for name, row in results.items():
        hostile, plain, text = row["hostile"], row["largest_without_text"], row["largest_with_text"]
        table.append([
            name,
            f"{hostile['status']} in {hostile['seconds']} s, +{hostile['rss_growth_mib']:,} MiB",
            f"{plain['seconds']} s, {plain['response_mb']} MB, +{plain['rss_growth_mib']} MiB",
            f"{text['seconds']} s, {text['response_mb']} MB, +{text['rss_growth_mib']} MiB",
            f"{row['sigterm_seconds']} s",
        ])  # fmt: skip
    n = args.queries
    headers = [
        "server",
        f"{n:,} x k=1000",
        f"{n:,} x k=10",
        f"{n // 5:,} x k=10 with text",
        "SIGTERM under load",
    ]
    print(format_table(headers, table))
    ours_row = results["ours"]
    ratios = {
        "hostile_rss_growth_ratio": round(
            max(ours_row["hostile"]["rss_growth_mib"], 1) / max(peer["hostile"]["rss_growth_mib"], 1), 4
        ),
        "sigterm_seconds_ratio": (
            round(ours_row["sigterm_seconds"] / peer["sigterm_seconds"], 3)
            if peer["sigterm_seconds"] not in (0, float("inf"))
            else f"peer did not stop within {args.stop_cap} s"
        ),
    }
    print(json.dumps(ratios))
    write_results(
        "serve_limits",
        {
            "machine": machine_info(),
            "queries": n,
            "results": results,
            "ratios": ratios,
            "peer_commit": PEER_COMMIT,
        },
    )


if __name__ == "__main__":
    main()
