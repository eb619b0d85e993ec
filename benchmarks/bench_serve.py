"""``kiltpipe serve`` under load, against the server it replaced (issue 25), both measured in this run.

Both servers run as users run them, each in its own process over the built excerpt (``make demo``): ours
is ``kiltpipe serve --port 0`` (FastAPI on uvicorn, dynamic batching); the peer is the standard library
``ThreadingHTTPServer`` of ``assets/indexes/server.py`` at commit ``PEER_COMMIT``, read from git. Clients
are threads of this process, each on one keep-alive connection, sending real NQ dev questions (``GET
/search?q=...&index=...&k=10``, with text). Measured per server:

- p50/p99 and queries/s per index at 1 and 8 clients (targets: dense q/s at 8 clients >= 3x the peer's;
  p50 at 1 client no worse than the peer's, 10% + 1 ms of noise allowed);
- a burst of 200 clients connecting at once, 3 queries each: connections reset or refused (target 0) and
  the slowest request;
- a single query's latency while a 10,000-query POST is being answered;
- ``/answer`` (ours only: the peer has none) under ``--answer-clients`` concurrent clients (48), against the
  answerer's own q/s on the same questions in this process (one batch): targets >= 0.3x the answerer's q/s,
  p99 <= 1 s (issue 63: answers ran one request at a time behind a lock, 59/s against 805).

    .venv/bin/python benchmarks/bench_serve.py [--requests 200] [--clients 1,8] [--indexes bm25,dense,hybrid]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import (
    PEER_PREAMBLE,
    client,
    format_table,
    load_test,
    machine_info,
    module_at_commit,
    nq_questions,
    start_server,
    write_results,
)
from support.workspace import REPO_ROOT, log

KILTPIPE = REPO_ROOT / ".venv" / "bin" / "kiltpipe"


PEER_COMMIT = "b71277f"
PEER_SCRIPT = (
    PEER_PREAMBLE
    + """
