"""Open-domain QA topics against a built snapshot, for the benchmarks on tables and infoboxes: DPR's NQ and
TriviaQA dev topics (question, answers), the questions that name a page of the snapshot whose answer is on
it (:func:`page_questions`), and success@k / answer recall@k of a ranking (:func:`answer_scores`).
Answers are compared as KILT's metrics normalise them, as whole-word phrases."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from assets.indexes import Hit
from assets.indexes.evaluation import normalize_answer
from assets.topics import dpr_answers, split_dpr_line
from support.real_data import real_file

TOPICS = {"nq": "topics.dpr.nq.dev.txt", "triviaqa": "topics.dpr.trivia.dev.txt"}


def read_topics(name: str) -> tuple[list[tuple[str, list[str]]], int]:
    """``(question, answers)`` of a DPR topics file (``question<TAB>['answer', ...]``), and the number of
    lines whose answer list does not parse (skipped)."""
    rows, unparsed = [], 0
    for line in real_file("original", "dpr_topics", TOPICS[name]).read_text(encoding="utf-8").splitlines():
        split = split_dpr_line(line)  # the project's one reader of DPR's QA TSV
        if split is None or not split[0]:
            continue
        answers = dpr_answers(split[1])
        if isinstance(answers, list):
            rows.append((split[0], [str(a) for a in answers]))
        else:
            unparsed += 1
    return rows, unparsed


def usable(answer: str) -> bool:
    return len(answer) >= 3 and not (answer.isdigit() and len(answer) < 4)


def page_questions(
    questions: list[tuple[str, list[str]]], pages: dict[str, tuple[str, str]]
) -> list[dict[str, Any]]:
    """The questions that name a page (``{wikipedia_id: (normalised title, normalised page text)}``) some
    answer of which is on that page, with the page and the usable answers."""
    titles = [(wid, f" {title} ", body) for wid, (title, body) in pages.items() if len(title) >= 4]
    found = []
    for question, answers in questions:
        keys = sorted({a for a in (normalize_answer(x) for x in answers) if usable(a)})
        asked = f" {normalize_answer(question)} "
        for wid, title, body in titles:
            if title in asked and any(f" {key} " in body for key in keys):
                found.append({"question": question, "answers": keys, "page": wid})
                break
    return found


def answer_scores(
    questions: Sequence[dict[str, Any]],
    search: Callable[[list[str], int], list[list[Hit]]],
    k: int = 5,
) -> dict[str, float]:
    """success@k (the question's ``page`` among the pages of the top ``k``) and answer recall@k (one of its
    ``answers`` in the title or text of a top-``k`` passage) of ``search(queries, k)``, whose hits carry
    their text."""
    ranked = search([q["question"] for q in questions], k)
    success = recall = 0
    for question, hits in zip(questions, ranked, strict=True):
        success += question["page"] in {h.wikipedia_id for h in hits}
        texts = " ".join(f" {normalize_answer(f'{h.title} {h.text}')} " for h in hits)
        recall += any(f" {a} " in texts for a in question["answers"])
    return {
        f"success@{k}": round(success / max(len(questions), 1), 4),
        f"answer_recall@{k}": round(recall / max(len(questions), 1), 4),
    }


def snapshot_rows(paths: Any) -> list[dict[str, Any]]:
    """``wikipedia_id``, ``title`` and ``text`` of every text and structured passage of a built snapshot."""
    import pyarrow.parquet as pq

    columns = ["wikipedia_id", "title", "text"]
    return [
        row
        for parquet in (paths.passages_parquet, paths.structured_parquet)
        for row in pq.read_table(parquet, columns=columns).to_pylist()
    ]


def page_texts(rows: Iterable[dict[str, Any]]) -> dict[str, tuple[str, str]]:
    """``{wikipedia_id: (normalised title without a parenthesised qualifier, normalised text of every
    passage of the page)}`` of passage rows (:func:`snapshot_rows`; what :func:`page_questions` reads)."""
    pages: dict[str, list[str]] = {}
    titles: dict[str, str] = {}
    for row in rows:
        pages.setdefault(row["wikipedia_id"], []).append(normalize_answer(row["text"]))
        titles[row["wikipedia_id"]] = normalize_answer(row["title"].split(" (")[0])
    return {wid: (titles[wid], f" {' '.join(texts)} ") for wid, texts in pages.items()}
