"""KILT retrieval metrics on hand-computed cases, including multi-page provenance sets."""

from __future__ import annotations

import pytest

from assets.indexes.evaluation import (
    evaluate,
    pages_in_rank_order,
    r_precision,
    recall_at_k,
    set_completion_ranks,
    success_at_k,
)


def sets(*groups: str) -> list[frozenset[str]]:
    return [frozenset(group.split()) for group in groups]


def test_passage_hits_collapse_to_pages_in_rank_order() -> None:
    assert pages_in_rank_order(["7", "7", "3", "7", "9", "3"]) == ["7", "3", "9"]


def test_single_page_provenance() -> None:
    ranked = ["5", "1", "2"]
    gold = sets("1")
    assert r_precision(ranked, gold) == 0.0  # R = 1: only rank 1 counts
    ranks = set_completion_ranks(ranked, gold)
    assert ranks == [2]
    assert (recall_at_k(ranks, 1), recall_at_k(ranks, 5)) == (0.0, 1.0)
    assert (success_at_k(ranks, 1), success_at_k(ranks, 5)) == (0.0, 1.0)


def test_multi_page_set_counts_at_its_lowest_ranked_page() -> None:
    """HotpotQA-style: one set of two pages, found at ranks 1 and 4 -> complete at rank 4."""
    ranked = ["a", "x", "y", "b", "z"]
    gold = sets("a b")
    assert set_completion_ranks(ranked, gold) == [4]
    assert r_precision(ranked, gold) == 0.5  # R = 2, one of the first two pages is gold
    ranks = set_completion_ranks(ranked, gold)
    assert [recall_at_k(ranks, k) for k in (1, 2, 4, 5)] == [0.0, 0.0, 1.0, 1.0]
    assert success_at_k(ranks, 3) == 0.0


def test_alternative_sets_fever_style() -> None:
    """FEVER-style: two alternative evidence sets {a, b} and {c}; R-precision takes the best set."""
    ranked = ["c", "a", "q", "b"]
    gold = sets("a b", "c")
    assert r_precision(ranked, gold) == 1.0  # set {c}: R = 1, rank 1 is c
    ranks = set_completion_ranks(ranked, gold)
    assert ranks == [4, 1]
    assert recall_at_k(ranks, 1) == 0.5  # one of the two sets complete in the top 1
    assert recall_at_k(ranks, 4) == 1.0
    assert success_at_k(ranks, 1) == 1.0


def test_evaluate_means_and_skips() -> None:
    runs = {"q1": ["1", "1", "2"], "q2": ["9", "8", "3", "4"], "q3": ["5"]}
    gold = {"q1": sets("1"), "q2": sets("3 4"), "q3": [], "q4": sets("7")}
    scores = evaluate(runs, gold, ks=(1, 5))
    assert scores.queries == 3 and scores.skipped_without_provenance == 1
    # q1: Rprec 1, complete at 1; q2: R=2, first two are 9,8 -> 0, complete at 4; q4: nothing retrieved
    assert scores.r_precision == pytest.approx(1 / 3)
    assert scores.recall == {1: pytest.approx(1 / 3), 5: pytest.approx(2 / 3)}
    assert scores.success == {1: pytest.approx(1 / 3), 5: pytest.approx(2 / 3)}
    assert scores.as_dict()["recall@5"] == pytest.approx(0.6667)
