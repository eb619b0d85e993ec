"""Re2G's retrieve-then-rerank: BM25 and dense candidates, scored together by a cross-encoder.

For each query the top ``depth`` passages of BM25 and of dense retrieval are pooled (their union, BM25's
first, then dense's new ones: Re2G's ensemble), every (query, passage) pair is scored by a
sentence-transformers ``CrossEncoder`` (any checkpoint: ``indexes.rerank.model``), and the ``k`` best
scores are returned, ties kept in pool order. Pairs of all the queries of a batch are scored together,
longest first, ``batch_size`` per forward pass. The passage side is ``title + " " + text``.

Pure module: no Dagster import; the ``rerank`` index type's searcher is :mod:`assets.indexes.rerank.searcher`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from assets.indexes.dense.encoders import passage_text, resolve_device, resolve_precision, torch_dtype
from assets.indexes.hits import Hit
from assets.params import DEVICE, PRECISION, RERANK_BATCH_SIZE


class CrossEncoderReranker:
    """A cross-encoder on ``device`` (``auto``: a GPU when there is one) at ``precision``."""

    def __init__(
        self,
        model: str,
        *,
        device: str = DEVICE,
        precision: str = PRECISION,
        batch_size: int = RERANK_BATCH_SIZE,
        max_length: int | None = None,
    ) -> None:
        from assets.indexes.dense.encoders import hub_offline, resolve_model

        if batch_size < 1:
            raise ValueError(f"rerank batch_size must be positive, not {batch_size}")
        self.name, load_path, is_local = resolve_model(model)
        self.device = resolve_device(device)
        self.precision = resolve_precision(precision, self.device)
        self.batch_size = batch_size
        with hub_offline(is_local), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from sentence_transformers import CrossEncoder

            self.model = CrossEncoder(load_path, device=self.device, max_length=max_length)
        if self.precision != "fp32":
            self.model.model.to(dtype=torch_dtype(self.precision))

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """The cross-encoder's score of each ``(query, passage)`` pair (float32, in pair order)."""
        scores = np.zeros(len(pairs), dtype=np.float32)
        if not pairs:
            return scores
        order = np.argsort([-(len(q) + len(p)) for q, p in pairs], kind="stable")
        predicted = self.model.predict(
            [pairs[i] for i in order],
            batch_size=self.batch_size,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        scores[order] = np.asarray(predicted, dtype=np.float32).reshape(len(pairs), -1)[:, 0]
        return scores

    def rerank(self, queries: Sequence[str], pools: Sequence[Sequence[Hit]], k: int) -> list[list[Hit]]:
        """Each query's pool (hits with title and text) ordered by cross-encoder score, the best ``k``."""
        pairs, owners = [], []
        for number, (query, pool) in enumerate(zip(queries, pools, strict=True)):
            for position, hit in enumerate(pool):
                pairs.append((query, passage_text(hit.title, hit.text)))
                owners.append((number, position))
        scores = self.score(pairs)
        scored: list[list[tuple[float, int]]] = [[] for _ in queries]
        for (number, position), value in zip(owners, scores.tolist(), strict=True):
            scored[number].append((value, position))
        results = []
        for pool, entries in zip(pools, scored, strict=True):
            entries.sort(key=lambda entry: (-entry[0], entry[1]))
            results.append(
                [
                    Hit(pool[p].passage_id, pool[p].wikipedia_id, value, pool[p].title, pool[p].text)
                    for value, p in entries[:k]
                ]
            )
        return results

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name}, {self.device} {self.precision}, batch {self.batch_size})"


def candidate_pool(rankings: Sequence[Sequence[Hit]]) -> list[Hit]:
    """The union of several rankings of one query, first ranking first, each passage once."""
    seen: set[str] = set()
    pool = []
    for ranking in rankings:
        for hit in ranking:
            if hit.passage_id not in seen:
                seen.add(hit.passage_id)
                pool.append(hit)
    return pool
