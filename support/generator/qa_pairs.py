"""QA-pair KBs of any size derived from real questions (PAQ-shaped: ``{"question", "answer": [...]}`` lines).

Each pair is a real question of the seed file (DPR's NQ dev topics) with its entity and number mentions
substituted: a run of words that is a title of the snapshot (the longest first) becomes another title of
the snapshot, a number another number of as many digits; an answer that is such a title or number is
substituted the same way (other answers stay). Nothing is written by hand: the question shapes are
NQ's, the entities the snapshot's pages. The first ``len(seed)`` pairs are the seed itself, so the real
questions are in every KB; the rest substitute, in turn, the seed questions that name a title or a
number, drawn with ``seed`` (the same file for the same arguments).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = ["derived_pairs", "title_index", "write_pairs"]

NUMBER_RE = re.compile(r"\b\d+\b")
MAX_TITLE_WORDS = 4


def title_index(titles: Sequence[str]) -> dict[str, str]:
    """Lower-cased titles of at most :data:`MAX_TITLE_WORDS` words (without a parenthesis) -> the title."""
    index = {}
    for title in titles:
        words = title.split()
        if 0 < len(words) <= MAX_TITLE_WORDS and "(" not in title and len(title) > 3:
            index[title.lower()] = title
    return index


def _mentions(words: list[str], titles: dict[str, str]) -> list[tuple[int, int]]:
    """``(start, stop)`` word ranges of the question that are titles, longest first, not overlapping."""
    found: list[tuple[int, int]] = []
    taken = [False] * len(words)
    for size in range(MAX_TITLE_WORDS, 0, -1):
        for start in range(len(words) - size + 1):
            if any(taken[start : start + size]):
                continue
            if " ".join(words[start : start + size]).lower() in titles:
                found.append((start, start + size))
                taken[start : start + size] = [True] * size
    return sorted(found)


def _number(rng: random.Random, text: str) -> str:
    digits = len(text)
    return str(rng.randrange(10 ** (digits - 1) if digits > 1 else 0, 10**digits))


def _substituted(
    question: str, answers: list[str], titles: dict[str, str], pool: list[str], rng: random.Random
) -> tuple[str, list[str]]:
    words = question.split()
    swaps: dict[str, str] = {}
    for start, stop in reversed(_mentions(words, titles)):
        original = " ".join(words[start:stop])
        swaps[original.lower()] = replacement = rng.choice(pool)
        words[start:stop] = replacement.split()
    text = " ".join(words)
    text = NUMBER_RE.sub(lambda m: swaps.setdefault(m.group(0), _number(rng, m.group(0))), text)
    new_answers = []
    for answer in answers:
        if answer.lower() in titles:
            new_answers.append(swaps.get(answer.lower()) or rng.choice(pool))
        elif NUMBER_RE.fullmatch(answer):
            new_answers.append(swaps.get(answer) or _number(rng, answer))
        else:
            new_answers.append(answer)
    return text, new_answers


def derived_pairs(
    seed_pairs: Sequence[tuple[str, list[str]]], titles: Sequence[str], count: int, seed: int = 0
) -> Iterator[tuple[str, list[str]]]:
    """``count`` pairs: the seed pairs, then substitutions of them (see the module's docstring)."""
    index = title_index(titles)
    pool = sorted(index.values())
    rng = random.Random(seed)
    shapes = [  # the seed pairs with something to substitute
        (q, a) for q, a in seed_pairs if NUMBER_RE.search(q) or _mentions(q.split(), index)
    ]
    for number in range(count):
        if number < len(seed_pairs):
            question, answers = seed_pairs[number]
            yield question, list(answers)
        else:
            question, answers = shapes[number % len(shapes)]
            yield _substituted(question, list(answers), index, pool, rng)


def write_pairs(path: Path, pairs: Iterator[tuple[str, list[str]]]) -> int:
    """The pairs as NQ-open/PAQ JSON lines; returns how many."""
    written = 0
    with open(path, "w", encoding="utf-8") as handle:
        for question, answers in pairs:
            handle.write(json.dumps({"question": question, "answer": answers}, ensure_ascii=False) + "\n")
            written += 1
    return written
