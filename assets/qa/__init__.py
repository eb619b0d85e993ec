"""Questions as a knowledge base (RePAQ), answered by the most similar stored question.

QA-pair files read as a stream (``reader``), grouped by question with each answer's provenance on the
snapshot (``build``: the ``qa`` collection, indexed like any collection), answers found where the snapshot
writes them (``spans``), and answering by the most similar stored question, with an abstention below a
confidence (``answer``)."""

from assets.qa.answer import (
    ANSWER_INDEXES,
    QAAnswerer,
    check_threshold,
    question_f1,
    topic_chunks,
)
from assets.qa.build import (
    EMBEDDED_QA_FILES,
    PROVENANCE_METHODS,
    QA_SCHEMA,
    QAReport,
    build_qa_pairs,
    embedded_qa_files,
    grouped_questions,
    qa_pairs_consistent,
    question_id,
    write_qa_lookup,
)
from assets.qa.reader import (
    QAPair,
    QAReadError,
    QAReadReport,
    SourcePassage,
    iter_qa_pairs,
    iter_source_passages,
)
from assets.qa.spans import AnswerSpan, answer_pattern, find_in_page, first_answer_in

__all__ = [
    "ANSWER_INDEXES",
    "EMBEDDED_QA_FILES",
    "PROVENANCE_METHODS",
    "QA_SCHEMA",
    "AnswerSpan",
    "QAAnswerer",
    "QAPair",
    "QAReadError",
    "QAReadReport",
    "QAReport",
    "SourcePassage",
    "answer_pattern",
    "build_qa_pairs",
    "check_threshold",
    "embedded_qa_files",
    "find_in_page",
    "first_answer_in",
    "grouped_questions",
    "iter_qa_pairs",
    "iter_source_passages",
    "qa_pairs_consistent",
    "question_f1",
    "question_id",
    "topic_chunks",
    "write_qa_lookup",
]
