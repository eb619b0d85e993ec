"""Reciprocal-rank fusion on hand-computed cases."""

from __future__ import annotations

import pytest

from assets.indexes.hybrid import reciprocal_rank_fusion


def test_rrf_scores_and_order() -> None:
    bm25 = ["a", "b", "c"]
    dense = ["b", "d", "a"]
    fused = reciprocal_rank_fusion([bm25, dense], constant=60, k=4)
    scores = dict(fused)
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 63)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert [doc for doc, _ in fused] == ["b", "a", "d", "c"]


def test_depth_and_re2g_sum_of_inverse_ranks() -> None:
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["c", "b", "a"]], depth=2, constant=0, k=10)
    assert dict(fused) == {"a": 1.0, "c": 1.0, "b": 1.0}  # c at rank 3 of list 1 is beyond depth
    assert [doc for doc, _ in fused] == ["a", "c", "b"]  # ties: best single rank, then id
