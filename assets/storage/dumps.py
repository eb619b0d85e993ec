"""The dump registry: which dump files each snapshot was built from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from assets.files import write_json_atomic
from assets.storage.builds import (
    dump_registry_file,
)


def register_dump(
    data_dir: Path, snapshot_id: str, files: list[str], *, source: str, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Record the dump files of a snapshot (written by the CLI, the landing sensor and the dump asset)."""
    entry = {
        "snapshot_id": snapshot_id,
        "files": [str(Path(f).resolve()) for f in files],
        "source": source,
        **(extra or {}),
    }
    write_json_atomic(dump_registry_file(data_dir, snapshot_id), entry)
    return entry


def registered_dump(data_dir: Path, snapshot_id: str) -> dict[str, Any] | None:
    """The registry entry of a snapshot, or None when its dump was never registered."""
    path = dump_registry_file(data_dir, snapshot_id)
    return json.loads(path.read_text()) if path.is_file() else None
