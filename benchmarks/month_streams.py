"""How much of a month-later dump an incremental knowledge source could skip (issue 28, part 3).

A multistream dump is bz2 streams of 100 pages, located by its index file. A stream of snapshot N+1 whose
compressed bytes equal a stream of N holds the same pages with the same text: its pages need neither
decompressing nor converting. Every other stream must at least be decompressed. This script measures, for
a generated N and N+1 (``gen_wiki_dump.py --month``): the share of N+1's streams and bytes that match a
stream of N byte for byte, the time to decompress all of N+1 and only the changed streams (Python's bz2,
one core), and, from the generator's truth file, the pages the month changed. It bounds what the parse
step of an incremental build can save before any conversion; the build's other stages are not counted.

    .venv/bin/python benchmarks/month_streams.py --articles 100000
"""

from __future__ import annotations

import argparse
import bz2
import hashlib
import itertools
import json
import time
from pathlib import Path
from typing import Any

from support.generator.dump import default_out
from support.workspace import RESULTS_DIR, log


def stream_offsets(index_file: Path, dump_file: Path) -> list[tuple[int, int]]:
    """``(start, end)`` byte range of every bz2 stream of a multistream dump, from its index (plus the
    header stream before the first indexed one and the footer stream after the last)."""
    starts = set()
    with bz2.open(index_file, "rt", encoding="utf-8") as lines:
        for line in lines:
            starts.add(int(line.split(":", 1)[0]))
    size = dump_file.stat().st_size
    bounds = sorted({0, *starts, size})
    return list(itertools.pairwise(bounds))


def stream_digests(dump_file: Path, ranges: list[tuple[int, int]]) -> list[tuple[str, int, int]]:
    """``(sha1 of the compressed bytes, start, end)`` of each stream."""
    digests = []
    with open(dump_file, "rb") as handle:
        for start, end in ranges:
            handle.seek(start)
            digests.append((hashlib.sha1(handle.read(end - start)).hexdigest(), start, end))
    return digests


def decompress_seconds(dump_file: Path, ranges: list[tuple[int, int]]) -> tuple[float, int]:
    """Seconds to decompress the given streams one by one (one core), and the XML bytes they hold."""
    started, xml = time.perf_counter(), 0
    with open(dump_file, "rb") as handle:
        for start, end in ranges:
            handle.seek(start)
            xml += len(bz2.decompress(handle.read(end - start)))
    return time.perf_counter() - started, xml


def measure(articles: int, seed: int, month: int) -> dict[str, Any]:
    before_dir, after_dir = default_out(articles, seed), default_out(articles, seed, month)
    stats_before = json.loads((before_dir / "stats.json").read_text())
    stats_after = json.loads((after_dir / "stats.json").read_text())

    def files(directory: Path, stats: dict[str, Any]) -> tuple[Path, Path]:
        names = stats["files"]
        dump = next(n for n in names if n.endswith("multistream.xml.bz2"))
        index = next(n for n in names if n.endswith("multistream-index.txt.bz2"))
        return directory / dump, directory / index

    dump_before, index_before = files(before_dir, stats_before)
    dump_after, index_after = files(after_dir, stats_after)
    known = {
        digest for digest, _, _ in stream_digests(dump_before, stream_offsets(index_before, dump_before))
    }
    after = stream_digests(dump_after, stream_offsets(index_after, dump_after))
    changed = [(start, end) for digest, start, end in after if digest not in known]
    changed_bytes = sum(end - start for start, end in changed)
    total_bytes = dump_after.stat().st_size
    log(f"{len(changed):,} of {len(after):,} streams of N+1 differ from every stream of N")
    all_seconds, all_xml = decompress_seconds(dump_after, [(s, e) for _, s, e in after])
    changed_seconds, changed_xml = decompress_seconds(dump_after, changed)
    truth = [json.loads(line) for line in (after_dir / "truth.jsonl").read_text().splitlines()]
    return {
        "articles": articles,
        "streams": len(after),
        "streams_changed": len(changed),
        "streams_changed_fraction": round(len(changed) / len(after), 4),
        "bytes_changed_fraction": round(changed_bytes / total_bytes, 4),
        "pages_in_truth_file": len(truth),
        "decompress_all_seconds_one_core": round(all_seconds, 1),
        "decompress_changed_seconds_one_core": round(changed_seconds, 1),
        "xml_bytes_all": all_xml,
        "xml_bytes_changed": changed_xml,
        "changes": stats_after.get("changes") or stats_after.get("arguments"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--articles", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--month", type=int, default=1)
    args = parser.parse_args()
    result = measure(args.articles, args.seed, args.month)
    out = RESULTS_DIR / "month_streams.json"
    previous = json.loads(out.read_text()) if out.is_file() else {}
    previous[str(args.articles)] = result
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(previous, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
