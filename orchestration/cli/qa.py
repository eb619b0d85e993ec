"""The QA-pair KB's verb of ``kiltpipe``: ``answer``, a question (or a topics file) answered by the most
similar stored questions (:class:`~assets.qa.QAAnswerer`), abstaining below a confidence."""

from __future__ import annotations

import argparse
import contextlib
import json
from pathlib import Path
from typing import Any

from assets.files import atomic_path
from assets.limits import LimitExceeded
from orchestration.cli.arguments import positive_int
from orchestration.cli.common import EXIT_NOT_FOUND, Verb, add_snapshot, emit, fail, open_snapshot

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
    from assets.qa import QAReadError

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
    with open_snapshot(args) as snapshot:
        try:
            answerer = snapshot.answerer
        except FileNotFoundError as error:
            return fail(str(error), EXIT_NOT_FOUND)
        try:
            if args.question is not None:
                emit(answerer.answer([args.question], **options)[0])
                return 0
            counts = _answer_topics(answerer, Path(args.topics), args, snapshot.params.limits.qa, options)
        except (LimitExceeded, QAReadError) as error:
            return fail(str(error))
    emit({"snapshot_id": snapshot.snapshot_id, **counts, "output": str(Path(args.output).resolve())})
    return 0


def _atomic_text(stack: contextlib.ExitStack, path: Path) -> Any:
    """``path`` opened for text, written to a temp file that replaces it when ``stack`` closes cleanly; never
    a path in a snapshot's own data (:func:`assets.storage.check_output_target`)."""
    from assets.storage import check_output_target

    target = check_output_target(path, "answer --output")
    return open(stack.enter_context(atomic_path(target)), "w", encoding="utf-8")


def _answer_topics(
    answerer: Any, topics: Path, args: argparse.Namespace, limits: Any, options: dict
) -> dict[str, int]:
    """Answer ``topics`` (read within ``limits``, the snapshot's ``limits.qa``) a chunk at a time into
    ``--output`` (and ``--gold-output``), both written atomically; the questions and abstentions counted."""
    from assets.qa import topic_chunks

    gold_path = Path(args.gold_output) if args.gold_output else None
    counts = {"questions": 0, "answered": 0, "abstained": 0}
    with contextlib.ExitStack() as stack:
        out = stack.enter_context(_atomic_text(stack, Path(args.output)))
        gold = stack.enter_context(_atomic_text(stack, gold_path)) if gold_path is not None else None
        for chunk in topic_chunks(topics, limits):
            ids, questions = [c[0] for c in chunk], [c[1] for c in chunk]
            for prediction in answerer.kilt_predictions(ids, questions, **options):
                out.write(json.dumps(prediction, ensure_ascii=False) + "\n")
                counts["abstained" if not prediction["output"][0]["answer"] else "answered"] += 1
            if gold is not None:
                for record_id, question, golden in chunk:
                    record = {"id": record_id, "input": question, "output": [{"answer": a} for a in golden]}
                    gold.write(json.dumps(record, ensure_ascii=False) + "\n")
            counts["questions"] += len(chunk)
    return counts


VERBS = (
    Verb(
        "answer",
        "Answer a question from the QA-pair KB: the most similar stored questions, their answers and where "
        "the snapshot supports them; abstain below a confidence (optionally retrieving passages instead).",
        cmd_answer,
        _answer_options,
    ),
)
