"""The folder an export writes: what may be replaced there, and the manifest that says what it holds.

An export is assembled beside its ``--out`` folder and swapped in whole. The folder it replaces may hold
only what an earlier export of the same kind wrote, as that export's manifest (:data:`EXPORT_MANIFEST`)
lists it: a user's own file in the folder (notes, a ``.git``, a sub-folder) or an export of the other kind
makes the export refuse, naming the path, before it writes a byte. Pure module: no Dagster import.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from assets.files import publish, write_json_atomic
from assets.storage import check_output_target

EXPORT_MANIFEST = "kilt_export.json"
KIND_NAMES = {
    "huggingface": "a Hugging Face export (kiltpipe export-hf)",
    "beir": "a BEIR export (kiltpipe export-beir)",
}
SHOWN = 5


class ExportError(RuntimeError):
    """The snapshot cannot be exported as asked; the message says why and names the path."""


def check_export_target(out: Path, kind: str) -> None:
    """Refuse ``out`` (an :class:`ExportError` naming the path) unless it is missing, empty, or an earlier
    export of ``kind`` holding nothing its manifest does not list."""
    out = check_output_target(out, f"export-{'hf' if kind == 'huggingface' else kind}")
    if out.exists() and not out.is_dir():
        raise ExportError(f"{out} is a file, not a folder: choose another --out")
    if not out.is_dir() or not any(out.iterdir()):
        return
    manifest_path = out / EXPORT_MANIFEST
    if not manifest_path.is_file():
        raise ExportError(
            f"{out} holds files that no export wrote (no {EXPORT_MANIFEST}), e.g. "
            f"{_listed(sorted(out.iterdir()))}: choose another --out, or empty the folder"
        )
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise ExportError(
            f"{manifest_path} is not an export manifest ({error}): choose another --out"
        ) from None
    found = manifest.get("kind", "huggingface") if isinstance(manifest, dict) else None
    if found != kind:
        what = KIND_NAMES.get(found, f"an export of kind {found!r}")
        raise ExportError(
            f"{out} holds {what}, not {KIND_NAMES[kind]}; it is not replaced: choose another --out"
        )
    listed = manifest.get("files")
    if not isinstance(listed, list):
        raise ExportError(
            f"{out} was written by an earlier kiltpipe whose {EXPORT_MANIFEST} lists no files, so what else "
            "the folder holds cannot be told apart: remove the folder, or choose another --out"
        )
    owned = {out / name for name in [*listed, EXPORT_MANIFEST]}
    owned |= {parent for path in owned for parent in path.parents if parent != out and out in parent.parents}
    foreign = sorted(path for path in out.rglob("*") if path not in owned)
    foreign = [path for path in foreign if path.parent not in set(foreign)]  # a folder, not its files
    if foreign:
        raise ExportError(
            f"{out} holds {len(foreign)} thing(s) that the earlier export there did not write: "
            f"{_listed(foreign)}; an export replaces only its own files: move them, or choose another --out"
        )


def _listed(paths: list[Path]) -> str:
    shown = ", ".join(str(p) for p in paths[:SHOWN])
    return shown + (f" and {len(paths) - SHOWN} more" if len(paths) > SHOWN else "")


def publish_export(work: Path, out: Path, manifest: dict[str, Any]) -> None:
    """Write ``manifest`` (with the list of every file under ``work``) into ``work`` and swap ``work`` in
    as ``out``."""
    files = sorted(p.relative_to(work).as_posix() for p in work.rglob("*") if p.is_file())
    write_json_atomic(
        work / EXPORT_MANIFEST, {**manifest, "files": [f for f in files if f != EXPORT_MANIFEST]}
    )
    publish(work, out)
