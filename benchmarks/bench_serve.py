"""``kiltpipe serve`` under load: p50/p99 latency and queries/s per index at 1 and 8 concurrent clients.

The server is started as users start it (``kiltpipe serve --port 0``, its own process) over the built
excerpt (``make demo``); clients are threads of this process, each on one keep-alive connection, sending
real NQ dev questions (``GET /search?q=...&index=...&k=10``, with text). The peer is what a user's loop
paid before: one ``kiltpipe search QUERY --index ...`` process per question (cold start: JVM, torch,
model), timed here on the same machine. Target (issue 15): p50 <= 50 ms for BM25 and dense.

    .venv/bin/python benchmarks/bench_serve.py [--requests 200] [--clients 1,8] [--indexes bm25,dense]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_dense import nq_questions
from benchmarks.common import REPO_ROOT, format_table, log, machine_info, write_results

KILTPIPE = REPO_ROOT / ".venv" / "bin" / "kiltpipe"


def start_server(indexes: list[str]) -> tuple[subprocess.Popen, int, float]:
    """``kiltpipe serve`` in its own process group; its port and the seconds until it answered."""
    command = [str(KILTPIPE), "serve", "--port", "0", *[f"--index={i}" for i in indexes]]
    started = time.perf_counter()
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert process.stderr is not None
    for line in process.stderr:
        found = re.search(r"http://127\.0\.0\.1:(\d+)/search", line)
        if found:
            threading.Thread(target=process.stderr.read, daemon=True).start()  # keep draining
            return process, int(found.group(1)), time.perf_counter() - started
    raise SystemExit(f"kiltpipe serve exited with {process.wait()} before serving")


def client(port: int, index: str, questions: list[str], latencies: list[float]) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    for question in questions:
        query = urllib.parse.urlencode({"q": question, "index": index, "k": 10})
        started = time.perf_counter()
        connection.request("GET", f"/search?{query}")
        response = connection.getresponse()
        body = response.read()
        latencies.append(time.perf_counter() - started)
        if response.status != 200:
            raise RuntimeError(f"{index}: HTTP {response.status}: {body[:200]!r}")
    connection.close()


def load_test(port: int, index: str, questions: list[str], clients: int, requests: int) -> dict[str, Any]:
    """``requests`` questions spread over ``clients`` concurrent connections."""
    per_client = [questions[i::clients][: max(1, requests // clients)] for i in range(clients)]
    latencies: list[list[float]] = [[] for _ in range(clients)]
    threads = [
        threading.Thread(target=client, args=(port, index, per_client[i], latencies[i]))
        for i in range(clients)
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    values = np.array([v for chunk in latencies for v in chunk]) * 1000
    return {
        "index": index,
        "clients": clients,
        "requests": int(values.size),
        "p50_ms": round(float(np.percentile(values, 50)), 1),
        "p99_ms": round(float(np.percentile(values, 99)), 1),
        "mean_ms": round(float(values.mean()), 1),
        "queries_per_second": round(values.size / wall, 1),
    }


def cold_search(index: str, question: str) -> float:
    """Seconds of one ``kiltpipe search`` process (what each query cost without the server)."""
    started = time.perf_counter()
    subprocess.run(
        [str(KILTPIPE), "search", question, "--index", index, "--k", "10"],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=200, help="requests per index and client count")
    parser.add_argument("--clients", default="1,8")
    parser.add_argument("--indexes", default="bm25,dense")
    parser.add_argument("--cold-runs", type=int, default=2, help="cold `kiltpipe search` runs per index")
    args = parser.parse_args()

    indexes = args.indexes.split(",")
    questions = nq_questions(2000)
    process, port, startup = start_server(indexes)
    log(f"kiltpipe serve answered after {startup:.1f}s on port {port}")
    rows = []
    try:
        for index in indexes:
            load_test(port, index, questions[-20:], 1, 20)  # warm-up, other questions than the measured
            for clients in (int(c) for c in args.clients.split(",")):
                row = load_test(port, index, questions, clients, args.requests)
                rows.append(row)
                log(
                    f"{index} x{clients}: p50 {row['p50_ms']} ms, p99 {row['p99_ms']} ms, "
                    f"{row['queries_per_second']} q/s"
                )
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
    cold = {index: min(cold_search(index, questions[i]) for i in range(args.cold_runs)) for index in indexes}
    for row in rows:
        row["cold_cli_seconds"] = round(cold[row["index"]], 2)
        row["speedup_vs_cold_cli"] = round(1000 * cold[row["index"]] / row["p50_ms"], 1)
    results = {
        "server_startup_seconds": round(startup, 1),
        "queries": "NQ dev questions, k=10, with title and text, one keep-alive connection per client",
        "peer": "one `kiltpipe search QUERY --index ...` process per question (cold start), best of runs",
        "runs": rows,
        "targets": {
            f"{index} p50 <= 50 ms": all(
                r["p50_ms"] <= 50 for r in rows if r["index"] == index and r["clients"] == 1
            )
            for index in indexes
        },
        "machine": machine_info(),
    }
    path = write_results("serve", results)
    headers = ["index", "clients", "requests", "p50 ms", "p99 ms", "q/s", "cold CLI s", "p50 vs cold"]
    print(f"\nkiltpipe serve (startup {startup:.1f}s):")
    print(
        format_table(
            headers,
            [[r["index"], r["clients"], r["requests"], r["p50_ms"], r["p99_ms"], r["queries_per_second"],
              r["cold_cli_seconds"], f"{r['speedup_vs_cold_cli']}x"] for r in rows],
        )
    )  # fmt: skip
    print(f"targets: {json.dumps(results['targets'])}\nresults: {path}")


if __name__ == "__main__":
    main()
