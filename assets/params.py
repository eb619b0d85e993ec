"""``params.yaml``: the one place the pipeline's parameters live (CLI, Dagster and DVC read it)."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any

import yaml

DEFAULTS: dict[str, Any] = {
    "data_dir": "data",
    "knowledge_source": {
        "dump": None,
        "snapshot": None,
        "as_of": None,
        "workers": 2,
        "rows_per_shard": 20_000,
        "part_bytes": 128_000_000,
        "invalid_bytes": "error",
    },
    "snapshots": {
        "landing_dir": "landing",
        "sensor_interval_seconds": 60,
        "settle_seconds": 60,
        "hash_budget_mb": 4096,
        "sensor_running": True,
        "incremental": True,
        "rebuild_schedule": {"cron": "0 4 * * 0", "timezone": "UTC", "running": False},
    },
    "passages": {"max_words": 100, "mode": "kilt", "workers": 2},
    "datasets": {
        "files": None,
        "source_snapshot": None,
        "bleu_threshold": 0.5,
        "min_mapped_fraction": 0.5,
        "reports_dir": "reports",
    },
    "indexes": {
        "bm25": {"threads": 2, "heap": "2g", "language": None, "k1": 0.9, "b": 0.4},
        "dense": {
            "model": "default",
            "backend": "torch",
            "batch_size": None,
            "shard_size": 50_000,
            "factory": "Flat",
            "metric": "ip",
            "train_sample": None,
            "search_params": "",
        },
        "hybrid": {"depth": 100, "constant": 60.0},
        "checks": {
            "self_retrieval_sample": 200,
            "self_retrieval_floor": 0.95,
            "recall_queries": 500,
            "recall_floor": 0.95,
            "seed": 0,
        },
        "evaluation": {"depth": 100, "indexes": ["bm25", "dense", "hybrid"]},
    },
}


def params_path() -> Path:
    return Path(os.environ.get("KILT_PARAMS", "params.yaml"))


@cache
def load_params(path: Path | None = None) -> dict[str, Any]:
    """Defaults overlaid with ``params.yaml`` (from ``$KILT_PARAMS`` or the working directory)."""
    path = path or params_path()
    loaded: dict[str, Any] = {}
    if path.is_file():
        loaded = yaml.safe_load(path.read_text()) or {}
    return _overlay(DEFAULTS, loaded)


def _overlay(defaults: dict[str, Any], loaded: dict[str, Any]) -> dict[str, Any]:
    """``loaded`` over ``defaults``, nested sections merged key by key."""
    merged = {**defaults}
    for key, value in loaded.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _overlay(merged[key], value)
        else:
            merged[key] = value
    return merged


def data_dir() -> Path:
    return Path(os.environ.get("KILT_DATA_DIR") or load_params()["data_dir"])


def reports_dir(data_dir: Path, value: str | Path | None = None) -> Path:
    """Where reports go: ``value`` (default ``datasets.reports_dir``); a relative one is under ``data_dir``,
    so reports stay with the snapshots they describe whatever the working directory."""
    path = Path(value if value is not None else load_params()["datasets"]["reports_dir"])
    return path if path.is_absolute() else Path(data_dir) / path


def landing_dir() -> Path:
    """The folder the landing sensor watches (``$KILT_LANDING_DIR`` or ``snapshots.landing_dir``)."""
    return Path(os.environ.get("KILT_LANDING_DIR") or load_params()["snapshots"]["landing_dir"])
