"""KILT's retrieval metrics, the evaluation, and what the checks measure.

The metrics number for number as KILT's (:mod:`~assets.indexes.evaluation.kilt_metrics`,
:mod:`~assets.indexes.evaluation.scoring`), the KILT evaluation of a snapshot's indices
(:func:`evaluate_indexes`) and what the blocking checks measure (:func:`self_retrieval`,
:func:`approximate_recall`).
"""

from __future__ import annotations

from assets.indexes.evaluation.checks import (
    RecallResult,
    SelfRetrieval,
    approximate_recall,
    exact_top_k,
    first_sentence,
    passage_count,
    recall_against_exact,
    sample_passages,
    self_retrieval,
)
from assets.indexes.evaluation.kilt_metrics import (
    KILT_KS,
    KiltEvaluationError,
    RetrievalMeans,
    aligned,
    downstream_metrics,
    gold_answers,
    normalize_answer,
    record_retrieval_metrics,
    retrieval_metrics,
)
from assets.indexes.evaluation.report import (
    NO_EVALUATION,
    eval_queries,
    evaluate_indexes,
    retrieval_reports_dir,
)
from assets.indexes.evaluation.scoring import evaluate, guess_of

__all__ = [
    "KILT_KS",
    "NO_EVALUATION",
    "KiltEvaluationError",
    "RecallResult",
    "RetrievalMeans",
    "SelfRetrieval",
    "aligned",
    "approximate_recall",
    "downstream_metrics",
    "eval_queries",
    "evaluate",
    "evaluate_indexes",
    "exact_top_k",
    "first_sentence",
    "gold_answers",
    "guess_of",
    "normalize_answer",
    "passage_count",
    "recall_against_exact",
    "record_retrieval_metrics",
    "retrieval_metrics",
    "retrieval_reports_dir",
    "sample_passages",
    "self_retrieval",
]
