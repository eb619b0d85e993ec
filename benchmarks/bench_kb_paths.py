"""Shortest KB paths at scale: the statements of a generated Wikidata-shaped KB of 1M entities (the
plan of :mod:`support.generator.wikidata`: real entities' statements, objects drawn with a power law of
in-degree as Wikidata's), as the compressed adjacency :func:`assets.wikidata.write_graph` builds once per
snapshot; every shortest path of at most 3 hops between pairs at distance 1 to 3 (random walks from
random entities), by this project's :class:`~assets.wikidata.PathFinder`, networkx
(``all_shortest_paths``) and python-igraph (``get_all_shortest_paths``) on the same graph, with the same
answers checked. Targets (issue 46): p50 <= 10 ms and p99 <= 100 ms, >= 10x networkx, within 2x of
igraph. Figures to ``benchmarks/results/kb_paths.json``.

    .venv/bin/python benchmarks/bench_kb_paths.py [--entities 1000000] [--pairs 200] [--peer-pairs 10]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import numpy as np

from assets.wikidata import PathFinder, write_graph
from benchmarks.common import format_table, machine_info, write_results
from support.generator.wikidata import generated_edge_batches
from support.workspace import WORK_DIR, log


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def _pairs(finder: PathFinder, count: int, seed: int) -> list[tuple[int, int]]:
    """Node pairs at distance 1-3: a random entity and the end of a random walk of 1-3 steps from it."""
    rng = random.Random(seed)
    pairs: list[tuple[int, int]] = []
    while len(pairs) < count:
        start = rng.randrange(finder.entities)
        node = start
        for _ in range(rng.randint(1, 3)):
            low, high = int(finder.indptr[node]), int(finder.indptr[node + 1])
            if low == high:
                break
            node = int(finder.targets[rng.randrange(low, high)])
        if node != start:
            pairs.append((start, node))
    return pairs


def _timed(run, pairs):
    seconds, answers = [], []
    for pair in pairs:
        started = time.perf_counter()
        answers.append(run(*pair))
        seconds.append(time.perf_counter() - started)
    return seconds, answers


def _summary(seconds: list[float]) -> dict:
    return {
        "p50_ms": round(statistics.median(seconds) * 1000, 3),
        "p99_ms": round(_percentile(seconds, 0.99) * 1000, 3),
        "mean_ms": round(statistics.fmean(seconds) * 1000, 3),
    }


def _peers(
    finder: PathFinder, ids: list[str], pairs: list[tuple[int, int]], ours: list[tuple]
) -> tuple[dict, int]:
    """python-igraph's and networkx's answers on ``pairs`` of the same graph (each statement once, as an
    undirected simple graph), checked against ``ours``; their timings, and how many of our answers were
    capped by ``max_paths`` (checked as subsets)."""
    import igraph
    import networkx as nx

    sources = np.repeat(np.arange(finder.entities), np.diff(np.asarray(finder.indptr)))
    targets = np.asarray(finder.targets)
    keep = sources < targets  # each statement once (both directions are stored); self-loops dropped
    edges = np.stack([sources[keep], targets[keep]], axis=1)
    started = time.perf_counter()
    graph_ig = igraph.Graph(n=finder.entities, edges=edges, directed=False).simplify()
    igraph_build = time.perf_counter() - started
    started = time.perf_counter()
    graph_nx = nx.Graph()
    graph_nx.add_nodes_from(range(finder.entities))
    graph_nx.add_edges_from(edges.tolist())
    networkx_build = time.perf_counter() - started
    log(f"peers built: igraph {igraph_build:.1f} s, networkx {networkx_build:.1f} s")

    def as_ids(paths) -> set[tuple[str, ...]]:
        return {tuple(ids[n] for n in path) for path in paths}

    ig_seconds, ig_answers = _timed(lambda s, t: as_ids(graph_ig.get_all_shortest_paths(s, to=t)), pairs)
    log(f"igraph: {_summary(ig_seconds)} over {len(pairs)} pairs")
    nx_seconds, nx_answers = _timed(lambda s, t: as_ids(nx.all_shortest_paths(graph_nx, s, t)), pairs)
    log(f"networkx: {_summary(nx_seconds)} over {len(pairs)} pairs")
    capped = 0
    for (ours_paths, _, more), ig_paths, nx_paths in zip(ours, ig_answers, nx_answers, strict=False):
        assert ig_paths == nx_paths, "igraph and networkx disagree"
        if more:  # over limits.wikidata.max_paths: the paths returned are shortest ones, the rest counted
            capped += 1
            assert ours_paths <= ig_paths, "a path returned is not a shortest path"
        else:
            assert ours_paths == ig_paths, "the peers found other shortest paths"
    return {
        "igraph": {**_summary(ig_seconds), "build_s": round(igraph_build, 1)},
        "networkx": {**_summary(nx_seconds), "build_s": round(networkx_build, 1)},
    }, capped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, default=1_000_000)
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--peer-pairs", type=int, default=10, help="pairs the peers answer (slower)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    folder = WORK_DIR / "kb_paths" / f"n{args.entities}"
    started = time.perf_counter()
    statements = write_graph(folder, generated_edge_batches(args.entities))
    build_seconds = time.perf_counter() - started
    finder = PathFinder(folder)
    log(f"graph: {finder.entities:,} entities, {statements:,} statements, built in {build_seconds:.1f} s")
    ids = [f"{'P' if c % 2 else 'Q'}{c // 2}" for c in np.asarray(finder.nodes).tolist()]
    pairs = _pairs(finder, args.pairs, args.seed)

    def ours(source: int, target: int) -> tuple[set[tuple[str, ...]], int | None, bool]:
        found = finder.shortest_paths(ids[source], ids[target], 3)
        return {tuple(p.entities) for p in found.paths}, found.hops, found.more_paths > 0

    ours_seconds, ours_answers = _timed(ours, pairs)
    hops = [h for _, h, _ in ours_answers]
    log(f"ours: {_summary(ours_seconds)} over {len(pairs)} pairs")
    peer_pairs = pairs[: args.peer_pairs]
    peers, capped = _peers(finder, ids, peer_pairs, ours_answers)
    ours_peer = ours_seconds[: len(peer_pairs)]
    result = {
        "machine": machine_info(),
        "entities": finder.entities,
        "statements": statements,
        "graph_build_s": round(build_seconds, 1),
        "graph_bytes": sum(p.stat().st_size for p in folder.glob("*.npy")),
        "pairs": len(pairs),
        "hops": {str(h): hops.count(h) for h in sorted(set(hops))},
        "ours": _summary(ours_seconds),
        "peer_pairs": len(peer_pairs),
        "ours_on_peer_pairs": _summary(ours_peer),
        **peers,
        "same_answers": True,
        "pairs_over_max_paths": capped,
    }
    result["vs_networkx"] = round(result["networkx"]["mean_ms"] / result["ours_on_peer_pairs"]["mean_ms"], 1)
    result["vs_igraph"] = round(result["igraph"]["mean_ms"] / result["ours_on_peer_pairs"]["mean_ms"], 2)
    rows = [
        [name, result[key]["p50_ms"], result[key]["p99_ms"], result[mean]["mean_ms"], ratio]
        for name, key, mean, ratio in (
            ("ours", "ours", "ours_on_peer_pairs", "1"),
            ("igraph", "igraph", "igraph", f"{result['vs_igraph']}x"),
            ("networkx", "networkx", "networkx", f"{result['vs_networkx']}x"),
        )
    ]
    print(
        format_table(["paths (3 hops)", "p50 ms", "p99 ms", "mean ms (peer pairs)", "ours faster by"], rows)
    )
    write_results("kb_paths", result)


if __name__ == "__main__":
    main()
