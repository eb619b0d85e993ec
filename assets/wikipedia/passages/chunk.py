"""Cut knowledge-source pages into passages of at most N words, with exact KILT coordinates.

Rules (``kilt`` mode, the default):
- the body is walked section by section (``Section::::`` entries are boundaries, never passage text;
  text before the first header is the section ``Section::::Abstract.``);
- paragraphs and list items are packed in order while the passage stays within N words; a passage
  never crosses a section boundary;
- a paragraph longer than N words is split at word boundaries into N-word pieces; its last, shorter
  piece opens the next passage, so nothing is truncated or dropped.

``dpr`` mode follows DPR's ``psgs_w100``: the article body without headers and list items is one
word stream cut into disjoint N-word blocks (blocks run across paragraphs and sections; the last
block of an article may be shorter); ``section`` is the section where a block starts.

A word is :mod:`assets.segmentation`'s (``passages.unit``): a whitespace word in scripts that space their
words, a segmenter's word (or, with ``unit: characters``, a character) in Han, Kana, Thai, Lao, Khmer and
Myanmar text; a passage's ``word_count`` is the count of its own text, as the checks recount it (a piece of a
paragraph is counted on its own, so the dictionary segmenter's view of a cut-off run cannot disagree).

A list item's ``BULLET::::- `` (``BULLET::::N.``) marker is not passage text. Coordinates are KILT's:
paragraph ids index the page's ``text`` list, characters are offsets in those strings, ``end_character``
is exclusive. Invariant: ``text`` equals the referenced slices joined by single spaces, where a slice of
a paragraph that is neither first nor last runs over its content (:func:`content_bounds`).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from assets.params import MAX_WORDS, PASSAGE_MODE, PASSAGE_UNIT
from assets.segmentation import count_words, cut_at, has_unspaced, word_starts
from assets.wikipedia.articles import bullet_marker_end

SECTION_PREFIX = "Section::::"
ABSTRACT_SECTION = "Section::::Abstract."
MODES = ("kilt", "dpr")
CHUNKER_VERSION = 2  # bump when the rules change: passages of earlier builds are then not reused
# 2: words of unspaced scripts (Han, Kana, Thai, Lao, Khmer, Myanmar) are segmenter words (segmentation.py)
_WORD_RE = re.compile(r"\S+")


@lru_cache(maxsize=256)
def _n_words_re(n: int) -> re.Pattern[str]:
    """Matches exactly ``n`` whitespace-separated words (the same whitespace as ``str.split``)."""
    return re.compile(rf"\S+(?:\s+\S+){{{n - 1}}}")


@dataclass(slots=True)
class Passage:
    passage_id: str
    wikipedia_id: str
    title: str
    section: str
    start_paragraph_id: int
    start_character: int
    end_paragraph_id: int
    end_character: int
    text: str
    word_count: int


PASSAGE_FIELDS = tuple(Passage.__dataclass_fields__)
SPAN_COLUMNS = ("start_paragraph_id", "start_character", "end_paragraph_id", "end_character")
"""KILT's span coordinates, in KILT's order: paragraph ids index the page's ``text`` list, characters are
offsets in those paragraphs (end exclusive). Passages, provenance and runs all carry them."""


@dataclass(slots=True)
class ChunkStats:
    """Counters over the pages chunked so far."""

    pages: int = 0
    passages: int = 0
    words: int = 0
    pages_without_passages: Counter = field(default_factory=Counter)
    split_paragraphs: int = 0
    word_histogram: Counter = field(default_factory=Counter)  # bucket (10-word bins) -> passages

    def add_passage(self, words: int, max_words: int) -> None:
        """One passage of ``words`` words (a full passage lands in the top 10-word bin)."""
        self.word_histogram[min(words, max_words) // 10 * 10] += 1
        self.words += words

    def add_passages(self, word_counts: np.ndarray, max_words: int) -> None:
        """:meth:`add_passage` for many passages at once (copied rows of an earlier snapshot)."""
        self.words += int(word_counts.sum())
        bins, counts = np.unique(np.minimum(word_counts, max_words) // 10 * 10, return_counts=True)
        self.word_histogram.update(dict(zip(bins.tolist(), counts.tolist(), strict=True)))

    def add_page(self, text: list[str], passages: int) -> None:
        """A page cut into ``passages`` passages; one without any is counted by reason."""
        self.pages += 1
        self.passages += passages
        if not passages:
            self.pages_without_passages["no_passage_text" if len(text) > 1 else "empty_page"] += 1

    def merge(self, other: ChunkStats) -> None:
        self.pages += other.pages
        self.passages += other.passages
        self.words += other.words
        self.pages_without_passages.update(other.pages_without_passages)
        self.split_paragraphs += other.split_paragraphs
        self.word_histogram.update(other.word_histogram)


def content_bounds(paragraph: str) -> tuple[int, int]:
    """The characters of a text entry that passages may use: without the trailing newline, without a
    list item's ``BULLET::::- `` / ``BULLET::::N.`` marker, and without surrounding whitespace."""
    start = bullet_marker_end(paragraph)
    end = len(paragraph.rstrip())
    while start < end and paragraph[start].isspace():
        start += 1
    return start, end


def _section_name(header: str) -> str:
    return header.rstrip("\n")


