"""KILT's retrieval metrics, the evaluation, and what the checks measure.

Measuring the indices: KILT's page-level retrieval metrics, number for number
(:mod:`~assets.indexes.evaluation.kilt_metrics`, :mod:`~assets.indexes.evaluation.scoring`), the KILT
evaluation of a snapshot's indices (:func:`evaluate_indexes`) and what the blocking checks measure
(:func:`self_retrieval`, :func:`approximate_recall`).
"""

from __future__ import annotations

from assets.indexes.evaluation.checks import (
    RecallResult,
    SelfRetrieval,
    approximate_recall,
    passage_count,
    self_retrieval,
)
from assets.indexes.evaluation.kilt_metrics import (
    KILT_KS,
    RetrievalMeans,
    downstream_metrics,
    retrieval_metrics,
)
from assets.indexes.evaluation.report import (
    NO_EVALUATION,
    eval_queries,
    evaluate_indexes,
    retrieval_reports_dir,
)

__all__ = [
    "KILT_KS",
    "NO_EVALUATION",
    "RecallResult",
    "RetrievalMeans",
    "SelfRetrieval",
    "approximate_recall",
    "downstream_metrics",
    "eval_queries",
    "evaluate_indexes",
    "passage_count",
    "retrieval_metrics",
    "retrieval_reports_dir",
    "self_retrieval",
]
