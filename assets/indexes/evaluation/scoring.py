"""KILT's page-level retrieval metrics of a retriever's ranked passages, by KILT's own rules.

A query's passage hits become a KILT guess record (one output whose provenance is the hits in rank
order: page id, title and passage text), and :mod:`assets.indexes.evaluation.kilt_metrics` scores the guesses
against the remapped split's gold records as ``kilt/eval_retrieval.py`` does: every gold record counts
(one without provenance, or without an input to query with, scores 0), evidence sets are ranked as KILT
ranks them, and the in-context metrics read the passages' text.

The reports carry KILT's names only, as ``kilt/eval_retrieval.py`` prints them (``Rprec``,
``precision@k``, ``recall@k``, ``success_rate@k``, ``answer_in_context@k``, ...): ``Rprec`` is what papers
call R-precision, ``success_rate@k`` their success@k (docs/stages/indexes.md lists them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from assets.indexes.evaluation.kilt_metrics import KILT_KS, RetrievalMeans
from assets.indexes.hits import Hit

KS = KILT_KS


def guess_of(query_id: str, hits: Sequence[Hit]) -> dict[str, Any]:
    """A query's hits as a KILT guess record: one output, its provenance the hits in rank order."""
    provenance = []
    for hit in hits:
        entry: dict[str, Any] = {"wikipedia_id": hit.wikipedia_id, "passage_id": hit.passage_id}
        if hit.title is not None:
            entry["title"] = hit.title
        if hit.text is not None:
            entry["text"] = hit.text
        provenance.append(entry)
    return {"id": query_id, "output": [{"provenance": provenance}]}


def has_provenance(record: dict[str, Any]) -> bool:
    return any(output.get("provenance") for output in record.get("output") or [])


def evaluate(
    gold: Sequence[dict[str, Any]], hits: dict[str, Sequence[Hit]], ks: Sequence[int] = KS
) -> dict[str, Any]:
    """KILT's metrics of the ``hits`` (gold record id -> ranked passages; a record without hits is a
    guess without provenance) over every ``gold`` record, rounded to 4 decimals."""
    means = RetrievalMeans(ks)
    add_guesses(means, gold, hits)
    return scores_of(means, sum(not has_provenance(record) for record in gold))


def add_guesses(
    means: RetrievalMeans, gold: Sequence[dict[str, Any]], hits: dict[str, Sequence[Hit]]
) -> None:
    """Score one chunk of gold records against their hits (see :func:`evaluate`)."""
    means.add(gold, [guess_of(str(record["id"]), hits.get(str(record["id"]), ())) for record in gold])


def scores_of(means: RetrievalMeans, without_provenance: int) -> dict[str, Any]:
    """The report of the accumulated means: counts, and KILT's metrics under its names, to 4 decimals."""
    scores: dict[str, Any] = {"queries": means.count, "without_provenance": without_provenance}
    if not means.count:
        return scores
    scores.update({name: round(value, 4) for name, value in means.means().items()})
    return scores
