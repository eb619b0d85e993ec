"""The Wikidata reader against its floor and its peer, on generated Wikidata-shaped dumps (bz2, the layout
and shape of Wikimedia's, :mod:`support.generator.wikidata`) of 100k and 1M entities:

* ``lbzip2 -dc > /dev/null`` on the same cores: decompression alone, the floor any reader stands on
  (measured where the system tool is installed, ``apt-get install lbzip2``; without it the run says so and
  reports no floor);
* this project's reader (:func:`assets.wikidata.iter_entities`, indexed_bzip2 on every core, msgspec
  structs), every statement touched;
* qwikidata's ``WikidataJsonDump`` (bz2 + ``json.loads``, one core), every statement touched.

Each runs in its own process (wall, CPU and peak RSS of the process tree measured from outside); the
ratios are printed and written to ``benchmarks/results/wikidata_reader.json``. Targets (issue 46): ours
>= 0.8x lbzip2's throughput and >= 2x qwikidata's; peak RSS flat from 100k to 1M.

    .venv/bin/python benchmarks/bench_wikidata_reader.py [--entities 100000 1000000] [--skip-peer-above N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys

from benchmarks.common import format_table, machine_info, mib, run_measured, run_measured_json, write_results
from support.generator.wikidata import write_dump
from support.workspace import log


def _lbzip2(path: str, threads: int) -> dict | None:
    """The floor, ``lbzip2 -dc``, or None where lbzip2 is not installed."""
    if shutil.which("lbzip2") is None:
        log("lbzip2 is not installed (apt-get install lbzip2): no decompression floor measured")
        return None
    run = run_measured(["bash", "-c", f"lbzip2 -dc -n {threads} '{path}' > /dev/null"])
    if run.returncode != 0:
        raise SystemExit(f"lbzip2 failed: {run.stderr[-2000:]}")
    return {
        "wall_s": run.wall_seconds,
        "cpu_s": round(run.user_seconds + run.system_seconds, 1),
        "peak_rss_bytes": run.peak_rss_tree,
    }


def measure(entities: int, threads: int, peer: bool) -> dict:
    stats = write_dump(entities)
    path = stats["file"]
    size = f"{stats['bz2_bytes'] / 1e6:,.0f} MB bz2, {stats['json_bytes'] / 1e9:.2f} GB JSON"
    log(f"n={entities:,}: lbzip2 -dc ({size})")
    floor = _lbzip2(path, threads)
    log(f"n={entities:,}: ours")
    ours, ours_run = run_measured_json(
        [sys.executable, "-m", "benchmarks.wikidata_readers", "ours", path, "--threads", str(threads)]
    )
    row = {
        "entities": stats["entities"],
        "bz2_bytes": stats["bz2_bytes"],
        "json_bytes": stats["json_bytes"],
        "ours": {**ours_run, **ours},
        "ours_mb_per_s": round(stats["json_bytes"] / ours_run["wall_s"] / 1e6, 1),
    }
    if floor is not None:
        row["lbzip2"] = floor
        row["ours_vs_lbzip2"] = round(floor["wall_s"] / ours_run["wall_s"], 3)
        row["lbzip2_mb_per_s"] = round(stats["json_bytes"] / floor["wall_s"] / 1e6, 1)
    if peer:
        log(f"n={entities:,}: qwikidata")
        theirs, theirs_run = run_measured_json(
            [sys.executable, "-m", "benchmarks.wikidata_readers", "qwikidata", path]
        )
        assert (theirs["entities"], theirs["statements"]) == (ours["entities"], ours["statements"]), (
            theirs,
            ours,
        )
        row["qwikidata"] = {**theirs_run, **theirs}
        row["ours_vs_qwikidata"] = round(theirs_run["wall_s"] / ours_run["wall_s"], 2)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument(
        "--skip-peer-above", type=int, default=10**9, help="no qwikidata run above N entities"
    )
    args = parser.parse_args()
    rows = [measure(n, args.threads, n <= args.skip_peer_above) for n in args.entities]
    table = [
        [
            f"{r['entities']:,}",
            f"{r['lbzip2']['wall_s']:.1f}" if "lbzip2" in r else "not installed",
            f"{r['ours']['wall_s']:.1f}",
            f"{r['qwikidata']['wall_s']:.1f}" if "qwikidata" in r else "-",
            f"{r['ours_vs_lbzip2']:.2f}x" if "lbzip2" in r else "-",
            f"{r['ours_vs_qwikidata']:.1f}x" if "qwikidata" in r else "-",
            mib(r["ours"]["peak_rss_bytes"]),
        ]
        for r in rows
    ]
    print(
        format_table(
            [
                "entities",
                "lbzip2 -dc s",
                "ours s",
                "qwikidata s",
                "ours/lbzip2",
                "ours/qwikidata",
                "ours RSS",
            ],
            table,
        )
    )
    write_results("wikidata_reader", {"machine": machine_info(), "threads": args.threads, "rows": rows})


if __name__ == "__main__":
    main()
