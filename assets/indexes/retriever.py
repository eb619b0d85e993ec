"""A snapshot's indices as one retriever: :class:`Retriever` opens the searcher of any registered index type
(:mod:`assets.indexes.registry`) over one snapshot, once each, and fills hits' text from the provenance
store. ``hybrid`` is reciprocal-rank fusion of bm25 and dense (Re2G), ``rerank`` a cross-encoder over their
candidates.

Pure module: no Dagster import.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from assets.indexes.hits import Hit
from assets.indexes.registry import Searcher, get_searcher_type
from assets.indexes.settings import IndexSettings
from assets.storage import SnapshotPaths

__all__ = ["Retriever", "passage_rows"]


class Retriever:
    """Search one snapshot's indices, of any registered index type (:mod:`assets.indexes.registry`).
    Searchers (the JVM, the FAISS index, the query encoder) open on first use, once each; ``close()`` (or
    ``with``) releases them."""

    def __init__(self, paths: SnapshotPaths, settings: IndexSettings | None = None) -> None:
        self.paths = paths
        self.settings = (settings or IndexSettings.from_params()).for_snapshot(paths)
        self._searchers: dict[str, Searcher] = {}
        self._store: Any = None  # the provenance store, opened (read-only) on the first text lookup

    def searcher(self, index: str) -> Searcher:
        """The open searcher of an index type (opened now if it is not)."""
        if index not in self._searchers:
            self._searchers[index] = get_searcher_type(index).open(self)
        return self._searchers[index]

    @property
    def bm25(self) -> Any:
        """The Lucene searcher (:class:`~assets.indexes.bm25.Bm25Searcher`)."""
        return self.searcher("bm25")

    @property
    def dense(self) -> Any:
        """The FAISS searcher (:class:`~assets.indexes.dense.searcher.DenseSearcher`)."""
        return self.searcher("dense")

    def open(self, index: str) -> Retriever:
        """Load what ``index`` searches with now (JVM, FAISS index, encoder) rather than on first query."""
        self.searcher(index)
        return self

    def batch_search(
        self,
        index: str,
        queries: Sequence[str],
        k: int = 10,
        *,
        threads: int | None = None,
        with_text: bool = False,
    ) -> list[list[Hit]]:
        """The top ``k`` hits of each query (query order kept; a blank query has no hits)."""
        searcher = self.searcher(index)
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        queries = list(queries)
        if not queries:
            return []
        hits = searcher.batch_search(queries, k, threads=threads, with_text=with_text)
        return self.with_text(hits) if with_text else hits

    def search(self, index: str, query: str, k: int = 10, *, with_text: bool = True) -> list[Hit]:
        return self.batch_search(index, [query], k, with_text=with_text)[0]

    def with_text(self, results: list[list[Hit]]) -> list[list[Hit]]:
        """The hits with title and text filled in from the provenance store (or the passages Parquet)."""
        wanted = {h.passage_id for hits in results for h in hits if h.text is None}
        if not wanted:
            return results
        if self._store is None and self.paths.provenance_store.is_file():
            from assets.provenance_store import ProvenanceStore

            self._store = ProvenanceStore(self.paths)
        rows = passage_rows(self.paths, wanted, self._store)
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
        if self._store is not None:
            self._store.close()
            self._store = None

    def __enter__(self) -> Retriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def passage_rows(
    paths: SnapshotPaths, passage_ids: set[str], store: Any = None
) -> dict[str, tuple[str, str]]:
    """``{passage_id: (title, text)}``: one indexed lookup in the provenance store (``store``, an open
    one, or the snapshot's when it is built), else one scan of the passages Parquet."""
    if store is not None:
        return store.passage_texts(sorted(passage_ids))
    if paths.provenance_store.is_file():
        from assets.provenance_store import ProvenanceStore

        with ProvenanceStore(paths) as opened:
            return opened.passage_texts(sorted(passage_ids))
    from assets.indexes.runs import lookup_passages

    rows = lookup_passages(paths.passages_parquet, passage_ids, ("title", "text"))
    return {pid: (row["title"], row["text"]) for pid, row in rows.items()}
