"""How close a knowledge source's paragraphs are to another's: KILT's own records, or the same pages in
another text style. Standard library only."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

from assets.compressed import open_text, strict_lines, text_lines
from assets.limits import input_line_bytes

__all__ = [
    "NEAR_IDENTICAL",
    "ParagraphMatch",
    "identical_share",
    "match_paragraphs",
    "near_identical",
    "read_kilt_pages",
]

NEAR_IDENTICAL = 0.9
"""Two paragraphs are near-identical when difflib's similarity ratio of their characters is at least this."""


def near_identical(a: str, b: str, threshold: float = NEAR_IDENTICAL) -> bool:
    """True when ``a`` and ``b`` (trailing newline and outer blanks ignored) are near-identical."""
    a, b = a.strip(), b.strip()
    if a == b:
        return True
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    return (
        matcher.real_quick_ratio() >= threshold
        and matcher.quick_ratio() >= threshold
        and (matcher.ratio() >= threshold)
    )


@dataclass(slots=True)
class ParagraphMatch:
    """How many reference paragraphs (titles excluded) have an identical or a near-identical one in ours."""

    pages: int = 0
    pages_missing: int = 0  # reference pages with no page of that id or title in ours
    paragraphs: int = 0
    identical: int = 0
    near_identical: int = 0  # identical included

    @property
    def identical_share(self) -> float:
        return self.identical / self.paragraphs if self.paragraphs else 0.0

    @property
    def near_identical_share(self) -> float:
        return self.near_identical / self.paragraphs if self.paragraphs else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "pages": self.pages,
            "pages_missing": self.pages_missing,
            "paragraphs": self.paragraphs,
            "identical": self.identical,
            "near_identical": self.near_identical,
            "identical_share": self.identical_share,
            "near_identical_share": self.near_identical_share,
        }


def match_paragraphs(
    reference: Iterable[Mapping[str, Any]],
    ours: Mapping[str, Sequence[str]],
    titles: Mapping[str, str] | None = None,
    threshold: float = NEAR_IDENTICAL,
) -> ParagraphMatch:
    """Compare the paragraphs of ``reference`` pages (KILT records: ``wikipedia_id``, ``wikipedia_title``,
    ``text``) with ``ours`` (``wikipedia_id`` -> text, title first). A page is found by id, else by title
    through ``titles`` (title -> ``wikipedia_id``). Each reference paragraph after the title counts once."""
    result = ParagraphMatch()
    for page in reference:
        result.pages += 1
        key = str(page["wikipedia_id"])
        if key not in ours and titles is not None:
            key = titles.get(page["wikipedia_title"], key)
        body = list(page["text"][1:])
        result.paragraphs += len(body)
        if key not in ours:
            result.pages_missing += 1
            continue
        candidates = [p.strip() for p in ours[key][1:]]
        exact = set(candidates)
        for paragraph in body:
            text = paragraph.strip()
            if text in exact:
                result.identical += 1
                result.near_identical += 1
            elif any(near_identical(text, other, threshold) for other in candidates):
                result.near_identical += 1
    return result


def identical_share(pages_a: Mapping[str, Sequence[str]], pages_b: Mapping[str, Sequence[str]]) -> float:
    """The share of ``pages_a``'s paragraphs (titles excluded) that ``pages_b`` has, identical, in the same
    page (each paragraph of ``pages_b`` matched at most once)."""
    total = same = 0
    for key, text in pages_a.items():
        body = text[1:]
        total += len(body)
        available = Counter(pages_b.get(key, [])[1:])
        for paragraph in body:
            if available[paragraph] > 0:
                available[paragraph] -= 1
                same += 1
    return same / total if total else 0.0


def read_kilt_pages(path: Path, max_line_bytes: int | None = None) -> Iterator[dict[str, Any]]:
    """KILT page records from KILT's knowledge-source JSONL (``kilt_knowledgesource.json``, optionally
    gzipped, or a subset of its lines) or from a JSON document whose ``records`` list holds them. Lines are
    read within ``max_line_bytes`` (default ``limits.input.max_line_bytes``): a longer record line is an
    error naming the file and line."""
    bound = input_line_bytes(max_line_bytes)
    with closing(text_lines(path, bound)) as lines:  # any codec: a cut file is an error naming it
        first = next((line for _, line in lines), "")
    try:
        json.loads(first) if first is not None else None
    except json.JSONDecodeError:
        first = None
    if first is None:  # not one record per line: one JSON document
        with open_text(path) as handle:
            try:
                document = json.load(handle)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}: neither KILT JSONL nor a JSON document: {exc}") from None
        yield from document.get("records", [document])
        return
    for number, line in strict_lines(path, bound):
        if line.strip():
            try:
                yield json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number}: not valid JSON: {exc}") from None
