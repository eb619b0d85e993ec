"""KILT page-level retrieval metrics (KILT paper, section 4), computed from ranked passage hits.

For one query:
- the gold side is a list of provenance *sets*, one per output (an output's provenance pages, as
  page ids); a multi-page set (FEVER, HotpotQA) is found only when all of its pages are retrieved;
- the ranked side is the retrieved passages' pages in rank order, duplicates removed (a page is
  ranked where its best passage is);
- R-precision: for each set, precision at R = |set| over the first R pages; the maximum over sets;
- recall@k: the fraction of provenance sets complete within the top k pages, each set counted at
  the rank of its lowest-ranked page;
- success@k: 1 when at least one set is complete within the top k, else 0.
Queries without gold provenance are skipped (counted).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

KS = (1, 5, 10, 20)


def pages_in_rank_order(hit_page_ids: Iterable[str]) -> list[str]:
    """Collapse passage hits to pages, keeping the first (best) occurrence of each page."""
    seen: set[str] = set()
    ranked = []
    for page_id in hit_page_ids:
        if page_id not in seen:
            seen.add(page_id)
            ranked.append(page_id)
    return ranked


def set_completion_ranks(
    ranked_pages: Sequence[str], gold_sets: Sequence[frozenset[str]]
) -> list[int | None]:
    """For each gold set, the 1-based rank at which its last page appears (None if never complete)."""
    position = {page: rank for rank, page in enumerate(ranked_pages, start=1)}
    ranks = []
    for gold in gold_sets:
        found = [position.get(page) for page in gold]
        ranks.append(None if not gold or None in found else max(found))
    return ranks


def r_precision(ranked_pages: Sequence[str], gold_sets: Sequence[frozenset[str]]) -> float:
    best = 0.0
    for gold in gold_sets:
        if gold:
            r = len(gold)
            best = max(best, sum(page in gold for page in ranked_pages[:r]) / r)
    return best


def recall_at_k(completion_ranks: Sequence[int | None], k: int) -> float:
    if not completion_ranks:
        return 0.0
    return sum(rank is not None and rank <= k for rank in completion_ranks) / len(completion_ranks)


def success_at_k(completion_ranks: Sequence[int | None], k: int) -> float:
    return float(any(rank is not None and rank <= k for rank in completion_ranks))


@dataclass(slots=True)
class RetrievalScores:
    """Mean KILT metrics over the evaluated queries."""

    queries: int = 0
    skipped_without_provenance: int = 0
    r_precision: float = 0.0
    recall: dict[int, float] = field(default_factory=dict)
    success: dict[int, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, float | int]:
        out: dict[str, float | int] = {
            "queries": self.queries,
            "skipped_without_provenance": self.skipped_without_provenance,
            "R-precision": round(self.r_precision, 4),
        }
        out.update({f"recall@{k}": round(v, 4) for k, v in self.recall.items()})
        out.update({f"success@{k}": round(v, 4) for k, v in self.success.items()})
        return out


def evaluate(
    runs: dict[str, Sequence[str]], gold: dict[str, Sequence[frozenset[str]]], ks: Sequence[int] = KS
) -> RetrievalScores:
    """``runs``: query id -> page ids of the ranked hits (passage hits may repeat a page);
    ``gold``: query id -> provenance sets of page ids. Queries absent from ``runs`` score 0."""
    scores = RetrievalScores(recall=dict.fromkeys(ks, 0.0), success=dict.fromkeys(ks, 0.0))
    for query_id, gold_sets in gold.items():
        gold_sets = [s for s in gold_sets if s]
        if not gold_sets:
            scores.skipped_without_provenance += 1
            continue
        ranked = pages_in_rank_order(runs.get(query_id, ()))
        completion = set_completion_ranks(ranked, gold_sets)
        scores.queries += 1
        scores.r_precision += r_precision(ranked, gold_sets)
        for k in ks:
            scores.recall[k] += recall_at_k(completion, k)
            scores.success[k] += success_at_k(completion, k)
    if scores.queries:
        scores.r_precision /= scores.queries
        scores.recall = {k: v / scores.queries for k, v in scores.recall.items()}
        scores.success = {k: v / scores.queries for k, v in scores.success.items()}
    return scores
