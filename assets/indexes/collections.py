"""Which passages a search ranks: the text passages (KILT's knowledge source cut into passages, the
KILT-comparable collection), the structured ones (tables and infoboxes,
:mod:`assets.wikipedia.passages.structured`), or both.

The text passages' indices are what they always were (byte for byte); the structured passages have
indices of their own, of the same types, under ``indexes/structured/`` (:func:`structured_view`: the
snapshot's paths with the structured collection in the text's place, so every index type builds and
searches them with its own code). A search of ``both`` merges the two rankings of one index type by score
(:class:`MergedSearcher`); searchers over others (hybrid, rerank) fuse those merged rankings.

A searcher is named by its **key**: the index type, and ``@structured`` or ``@both`` for those collections
(``bm25``, ``dense@both``, ``hybrid@structured``): the retriever, the evaluation's report, the HTTP API's
batchers and metrics all use it.

Pure module: no Dagster import.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from assets.indexes.hits import Hit
from assets.indexes.registry import Searcher, get_searcher_type
from assets.storage import SnapshotPaths

__all__ = [
    "COLLECTIONS",
    "DEFAULT_COLLECTION",
    "MergedSearcher",
    "StructuredView",
    "check_collection",
    "key_of",
    "searcher_key",
    "split_searcher_key",
    "structured_built",
    "structured_view",
]

COLLECTIONS = ("text", "structured", "both")
"""``text``: the text passages only (KILT-comparable); ``structured``: tables and infoboxes only; ``both``."""
DEFAULT_COLLECTION = "text"


def check_collection(collection: str) -> str:
    if collection not in COLLECTIONS:
        raise ValueError(f"unknown collection {collection!r}; choose one of {', '.join(COLLECTIONS)}")
    return collection


def searcher_key(index: str, collection: str = DEFAULT_COLLECTION) -> str:
    """``bm25`` (text), ``bm25@structured``, ``bm25@both``."""
    check_collection(collection)
    return index if collection == DEFAULT_COLLECTION else f"{index}@{collection}"


def key_of(index: str, collection: str | None = None) -> str:
    """The searcher key of ``index`` (a type, or a key already) and ``collection`` (None: the key's, else
    text); a ValueError when both name a collection and they differ."""
    if "@" not in index:
        return searcher_key(index, collection or DEFAULT_COLLECTION)
    named = split_searcher_key(index)[1]
    if collection is not None and collection != named:
        raise ValueError(
            f"index {index!r} names its collection ({named}), and collection says {collection!r}"
        )
    return index


def split_searcher_key(key: str) -> tuple[str, str]:
    """``(index type, collection)`` of a searcher key; a ValueError naming what is wrong."""
    index, at, collection = key.partition("@")
    get_searcher_type(index)
    return index, check_collection(collection) if at else DEFAULT_COLLECTION


@dataclass(frozen=True)
class StructuredView(SnapshotPaths):
    """A snapshot's paths with the structured passages in the place of the text passages, and their
    indices in the place of the text passages' (``indexes/structured/<type>``): what the index builders
    and searchers read and write when they work on the structured collection."""

    @property
    def passages(self) -> Path:
        return self.structured_passages

    @property
    def passages_tsv(self) -> Path:  # the structured collection has no DPR TSV
        return self.structured_passages / "passages.tsv"

    @property
    def indexes(self) -> Path:
        return self.root / "indexes" / "structured"


def structured_view(paths: SnapshotPaths) -> StructuredView:
    """The structured collection's paths of the snapshot of ``paths``."""
    if isinstance(paths, StructuredView):
        return paths
    return StructuredView(paths.data_dir, paths.snapshot_id, paths.version_root)


def structured_built(paths: SnapshotPaths, index: str) -> bool:
    """Whether the structured collection has every index the index type ``index`` searches with."""
    view = structured_view(paths)
    for needed in get_searcher_type(index).needs:
        index_dir = get_searcher_type(needed).index_dir
        if index_dir is None or not index_dir(view).is_dir():
            return False
    return True


class MergedSearcher:
    """One index type over both collections: each part's top ``k``, merged by score (ties: passage id).

    Dense scores of the two parts are one model's inner products (or L2 distances: then the smaller
    first), so with exact (Flat) indices the merge is the ranking one index over both collections gives;
    BM25 scores come from two Lucene indices, each with its own document frequencies and lengths, so they
    are close to, not the same as, one index's."""

    def __init__(self, parts: Sequence[Searcher]) -> None:
        self.parts = list(parts)
        orders = {getattr(part, "higher_is_better", True) for part in self.parts}  # dense: its metric
        if len(orders) > 1:
            raise ValueError(
                "the text and structured indices rank by different metrics (inner product, L2): rebuild "
                "structured_indexes with the text index's indexes.dense.metric"
            )
        self.sign = -1.0 if orders == {False} else 1.0

    def batch_search(
        self, queries: Sequence[str], k: int, *, threads: int | None = None, with_text: bool = False
    ) -> list[list[Hit]]:
        rankings = [
            part.batch_search(queries, k, threads=threads, with_text=with_text) for part in self.parts
        ]
        return [
            heapq.nsmallest(
                k,
                (hit for hits in per_query for hit in hits),
                key=lambda h: (-self.sign * h.score, h.passage_id),
            )
            for per_query in zip(*rankings, strict=True)
        ]

    def close(self) -> None:  # the parts belong to the retriever, which closes them
        self.parts = []
