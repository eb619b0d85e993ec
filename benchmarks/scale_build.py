"""Building a generated snapshot stage by stage under measurement: each stage a ``kiltpipe build --select``
process of its own (wall, CPU, peak RSS of its process tree, disk of its artifacts), as ``bench_scale.py``
and ``bench_exports.py`` run them."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from assets.disk_space import tree_bytes
from benchmarks.common import run_measured
from support.workspace import REPO_ROOT, log

KILTPIPE = REPO_ROOT / ".venv" / "bin" / "kiltpipe"
# stage -> (Dagster selection, the SnapshotPaths attributes of its artifacts)
STAGES: dict[str, tuple[str, tuple[str, ...]]] = {
    "knowledge_source": ("+key:knowledge_source", ("knowledge_source",)),
    "knowledge_source_jsonl": ("key:knowledge_source_jsonl", ("kilt_jsonl",)),
    "passages": ("key:passages", ("passages_parquet",)),
    "passage_collection": ("key:passage_collection", ("passages_collection",)),
    "passage_tsv": ("key:passage_tsv", ("passages_tsv",)),
    "provenance_store": ("key:provenance_store", ("provenance_store",)),
    "bm25_index": ("key:bm25_index", ("bm25_index",)),
    "dense_index": ("key:dense_index", ("dense_embeddings", "dense_index")),
    "remapped_datasets": ("key:remapped_datasets", ("datasets",)),
    "retrieval_evaluation": ("key:retrieval_evaluation", ()),
}


def snapshot_of(dump: dict[str, Any]) -> str:
    """The snapshot id of a generated dump (its manifest)."""
    return f"{dump['arguments']['wiki']}-{dump['arguments']['date']}"


def build_env(root: Path, params: Path) -> dict[str, str]:
    """The environment of a measured build: its params.yaml and a Dagster home under ``root``. A data or
    landing folder the caller's environment names is not inherited: the build writes where its params say,
    never into a data dir of the user's (or of the tests' demo build)."""
    inherited = {k: v for k, v in os.environ.items() if k not in ("KILT_DATA_DIR", "KILT_LANDING_DIR")}
    env = {**inherited, "KILT_PARAMS": str(params), "DAGSTER_HOME": str(root / "dagster_home")}
    Path(env["DAGSTER_HOME"]).mkdir(exist_ok=True)
    return env


def measure_stages(
    stages: list[str],
    measured: dict[str, Any],
    *,
    paths: Any,
    dump_file: Path,
    env: dict[str, str],
    save: Callable[[str], None],
    before: Callable[[str], None] = lambda stage: None,
) -> None:
    """Build each stage not in ``measured`` yet (``kiltpipe build --select``, a process of its own) into
    ``paths``' snapshot, measure it into ``measured[stage]``; ``before(stage)`` and ``save(stage)`` run
    around each."""
    for stage in stages:
        if stage in measured:
            log(f"{stage}: measured already ({measured[stage]['wall_seconds']:.0f} s)")
            continue
        before(stage)
        selection, artifacts = STAGES[stage]
        command = [str(KILTPIPE), "build", "--snapshot", paths.snapshot_id, "--select", selection, "--quiet"]
        command += ["--executor", "in_process"]
        if stage == "knowledge_source":  # later stages read the dump the snapshot registered
            command += ["--dump", str(dump_file)]
        log(f"{stage}: {' '.join(command[1:])}")
        run = run_measured(command, env=env, interval=0.5)
        if run.returncode != 0:
            raise SystemExit(f"{stage} failed ({run.returncode}):\n{run.stderr[-4000:]}")
        summary = json.loads(run.stdout)
        measured[stage] = {
            "wall_seconds": run.wall_seconds,
            "cpu_seconds": round(run.user_seconds + run.system_seconds, 1),
            "peak_rss_tree": run.peak_rss_tree,
            "disk_bytes": tree_bytes(*(getattr(paths, name) for name in artifacts)),
            "checks_passed": all(c.get("passed", True) for c in summary.get("checks", {}).values()),
            "asset": summary.get("assets", {}).get(stage, {}),
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
        }
        row = measured[stage]
        log(f"{stage}: {row['wall_seconds']:.0f} s, peak RSS {row['peak_rss_tree'] / 2**20:,.0f} MiB")
        save(stage)


def dump_file_name(dump: dict[str, Any]) -> str:
    """The file name a generated dump is written under."""
    return f"{snapshot_of(dump)}-pages-articles-multistream.xml.bz2"
