"""A collection's own indices (the structured passages', and those to come): every index type with a
``build`` (:class:`~assets.indexes.registry.SearcherType`) built over the collection's passages by its own
code, through :func:`~assets.indexes.collections.collection_view`, under ``indexes/<collection>/<type>``
(:func:`build_collection_indexes`). The text passages' indices are not touched: a ``text`` search stays
KILT-comparable, byte for byte.

Pure module: no Dagster import.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from assets.indexes.collections import collection_count, collection_report, collection_view, get_collection
from assets.indexes.registry import searcher_types
from assets.indexes.settings import IndexSettings
from assets.storage import SnapshotPaths

__all__ = ["CollectionIndexReport", "build_collection_indexes", "collection_count"]


@dataclass(slots=True)
class CollectionIndexReport:
    """What :func:`build_collection_indexes` built (or why nothing)."""

    collection: str
    passages: int
    built: list[str] = field(default_factory=list)
    skipped: str = ""
    """Why no index was built (no passages in the collection); empty when indices were built."""
    documents: dict[str, int] = field(default_factory=dict)
    """Documents (BM25) or vectors (dense) per index type."""
    seconds: dict[str, float] = field(default_factory=dict)
    encoded_passages: int = 0
    reused_passages: int = 0

    def metadata(self) -> dict[str, Any]:
        return {
            f"{self.collection}_passages": self.passages,
            "built": ", ".join(self.built) or "none",
            "skipped": self.skipped or "no",
            **{f"{name}_documents": count for name, count in self.documents.items()},
            **{f"{name}_seconds": round(value, 3) for name, value in self.seconds.items()},
            "encoded_passages": self.encoded_passages,
            "reused_passages": self.reused_passages,
        }


def build_collection_indexes(
    paths: SnapshotPaths,
    collection: str,
    settings: IndexSettings,
    build: Sequence[str] | None = None,
    *,
    reuse_from: SnapshotPaths | None = None,
    progress: bool = False,
    log: Any = None,
) -> CollectionIndexReport:
    """Build the indices of ``collection`` of the types of ``build`` (``indexes.build``; None: every
    type) that can be built in one call (a ``build`` of their
    :class:`~assets.indexes.registry.SearcherType`), each as the text passages' of that type is built.
    ``reuse_from``: an earlier snapshot whose vectors are copied for passages with the same id and text.
    A snapshot without passages in the collection (for the structured one: ``passages.structured:
    false``, or no table or infobox) gets none, and earlier ones are removed, so no search finds stale
    passages."""
    view = collection_view(paths, collection)
    count = collection_count(paths, collection)
    report = CollectionIndexReport(collection, passages=count or 0)
    if not count:
        absent = get_collection(collection).when_absent
        report.skipped = (
            f"no {collection} passages were built" + (f" ({absent})" if absent else "")
            if count is None
            else f"the snapshot has no {collection} passage"
        )
        shutil.rmtree(view.indexes, ignore_errors=True)
        return report
    factory = collection_report(paths, collection).get("dense_factory")
    if factory:  # the collection's own (the QA KB's memory budget), written in its report
        settings = settings.replace(dense=settings.dense.model_copy(update={"factory": factory}))
    for kind in searcher_types():
        if kind.build is None or (build is not None and kind.name not in build):
            continue
        started = time.perf_counter()
        built = kind.build(
            view,
            settings,
            progress=progress,
            reuse_from=collection_view(reuse_from, collection) if reuse_from else None,
        )
        report.documents[kind.name] = built.documents
        report.encoded_passages += built.encoded_passages
        report.reused_passages += built.reused_passages
        report.seconds[kind.name] = time.perf_counter() - started
        report.built.append(kind.name)
        if log:
            log(
                f"{collection} {kind.name}: {built.documents:,} documents in {report.seconds[kind.name]:.1f}s"
            )
    return report
