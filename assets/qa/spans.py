"""Where an answer stands in the snapshot: its occurrences in a passage's text and in a page's paragraphs.

An answer is found as itself: case-insensitively, on word boundaries, any run of whitespace matching any
other (``"Linda  Davis"`` finds ``"Linda Davis"``; ``"Davis"`` does not find ``"Davison"``). A span is
KILT's: the page's paragraph and character offsets of the occurrence, inside the passage that holds it.

Pure module: no Dagster import.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["AnswerSpan", "answer_pattern", "find_in_page", "first_answer_in"]


@dataclass(frozen=True, slots=True)
class AnswerSpan:
    """One answer's occurrence on a page, in KILT's coordinates."""

    answer: str
    paragraph_id: int
    start_character: int
    end_character: int
    text: str
    """The paragraph's text at those offsets (the answer as the page writes it)."""


@lru_cache(maxsize=4096)
def answer_pattern(answer: str) -> re.Pattern[str] | None:
    """The regular expression an answer is found by (None for a blank answer)."""
    words = answer.split()
    if not words:
        return None
    body = r"\s+".join(re.escape(word) for word in words)
    left = r"(?<!\w)" if words[0][0].isalnum() or words[0][0] == "_" else ""
    right = r"(?!\w)" if words[-1][-1].isalnum() or words[-1][-1] == "_" else ""
    return re.compile(left + body + right, re.IGNORECASE)


def first_answer_in(text: str, answers: Sequence[str]) -> str | None:
    """The first of ``answers`` (in their order) that ``text`` holds, else None."""
    for answer in answers:
        pattern = answer_pattern(answer)
        if pattern is not None and pattern.search(text):
            return answer
    return None


def find_in_page(
    paragraphs: Sequence[str],
    answer: str,
    start: tuple[int, int],
    end: tuple[int, int],
    *,
    near: int | None = None,
) -> AnswerSpan | None:
    """The occurrence of ``answer`` in the page's ``paragraphs`` between ``start`` and ``end`` (each
    ``(paragraph_id, character)``, a passage's coordinates): the first, or the one starting nearest the
    character ``near`` counted from the passage's start (PAQ metadata's offset). None when it is not there."""
    pattern = answer_pattern(answer)
    if pattern is None:
        return None
    best: tuple[int, AnswerSpan] | None = None
    before = 0  # characters of the passage before this paragraph's window
    last = min(end[0], len(paragraphs) - 1)
    for paragraph_id in range(max(start[0], 0), last + 1):
        paragraph = paragraphs[paragraph_id]
        lo = start[1] if paragraph_id == start[0] else 0
        hi = end[1] if paragraph_id == end[0] else len(paragraph)
        for match in pattern.finditer(paragraph, max(lo, 0), max(hi, lo)):
            found = AnswerSpan(answer, paragraph_id, match.start(), match.end(), match.group(0))
            if near is None:
                return found
            distance = abs(before + match.start() - lo - near)
            if best is None or distance < best[0]:
                best = (distance, found)
        before += max(hi - lo, 0) + 1
    return best[1] if best else None
