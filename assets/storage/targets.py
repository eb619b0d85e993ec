"""The one rule of every writer a user points somewhere (``--out``, ``--output``, ``--reports-dir``): it never
writes into a snapshot's own data.

A snapshot folder (``<data dir>/snapshots/<id>/``, published, or ``snapshots/.staging/<id>/`` of a build under
way) holds what readers open: the knowledge source, passages, indexes, stores. A path inside it, or the folder
itself, is refused before a byte is written, naming the path and the snapshot; only its ``exports/`` folder,
where exports go by default, is open to writers. Pure module: no Dagster import.
"""

from __future__ import annotations

from pathlib import Path

from assets.storage.builds import STAGING_DIR

__all__ = ["OPEN_IN_SNAPSHOT", "ProtectedTargetError", "check_output_target"]

OPEN_IN_SNAPSHOT = ("exports",)
"""Folders of a snapshot that writers may write into."""


class ProtectedTargetError(ValueError):
    """An output path a user named lies in a snapshot's own data; the message names both."""


def _snapshot_root(path: Path) -> Path | None:
    """The snapshot folder ``path`` is in (or is), or None."""
    for folder in (path, *path.parents):
        parent = folder.parent
        if parent.name == STAGING_DIR and parent.parent.name == "snapshots":
            return folder
        if parent.name == "snapshots" and (folder / "knowledge_source").is_dir():
            return folder
    return None


def check_output_target(out: Path | str, writer: str) -> Path:
    """``out`` as an absolute path, or a :class:`ProtectedTargetError` when it is a snapshot folder or lies
    inside one outside its ``exports/`` (``writer``: the command or option, for the message)."""
    path = Path(out).absolute()
    root = _snapshot_root(path)
    if root is None:
        return path
    relative = path.relative_to(root).parts
    if relative and relative[0] in OPEN_IN_SNAPSHOT:
        return path
    raise ProtectedTargetError(
        f"{path} is {'the folder' if not relative else 'inside the folder'} of snapshot {root.name} "
        f"({root}), whose files readers open: {writer} never writes there. Choose a path outside it "
        f"(its {OPEN_IN_SNAPSHOT[0]}/ folder is open to exports)"
    )
