"""Our KILT metrics on KILT's own test fixtures, against the values KILT's tests assert.

KILT's fixtures (``tests/test_data/gold*.jsonl``, ``guess*.jsonl`` of github.com/facebookresearch/KILT,
MIT) ship with the tests, unchanged (``tests/data/kilt/kilt_tests``, origin in SOURCES.md); ``--kilt-repo``
reads them from a checkout of KILT instead (a newer one). Every value must be equal to KILT's (exactly for
the retrieval metrics, which are ratios of small integers; to 1e-12 for F1 and ROUGE-L). Exit status 1 on
any difference.

    .venv/bin/python benchmarks/check_kilt_fixtures.py [--kilt-repo /tmp/KILT]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from assets.indexes.evaluation import downstream_metrics, retrieval_metrics
from benchmarks.common import write_results
from support.workspace import REPO_ROOT, log

SHIPPED = REPO_ROOT / "tests" / "data" / "kilt" / "kilt_tests"

RANK_KEY_SETS = (
    ("wikipedia_id",),
    ("wikipedia_id", "section"),
    ("wikipedia_id", "start_paragraph_id", "end_paragraph_id"),
)
# (gold, guess, kind, expected): the values of KILT's tests/test_eval_retrieval.py and test_eval_downstream.py
EXPECTED: tuple[tuple[str, str, str, dict[str, float]], ...] = (
    ("gold2", "guess2_1", "retrieval",
     {"Rprec": 1 / 2, "precision@1": 1, "precision@5": 2 / 5, "recall@5": 2 / 3, "success_rate@5": 1}),
    ("gold2", "guess2_2", "retrieval",
     {"Rprec": 1, "precision@1": 1, "precision@5": 1 / 5, "recall@5": 1 / 3, "success_rate@5": 1}),
    ("gold1", "guess1_1", "downstream",
     {"em": 2 / 3, "f1": 0.8333333333333334, "rougel": 0.7222222178240741, "KILT-em": 1 / 3}),
    ("gold3", "guess3_1", "downstream",
     {"em": 0, "f1": 0.5102040816326531, "rougel": 0.44705881864636676,
      "KILT-em": 0, "KILT-f1": 0.25510204081632654, "KILT-rougel": 0.22352940932318338}),
)  # fmt: skip


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _flat(result: dict[str, Any]) -> dict[str, float]:
    flat: dict[str, float] = {}
    for key, value in result.items():
        if isinstance(value, dict):
            flat.update(_flat(value))
        else:
            flat[key] = value
    return flat


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--kilt-repo", type=Path, help="a checkout of facebookresearch/KILT (default: the shipped fixtures)"
    )
    args = parser.parse_args(argv)
    data = args.kilt_repo / "tests" / "test_data" if args.kilt_repo else SHIPPED
    if not data.is_dir():
        print(f"{data.resolve()}: not a KILT checkout (tests/test_data missing)", file=sys.stderr)
        return 2
    print(f"KILT's fixtures: {data}")
    differences = checked = 0
    for gold_name, guess_name, kind, expected in EXPECTED:
        gold, guess = _records(data / f"{gold_name}.jsonl"), _records(data / f"{guess_name}.jsonl")
        runs = (
            [(keys, retrieval_metrics(gold, guess, [1, 5], keys)) for keys in RANK_KEY_SETS]
            if kind == "retrieval"
            else [(None, _flat(downstream_metrics(gold, guess)))]
        )
        for keys, ours in runs:
            for metric, value in expected.items():
                checked += 1
                same = abs(ours[metric] - value) <= 1e-12
                differences += not same
                verdict = "ok  " if same else "DIFF"
                where = f"{gold_name}/{guess_name} {metric:<14}"
                print(
                    f"{verdict} {where} ours {ours[metric]:.16g} KILT {value:.16g}"
                    + (f"  rank keys {'+'.join(keys)}" if keys else "")
                )
    print(f"{checked} values compared, {differences} different")
    if args.kilt_repo is None:  # the figure is the shipped fixtures'
        log(f"wrote {write_results('kilt_fixtures', {'checked': checked, 'different': differences})}")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
