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
        "invalid_bytes": "error",
    },
    "passages": {"max_words": 100, "mode": "kilt", "workers": 2},
    "datasets": {
        "files": None,
        "source_snapshot": None,
        "bleu_threshold": 0.5,
        "min_mapped_fraction": 0.5,
        "reports_dir": "reports",
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
    merged = {**DEFAULTS}
    for key, value in loaded.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


def data_dir() -> Path:
    return Path(os.environ.get("KILT_DATA_DIR") or load_params()["data_dir"])
