"""A snapshot's indices as one retriever: :class:`Retriever` opens the searcher of any registered index type
(:mod:`assets.indexes.registry`) over one snapshot, once each, and fills hits' text from the provenance
store. ``hybrid`` is reciprocal-rank fusion of bm25 and dense (Re2G), ``rerank`` a cross-encoder over their
candidates. Every index type searches the text passages, the structured ones (tables and infoboxes) or
both (:mod:`assets.indexes.collections`): ``collection=``, or a searcher key such as ``dense@both``.

Pure module: no Dagster import.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from assets.indexes.collections import (
    ALL,
    DEFAULT_COLLECTION,
    MergedSearcher,
    by_collection,
    collection_built,
    collection_view,
    collections_of,
    get_collection,
    key_of,
    searcher_key,
    split_searcher_key,
)
from assets.indexes.hits import Hit
from assets.indexes.registry import Searcher, get_searcher_type
from assets.indexes.settings import IndexSettings
from assets.limits import SearchLimits, check_k, check_query
from assets.storage import SnapshotPaths

__all__ = ["Retriever", "passage_rows"]


class Retriever:
    """Search one snapshot's indices, of any registered index type (:mod:`assets.indexes.registry`).
    Searchers (the JVM, the FAISS index, the query encoder) open on first use, once each; ``close()`` (or
    ``with``) releases them. ``store``: where hits' text is looked up, a zero-argument callable returning
    the snapshot's open provenance store or None (:meth:`assets.reading.Snapshot.store_if_built`, which
    owns it); without one, each collection's own lookup in its Parquet."""

    def __init__(
        self,
        paths: SnapshotPaths,
        settings: IndexSettings | None = None,
        limits: SearchLimits | None = None,
        *,
        store: Callable[[], Any] | None = None,
    ) -> None:
        self.paths = paths
        self.settings = (settings or IndexSettings.from_params()).for_snapshot(paths)
        self.limits = limits or SearchLimits()  # k and query length (the door passes its params')
        self._searchers: dict[str, Searcher] = {}
        self._store = store

    def searcher(self, index: str) -> Searcher:
        """The open searcher of an index type or searcher key (``dense@both``; opened now if it is not)."""
        if index not in self._searchers:
            kind, collection = split_searcher_key(index)
            searcher_type = get_searcher_type(kind)
            if collection != DEFAULT_COLLECTION and not collection_built(self.paths, kind, collection):
                raise FileNotFoundError(_not_built(self.paths, kind, collection))
            if collection == DEFAULT_COLLECTION:
                opened: Searcher = searcher_type.open(self)
            elif collection == ALL and not searcher_type.searches:  # an index of its own: merge them all
                opened = MergedSearcher(
                    [self.searcher(searcher_key(kind, name)) for name in collections_of(self.paths, ALL)]
                )
            else:
                opened = searcher_type.open(_CollectionContext(self, collection))
            self._searchers[index] = opened
        return self._searchers[index]

    @property
    def bm25(self) -> Any:
        """The Lucene searcher (:class:`~assets.indexes.bm25.Bm25Searcher`)."""
        return self.searcher("bm25")

    @property
    def dense(self) -> Any:
        """The FAISS searcher (:class:`~assets.indexes.dense.searcher.DenseSearcher`)."""
        return self.searcher("dense")

    def open(self, index: str, collection: str | None = None) -> Retriever:
        """Load what ``index`` searches with now (JVM, FAISS index, encoder) rather than on first query."""
        self.searcher(key_of(index, collection))
        return self

    def batch_search(
        self,
        index: str,
        queries: Sequence[str],
        k: int = 10,
        *,
        threads: int | None = None,
        with_text: bool = False,
        collection: str | None = None,
    ) -> list[list[Hit]]:
        """The top ``k`` hits of each query (query order kept; a blank query has no hits) among the text
        passages (default), the structured ones or both (``collection``, or in ``index``: ``bm25@both``);
        ``k`` and each query within ``limits.search`` (:class:`~assets.limits.LimitExceeded` naming it)."""
        check_k(k, self.limits)  # before anything opens: a refused request costs nothing
        queries = [check_query(query, self.limits) if isinstance(query, str) else query for query in queries]
        searcher = self.searcher(key_of(index, collection))
        if not queries:
            return []
        hits = searcher.batch_search(queries, k, threads=threads, with_text=with_text)
        return self.with_text(hits) if with_text else hits

    def search(
        self,
        index: str,
        query: str,
        k: int = 10,
        *,
        with_text: bool = True,
        collection: str | None = None,
    ) -> list[Hit]:
        return self.batch_search(index, [query], k, with_text=with_text, collection=collection)[0]

    def query_cuts(self, index: str, queries: Sequence[str]) -> list[dict[str, int] | None]:
        """Per query, what ``index`` (a type or searcher key) cuts of it to stay within the limits
        (``{"terms", "of"}``, :meth:`~assets.indexes.bm25.Bm25Searcher.cut_query`), None where nothing:
        the searcher's own answer, else its parts' (hybrid, rerank, both collections)."""
        return _cuts_of(self.searcher(key_of(index)), list(queries))

    def with_text(self, results: list[list[Hit]]) -> list[list[Hit]]:
        """The hits with title and text filled in from the provenance store (or the passages Parquet)."""
        wanted = {h.passage_id for hits in results for h in hits if h.text is None}
        if not wanted:
            return results
        rows = passage_rows(self.paths, wanted, self._store() if self._store is not None else None)
        return [
            [
                h
                if h.text is not None or h.passage_id not in rows
                else Hit(h.passage_id, h.wikipedia_id, h.score, *rows[h.passage_id])
                for h in hits
            ]
            for hits in results
        ]

    def close(self) -> None:
        for searcher in reversed(list(self._searchers.values())):
            searcher.close()
        self._searchers = {}

    def __enter__(self) -> Retriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _cuts_of(searcher: Any, queries: list[str]) -> list[dict[str, int] | None]:
    own = getattr(searcher, "query_cuts", None)
    if own is not None:
        return own(queries)
    cuts: list[dict[str, int] | None] = [None] * len(queries)
    for part in getattr(searcher, "parts", ()):
        cuts = [mine or theirs for mine, theirs in zip(cuts, _cuts_of(part, queries), strict=True)]
    return cuts


