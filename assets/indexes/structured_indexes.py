"""The structured passages' own indices (tables and infoboxes): the same index types as the text
passages', built by the same code over :func:`~assets.indexes.collections.structured_view`, under
``indexes/structured/<type>`` (:func:`build_structured_indexes`). The text passages' indices are not
touched: a ``text`` search stays KILT-comparable, byte for byte.

Pure module: no Dagster import.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from assets.indexes.bm25 import build_bm25
from assets.indexes.collections import structured_view
from assets.indexes.dense import build_dense
from assets.indexes.settings import IndexSettings
from assets.storage import SnapshotPaths

__all__ = ["STRUCTURED_INDEX_TYPES", "StructuredIndexReport", "build_structured_indexes", "structured_count"]

STRUCTURED_INDEX_TYPES = ("bm25", "dense")
"""The index types built over the structured passages (those of ``indexes.build`` among these)."""


@dataclass(slots=True)
class StructuredIndexReport:
    """What :func:`build_structured_indexes` built (or why nothing)."""

    passages: int
    built: list[str] = field(default_factory=list)
    skipped: str = ""
    """Why no index was built (no structured passages); empty when indices were built."""
    documents: dict[str, int] = field(default_factory=dict)
    """Documents (BM25) or vectors (dense) per index type."""
    seconds: dict[str, float] = field(default_factory=dict)
    encoded_passages: int = 0
    reused_passages: int = 0

    def metadata(self) -> dict[str, Any]:
        return {
            "structured_passages": self.passages,
            "built": ", ".join(self.built) or "none",
            "skipped": self.skipped or "no",
            **{f"{name}_documents": count for name, count in self.documents.items()},
            **{f"{name}_seconds": round(value, 3) for name, value in self.seconds.items()},
            "encoded_passages": self.encoded_passages,
            "reused_passages": self.reused_passages,
        }


def structured_count(paths: SnapshotPaths) -> int | None:
    """The structured passages of the snapshot (their report's count); None when none were built."""
    report = paths.structured_passages / "report.json"
    if not report.is_file():
        return None
    return sum(json.loads(report.read_text(encoding="utf-8"))["passages"].values())


def build_structured_indexes(
    paths: SnapshotPaths,
    settings: IndexSettings,
    build: Sequence[str] = STRUCTURED_INDEX_TYPES,
    *,
    reuse_from: SnapshotPaths | None = None,
    progress: bool = False,
    log: Any = None,
) -> StructuredIndexReport:
    """Build the structured passages' indices of the types of ``build`` (``indexes.build``) that are
    :data:`STRUCTURED_INDEX_TYPES`, each as the text passages' of that type is built. ``reuse_from``: an
    earlier snapshot whose structured vectors are copied for passages with the same id and text. A
    snapshot without structured passages (``passages.structured: false``, or no table or infobox) gets
    none, and earlier ones are removed, so no search finds stale tables."""
    view = structured_view(paths)
    count = structured_count(paths)
    report = StructuredIndexReport(passages=count or 0)
    if not count:
        report.skipped = (
            "no structured passages were built (passages.structured is false)"
            if count is None
            else "the snapshot has no table or infobox"
        )
        shutil.rmtree(view.indexes, ignore_errors=True)
        return report
    for name in STRUCTURED_INDEX_TYPES:
        if name not in build:
            continue
        started = time.perf_counter()
        if name == "bm25":
            built = build_bm25(view, settings.bm25, progress=progress)
            report.documents[name] = built.documents_indexed
        else:
            dense = build_dense(
                view,
                settings.dense.for_snapshot(paths),
                progress=progress,
                reuse_from=structured_view(reuse_from) if reuse_from else None,
            )
            report.documents[name] = dense.index.vectors
            report.encoded_passages = dense.encode.encoded_passages
            report.reused_passages = dense.encode.reused_passages
        report.seconds[name] = time.perf_counter() - started
        report.built.append(name)
        if log:
            log(f"structured {name}: {report.documents[name]:,} documents in {report.seconds[name]:.1f}s")
    return report
