"""The searcher registry: an index type is one registered :class:`SearcherType`; the retriever, the CLI's
``--index`` choices and the evaluation's default indexes all see it, and a hybrid is a searcher built
from two others (``HybridSearcher`` over any registered parts)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from assets.indexes.hits import Hit
from assets.indexes.hybrid import HybridSearcher, reciprocal_rank_fusion
from assets.indexes.registry import (
    SearcherType,
    index_build_problems,
    index_names,
    register_searcher,
    unregister_searcher,
)
from assets.indexes.retriever import Retriever
from assets.indexes.settings import IndexSettings
from assets.params import HybridParams, IndexesParams
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
        SearcherType(
            "toy_fused", "RRF of toy_a and toy_b", lambda r: HybridSearcher.open(r, ("toy_a", "toy_b"))
        ),
    ]
    for searcher_type in types:
        register_searcher(searcher_type)
    yield first, second
    for searcher_type in types:
        unregister_searcher(searcher_type.name)


def test_a_registered_index_type_is_searched_listed_and_closed(toy_types, tmp_path: Path) -> None:
    first, _ = toy_types
    assert index_names()[:3] == ("bm25", "dense", "hybrid") and "toy_a" in index_names()
    with Retriever(
        SnapshotPaths(tmp_path, "enwiki-20160501"), IndexSettings.from_params(IndexesParams())
    ) as retriever:
        hits = retriever.batch_search("toy_a", ["Achilles", "Aristotle"], k=3)
        assert [h.passage_id for h in hits[0]] == ["290-0", "303-0", "12-0"]  # len("Achilles") % 5 == 3
        assert retriever.searcher("toy_a") is first
    assert first.closed

    from orchestration.cli import build_parser

    args = build_parser().parse_args(["search", "who", "--index", "toy_fused"])
    assert args.index == "toy_fused"


def test_a_hybrid_is_built_from_two_registered_searchers(toy_types, tmp_path: Path) -> None:
    first, second = toy_types
    settings = IndexSettings.from_params(IndexesParams(hybrid=HybridParams(depth=5, constant=60.0)))
    with Retriever(SnapshotPaths(tmp_path, "enwiki-20160501"), settings) as retriever:
        fused = retriever.batch_search("toy_fused", ["q"], k=4)[0]
    a, b = first.batch_search(["q"], 5)[0], second.batch_search(["q"], 5)[0]
    expected = reciprocal_rank_fusion([[h.passage_id for h in a], [h.passage_id for h in b]], depth=5, k=4)
    assert [(h.passage_id, h.score) for h in fused] == expected


def test_unknown_index_names_the_registered_ones(tmp_path: Path) -> None:
    retriever = Retriever(
        SnapshotPaths(tmp_path, "enwiki-20160501"), IndexSettings.from_params(IndexesParams())
    )
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


def test_a_registered_type_reads_its_own_params_section() -> None:
    """``indexes.<name>`` of params.yaml holds a registered type's own settings (its settings class builds
    them); a section no registered type claims is an error naming it."""
    from dataclasses import dataclass

    from assets.params import ParamsError

    @dataclass(frozen=True)
    class ToySettings:
        depth: int = 1

        @classmethod
        def from_params(cls, section: dict | None) -> ToySettings:
            return cls(**(section or {}))

    register_searcher(SearcherType("toy_set", "toy with settings", lambda r: None, settings=ToySettings))
    try:
        section = IndexesParams.model_validate({"toy_set": {"depth": 3}, "bm25": {"k1": 1.2}})
        settings = IndexSettings.from_params(section)
        assert settings.of("toy_set") == ToySettings(3) and settings.of("bm25").k1 == 1.2
        assert IndexSettings.from_params(IndexesParams()).of("toy_set") == ToySettings(1)
        with pytest.raises(ParamsError, match=r"unknown key 'indexes\.toy_sett'.*toy_set"):
            IndexSettings.from_params(IndexesParams.model_validate({"toy_sett": {"depth": 3}}))
        with pytest.raises(ValueError, match="'hybrid2' has no settings"):
            settings.of("hybrid2")
    finally:
        unregister_searcher("toy_set")
