"""Which passages a search ranks: the collections of a snapshot, in one registry, and their combination.

Built in: ``text`` (KILT's knowledge source cut into passages, the KILT-comparable collection) and
``structured`` (tables and infoboxes, :mod:`assets.wikipedia.passages.structured`); ``both`` searches every
collection. A :class:`Collection` says where its passages are, where its indices go and which assets write
them; every index type with a ``build`` (:class:`~assets.indexes.registry.SearcherType`) builds and opens
over any collection through :func:`collection_view` (the snapshot's paths with that collection's passages
and indices in the text passages' place), so no code names a collection and an index type together.
The text passages' indices are what they always were (byte for byte); another collection's live under
``indexes/<collection>/``. A search of ``both`` merges the collections' rankings of one index type by score
(:class:`MergedSearcher`); searchers over others (hybrid, rerank) fuse those merged rankings.

A searcher is named by its **key**: the index type, and ``@<collection>`` for a collection other than the
text passages (``bm25``, ``dense@both``, ``hybrid@structured``): the retriever, the evaluation's report,
the HTTP API's batchers and metrics all use it.

Pure module: no Dagster import.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any

from assets.indexes.hits import TEXT as TEXT_KIND
from assets.indexes.hits import Hit, passage_kind, register_passage_kinds
from assets.indexes.registry import Searcher, get_searcher_type
from assets.provenance_store import (
    KB_PASSAGES,
    STRUCTURED_PASSAGES,
    TEXT_PASSAGES,
    StoredPassages,
    register_stored_passages,
    stored_passages,
)
from assets.storage import SnapshotPaths, sql_literal
from assets.wikipedia.passages import SPAN_COLUMNS

__all__ = [
    "ALL",
    "COLLECTIONS",
    "DEFAULT_COLLECTION",
    "KB_PROVENANCE",
    "STRUCTURED_PROVENANCE",
    "Collection",
    "CollectionView",
    "MergedSearcher",
    "by_collection",
    "check_collection",
    "collection_built",
    "collection_count",
    "collection_names",
    "collection_of",
    "collection_report",
    "collection_view",
    "collections_of",
    "get_collection",
    "indexed_collections",
    "key_of",
    "lookup_passages",
    "register_collection",
    "searcher_key",
    "split_searcher_key",
]


@dataclass(frozen=True, eq=False)
class Collection:
    """A collection of a snapshot's passages: where they are, where their indices go, what builds them."""

    name: str
    description: str
    passages: Callable[[SnapshotPaths], Path]
    """The folder of its passages (``parquet/``, ``collection/``, ``report.json``)."""
    indexes: str
    """Its indices' folder under the snapshot's ``indexes/`` (empty: ``indexes/`` itself, the text's)."""
    asset: str
    """The Dagster asset that writes its passages."""
    index_asset: str | None = None
    """The asset that builds its indices with each index type's ``build`` (None: the index types' own
    assets, as for the text passages)."""
    when_absent: str = ""
    """Why a snapshot may have none of its passages (the setting that turns it off)."""
    in_all: bool = True
    """Whether a search of ``both`` reads it (the QA KB's stored questions are not passages: no)."""
    kinds: Mapping[str, str] = field(default_factory=dict)
    """The first letters of its passage ids' last part and the kind each names (none: the text passages,
    ``<page>-<n>``); registering the collection registers them (:func:`~assets.indexes.hits.passage_kind`)."""
    provenance: tuple[str, ...] = ()
    """The columns of its passages (``parquet/``) that locate one in KILT provenance, between
    ``wikipedia_id``/``title`` and ``text``."""
    provenance_tags: Mapping[str, str] = field(default_factory=dict)
    """Constant fields of its KILT provenance, before :attr:`provenance` (``{"kind": "kb"}``)."""
    stored: StoredPassages | None = None
    """Its passages as tables of the provenance store (registering the collection registers them: every
    store built from then on holds them, looks them up and exports them); None: read from their Parquet."""

    def owns(self, passage_id: str) -> bool:
        """Whether ``passage_id`` names one of its passages (by the id alone)."""
        kind = passage_kind(passage_id)
        return kind in self.kinds.values() if self.kinds else kind == TEXT_KIND

    def lookup(
        self, paths: SnapshotPaths, passage_ids: Iterable[str], columns: Sequence[str] | None = None
    ) -> dict[str, dict[str, Any]]:
        """``columns`` (default: its KILT provenance columns) of its passages ``passage_ids`` in
        ``paths``' snapshot, from its Parquet; ids not found are absent."""
        wanted = columns or ("wikipedia_id", "title", *self.provenance, "text")
        return lookup_passages(self.passages(paths) / "parquet", passage_ids, wanted)

    def kilt_provenance(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """Where one of its passages is, as KILT provenance (the fields between ``title`` and ``text``)."""
        return {**self.provenance_tags, **{name: row[name] for name in self.provenance}}


_COLLECTIONS: dict[str, Collection] = {}


def register_collection(collection: Collection) -> Collection:
    """Add a collection (its name and id letters must be new); returns it."""
    if collection.name in _COLLECTIONS or collection.name == ALL:
        raise ValueError(f"collection {collection.name!r} is already registered")
    if collection.stored is not None and collection.stored not in stored_passages():
        register_stored_passages(collection.stored)
    register_passage_kinds(collection.kinds)
    _COLLECTIONS[collection.name] = collection
    return collection


def collection_of(passage_id: str) -> Collection:
    """The collection whose passage ``passage_id`` names (read from the id alone)."""
    for collection in _COLLECTIONS.values():
        if collection.owns(passage_id):
            return collection
    raise ValueError(f"passage id {passage_id!r} belongs to no registered collection")


def by_collection(passage_ids: Iterable[str]) -> dict[Collection, set[str]]:
    """``passage_ids`` grouped by the collection each names."""
    groups: dict[Collection, set[str]] = {}
    for passage_id in passage_ids:
        groups.setdefault(collection_of(passage_id), set()).add(passage_id)
    return groups


def lookup_passages(
    parquet_dir: Path | str, passage_ids: Iterable[str], columns: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """``columns`` of ``passage_ids`` from a collection's passages Parquet, in one DuckDB query; ids not
    found are absent."""
    import duckdb
    import pyarrow as pa

    directory = Path(parquet_dir)
    if not directory.is_dir() or not any(directory.glob("*.parquet")):
        raise FileNotFoundError(f"no passages Parquet files in {directory}")
    ids = sorted(set(passage_ids))
    if not ids:
        return {}
    con = duckdb.connect()
    try:
        con.register("wanted", pa.table({"passage_id": pa.array(ids, pa.string())}))
        shards = sql_literal(directory / "*.parquet")
        rows = con.execute(
            f"SELECT passage_id, {', '.join(columns)} FROM read_parquet({shards}) "
            "WHERE passage_id IN (SELECT passage_id FROM wanted)"
        ).fetchall()
    finally:
        con.close()
    return {row[0]: dict(zip(columns, row[1:], strict=True)) for row in rows}


def get_collection(name: str) -> Collection:
    if name not in _COLLECTIONS:
        check_collection(name)  # ``both``: a combination, no collection of its own
        raise ValueError(f"{name!r} is every collection, not one")
    return _COLLECTIONS[name]


def collection_names() -> tuple[str, ...]:
    """Every registered collection, then ``both`` (all of them)."""
    return (*_COLLECTIONS, ALL)


def indexed_collections() -> list[Collection]:
    """The collections whose indices one asset builds over the index types' ``build`` (all but the text)."""
    return [c for c in _COLLECTIONS.values() if c.index_asset is not None]


ALL = "both"
"""The key of a search over every collection."""
DEFAULT_COLLECTION = "text"
STRUCTURED_PROVENANCE = (
    "kind",
    "structure_index",
    "first_row",
    "last_row",
    "start_character",
    "end_character",
)
"""Where a table or infobox passage is: its structure on the page, its rows and its wikitext offsets."""
KB_PROVENANCE = ("qid", "properties", "statement_ids")
"""What a ``kb`` passage states: its entity, the properties and the statements (Wikidata ids)."""
QA_PROVENANCE = ("answers", "provenance_passage_id", *SPAN_COLUMNS)
"""What a stored question of the QA-pair KB holds: its answers and where the first is in the text."""

TEXT = register_collection(
    Collection(
        "text",
        "the text passages (KILT-comparable)",
        attrgetter("passages"),
        "",
        "passages",
        provenance=("section", *SPAN_COLUMNS),
        stored=TEXT_PASSAGES,
    )
)
STRUCTURED = register_collection(
    Collection(
        "structured",
        "tables and infoboxes",
        attrgetter("structured_passages"),
        "structured",
        "structured_passages",
        index_asset="structured_indexes",
        when_absent="passages.structured is false",
        kinds={"t": "table", "i": "infobox"},
        provenance=("section", *STRUCTURED_PROVENANCE),
        stored=STRUCTURED_PASSAGES,
    )
)
KB = register_collection(
    Collection(
        "kb",
        "Wikidata facts, per entity",
        attrgetter("kb_facts"),
        "kb",
        "kb_facts",
        index_asset="kb_indexes",
        when_absent="wikidata.files is empty",
        kinds={"k": "kb"},
        provenance=KB_PROVENANCE,
        provenance_tags={"kind": "kb"},
        stored=KB_PASSAGES,
    )
)
QA = register_collection(
    Collection(
        "qa",
        "stored questions of the QA-pair KB (kiltpipe answer)",
        attrgetter("qa_pairs"),
        "qa",
        "qa_pairs",
        index_asset="qa_indexes",
        when_absent="qa.files is empty",
        in_all=False,
        kinds={"q": "qa"},
        provenance=QA_PROVENANCE,
        provenance_tags={"kind": "qa"},
    )
)
COLLECTIONS = collection_names()
"""The built-in collections and ``both`` (all of them but ``qa``): ``text`` (KILT-comparable),
``structured``, ``kb``, ``qa`` (the QA-pair KB's questions), ``both``."""


def check_collection(collection: str) -> str:
    """``collection`` when it is a registered collection or ``both``; else a ValueError naming them."""
    if collection not in collection_names():
        raise ValueError(f"unknown collection {collection!r}; choose one of {', '.join(collection_names())}")
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
class CollectionView(SnapshotPaths):
    """A snapshot's paths with a collection's passages in the place of the text passages, and its indices
    in the place of the text passages' (``indexes/<collection>/<type>``): what the index types' builders
    and searchers read and write when they work on that collection."""

    collection: str = DEFAULT_COLLECTION

    @property
    def passages(self) -> Path:
        return get_collection(self.collection).passages(self.snapshot)

    @property
    def passages_tsv(self) -> Path:
        raise FileNotFoundError(
            f"the {self.collection} collection has no DPR TSV (only the text passages are written as one)"
        )

    @property
    def indexes(self) -> Path:
        return self.root / "indexes" / get_collection(self.collection).indexes

    @property
    def snapshot(self) -> SnapshotPaths:
        """The snapshot's own paths (the text passages')."""
        return SnapshotPaths(self.data_dir, self.snapshot_id, self.version_root)


def collection_view(paths: SnapshotPaths, collection: str) -> SnapshotPaths:
    """The paths a builder or searcher of ``collection`` works with: ``paths`` for the text passages,
    else the collection's :class:`CollectionView`."""
    if isinstance(paths, CollectionView):
        if paths.collection == collection:
            return paths
        paths = paths.snapshot
    if not get_collection(collection).indexes:
        return paths
    return CollectionView(paths.data_dir, paths.snapshot_id, paths.version_root, collection)


def collection_report(paths: SnapshotPaths, collection: str) -> dict:
    """The report of ``collection``'s passages (``{}`` when none were built)."""
    report = get_collection(collection).passages(paths) / "report.json"
    return json.loads(report.read_text(encoding="utf-8")) if report.is_file() else {}


def collection_count(paths: SnapshotPaths, collection: str) -> int | None:
    """The passages of ``collection`` (their report's count); None when none were built."""
    report = collection_report(paths, collection)
    if not report:
        return None
    counted = report["passages"]
    return sum(counted.values()) if isinstance(counted, dict) else int(counted)


def collections_of(paths: SnapshotPaths, collection: str) -> list[str]:
    """The collections a search of ``collection`` reads: itself; for ``both``, the text passages and every
    other collection but those the snapshot built empty (a KB without entity files, a wiki without tables:
    their report says 0 passages)."""
    if collection != ALL:
        return [collection]
    return [
        c.name
        for c in _COLLECTIONS.values()
        if c.in_all and (not c.index_asset or collection_count(paths, c.name) != 0)
    ]


def collection_built(paths: SnapshotPaths, index: str, collection: str) -> bool:
    """Whether ``collection`` has every index the type ``index`` searches with (``both``: every collection
    it reads beside the text passages, whose indices their searchers check as they open)."""
    names = [name for name in collections_of(paths, collection) if name != DEFAULT_COLLECTION]
    for name in names:
        view = collection_view(paths, name)
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
