"""Write a Wikidata-shaped entity dump of N entities made from the real entities of tests/data
(:mod:`support.generator.wikidata`), bz2, under ``benchmarks/work/wikidata/``; print its statistics.

    .venv/bin/python benchmarks/gen_wikidata_dump.py --entities 100000 [--seed 0]
"""

from __future__ import annotations

import argparse
import json

from support.generator.wikidata import write_dump


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(json.dumps(write_dump(args.entities, args.seed), indent=2))


if __name__ == "__main__":
    main()
