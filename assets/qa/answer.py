"""Answering from the QA-pair KB as RePAQ does: the most similar stored questions, their answers, and an
abstention when the match is not close enough.

A question is searched among the stored questions (``dense``: the same encoder as the passages, the
stored question embedded alone, so the match is symmetric; ``bm25``: RePAQ's sparse baseline). Each of
the top ``k`` matches gives its first answer (one entry per answer as KILT normalises it, the best match
first), with the matched question, its score, and the answer's provenance on the snapshot (page,
paragraph, offsets, the answer as written, and the text of the passage that holds it, from the store).

A stored question that *is* the question (the same text as KILT normalises it) is looked up first, by
its text, in the KB's lookup file (``qa_pairs.sqlite``): it is the first match (``"match": "exact"``,
confidence 1) whatever an index would score it, so a compressed index that cannot tell near-identical
questions apart still answers an asked-before question exactly, and with ``k`` = 1 such a question is
answered without encoding or searching at all (its ``score`` is then None). The stored questions' rows
(answers, provenance) are read from the same file by id: nothing is held in memory but the indices.

The **confidence** is the top match's: for ``dense`` its cosine similarity (the vectors are normalised),
for ``bm25`` the F1 of the two questions' normalised words (BM25 scores have no scale); both are in
[0, 1], and 1 for an exact match. Below ``abstain_below`` the answer abstains (no answers); so does a
question with no word in it (NUL characters, punctuation: nothing is searched for it, confidence 0); with a
``fallback`` index the passages it retrieves are returned instead (RePAQ's back-off to
retrieve-and-read).

Pure module: no Dagster import.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from assets.indexes.evaluation import normalize_answer
from assets.limits import QALimits
from assets.provenance_store import PassageRows
from assets.storage import SnapshotPaths

__all__ = [
    "ANSWER_INDEXES",
    "QAAnswerer",
    "check_threshold",
    "question_f1",
    "topic_chunks",
]

ANSWER_INDEXES = ("dense", "bm25")
TOPICS_CHUNK = 1_000
"""Questions of a topics file answered at a time (``kiltpipe answer --topics``)."""
PROVENANCE_KEYS = (
    "wikipedia_id",
    "start_paragraph_id",
    "start_character",
    "end_paragraph_id",
    "end_character",
)


def check_threshold(value: float | None) -> float | None:
    """``value`` when it is None or in [0, 1]; else a ValueError saying so."""
    if value is not None and not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"--abstain-below must be between 0 and 1 (a confidence), not {value}")
    return value


def question_f1(a: str, b: str) -> float:
    """The F1 of two questions' normalised words (KILT's normalisation)."""
    left, right = normalize_answer(a).split(), normalize_answer(b).split()
    common = sum((Counter(left) & Counter(right)).values())
    if not common:
        return 0.0
    precision, recall = common / len(right), common / len(left)
    return 2 * precision * recall / (precision + recall)


_WORD = re.compile(r"[^\W_]")
"""A letter or digit: what a question needs to be matched at all."""


class QAAnswerer:
    """Answers questions from a snapshot's QA-pair KB through a
    :class:`~assets.indexes.retriever.Retriever` (which opens the ``qa`` collection's indices) and the KB's
    lookup file. ``store``: a zero-argument callable returning the snapshot's open provenance store or None
    (for the supporting passages' text; its owner closes it); ``rows``: the KB's lookup file, open (default:
    opened here). Opened by :attr:`assets.reading.Snapshot.answerer`, which opens the lookup file once and
    checks it is current."""

    def __init__(
        self,
        paths: SnapshotPaths,
        retriever: Any,
        store: Callable[[], Any] | None = None,
        rows: PassageRows | None = None,
    ) -> None:
        self.paths = paths
        self.retriever = retriever
        self.store = store
        self.rows = rows if rows is not None else PassageRows(paths.qa_lookup)  # closed by close()

    def _matches(
        self, questions: Sequence[str], norms: list[str], index: str, k: int
    ) -> list[list[tuple[str, float | None]]]:
        """The top ``k`` stored questions of each question as ``(id, index score)``, best first: the stored
        question that is the question itself first (score None when it was not searched: with ``k`` = 1
        nothing else is wanted)."""
        exact = self.rows.resolve(norm for norm in norms if norm)
        # a question with no word in it (NUL characters, punctuation) is not searched: nothing matches it
        searched = [i for i, norm in enumerate(norms) if norm and not (k == 1 and norm in exact)]
        hits: list[list[Any]] = [[] for _ in questions]
        if searched:
            found = self.retriever.batch_search(index, [questions[i] for i in searched], k, collection="qa")
            for i, ranked in zip(searched, found, strict=True):
                hits[i] = ranked
        matches = []
        for norm, ranked in zip(norms, hits, strict=True):
            scores = {hit.passage_id: float(hit.score) for hit in ranked}
            twin = exact.get(norm)
            first = [(twin, scores.get(twin))] if twin is not None else []
            matches.append([*first, *((i, s) for i, s in scores.items() if i != twin)][:k])
        return matches

    def answer(
        self,
        questions: Sequence[str],
        *,
        index: str = "dense",
        k: int = 5,
        abstain_below: float | None = None,
        fallback: str | None = None,
        fallback_k: int = 5,
    ) -> list[dict[str, Any]]:
        """One answer record per question (see the module's docstring), in order."""
        if index not in ANSWER_INDEXES:
            raise ValueError(f"unknown QA index {index!r}; choose one of {', '.join(ANSWER_INDEXES)}")
        check_threshold(abstain_below)
        # a question with no letter or digit (NUL characters, punctuation) has no words to match: empty
        norms = [norm if _WORD.search(norm) else "" for norm in map(normalize_answer, questions)]
        matches = self._matches(questions, norms, index, k)
        rows = self.rows.many(number for found in matches for number, _ in found)
        records = []
        for question, norm, found in zip(questions, norms, matches, strict=True):
            answers: list[dict[str, Any]] = []
            seen: set[str] = set()
            for question_id, score in found:
                row = rows[question_id]
                answer = row["answers"][0]
                key = normalize_answer(answer) or answer
                if key in seen:
                    continue
                seen.add(key)
                exact = row["question_norm"] == norm
                answers.append(
                    {
                        "answer": answer,
                        "question": row["text"],
                        "question_id": question_id,
                        "match": "exact" if exact else "nearest",
                        "score": None if score is None else round(score, 6),
                        "confidence": 1.0
                        if exact
                        else round(self._confidence(index, question, row, score), 6),
                        "provenance": _provenance(row),
                    }
                )
            confidence = answers[0]["confidence"] if answers else 0.0
            abstained = not norm or (abstain_below is not None and confidence < abstain_below)
            records.append(
                {
                    "question": question,
                    "index": index,
                    "confidence": confidence,
                    "abstained": abstained,
                    "answers": [] if abstained else answers,
                }
            )
        self._passage_texts(records)
        if fallback is not None:
            backing = [i for i, record in enumerate(records) if record["abstained"]]
            if backing:
                passages = self.retriever.batch_search(
                    fallback, [questions[i] for i in backing], fallback_k, with_text=True
                )
                for i, hits in zip(backing, passages, strict=True):
                    records[i]["fallback"] = {
                        "index": fallback,
                        "passages": [_passage(hit) for hit in hits],
                    }
        return records

    def _confidence(self, index: str, question: str, row: dict[str, Any], score: float | None) -> float:
        if index == "dense" and score is not None:
            return min(max(score, 0.0), 1.0)
        return question_f1(question, row["text"])

    def _passage_texts(self, records: list[dict[str, Any]]) -> None:
        """The text of each answer's supporting passage, in one batch lookup."""
        wanted = {
            a["provenance"]["passage_id"]
            for r in records
            for a in r["answers"]
            if a["provenance"] is not None
        }
        if not wanted:
            return
        store = self.store() if self.store is not None else None
        if store is None:
            return
        texts = store.passage_texts(sorted(wanted))
        for record in records:
            for answer in record["answers"]:
                if answer["provenance"] is not None:
                    found = texts.get(answer["provenance"]["passage_id"])
                    answer["provenance"]["passage_text"] = found[1] if found else None

    def close(self) -> None:
        """Close the lookup file (the store stays open: its owner closes it)."""
        self.rows.close()

    def kilt_predictions(
        self, ids: Sequence[str], questions: Sequence[str], **options: Any
    ) -> list[dict[str, Any]]:
        """KILT-format predictions (``kiltpipe eval --guess``): the top answer, its provenance as KILT's
        (page, paragraphs, characters); an abstention is an empty answer."""
        out = []
        for record_id, record in zip(ids, self.answer(questions, **options), strict=True):
            top = record["answers"][0] if record["answers"] else None
            provenance = []
            if top is not None and top["provenance"] is not None:
                where = top["provenance"]
                provenance.append({key: where[key] for key in (*PROVENANCE_KEYS, "title")})
            elif record.get("fallback"):
                provenance = [
                    {"wikipedia_id": p["wikipedia_id"], "title": p["title"]}
                    for p in record["fallback"]["passages"]
                ]
            out.append(
                {
                    "id": record_id,
                    "input": record["question"],
                    "output": [{"answer": top["answer"] if top else "", "provenance": provenance}],
                }
            )
        return out


def _passage(hit: Any) -> dict[str, Any]:
    return {
        "passage_id": hit.passage_id,
        "wikipedia_id": hit.wikipedia_id,
        "score": round(float(hit.score), 6),
        "title": hit.title,
        "text": hit.text,
    }


def _provenance(row: dict[str, Any]) -> dict[str, Any] | None:
    if row["provenance_method"] == "none":
        return None
    return {
        "wikipedia_id": row["wikipedia_id"],
        "title": row["provenance_title"],
        "passage_id": row["provenance_passage_id"],
        "start_paragraph_id": row["start_paragraph_id"],
        "start_character": row["start_character"],
        "end_paragraph_id": row["end_paragraph_id"],
        "end_character": row["end_character"],
        "text": row["provenance_text"],
        "answer": row["provenance_answer"],
        "method": row["provenance_method"],
    }


def topic_chunks(
    path: Path, limits: QALimits, chunk: int = TOPICS_CHUNK
) -> Iterator[list[tuple[str, str, list[str]]]]:
    """``(id, question, answers)`` of a topics file in any QA-pair format (ids ``<file stem>-<line>``), read
    within ``limits`` (params.yaml's ``limits.qa``, as the QA-pair files are), in lists of ``chunk``: a file
    of any length is answered a chunk at a time."""
    from assets.qa.reader import iter_qa_pairs

    stem = Path(path).name.split(".")[0]
    pending: list[tuple[str, str, list[str]]] = []
    for pair in iter_qa_pairs(Path(path), limits=limits):
        pending.append((f"{stem}-{pair.line}", pair.question, list(pair.answers)))
        if len(pending) >= chunk:
            yield pending
            pending = []
    if pending:
        yield pending
