"""``kiltpipe serve`` with one poisoned query among 60 concurrent clients (issue 44), against the server as
it was before the query limits (the whole tree at ``PEER_COMMIT``, checked out from git into a temporary
worktree and run on this venv), both measured in this run over the built excerpt (``make demo``), each in
its own process serving BM25.

The poison is a 2,000-word query of distinct real words (``support/hostile_load.py``: the first 2,000
distinct words of the snapshot's passages), over Lucene's 1,024-clause limit. Per server: rounds of 60
concurrent POSTs (all released at once), of which 6 send the poison and 54 a normal question, then the
same rounds with no poison; the statuses of the normal requests and of the long ones, the normal
requests' p50/p99 latency, and the ratio of their p99 with and without the poison.

    .venv/bin/python benchmarks/bench_serve_hostile.py [--rounds 5] [--clients 60] [--long 6]
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from typing import Any

import numpy as np

from assets import params
from assets.storage import resolve_snapshot
from benchmarks.common import format_table, machine_info, peer_worktree, start_server, tree_env, write_results
from support.hostile_load import long_query, poisoned_rounds
from support.workspace import REPO_ROOT, log

PEER_COMMIT = "9634dd6"
"""The last commit before the limits of issue 44."""


def _measure(name: str, tree: Path, data_dir: Path, query: str, args: argparse.Namespace) -> dict[str, Any]:
    env = tree_env(tree, data_dir)
    command = [sys.executable, "-m", "orchestration.cli", "serve", "--index", "bm25", "--port", "0"]
    process, port, load_seconds = start_server(command, cwd=tree, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        log(f"{name}: {args.rounds} rounds of {args.clients} clients, {args.long} of them poisoned")
        poisoned = poisoned_rounds(
            base, query, clients=args.clients, long_per_round=args.long, rounds=args.rounds
        )
        log(f"{name}: the same rounds without the poison")
        clean = poisoned_rounds(base, query, clients=args.clients, long_per_round=0, rounds=args.rounds)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    def p(values: list[float], q: float) -> float:
        return round(float(np.percentile(values, q)), 1) if values else float("nan")

    return {
        "server": name,
        "load_seconds": round(load_seconds, 1),
        "normal_statuses": poisoned.normal,
        "normal_errors": poisoned.normal_errors,
        "normal_requests": sum(poisoned.normal.values()),
        "long_statuses": poisoned.long,
        "long_answered_with_cut": poisoned.long_cut,
        "normal_p50_ms": p(poisoned.normal_latency_ms, 50),
        "normal_p99_ms": p(poisoned.normal_latency_ms, 99),
        "clean_p50_ms": p(clean.normal_latency_ms, 50),
        "clean_p99_ms": p(clean.normal_latency_ms, 99),
        "clean_errors": clean.normal_errors,
        "p99_poisoned_over_clean": round(
            p(poisoned.normal_latency_ms, 99) / p(clean.normal_latency_ms, 99), 2
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--clients", type=int, default=60)
    parser.add_argument("--long", type=int, default=6)
    parser.add_argument("--words", type=int, default=2000)
    args = parser.parse_args()
    data_dir = params.data_dir()
    paths = resolve_snapshot(data_dir, None)
    query = long_query(paths.passages_parquet, args.words)
    with peer_worktree(PEER_COMMIT) as peer:
        rows = [
            _measure("ours", REPO_ROOT, data_dir, query, args),
            _measure(f"peer ({PEER_COMMIT})", peer, data_dir, query, args),
        ]
    ours, theirs = rows
    print(
        format_table(
            ["server", "normal errors", "long: statuses", "cut", "p50 ms", "p99 ms", "clean p99 ms", "p99 x"],
            [
                [
                    r["server"],
                    f"{r['normal_errors']}/{r['normal_requests']}",
                    " ".join(f"{k}:{v}" for k, v in sorted(r["long_statuses"].items())),
                    r["long_answered_with_cut"],
                    r["normal_p50_ms"],
                    r["normal_p99_ms"],
                    r["clean_p99_ms"],
                    r["p99_poisoned_over_clean"],
                ]
                for r in rows
            ],
        )
    )
    print(
        f"normal requests failed by the poison: ours {ours['normal_errors']}, peer {theirs['normal_errors']} "
        f"of {ours['normal_requests']}; normal p99 with the poison, ours/peer: "
        f"{ours['normal_p99_ms'] / theirs['normal_p99_ms']:.2f}x"
    )
    write_results(
        "serve_hostile",
        {
            "snapshot_id": paths.snapshot_id,
            "query_words": args.words,
            "rounds": args.rounds,
            "clients": args.clients,
            "long_per_round": args.long,
            "peer_commit": PEER_COMMIT,
            "machine": machine_info(),
            "servers": rows,
        },
    )


if __name__ == "__main__":
    main()
