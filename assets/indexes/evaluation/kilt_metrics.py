"""KILT's evaluation, number for number: the retrieval metrics of ``kilt/eval_retrieval.py`` and the
downstream metrics of ``kilt/eval_downstream.py`` (github.com/facebookresearch/KILT), over KILT-format
gold and guess records (plain dicts as the JSONL holds them).

Retrieval, per record, with ``rank_keys`` (default ``wikipedia_id``; ``section`` or the paragraph ids
give finer levels), a provenance entry's id being its rank-key values joined by ``+``:

- the guess ranking is the ids of the guess's (single) output's provenance, duplicates dropped;
- **Rprec**: for each gold output, the share of its ids (entries lacking a rank key are left out,
  duplicates dropped) among the first R guess ids, R = their number (0 when R = 0); the best output;
- each gold output with a ``provenance`` list is an evidence set (an empty list is an empty set, which
  no guess completes), identical sets counted once; walking the guess ids in order, a non-evidence id
  is a miss, an id that completes a set is a hit at that point, and an id that only advances a set
  holds one place for it, dropped again (moving later entries up) when a later id advances or
  completes that set;
- **precision@k** = hits in the first k places / k; **recall@k** = hits / evidence sets;
  **success_rate@k** = 1 if a hit is in the first k; all 0 for a record without guess ids or without
  evidence sets;
- **answer_in_context@k**, **entity_in_context@k**, **answer_and_ent_in_context@k**: whether the text of
  one of the first k guess provenance entries contains a gold answer / a gold provenance title / both
  (after :func:`normalize_answer`); **entity_in_input**: a gold title in the input;
- means over every gold record (records without provenance count, as 0); recall and success rate are
  reported for k > 1 only, as KILT does.

Downstream: **accuracy** (the answer is one of the gold answers as written), **em** and **f1** (best
over the gold answers, after :func:`normalize_answer`), **rougel** (ROUGE-L F of the ``rouge`` package,
as KILT), and their KILT variants, which count a record only when its Rprec is 1. An empty guess answer
scores 0.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

KILT_KS = (1, 5, 10, 20)
DEFAULT_RANK_KEYS = ("wikipedia_id",)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)


class KiltEvaluationError(ValueError):
    """Gold and guess files KILT's evaluation would refuse (duplicate or missing ids, wrong outputs)."""


# ------------------------------------------------------------------------------------------- text
def normalize_answer(text: str) -> str:
    """Lower case, ASCII punctuation removed, articles removed, whitespace collapsed (SQuAD's rule)."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def gold_answers(gold: dict[str, Any]) -> set[str]:
    return {o["answer"].strip() for o in gold.get("output", []) if o.get("answer") and o["answer"].strip()}


def gold_titles(gold: dict[str, Any]) -> set[str]:
    return {
        p["title"].strip()
        for o in gold.get("output", [])
        for p in o.get("provenance", [])
        if p.get("title") and p["title"].strip()
    }


# -------------------------------------------------------------------------------------- retrieval
def _ids(output: dict[str, Any], rank_keys: Sequence[str]) -> list[str]:
    """The ids of an output's provenance entries that have every rank key, first occurrences only."""
    ids: list[str] = []
    for entry in output.get("provenance", []):
        if all(key in entry for key in rank_keys):
            found = "+".join(str(entry[key]).strip() for key in rank_keys)
            if found not in ids:
                ids.append(found)
    return ids


def guess_ids(guess: dict[str, Any], rank_keys: Sequence[str] = DEFAULT_RANK_KEYS) -> list[str]:
    outputs = guess.get("output", [])
    return _ids(outputs[0], rank_keys) if outputs else []


def r_precision(
    guess: dict[str, Any], gold: dict[str, Any], rank_keys: Sequence[str] = DEFAULT_RANK_KEYS
) -> float:
    """KILT's Rprec (see the module docstring); a gold record without outputs is an error, as in KILT."""
    return _r_precision(guess_ids(guess, rank_keys), gold, rank_keys)


def _r_precision(ranked: Sequence[str], gold: dict[str, Any], rank_keys: Sequence[str]) -> float:
    outputs = gold.get("output", [])
    if not outputs:
        raise KiltEvaluationError(
            f"gold record {gold.get('id')!r} has no output: KILT cannot score its Rprec"
        )
    best = 0.0
    for output in outputs:
        gold_ids = _ids(output, rank_keys)
        if gold_ids:
            found = sum(str(guess_id).strip() in gold_ids for guess_id in ranked[: len(gold_ids)])
            best = max(best, found / len(gold_ids))
    return best


def evidence_sets(gold: dict[str, Any], rank_keys: Sequence[str] = DEFAULT_RANK_KEYS) -> list[set[str]]:
    """One set per gold output with a provenance list (ids of the rank keys each entry has), identical
    sets once, in order."""
    sets: list[set[str]] = []
    for output in gold.get("output", []):
        if "provenance" in output:
            found = {
                "+".join(str(entry[key]).strip() for key in rank_keys if key in entry)
                for entry in output["provenance"]
            }
            if found not in sets:
                sets.append(found)
    return sets


