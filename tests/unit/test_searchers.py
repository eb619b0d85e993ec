"""The searcher registry: an index type is one registered :class:`SearcherType`; the retriever, the CLI's
``--index`` choices and the evaluation's default indexes all see it, and a hybrid is a searcher built
from two others (``HybridSearch`` over any registered parts)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from assets.indexes.hits import Hit
from assets.indexes.hybrid import reciprocal_rank_fusion
from assets.indexes.retrieval import IndexSettings, Retriever
from assets.indexes.searchers import (
    HybridSearch,
    SearcherType,
    index_build_problems,
    index_names,
    register_searcher,
    unregister_searcher,
)
from assets.storage import SnapshotPaths


class ListSearch:
    """Ranks a fixed list of passage ids (as a real index ranks its passages), rotated per query."""

    def __init__(self, ranked: list[str]) -> None:
        self.ranked, self.closed = ranked, False

    def batch_search(
        self, queries: Sequence[str], k: int, *, threads: int | None = None, with_text: bool = False
    ) -> list[list[Hit]]:
        out = []
        for query in queries:
            shift = len(query) % len(self.ranked)
            ranked = self.ranked[shift:] + self.ranked[:shift]
            out.append(
                [Hit(pid, pid.rpartition("-")[0], 1.0 / rank) for rank, pid in enumerate(ranked[:k], 1)]
            )
        return out

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def toy_types():
    first = ListSearch([f"{page}-0" for page in (12, 25, 39, 290, 303)])
    second = ListSearch([f"{page}-0" for page in (303, 39, 12, 307, 308)])
    types = [
        SearcherType("toy_a", "a fixed ranking", lambda retriever: first),
        SearcherType("toy_b", "another fixed ranking", lambda retriever: second),
        SearcherType("toy_fused", "RRF of toy_a and toy_b", lambda r: HybridSearch(r, ("toy_a", "toy_b"))),
    ]
    for searcher_type in types:
        register_searcher(searcher_type)
    yield first, second
    for searcher_type in types:
        unregister_searcher(searcher_type.name)


def test_a_registered_index_type_is_searched_listed_and_closed(toy_types, tmp_path: Path) -> None:
    first, _ = toy_types
    assert index_names()[:3] == ("bm25", "dense", "hybrid") and "toy_a" in index_names()
    with Retriever(SnapshotPaths(tmp_path, "enwiki-20160501"), IndexSettings()) as retriever:
        hits = retriever.batch_search("toy_a", ["Achilles", "Aristotle"], k=3)
        assert [h.passage_id for h in hits[0]] == ["290-0", "303-0", "12-0"]  # len("Achilles") % 5 == 3
        assert retriever.searcher("toy_a") is first
    assert first.closed

    from orchestration.cli import build_parser

    args = build_parser().parse_args(["search", "who", "--index", "toy_fused"])
    assert args.index == "toy_fused"


def test_a_hybrid_is_built_from_two_registered_searchers(toy_types, tmp_path: Path) -> None:
    first, second = toy_types
    settings = IndexSettings(hybrid_depth=5, hybrid_constant=60.0)
    with Retriever(SnapshotPaths(tmp_path, "enwiki-20160501"), settings) as retriever:
        fused = retriever.batch_search("toy_fused", ["q"], k=4)[0]
    a, b = first.batch_search(["q"], 5)[0], second.batch_search(["q"], 5)[0]
    expected = reciprocal_rank_fusion([[h.passage_id for h in a], [h.passage_id for h in b]], depth=5, k=4)
    assert [(h.passage_id, h.score) for h in fused] == expected


def test_unknown_index_names_the_registered_ones(tmp_path: Path) -> None:
    retriever = Retriever(SnapshotPaths(tmp_path, "enwiki-20160501"), IndexSettings())
    with (
        retriever,
        pytest.raises(ValueError, match="unknown index 'bm26'; choose one of bm25, dense, hybrid"),
    ):
        retriever.batch_search("bm26", ["q"])
    with pytest.raises(ValueError, match="already registered"):
        register_searcher(SearcherType("bm25", "again", lambda retriever: None))


def test_a_build_without_an_index_refuses_the_searches_on_it() -> None:
    """``indexes.build`` against the searches asked for (``indexes.evaluation.indexes``): each index type
    needs the built indices it opens (hybrid and rerank: both), and only types with an asset are built."""
    assert index_build_problems(("bm25", "dense"), ("bm25", "dense", "hybrid", "rerank")) == []
    assert index_build_problems(("bm25",), ("bm25",)) == []
    assert index_build_problems(("bm25",), ("bm25", "dense", "hybrid", "rerank")) == [
        "'dense' searches the dense index, which the build leaves out",
        "'hybrid' searches the dense index, which the build leaves out",
        "'rerank' searches the dense index, which the build leaves out",
    ]
    assert index_build_problems((), ("hybrid",)) == [
        "'hybrid' searches the bm25 and dense indices, which the build leaves out"
    ]
    assert index_build_problems(("hybrid",), ()) == [
        "'hybrid' is not an index a build makes (choose from bm25, dense)"
    ]
    with pytest.raises(ValueError, match="unknown index 'colbert'"):
        index_build_problems(("bm25",), ("colbert",))