class _Builder:
    """Accumulates (paragraph, start, end, words) segments and emits passages."""

    __slots__ = (
        "max_words",
        "out",
        "page_text",
        "passage_section",
        "section",
        "segments",
        "stats",
        "title",
        "wikipedia_id",
        "words",
    )

    def __init__(
        self, wikipedia_id: str, title: str, page_text: list[str], max_words: int, stats: ChunkStats
    ):
        self.wikipedia_id = wikipedia_id
        self.title = title
        self.page_text = page_text
        self.max_words = max_words
        self.stats = stats
        self.out: list[tuple] = []
        self.segments: list[tuple[int, int, int]] = []
        self.words = 0
        self.section = ABSTRACT_SECTION
        self.passage_section = ABSTRACT_SECTION

    def add(self, paragraph_id: int, start: int, end: int, words: int) -> None:
        if not self.segments:
            self.passage_section = self.section
        self.segments.append((paragraph_id, start, end))
        self.words += words

    def flush(self) -> None:
        if not self.segments:
            return
        text = " ".join(self.page_text[p][s:e] for p, s, e in self.segments)
        first, last = self.segments[0], self.segments[-1]
        self.out.append(  # the fields of Passage, in order
            (
                f"{self.wikipedia_id}-{len(self.out)}",
                self.wikipedia_id,
                self.title,
                self.passage_section,
                first[0],
                first[1],
                last[0],
                last[2],
                text,
                self.words,
            )
        )
        self.stats.add_passage(self.words, self.max_words)
        self.segments = []
        self.words = 0


def _split_segmented(
    builder: _Builder, paragraph_id: int, paragraph: str, starts: list[int], end: int, room: int, unit: str
) -> None:
    """Cut a paragraph holding unspaced script, up to ``end``, into pieces at ``starts`` (the word starts of
    the paragraph read whole): the first fills ``room``, the next ones a whole passage each, the last opens
    the next passage. Each piece is counted on its own (as the checks recount it) and, if the segmenter
    reads it as more words than its room, ends a word earlier."""
    index = 0
    while True:
        take = min(room, len(starts) - index)
        while True:
            cut = cut_at(paragraph, starts, index + take, end)
            words = count_words(paragraph, unit, starts[index], cut)
            if words <= room or take == 1:
                break
            take -= 1
        builder.add(paragraph_id, starts[index], cut, words)
        index += take
        if index == len(starts):
            return
        builder.flush()
        room = builder.max_words


def _chunk(
    wikipedia_id: str,
    title: str,
    text: list[str],
    *,
    max_words: int = MAX_WORDS,
    mode: str = PASSAGE_MODE,
    unit: str = PASSAGE_UNIT,
    stats: ChunkStats | None = None,
) -> list[tuple]:
    """Passage field tuples of one KILT page (``text[0]`` is the title and is not passage text)."""
    if mode not in MODES:
        raise ValueError(f"unknown passage mode {mode!r}; choose one of {', '.join(MODES)}")
    if max_words < 1:
        raise ValueError("max_words must be >= 1")
    stats = stats if stats is not None else ChunkStats()
    builder = _Builder(wikipedia_id, title, text, max_words, stats)
    for paragraph_id in range(1, len(text)):
        paragraph = text[paragraph_id]
        if paragraph.startswith(SECTION_PREFIX):
            if mode == "kilt":
                builder.flush()
            builder.section = _section_name(paragraph)
            continue
        if mode == "dpr" and bullet_marker_end(paragraph):
            continue
        start, end = content_bounds(paragraph)
        if start >= end:
            continue
        starts = word_starts(paragraph, start, end, unit) if has_unspaced(paragraph, start, end) else None
        words = len(paragraph[start:end].split()) if starts is None else len(starts)
        if builder.words == max_words:
            builder.flush()
        room = max_words - builder.words
        if words <= room:
            builder.add(paragraph_id, start, end, words)
            continue
        if mode == "kilt" and words <= max_words:
            builder.flush()
            builder.add(paragraph_id, start, end, words)
            continue
        # split inside this paragraph at word boundaries
        if mode == "kilt":
            builder.flush()
            room = max_words
        stats.split_paragraphs += 1
        if starts is not None:
            _split_segmented(builder, paragraph_id, paragraph, starts, end, room, unit)
            continue
        position = start  # content_bounds: starts on a word
        while words > room:
            piece_end = _n_words_re(room).match(paragraph, position, end).end()
            builder.add(paragraph_id, position, piece_end, room)
            builder.flush()
            position = _WORD_RE.search(paragraph, piece_end, end).start()
            words -= room
            room = max_words
        builder.add(paragraph_id, position, end, words)
    builder.flush()
    stats.add_page(text, len(builder.out))
    return builder.out


def chunk_page(
    wikipedia_id: str,
    title: str,
    text: list[str],
    *,
    max_words: int = MAX_WORDS,
    mode: str = PASSAGE_MODE,
    unit: str = PASSAGE_UNIT,
    stats: ChunkStats | None = None,
) -> list[Passage]:
    """Passages of one KILT page (``text[0]`` is the title and is not passage text)."""
    return [
        Passage(*values)
        for values in _chunk(
            wikipedia_id, title, text, max_words=max_words, mode=mode, unit=unit, stats=stats
        )
    ]


def chunk_page_into(
    columns: dict[str, list],
    wikipedia_id: str,
    title: str,
    text: list[str],
    *,
    max_words: int = MAX_WORDS,
    mode: str = PASSAGE_MODE,
    unit: str = PASSAGE_UNIT,
    stats: ChunkStats | None = None,
) -> int:
    """Append the passages of one page to ``columns`` (one list per :class:`Passage` field)."""
    rows = _chunk(wikipedia_id, title, text, max_words=max_words, mode=mode, unit=unit, stats=stats)
    if rows:
        for name, values in zip(PASSAGE_FIELDS, zip(*rows, strict=True), strict=True):
            columns[name].extend(values)
    return len(rows)
