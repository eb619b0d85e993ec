"""The QA-pair KB's verb of ``kiltpipe``: ``answer``, a question (or a topics file) answered by the most
similar stored questions (:class:`~assets.qa.QAAnswerer`), abstaining below a confidence."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from orchestration.cli.arguments import positive_int
from orchestration.cli.common import EXIT_NOT_FOUND, Verb, add_snapshot, emit, fail, retriever_for

__all__ = ["VERBS", "cmd_answer"]


def _confidence(text: str) -> float:
    from assets.qa import check_threshold

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    try:
        check_threshold(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return value


def _answer_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("question", nargs="?", help="a question (or --topics FILE)")
    parser.add_argument(
        "--topics",
        help="a QA-pair file (any format of qa.files): every question answered, KILT predictions to --output",
    )
    parser.add_argument("--output", help="with --topics: the KILT-format predictions (kiltpipe eval --guess)")
    parser.add_argument("--gold-output", help="with --topics: its questions and answers as a KILT gold file")
    parser.add_argument(
        "--index", choices=["dense", "bm25"], default="dense", help="how questions are matched"
    )
    parser.add_argument("--k", type=positive_int, default=5, help="stored questions matched")
    parser.add_argument(
        "--abstain-below",
        type=_confidence,
        default=None,
        help="abstain when the best match's confidence (0..1) is below this",
    )
    parser.add_argument(
        "--fallback",
        choices=["bm25", "dense", "hybrid"],
        help="when abstaining, retrieve passages with this index instead (RePAQ's back-off)",
    )
    add_snapshot(parser)


def cmd_answer(args: argparse.Namespace) -> int:
    from assets.datasets.queries import require_stores
    from assets.limits import LimitExceeded
    from assets.provenance_store import ProvenanceStore
    from assets.qa import QAAnswerer, QAReadError, read_topics

    if (args.question is None) == (args.topics is None):
        return fail("give either a QUESTION or --topics FILE")
    if args.topics is not None and not args.output:
        return fail("--topics needs --output FILE (KILT predictions)")
    options = {
        "index": args.index,
        "k": args.k,
        "abstain_below": args.abstain_below,
        "fallback": args.fallback,
    }
    with retriever_for(args) as retriever:
        paths = retriever.paths
        require_stores(paths)
        with ProvenanceStore(paths) as store:
            try:
                answerer = QAAnswerer(paths, retriever, store)
            except FileNotFoundError as error:
                return fail(str(error), EXIT_NOT_FOUND)
            try:
                if args.question is not None:
                    emit(answerer.answer([args.question], **options)[0])
                    return 0
                ids, questions, answers = read_topics(Path(args.topics))
                predictions = answerer.kilt_predictions(ids, questions, **options)
            except (LimitExceeded, QAReadError) as error:
                return fail(str(error))
    _write_jsonl(Path(args.output), predictions)
    if args.gold_output:
        gold = [
            {"id": i, "input": q, "output": [{"answer": a} for a in answer]}
            for i, q, answer in zip(ids, questions, answers, strict=True)
        ]
        _write_jsonl(Path(args.gold_output), gold)
    abstained = sum(1 for p in predictions if not p["output"][0]["answer"])
    emit(
        {
            "snapshot_id": paths.snapshot_id,
            "questions": len(predictions),
            "answered": len(predictions) - abstained,
            "abstained": abstained,
            "output": str(Path(args.output).resolve()),
        }
    )
    return 0


def _write_jsonl(path: Path, records: list[dict]) -> None:
    from assets.files import atomic_path

    with atomic_path(path) as temp, open(temp, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")


VERBS = (
    Verb(
        "answer",
        "Answer a question from the QA-pair KB: the most similar stored questions, their answers and where "
        "the snapshot supports them; abstain below a confidence (optionally retrieving passages instead).",
        cmd_answer,
        _answer_options,
    ),
)
