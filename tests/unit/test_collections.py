"""Collections: searcher keys, the structured view of a snapshot's paths, hits' kinds, and the merge of two
rankings (by score, either metric); the retriever opens each type over the collection's paths."""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter
from pathlib import Path

import pytest

from assets.indexes.collections import (
    CollectionView,
    MergedSearcher,
    collection_built,
    collection_view,
    collections_of,
    key_of,
    searcher_key,
    split_searcher_key,
)
from assets.indexes.hits import Hit, passage_kind
from assets.indexes.registry import SearcherType, register_searcher, unregister_searcher
from assets.indexes.retriever import Retriever
from assets.indexes.settings import IndexSettings
from assets.storage import SnapshotPaths


class Fixed:
    """A searcher that returns the same scored hits for every query."""

    def __init__(self, scored: dict[str, float], higher_is_better: bool = True) -> None:
        self.scored, self.higher_is_better = scored, higher_is_better

    def batch_search(
        self, queries: Sequence[str], k: int, *, threads: int | None = None, with_text: bool = False
    ) -> list[list[Hit]]:
        ordered = sorted(self.scored.items(), key=lambda kv: -kv[1] if self.higher_is_better else kv[1])
        return [[Hit(pid, pid.rpartition("-")[0], score) for pid, score in ordered[:k]] for _ in queries]

    def close(self) -> None:
        pass


def test_searcher_keys() -> None:
    assert searcher_key("bm25") == "bm25" and searcher_key("dense", "both") == "dense@both"
    assert split_searcher_key("hybrid@structured") == ("hybrid", "structured")
    assert split_searcher_key("bm25") == ("bm25", "text")
    assert key_of("bm25") == "bm25" and key_of("bm25", "both") == "bm25@both"
    assert key_of("bm25@both") == key_of("bm25@both", "both") == "bm25@both"
    with pytest.raises(ValueError, match="unknown collection 'tables'"):
        searcher_key("bm25", "tables")
    with pytest.raises(ValueError, match="unknown index 'splade'"):
        split_searcher_key("splade@both")
    with pytest.raises(ValueError, match="names its collection"):
        key_of("bm25@both", "text")


def test_kinds_come_from_the_ids() -> None:
    assert passage_kind("303-12") == "text" and passage_kind("303-t4.0") == "table"
    assert passage_kind("303-i0.1") == "infobox" and Hit("12-t0.0", "12", 1.0).kind == "table"
    assert Hit("12-3", "12", 1.0).to_dict()["kind"] == "text"


def test_the_structured_view_moves_passages_and_indices_only(tmp_path: Path) -> None:
    paths = SnapshotPaths(tmp_path, "enwiki-20160501")
    view = collection_view(paths, "structured")
    assert isinstance(view, CollectionView) and collection_view(view, "structured") is view
    assert view.passages_parquet == paths.structured_parquet
    assert view.passages_collection == paths.structured_passages / "collection"
    assert view.passages_report == paths.structured_passages / "report.json"
    assert view.bm25_index == paths.root / "indexes" / "structured" / "bm25"
    assert view.dense_embeddings == paths.root / "indexes" / "structured" / "dense" / "embeddings"
    assert view.dense_index == paths.root / "indexes" / "structured" / "dense" / "faiss"
    assert (view.knowledge_source, view.provenance_store, view.datasets) == (
        paths.knowledge_source,
        paths.provenance_store,
        paths.datasets,
    )
    assert view.bm25_index != paths.bm25_index and view.dense_index != paths.dense_index


def test_merge_by_score_keeps_the_best_k_of_both() -> None:
    text = Fixed({"1-0": 0.9, "1-1": 0.5, "2-0": 0.3})
    tables = Fixed({"1-t0.0": 0.7, "2-i0.0": 0.5, "3-t1.0": 0.1})
    merged = MergedSearcher([text, tables]).batch_search(["q", "r"], 4)
    assert [[h.passage_id for h in hits] for hits in merged] == [["1-0", "1-t0.0", "1-1", "2-i0.0"]] * 2
    distances = MergedSearcher([Fixed({"1-0": 0.4}, False), Fixed({"1-t0.0": 0.2, "2-t0.0": 0.9}, False)])
    assert [h.passage_id for h in distances.batch_search(["q"], 2)[0]] == ["1-t0.0", "1-0"]
    with pytest.raises(ValueError, match="different metrics"):
        MergedSearcher([Fixed({}, True), Fixed({}, False)])


def test_the_retriever_opens_each_type_over_the_collection(tmp_path: Path) -> None:
    opened: list[Path] = []

    def open_toy(context):  # an index of its own, under the context's bm25_index
        opened.append(context.paths.bm25_index)
        return Fixed({"5-0": 0.8, "6-0": 0.2} if len(opened) == 1 else {"5-t0.0": 0.5})

    register_searcher(SearcherType("toy_own", "own index", open_toy, index_dir=attrgetter("bm25_index")))
    try:
        paths = SnapshotPaths(tmp_path, "enwiki-20160501")
        with Retriever(paths, IndexSettings.from_params()) as retriever:
            with pytest.raises(FileNotFoundError, match="key:structured_indexes or key:kb_indexes"):
                retriever.batch_search("toy_own", ["q"], 2, collection="both")
            # a collection the snapshot built empty (a KB without entity files) is not part of "both"
            kb_report = paths.kb_facts / "report.json"
            kb_report.parent.mkdir(parents=True)
            kb_report.write_text('{"passages": 0}')
            assert collections_of(paths, "both") == ["text", "structured"]
            with pytest.raises(FileNotFoundError, match="key:structured_indexes`"):
                retriever.batch_search("toy_own", ["q"], 2, collection="both")
            collection_view(paths, "structured").bm25_index.mkdir(parents=True)
            assert collection_built(paths, "toy_own", "structured")
            hits = retriever.batch_search("toy_own", ["q"], 2, collection="both")[0]
            assert [(h.passage_id, h.kind) for h in hits] == [("5-0", "text"), ("5-t0.0", "table")]
            assert opened == [paths.bm25_index, collection_view(paths, "structured").bm25_index]
            assert retriever.searcher("toy_own@structured") is retriever.searcher("toy_own@structured")
    finally:
        unregister_searcher("toy_own")


def test_a_stored_collection_s_tables_must_be_new_sql_identifiers() -> None:
    """A collection's tables go into the store's SQL as they are named: a name that is no lowercase
    identifier, one a registered collection or the store's own build has, or a passage table not first of
    its sources is refused before anything is registered."""
    from assets.provenance_store import StoredPassages, register_stored_passages, stored_passages

    before = stored_passages()
    folder = lambda paths: paths.root  # noqa: E731
    for name in ("leads; DROP TABLE pages", "Leads", "", "x" * 64, "kb_entities", "passages", "meta"):
        with pytest.raises(ValueError):
            register_stored_passages(StoredPassages(name, {name: folder}))
    with pytest.raises(ValueError, match="first of its sources"):
        register_stored_passages(StoredPassages("leads", {"leads_meta": folder, "leads": folder}))
    assert stored_passages() == before