def evidence_rank(ranked: Sequence[str], sets: Sequence[set[str]]) -> list[bool | str]:
    """The guess ranking as KILT scores it: True where an id completes an evidence set, False where it
    is in none, and ``"set <i>"`` for the one place a partly found set holds (its latest id's)."""
    remaining = [set(members) for members in sets]
    places: list[bool | str] = []
    for guess_id in ranked:
        guess_id = str(guess_id).strip()
        in_a_set = False
        for index, members in enumerate(remaining):
            if guess_id not in members:
                continue
            in_a_set = True
            place = f"set {index}"
            if place in places:
                places.remove(place)
            members.remove(guess_id)
            places.append(True if not members else place)
        if not in_a_set:
            places.append(False)
    return places


def _contains_any(texts: Iterable[str]) -> Callable[[str], bool]:
    normalized = [normalize_answer(t) for t in texts]
    return lambda context: any(t in context for t in normalized)


def _context_flags(
    guess: dict[str, Any], depth: int, answers: Callable, titles: Callable
) -> list[tuple[bool, bool]]:
    """Per guess provenance entry among the first ``depth``: (has a gold answer, has a gold title) in its
    normalized text; (False, False) for an entry without text. Each text is normalized once."""
    outputs = guess.get("output", [])
    flags = []
    for entry in (outputs[0].get("provenance", []) if outputs else [])[:depth]:
        if "text" in entry:
            context = normalize_answer(entry["text"])
            flags.append((answers(context), titles(context)))
        else:
            flags.append((False, False))
    return flags


def record_retrieval_metrics(
    guess: dict[str, Any],
    gold: dict[str, Any],
    ks: Sequence[int] = KILT_KS,
    rank_keys: Sequence[str] = DEFAULT_RANK_KEYS,
) -> dict[str, float]:
    """KILT's retrieval metrics of one record (KILT's names)."""
    ranked = guess_ids(guess, rank_keys)
    sets = evidence_sets(gold, rank_keys) if ranked else []
    rank = evidence_rank(ranked, sets)
    answers = _contains_any(gold_answers(gold))
    titles = _contains_any(gold_titles(gold))
    flags = _context_flags(guess, max(ks, default=0), answers, titles)
    metrics: dict[str, float] = {"Rprec": _r_precision(ranked, gold, rank_keys)}
    for k in sorted(ks):
        hits = sum(place is True for place in rank[:k])
        scored = bool(sets)
        metrics[f"precision@{k}"] = hits / k if scored else 0.0
        if k > 1:
            metrics[f"recall@{k}"] = hits / len(sets) if scored else 0.0
            metrics[f"success_rate@{k}"] = float(hits > 0) if scored else 0.0
        metrics[f"answer_in_context@{k}"] = float(any(answer for answer, _ in flags[:k]))
        metrics[f"answer_and_ent_in_context@{k}"] = float(
            any(answer and title for answer, title in flags[:k])
        )
        metrics[f"entity_in_context@{k}"] = float(any(title for _, title in flags[:k]))
    metrics["entity_in_input"] = float(titles(normalize_answer(gold.get("input", ""))))
    return metrics


