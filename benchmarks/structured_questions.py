"""Questions only the tables and infoboxes can answer: NQ and TriviaQA dev questions whose answer appears
in a structured passage of the built excerpt and in none of its text passages.

How they are found (printed and written to ``benchmarks/results/structured_questions.json`` with the
passages that hold each answer): every answer string of every question of DPR's NQ dev (8,757) and
TriviaQA dev (8,837) topics (``tests/data/original/dpr_topics``) is normalised as KILT's metrics normalise
answers (lower case, no punctuation or articles, single spaces) and looked up as a whole-word phrase in
the normalised text of every structured passage (table and infobox) of the snapshot and of every text
passage. A question is listed when some answer of it is in a structured passage of a page whose title
(without a parenthesised qualifier, normalised) is in the question, and no answer of it is in any text
passage of the snapshot: the question is about that page, and only its table or infobox holds the answer.
Answers shorter than 3 characters, and pure numbers under 4 digits, are left out (they match everywhere by
accident). ``candidates`` counts the questions before the title condition (mostly accidental matches).

Does it help retrieval (needs the snapshot's text and structured indices): the **page questions** are
every question that names a page of the snapshot (its normalised title, at least 4 characters, in the
question) some answer of which is on that page (in its text or structured passages). Each is searched with
bm25, dense and hybrid over the text passages only and over text + structured passages (collection
``both``); success@5: the named page among the pages of the top 5 passages; answer recall@5: some answer
in the text of one of the top 5 passages (DPR's top-k accuracy). The same for the structured-only list.

    .venv/bin/python benchmarks/structured_questions.py [--data-dir data] [--snapshot enwiki-20160501]
        [--questions N]   # the first N questions of each set (default: all)
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from assets import params
from assets.indexes.evaluation import normalize_answer
from assets.storage import resolve_snapshot
from benchmarks.common import machine_info, write_results
from benchmarks.qa_topics import TOPICS, answer_scores, page_questions, page_texts, read_topics, usable
from support.workspace import log


def find(
    questions: list[tuple[str, list[str]]], structured: list[dict], text: str
) -> tuple[list[dict[str, Any]], int]:
    """The questions some answer of which is in a structured passage of the page the question names and
    none in ``text``, and the count before the page condition."""
    normalised = [
        (row, f" {normalize_answer(row['text'])} ", normalize_answer(row["title"].split(" (")[0]))
        for row in structured
    ]
    found, candidates = [], 0
    for question, answers in questions:
        keys = {a for a in (normalize_answer(x) for x in answers) if usable(a)}
        if not keys or any(f" {key} " in text for key in keys):
            continue
        asked = f" {normalize_answer(question)} "
        holders = [
            (row, key, title) for key in sorted(keys) for row, body, title in normalised if f" {key} " in body
        ]
        candidates += bool(holders)
        about = [
            {"answer": key, "passage_id": row["passage_id"], "title": row["title"], "kind": row["kind"]}
            for row, key, title in holders
            if title and f" {title} " in asked
        ]
        if about:
            found.append({"question": question, "answers": answers, "found_in": about})
    return found, candidates


def retrieval(paths: Any, questions: list[dict[str, Any]], k: int = 5) -> dict[str, dict[str, float]]:
    """success@k and answer recall@k of each index over the text passages and over text + structured."""
    from assets.indexes import collection_built, searcher_key
    from assets.reading import Snapshot

    scores: dict[str, dict[str, float]] = {}
    with Snapshot(paths, params.load_params()) as snapshot:
        retriever = snapshot.retriever
        for collection in ("text", "both"):
            for index in ("bm25", "dense", "hybrid"):
                if collection == "both" and not collection_built(paths, index, "structured"):
                    continue
                key = searcher_key(index, collection)
                scores[key] = answer_scores(
                    questions,
                    lambda queries, n, key=key: retriever.batch_search(key, queries, n, with_text=True),
                    k,
                )
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--snapshot", default=None)
    parser.add_argument("--questions", type=int, default=0, help="the first N questions of each set (0: all)")
    args = parser.parse_args()
    paths = resolve_snapshot(args.data_dir or params.data_dir(), args.snapshot)
    structured = pq.read_table(paths.structured_parquet).to_pylist()
    passages = pq.read_table(paths.passages_parquet, columns=["wikipedia_id", "title", "text"])
    page_text = page_texts([*passages.to_pylist(), *structured])  # read once, both uses
    passages = passages.select(["title", "text"])
    text = (
        " "
        + " ".join(
            normalize_answer(f"{t} {x}")
            for t, x in zip(passages.column(0).to_pylist(), passages.column(1).to_pylist(), strict=True)
        )
        + " "
    )
    text = re.sub(" +", " ", text)
    results: dict[str, Any] = {
        "machine": machine_info(),
        "k": 5,
        "questions_per_set": args.questions or "all",
        "snapshot": paths.snapshot_id,
        "structured_passages": len(structured),
        "text_passages": passages.num_rows,
        "how": __doc__.split("\n\n")[1],
    }
    for name in TOPICS:
        questions, unparsed = read_topics(name)
        questions = questions[: args.questions or None]
        found, candidates = find(questions, structured, text)
        results[name] = {
            "questions": len(questions),
            "unparsed_lines": unparsed,
            "candidates": candidates,
            "structured_only": len(found),
            "list": found,
        }
        log(f"{name}: {len(found)} of {len(questions):,} dev questions answered only by a table or infobox")
        for entry in found:
            held = entry["found_in"][0]
            print(f"  {entry['question']}  ->  {held['answer']!r} in {held['passage_id']} ({held['title']})")
        asked = page_questions(questions, page_text)
        only = [
            {
                "question": e["question"],
                "answers": [a for a in map(normalize_answer, e["answers"]) if usable(a)],
                "page": e["found_in"][0]["passage_id"].rpartition("-")[0],
            }
            for e in found
        ]
        results[name]["page_questions"] = len(asked)
        results[name]["retrieval_page_questions"] = retrieval(paths, asked)
        results[name]["retrieval_structured_only"] = retrieval(paths, only) if only else {}
        log(f"{name}: {len(asked)} page questions; {results[name]['retrieval_page_questions']}")
    write_results("structured_questions", results)


if __name__ == "__main__":
    main()
