"""Structured passages of pathological pages (issue 44), against the code as it was before (the whole tree
at ``PEER_COMMIT``, a temporary git worktree), both measured in this run, each size in a fresh process.

The pages (``support/hostile_pages.py``, real markup): a header row of N cells, an infobox value of N
bytes, N infoboxes on a page; each at a small and a 10x size. Ours runs with ``limits.structures`` raised
out of the way (the algorithm's time; with the default limits a value over 64 KiB is skipped and counted),
the peer as it was. Printed: seconds per size, the 10x/1x ratio (target <= 15), and ours/peer at 10x.

    .venv/bin/python benchmarks/bench_structured_hostile.py [--peer-cap 300]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.common import format_table, machine_info, peer_worktree, tree_env, write_results
from support.hostile_pages import structure_page
from support.workspace import REPO_ROOT, log

PEER_COMMIT = "9634dd6"
SIZES = {"header_cells": (10_000, 100_000), "value_bytes": (200_000, 2_000_000), "infoboxes": (4_000, 40_000)}
TIMER = """
import inspect, sys, time
try:  # today's layout
    from assets.wikipedia.wikitext.tables import find_structures
    from assets.wikipedia.passages.structured import structured_passages
except ImportError:  # the peer's (before the modules moved into packages)
    from assets.wikipedia.tables import find_structures
    from assets.wikipedia.structured_passages import structured_passages
text = open(sys.argv[1], encoding="utf-8").read()
if "limits" in inspect.signature(find_structures).parameters:  # ours: the limits out of the way
    from assets.limits import StructureLimits
    limits = StructureLimits(max_value_bytes=1 << 30, max_structures=1 << 30, max_grid_cells=1 << 30)
    read = lambda: find_structures(text, limits)
else:  # the peer, as it was
    read = lambda: find_structures(text)
started = time.perf_counter()
passages = structured_passages("1", "Page", read(), 100)
print(time.perf_counter() - started, len(passages))
"""


def _time(tree: Path, page: Path, cap: float) -> tuple[float | None, int | None]:
    """Seconds and passages of one page in a fresh process of ``tree``; (None, None) past ``cap``."""
    env = tree_env(tree)
    try:
        done = subprocess.run(
            [sys.executable, "-c", TIMER, str(page)], cwd=tree, env=env, capture_output=True, text=True,
            timeout=cap, check=True,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return None, None
    seconds, passages = done.stdout.split()
    return float(seconds), int(passages)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer-cap", type=float, default=300.0, help="seconds a peer run may take")
    args = parser.parse_args()
    rows, results = [], []
    with tempfile.TemporaryDirectory() as work, peer_worktree(PEER_COMMIT) as peer:
        for shape, sizes in SIZES.items():
            measured = {}
            for size in sizes:
                page = Path(work) / f"{shape}-{size}.txt"
                page.write_text(structure_page(shape, size), encoding="utf-8")
                for name, tree in (("ours", REPO_ROOT), ("peer", peer)):
                    log(f"{shape} {size:,}: {name}")
                    measured[(name, size)] = _time(tree, page, args.peer_cap)
            small, large = sizes
            entry = {"shape": shape, "sizes": list(sizes)}
            for name in ("ours", "peer"):
                first, second = measured[(name, small)][0], measured[(name, large)][0]
                entry[name] = {
                    "seconds": [first, second],
                    "passages": [measured[(name, small)][1], measured[(name, large)][1]],
                    "ratio_10x": round(second / first, 2) if first and second else None,
                }
            ours_large, peer_large = entry["ours"]["seconds"][1], entry["peer"]["seconds"][1]
            both = ours_large and peer_large
            entry["ours_over_peer_at_10x"] = round(ours_large / peer_large, 4) if both else None
            results.append(entry)
            rows.append(
                [
                    shape,
                    f"{small:,} / {large:,}",
                    " / ".join("> cap" if s is None else f"{s:.3f}" for s in entry["ours"]["seconds"]),
                    entry["ours"]["ratio_10x"],
                    " / ".join("> cap" if s is None else f"{s:.2f}" for s in entry["peer"]["seconds"]),
                    entry["peer"]["ratio_10x"],
                    entry["ours_over_peer_at_10x"]
                    or (f"< {ours_large / args.peer_cap:.4f}" if ours_large else "both > cap"),
                ]
            )
    print(format_table(["shape", "sizes", "ours s", "ours 10x", "peer s", "peer 10x", "ours/peer"], rows))
    path = write_results(
        "structured_hostile", {"peer_commit": PEER_COMMIT, "machine": machine_info(), "shapes": results}
    )
    log(f"wrote {path}: {json.dumps([r['ours']['ratio_10x'] for r in results])}")


if __name__ == "__main__":
    main()
