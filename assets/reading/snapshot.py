"""One door to a built snapshot: :class:`Snapshot` resolves it, checks its stores, and hands out what reads
it (the provenance store, the retriever, the Wikidata KB, the QA-pair answerer, the remapped datasets'
queries), each built once, on first use, with the params' own limits, and closed together.

Every reader of a snapshot (the CLI's verbs, ``serve``, the Dagster assets that read one, the Python API)
opens it here: nothing outside this package constructs a store.

Pure module: no Dagster import.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assets.datasets import DatasetQueries
from assets.indexes import IndexSettings, Retriever
from assets.params import Params, load_params
from assets.provenance_store import KB_PASSAGES, ProvenanceStore
from assets.qa import QAAnswerer
from assets.reading.stores import ensure_local_stores, open_qa_lookup, require_stores
from assets.storage import SnapshotPaths, resolve_snapshot
from assets.wikidata import KnowledgeBase

__all__ = ["Snapshot", "mapping_stores"]


class Snapshot:
    """A built snapshot, opened for reading. ``params`` (default: params.yaml's) gives every limit and
    setting of what it hands out; ``memory_limit``: its store's DuckDB buffer pool; ``sharing``: another
    open :class:`Snapshot` of the same store file, whose database and buffer pool this one's store uses.
    ``with`` (or :meth:`close`) closes what was opened, the store last."""

    def __init__(
        self,
        paths: SnapshotPaths,
        params: Params | None = None,
        *,
        memory_limit: str | None = None,
        sharing: Snapshot | None = None,
    ) -> None:
        self.paths = paths
        self._params = params
        self._memory_limit = memory_limit
        self._sharing = sharing
        self._store: ProvenanceStore | None = None
        self._retriever: Retriever | None = None
        self._kb: KnowledgeBase | None = None
        self._answerer: QAAnswerer | None = None
        self._datasets: DatasetQueries | None = None

    @classmethod
    def open(
        cls, data_dir: Path, snapshot: str | None = None, params: Params | None = None, **options: Any
    ) -> Snapshot:
        """The snapshot ``snapshot`` of ``data_dir`` (default: the newest complete one), for reading: a read
        writes nothing, so a missing store its Parquet could rebuild is a :class:`LookupError` naming
        ``kiltpipe restore-stores``."""
        paths = resolve_snapshot(data_dir, snapshot)
        require_stores(paths)
        return cls(paths, params, **options)

    @classmethod
    def building(cls, paths: SnapshotPaths, params: Params | None = None, **options: Any) -> Snapshot:
        """The snapshot a build is writing (``paths``: its staging folder), its missing stores rebuilt from
        their Parquet first (after a ``dvc pull``: only a build writes)."""
        ensure_local_stores(paths)
        return cls(paths, params, **options)

    @property
    def params(self) -> Params:
        """The params given, else params.yaml's (read when first needed)."""
        if self._params is None:
            self._params = load_params()
        return self._params

    @property
    def snapshot_id(self) -> str:
        return self.paths.snapshot_id

    @property
    def store(self) -> ProvenanceStore:
        """The provenance store (pages, passages, spans; a :class:`LookupError` when it is not built)."""
        if self._store is None:
            sharing = self._sharing.store if self._sharing is not None else None
            self._store = ProvenanceStore(self.paths, memory_limit=self._memory_limit, sharing=sharing)
        return self._store

    def store_if_built(self) -> ProvenanceStore | None:
        """The provenance store when the snapshot has one, else None (texts then come from the Parquet)."""
        return self.store if self._store is not None or self.paths.provenance_store.is_file() else None

    @property
    def retriever(self) -> Retriever:
        """Every index of the snapshot (``indexes`` and ``limits.search`` of the params), hits' text from
        the store."""
        if self._retriever is None:
            settings = IndexSettings.from_params(self.params.indexes)
            self._retriever = Retriever(
                self.paths, settings, self.params.limits.search, store=self.store_if_built
            )
        return self._retriever

    @property
    def kb(self) -> KnowledgeBase:
        """The Wikidata KB through the store's tables (its Parquet when the store has none), bounded by
        the params' ``limits.wikidata``."""
        if self._kb is None:
            held = self.store.con if self.store.holds(KB_PASSAGES) else None
            self._kb = KnowledgeBase(self.paths, held, limits=self.params.limits.wikidata)
        return self._kb

    @property
    def answerer(self) -> QAAnswerer:
        """The QA-pair KB's answerer over :attr:`retriever` (its lookup file opened once, checked current)."""
        if self._answerer is None:
            rows = open_qa_lookup(self.paths)
            self._answerer = QAAnswerer(self.paths, self.retriever, store=self.store_if_built, rows=rows)
        return self._answerer

    @property
    def datasets(self) -> DatasetQueries:
        """The remapped datasets' records and provenance (a :class:`LookupError` naming ``kiltpipe map``
        when none are)."""
        if self._datasets is None:
            self._datasets = DatasetQueries(self.store)
        return self._datasets

    def close(self) -> None:
        """Close what was opened: the answerer, the retriever and the KB, then the store."""
        for part in (self._answerer, self._retriever, self._kb, self._store):
            if part is not None:
                part.close()
        self._answerer = self._retriever = self._kb = self._store = self._datasets = None

    def __enter__(self) -> Snapshot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def mapping_stores(
    target: SnapshotPaths,
    source: SnapshotPaths | None = None,
    params: Params | None = None,
    memory_limit: str | None = None,
) -> Iterator[tuple[ProvenanceStore, ProvenanceStore | None]]:
    """The stores a dataset mapping reads: the ``target``'s (a build's staging folder, its missing stores
    rebuilt first) and the ``source``'s (the snapshot whose text is the evidence; when another, published
    one, only read: its missing stores are an error naming ``kiltpipe restore-stores``). A buffer pool of
    ``memory_limit`` (default: the params' ``datasets.store_memory``) per store file: one database for both
    roles when they are one snapshot."""
    params = params or load_params()
    memory_limit = memory_limit or params.datasets.store_memory
    with Snapshot.building(target, params, memory_limit=memory_limit) as built:
        if source is None:
            yield built.store, None
            return
        if source.root != target.root:
            require_stores(source)
        with Snapshot(source, params, memory_limit=memory_limit, sharing=built) as read:
            yield built.store, read.store