def aligned(gold: Sequence[dict[str, Any]], guess: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The guesses in gold order (ids compared as stripped strings), as KILT's ``validate_input``: gold
    and guess ids unique, every gold id guessed (extra guesses are ignored)."""
    gold_ids = [str(record["id"]).strip() for record in gold]
    if len(set(gold_ids)) != len(gold_ids):
        raise KiltEvaluationError("gold ids are not unique")
    by_id: dict[str, dict[str, Any]] = {}
    for record in guess:
        key = str(record["id"]).strip()
        if key in by_id:
            raise KiltEvaluationError(f"guess id {key!r} appears twice")
        by_id[key] = record
    missing = [key for key in gold_ids if key not in by_id]
    if missing:
        raise KiltEvaluationError(f"no prediction for {len(missing)} gold id(s), e.g. {missing[0]!r}")
    return [by_id[key] for key in gold_ids]


def _provenance_output(guess: dict[str, Any]) -> dict[str, Any]:
    """A guess keeping only its outputs with provenance, which must be exactly one (KILT's rule)."""
    outputs = [o for o in guess.get("output", []) if "provenance" in o]
    if len(outputs) != 1:
        raise KiltEvaluationError(f"guess {guess.get('id')!r} must have exactly one output with provenance")
    return {**guess, "output": outputs}


def retrieval_metrics(
    gold: Sequence[dict[str, Any]],
    guess: Sequence[dict[str, Any]],
    ks: Sequence[int] = KILT_KS,
    rank_keys: Sequence[str] = DEFAULT_RANK_KEYS,
) -> dict[str, float]:
    """KILT's ``eval_retrieval.evaluate`` on parsed files: means over the gold records."""
    means = RetrievalMeans(ks, rank_keys)
    means.add(gold, guess)
    return means.means()


def _metric_keys(ks: Sequence[int]) -> list[str]:
    keys = ["Rprec", "entity_in_input"]
    for k in sorted(ks):
        keys += [
            f"precision@{k}",
            f"answer_in_context@{k}",
            f"answer_and_ent_in_context@{k}",
            f"entity_in_context@{k}",
        ]
        if k > 1:
            keys += [f"recall@{k}", f"success_rate@{k}"]
    return keys


class RetrievalMeans:
    """KILT's retrieval means over gold records fed chunk by chunk (memory: one chunk, and the ids seen).
    Each metric is a running sum in record order, the very additions of one ``sum`` over all records, so the
    means are the same floats whatever the chunking. Gold ids must be unique over every chunk, as in one
    file."""

    def __init__(self, ks: Sequence[int] = KILT_KS, rank_keys: Sequence[str] = DEFAULT_RANK_KEYS) -> None:
        self.ks, self.rank_keys = tuple(ks), tuple(rank_keys)
        self.totals: dict[str, float] = dict.fromkeys(_metric_keys(ks), 0)
        self.count = 0
        self._seen: set[str] = set()

    def add(self, gold: Sequence[dict[str, Any]], guess: Sequence[dict[str, Any]]) -> None:
        """Score these gold records against their guesses (KILT's ``validate_input`` rules)."""
        ids = {str(record["id"]).strip() for record in gold}
        if len(ids) != len(gold) or not self._seen.isdisjoint(ids):
            raise KiltEvaluationError("gold ids are not unique")
        self._seen |= ids
        self.add_aligned(gold, [_provenance_output(g) for g in aligned(gold, guess)])

    def add_aligned(self, gold: Sequence[dict[str, Any]], guesses: Sequence[dict[str, Any]]) -> None:
        """Score guesses already in gold order, as they are."""
        for g, r in zip(guesses, gold, strict=True):
            metrics = record_retrieval_metrics(g, r, self.ks, self.rank_keys)
            for key in self.totals:
                self.totals[key] += metrics[key]
            self.count += 1

    def means(self) -> dict[str, float]:
        return {key: total / self.count if self.count else 0.0 for key, total in self.totals.items()}


# ------------------------------------------------------------------------------------- downstream
def _f1(prediction: str, truth: str) -> float:
    predicted, expected = normalize_answer(prediction).split(), normalize_answer(truth).split()
    same = sum((Counter(predicted) & Counter(expected)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(expected)
    return 2 * precision * recall / (precision + recall)


def _rouge_l(prediction: str, truth: str) -> float:
    from rouge import Rouge

    try:
        return Rouge().get_scores(prediction, truth, avg=True)["rouge-l"]["f"]
    except ValueError:  # the rouge package refuses an empty hypothesis
        return 0.0


def _best(score: Callable[[str, str], float], prediction: str, truths: set[str], record_id: Any) -> float:
    if not truths:
        raise KiltEvaluationError(f"gold record {record_id!r} has no answer: KILT cannot score it")
    return max(score(prediction, truth) for truth in truths)


def downstream_metrics(gold: Sequence[dict[str, Any]], guess: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """KILT's ``eval_downstream.evaluate`` on parsed files: ``{"downstream", "kilt", "retrieval"}``."""
    guesses = aligned(gold, guess)
    sums = dict.fromkeys(("accuracy", "em", "f1", "rougel"), 0.0)
    kilt = dict.fromkeys(sums, 0.0)
    for guess_record, gold_record in zip(guesses, gold, strict=True):
        outputs = guess_record.get("output", [])
        if len(outputs) != 1 or "answer" not in outputs[0]:
            raise KiltEvaluationError(
                f"guess {guess_record.get('id')!r} must have exactly one output with an answer"
            )
        answer = str(outputs[0]["answer"]).strip()
        if not answer:
            continue
        truths = gold_answers(gold_record)
        record = {
            "accuracy": float(answer in truths),
            "em": _best(
                lambda p, t: float(normalize_answer(p) == normalize_answer(t)),
                answer,
                truths,
                gold_record.get("id"),
            ),
            "f1": _best(_f1, answer, truths, gold_record.get("id")),
            "rougel": _best(_rouge_l, answer, truths, gold_record.get("id")),
        }
        full_page_recall = r_precision(guess_record, gold_record) == 1
        for key, value in record.items():
            sums[key] += value
            kilt[key] += value if full_page_recall else 0.0
    count = len(guesses)
    mean = {key: value / count if count else 0.0 for key, value in sums.items()}
    kilt_mean = {key: value / count if count else 0.0 for key, value in kilt.items()}
    retrieval_means = RetrievalMeans((1, 5))
    retrieval_means.add_aligned(gold, guesses)
    retrieval = retrieval_means.means()
    return {
        "downstream": mean,
        "kilt": {f"KILT-{key}": value for key, value in kilt_mean.items()},
        "retrieval": {"Rprec": retrieval["Rprec"], "recall@5": retrieval["recall@5"]},
    }