server = peer.make_server(peer.SearchService(retriever, sys.argv[2].split(",")), "127.0.0.1", 0)
print(f"serving on http://127.0.0.1:{server.server_port}/search", file=sys.stderr, flush=True)
server.serve_forever(poll_interval=0.2)
"""
)


def peer_command(indexes: list[str], folder: Path) -> list[str]:
    """The command that serves with the peer: its module as committed at PEER_COMMIT."""
    module = module_at_commit(PEER_COMMIT, "assets/indexes/server.py", folder)
    return [sys.executable, "-c", PEER_SCRIPT, str(module), ",".join(indexes)]


def burst(port: int, clients: int, questions: list[str], per_client: int = 3) -> dict[str, Any]:
    """``clients`` connections opened at once (a barrier), ``per_client`` BM25 queries each: how many
    connections were reset or refused, and the slowest request."""
    barrier = threading.Barrier(clients)
    errors: list[str] = []
    latencies: list[float] = []
    lock = threading.Lock()

    def one(number: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        try:
            barrier.wait()
            for i in range(per_client):
                query = urllib.parse.urlencode({"q": questions[(number * per_client + i) % len(questions)]})
                started = time.perf_counter()
                connection.request("GET", f"/search?{query}&index=bm25&k=10")
                response = connection.getresponse()
                response.read()
                with lock:
                    latencies.append(time.perf_counter() - started)
                    if response.status != 200:
                        errors.append(f"HTTP {response.status}")
        except OSError as error:
            with lock:
                errors.append(type(error).__name__)
        finally:
            connection.close()

    threads = [threading.Thread(target=one, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {
        "clients": clients,
        "requests_answered": len(latencies),
        "errors": len(errors),
        "error_kinds": sorted(set(errors)),
        "slowest_s": round(max(latencies), 2) if latencies else None,
    }


def single_during_bulk(port: int, questions: list[str], bulk: int = 10_000) -> dict[str, Any]:
    """The latency of single dense queries sent while a ``bulk``-query POST is answered."""
    body = json.dumps(
        {"queries": (questions * (bulk // len(questions) + 1))[:bulk], "index": "dense", "k": 10}
    )
    post_seconds: list[float] = []

    def post() -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        started = time.perf_counter()
        connection.request("POST", "/search", body, {"Content-Type": "application/json"})
        connection.getresponse().read()
        post_seconds.append(time.perf_counter() - started)

    thread = threading.Thread(target=post)
    thread.start()
    time.sleep(0.5)
    latencies: list[float] = []
    client(port, "dense", questions[:10], latencies)
    thread.join()
    return {
        "bulk_queries": bulk,
        "bulk_seconds": round(post_seconds[0], 2),
        "single_p50_ms": round(float(np.percentile(latencies, 50)) * 1000, 1),
        "single_max_ms": round(max(latencies) * 1000, 1),
    }


def measure(name: str, command: list[str], indexes: list[str], questions: list[str], args: Any) -> dict:
    """Every measurement of one server (started for it, stopped after)."""
    process, port, startup = start_server(command)
    log(f"{name}: answered after {startup:.1f}s on port {port}")
    rows = []
    try:
        for index in indexes:
            load_test(port, index, questions[-20:], 1, 20)  # warm-up, other questions than the measured
            for clients in (int(c) for c in args.clients.split(",")):
                row = load_test(port, index, questions, clients, args.requests)
                rows.append(row)
                log(f"{name} {index} x{clients}: p50 {row['p50_ms']} ms, {row['queries_per_second']} q/s")
        crowd = burst(port, args.burst, questions)
        log(f"{name} burst of {args.burst}: {crowd['errors']} errors, slowest {crowd['slowest_s']} s")
        during = single_during_bulk(port, questions) if "dense" in indexes else None
        if during:
            log(f"{name} single dense query during a 10,000-query POST: p50 {during['single_p50_ms']} ms")
        answers = None
        if args.answer_clients and name == "kiltpipe serve":
            index = "dense" if "dense" in indexes else indexes[0]
            load_test(port, index, questions[-20:], 1, 20, route="answer")  # warm-up
            answers = load_test(port, index, questions, args.answer_clients, args.answer_requests, "answer")
            rate = answers["queries_per_second"]
            log(f"{name} /answer x{args.answer_clients}: p99 {answers['p99_ms']} ms, {rate} q/s")
    finally:
        stopping = time.perf_counter()
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            log(f"{name}: did not stop within 30 s of SIGTERM: killed")
        log(f"{name}: stopped in {time.perf_counter() - stopping:.1f}s")
    return {
        "startup_seconds": round(startup, 1),
        "runs": rows,
        "burst": crowd,
        "single_during_bulk": during,
        "answers": answers,
    }


def answerer_alone(questions: list[str], index: str) -> dict[str, Any]:
    """The snapshot's QA-pair answerer in this process, the same questions in one batch: its q/s."""
    from assets import params
    from assets.reading import Snapshot

    with Snapshot.open(params.data_dir(), None) as snapshot:  # the data dir the server serves
        answerer = snapshot.answerer
        answerer.answer(questions[-20:], index=index)  # warm-up
        started = time.perf_counter()
        answerer.answer(questions, index=index)
        seconds = time.perf_counter() - started
    return {
        "index": index,
        "questions": len(questions),
        "queries_per_second": round(len(questions) / seconds, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=200, help="requests per index and client count")
    parser.add_argument("--clients", default="1,8")
    parser.add_argument("--indexes", default="bm25,dense,hybrid")
    parser.add_argument("--burst", type=int, default=200, help="clients connecting at once")
    parser.add_argument("--answer-clients", type=int, default=48, help="concurrent /answer clients (0: none)")
    parser.add_argument("--answer-requests", type=int, default=960, help="/answer requests in all")
    args = parser.parse_args()

    indexes = args.indexes.split(",")
    questions = nq_questions(2000)
    with tempfile.TemporaryDirectory() as folder:
        ours = measure(
            "kiltpipe serve", [str(KILTPIPE), "serve", "--port", "0", *[f"--index={i}" for i in indexes]],
            indexes, questions, args,
        )  # fmt: skip
        peer = measure(f"peer ({PEER_COMMIT})", peer_command(indexes, Path(folder)), indexes, questions, args)
    by = {(r["index"], r["clients"]): r for r in peer["runs"]}
    for row in ours["runs"]:
        other = by[row["index"], row["clients"]]
        row["peer_p50_ms"], row["peer_queries_per_second"] = other["p50_ms"], other["queries_per_second"]
        row["qps_ratio"] = round(row["queries_per_second"] / other["queries_per_second"], 2)
        row["p50_ratio"] = round(row["p50_ms"] / other["p50_ms"], 2)
    if ours["answers"] is not None:
        alone = answerer_alone(questions[: args.answer_requests], ours["answers"]["index"])
        ours["answerer_alone"] = alone
        ours["answers"]["vs_answerer_alone"] = round(
            ours["answers"]["queries_per_second"] / alone["queries_per_second"], 2
        )
        ratio = ours["answers"]["vs_answerer_alone"]
        log(f"answerer alone: {alone['queries_per_second']} q/s; /answer: {ratio}x its rate")
    eight = {r["index"]: r for r in ours["runs"] if r["clients"] == 8}
    one = [r for r in ours["runs"] if r["clients"] == 1]
    targets = {
        "burst: 0 connections reset or refused": ours["burst"]["errors"] == 0,
        "dense q/s at 8 clients >= 3x the peer": "dense" in eight and eight["dense"]["qps_ratio"] >= 3,
        "p50 at 1 client no worse than the peer (10% + 1 ms)": all(
            r["p50_ms"] <= 1.1 * r["peer_p50_ms"] + 1 for r in one
        ),
    }
    if ours["answers"] is not None:
        targets["/answer q/s >= 0.3x the answerer alone, p99 <= 1 s"] = (
            ours["answers"]["vs_answerer_alone"] >= 0.3 and ours["answers"]["p99_ms"] <= 1000
        )
    results = {
        "queries": "NQ dev questions, k=10, with title and text, one keep-alive connection per client",
        "peer": f"the ThreadingHTTPServer of assets/indexes/server.py at {PEER_COMMIT}, same retriever",
        "ours": ours,
        "peer_server": peer,
        "targets": targets,
        "machine": machine_info(),
    }
    path = write_results("serve", results)
    headers = ["index", "clients", "p50 ms", "peer p50", "q/s", "peer q/s", "q/s ratio"]
    print("\nkiltpipe serve vs the previous server (same run):")
    print(
        format_table(
            headers,
            [[r["index"], r["clients"], r["p50_ms"], r["peer_p50_ms"], r["queries_per_second"],
              r["peer_queries_per_second"], f"{r['qps_ratio']}x"] for r in ours["runs"]],
        )
    )  # fmt: skip
    for name, measured in (("ours", ours), ("peer", peer)):
        crowd, during = measured["burst"], measured["single_during_bulk"]
        print(
            f"{name}: burst of {crowd['clients']}: {crowd['errors']} errors {crowd['error_kinds']}, slowest "
            f"{crowd['slowest_s']} s; single dense query during a 10,000-query POST: "
            f"p50 {during and during['single_p50_ms']} ms"
        )
    print(f"targets: {json.dumps(targets)}\nresults: {path}")


if __name__ == "__main__":
    main()