def _not_built(paths: SnapshotPaths, index: str, collection: str) -> str:
    """Why ``index`` cannot search ``collection`` of the snapshot, and the command that builds it."""
    names = [name for name in collections_of(paths, collection) if name != DEFAULT_COLLECTION]
    missing = [name for name in names if not collection_built(paths, index, name)]
    assets = [get_collection(name).index_asset or get_searcher_type(index).asset for name in missing]
    select = " or ".join(f"key:{asset}" for asset in dict.fromkeys(assets) if asset)
    quoted = f'"{select}"' if " " in select else select
    what = " and ".join(missing)
    return f"no {index} index of the {what} passages for snapshot {paths.snapshot_id}: build it with " + (
        f"`kiltpipe build --select {quoted}`"
    )


class _CollectionContext:
    """What a searcher of a collection other than the text passages, or of all of them, opens over: the
    retriever's settings, the collection's paths (its :func:`collection_view`; ``both``: the snapshot's),
    and the retriever's searchers of that collection."""

    def __init__(self, retriever: Retriever, collection: str) -> None:
        self.retriever = retriever
        self.collection = collection
        self.settings = retriever.settings
        self.limits = retriever.limits
        self.paths = retriever.paths if collection == ALL else collection_view(retriever.paths, collection)

    def searcher(self, index: str) -> Searcher:
        return self.retriever.searcher(searcher_key(index, self.collection))

    def with_text(self, results: list[list[Hit]]) -> list[list[Hit]]:
        return self.retriever.with_text(results)


def passage_rows(
    paths: SnapshotPaths, passage_ids: set[str], store: Any = None
) -> dict[str, tuple[str, str]]:
    """``{passage_id: (title, text)}``: of the collections the provenance store holds, one indexed lookup
    in ``store`` (an open one); of the others, and without a store, each collection's own lookup in its
    Parquet."""
    rows: dict[str, tuple[str, str]] = {}
    in_store: set[str] = set()
    for collection, ids in by_collection(passage_ids).items():
        if store is not None and collection.stored is not None and store.holds(collection.stored):
            in_store |= ids
            continue
        found = collection.lookup(paths, ids, ("title", "text"))
        rows.update((pid, (row["title"], row["text"])) for pid, row in found.items())
    return rows | store.passage_texts(sorted(in_store)) if in_store else rows
