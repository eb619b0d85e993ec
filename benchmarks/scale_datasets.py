"""The dataset of the scale runs (issue 28, part 4): drawn from snapshot N (``gen_scale_dataset.py``), mapped
onto N by ``kiltpipe build`` (``bench_scale.py``), and what its mapping is checked against: every span drawn
from N must map onto N to itself.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assets.storage import SnapshotPaths, read_report_json
from assets.wikipedia.passages import SPAN_COLUMNS
from benchmarks.common import log
from benchmarks.gen_scale_dataset import TASKS, generate_dataset

RECORDS = 100_000
COORDINATES = ("wikipedia_id", "title", *SPAN_COLUMNS)


def ensure_dataset(snapshot: SnapshotPaths, out: Path, *, records: int = RECORDS, seed: int = 0) -> dict:
    """The dataset drawn from ``snapshot`` under ``out`` (drawn now unless drawn with these arguments)."""
    summary_file = out / "dataset.json"
    if summary_file.is_file():
        summary = json.loads(summary_file.read_text())
        if (summary["snapshot"], summary["records"], summary["seed"]) == (
            snapshot.snapshot_id,
            records,
            seed,
        ):
            return summary
    log(f"drawing {records:,} records from {snapshot.snapshot_id} into {out}")
    return generate_dataset(snapshot, out, records=records, seed=seed)


def dataset_files(out: Path) -> list[dict[str, str]]:
    """The ``datasets.files`` entries of the drawn dataset (one dev split per task)."""
    return [
        {"path": str(out / f"{task}-dev-kilt.jsonl"), "format": "kilt", "dataset": task, "split": "dev"}
        for task in TASKS
    ]


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def _coordinates(record: dict[str, Any]) -> list[tuple]:
    return [
        tuple(entry.get(key) for key in COORDINATES)
        for output in record["output"]
        for entry in output.get("provenance") or []
    ]


def mapped_onto_source(out: Path, mapped: SnapshotPaths) -> dict[str, Any]:
    """How many drawn provenance spans map onto their own snapshot to themselves (the target: all)."""
    counts: dict[str, Counter] = {}
    for task in TASKS:
        count = counts.setdefault(task, Counter())
        result = {r["id"]: r for r in _lines(mapped.datasets / f"{task}-dev-kilt.jsonl")}
        for record in _lines(out / f"{task}-dev-kilt.jsonl"):
            count["records"] += 1
            new = result.get(record["id"])
            if new is None:
                count["records_dropped"] += 1
                continue
            for before, after in zip(_coordinates(record), _coordinates(new), strict=False):
                count["provenance"] += 1
                count["identical" if before == after else "different"] += 1
    total = sum(counts.values(), Counter())
    return {
        "provenance": total["provenance"],
        "identical": total["identical"],
        "identical_fraction": round(total["identical"] / max(1, total["provenance"]), 6),
        "records_dropped": total["records_dropped"],
        "by_task": {task: dict(count) for task, count in counts.items()},
    }


def mapping_rate(mapped: SnapshotPaths, stage_wall_seconds: float) -> dict[str, Any]:
    """Records mapped per second: of the mapping itself (the reports' seconds) and of the whole stage."""
    summaries = read_report_json(mapped.datasets / "mapping_summary.json")
    records = sum(s["records_in"] for s in summaries)
    seconds = sum(s["seconds"] for s in summaries)
    return {
        "records": records,
        "mapping_seconds": round(seconds, 1),
        "records_per_second": round(records / seconds, 1) if seconds else None,
        "stage_records_per_second": round(records / stage_wall_seconds, 1),
    }
