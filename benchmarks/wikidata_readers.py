"""The readers the Wikidata benchmarks compare, each run in a process of its own by
``bench_wikidata_reader.py``: this project's (:func:`assets.wikidata.iter_entities`: parallel bz2 decoding
inside the file, typed ``msgspec`` structs) and qwikidata's dump iterator (``bz2`` and ``json.loads`` of each
line, on one core). Each touches every statement, so neither skips work, and prints one JSON line.

    .venv/bin/python -m benchmarks.wikidata_readers ours|qwikidata FILE [--threads N]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def read_ours(path: Path, threads: int) -> dict:
    from assets.wikidata import Entity, ReadReport, iter_entities, mapping

    report = ReadReport()
    entities = statements = 0
    for entity in iter_entities(path, Entity, report=report, threads=threads):
        entities += 1
        statements += sum(len(group) for group in mapping(entity.claims).values())
    return {
        "entities": entities,
        "statements": statements,
        "json_bytes": report.bytes,
        "skipped": report.skipped,
    }


def read_qwikidata(path: Path) -> dict:
    from qwikidata.json_dump import WikidataJsonDump

    entities = statements = 0
    for entity in WikidataJsonDump(str(path)):
        entities += 1
        statements += sum(len(group) for group in (entity.get("claims") or {}).values())
    return {"entities": entities, "statements": statements}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reader", choices=["ours", "qwikidata"])
    parser.add_argument("path", type=Path)
    parser.add_argument("--threads", type=int, default=0)
    args = parser.parse_args()
    started = time.perf_counter()
    result = read_ours(args.path, args.threads) if args.reader == "ours" else read_qwikidata(args.path)
    result["seconds"] = round(time.perf_counter() - started, 3)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
