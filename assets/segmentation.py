"""Words as a language's readers count them: the one definition of a passage's "word".

A word is a whitespace-separated word (``str.split``) in scripts that space their words: Latin, Cyrillic,
Greek, Arabic, Hebrew, Hangul, Devanagari, .... Han, Kana, Thai, Lao, Khmer and Myanmar text is written
without spaces between words (the *unspaced* scripts, :data:`UNSPACED`): there a word is one of ICU's
word-break segments (its dictionaries for Chinese and Japanese, Thai, Lao, Khmer and Burmese; ``icu4py``
bundles ICU and its data, nothing is downloaded). The unit is decided per run of text from its script, not
from the dump's language: Latin inside Japanese text, an English quotation in a Thai paragraph and a
jawiki page in English are each counted their own way.

Two units (``passages.unit``):

* ``words``: the above. Punctuation is not a word of its own inside an unspaced run: it belongs to the
  word before it (to the first word, at the start of a whitespace token). A whitespace token with no word
  in it (``—``, ``。`` standing alone) is one word, as ``str.split`` counts it, so a text with anything to
  read has at least one word.
* ``characters``: BERGEN's ``wiki-100w-<lang>`` passages: every user-perceived character (grapheme
  cluster) of a whitespace token holding unspaced characters is one unit, punctuation, Latin letters and
  digits inside it included; tokens without unspaced characters still count as one word each.

Everything that counts passage words goes through :func:`word_starts` / :func:`count_words`: the chunker,
each passage's ``word_count``, the histograms, the passage checks (which recount, never trust) and the
structured passages. Text without unspaced characters takes a fast path that is ``str.split`` itself, so
an English build is byte-for-byte what it was.

Bounds: ICU sees one unspaced run at a time, cut into windows of :data:`SEGMENT_WINDOW` characters (a word
straddling a window's edge counts as two), so time and memory are linear in the text whatever its shape (a
megabyte of Han without punctuation, a megabyte of Thai).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from functools import lru_cache
from typing import Literal, get_args

__all__ = [
    "SEGMENT_WINDOW",
    "UNITS",
    "UNSPACED",
    "Unit",
    "count_words",
    "cut_at",
    "has_unspaced",
    "script_counts",
    "segment_terms",
    "word_starts",
]

Unit = Literal["words", "characters"]
UNITS: tuple[str, ...] = get_args(Unit)

_UNSPACED_RANGES = (
    "\u0e00-\u0eff"  # Thai, Lao
    "\u1000-\u109f"  # Myanmar
    "\u1780-\u17ff\u19e0-\u19ff"  # Khmer, Khmer symbols
    "\u200b-\u200d"  # zero-width space and (non-)joiner: word separators and joiners of those scripts
    "\u2e80-\u2fdf"  # CJK and Kangxi radicals
    "\u3001-\u303f"  # CJK symbols and punctuation (U+3000, the ideographic space, is whitespace)
    "\u3040-\u30ff\u31c0-\u31ff"  # Hiragana, Katakana, CJK strokes, Katakana phonetic extensions
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # CJK unified (extension A) and compatibility ideographs
    "\ua9e0-\ua9ff\uaa60-\uaa7f"  # Myanmar extensions
    "\ufe30-\ufe4f\uff01-\uffef"  # CJK compatibility forms, fullwidth and halfwidth forms
    "\U0001b000-\U0001b16f"  # Kana supplement and extensions
    "\U00020000-\U000323af"  # CJK unified ideographs, extensions B-H, compatibility supplement
)
UNSPACED = re.compile(f"[{_UNSPACED_RANGES}]")
"""A character of a script written without spaces between words (or its punctuation)."""
_RUNS = re.compile(f"[{_UNSPACED_RANGES}]+|[^{_UNSPACED_RANGES}]+")
_TOKEN = re.compile(r"\S+")  # re's \s is str.isspace: the tokens of str.split
_WORDLIKE = re.compile(r"\w")  # a letter, digit or ideograph: str.isalnum (and _)
_SURROGATE = re.compile("[\ud800-\udfff]")
_NOT_BLANK = re.compile(r"\S")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_CLUSTERS = re.compile(
    "[\u0300-\u036f\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u19e0-\u19ff\u1ab0-\u1aff\u1dc0-\u1dff"
    "\u200b-\u200d\u20d0-\u20ff\u3099\u309a\ua9e0-\ua9ff\uaa60-\uaa7f\ufe00-\ufe0f\ufe20-\ufe2f"
    "\ud800-\udfff\U0001f3fb-\U0001f3ff\U000e0000-\U000e01ef]"
)
"""Characters that may join the one before into one user-perceived character (marks, joiners, variation
selectors, the scripts of Southeast Asia): a run holding one is split into characters by ICU."""
SEGMENT_WINDOW = 1 << 16
"""Characters of an unspaced run ICU segments at once."""

_SCRIPTS = (
    ("han", re.compile("[\u2e80-\u2fdf\u3005-\u3007\u3021-\u3029\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
                       "\U00020000-\U000323af]")),
    ("kana", re.compile("[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f\U0001b000-\U0001b16f]")),
    ("hangul", re.compile("[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]")),
    ("thai", re.compile("[\u0e00-\u0e7f]")),
    ("lao", re.compile("[\u0e80-\u0eff]")),
    ("khmer", re.compile("[\u1780-\u17ff\u19e0-\u19ff]")),
    ("myanmar", re.compile("[\u1000-\u109f\ua9e0-\ua9ff\uaa60-\uaa7f]")),
    ("arabic", re.compile("[\u0600-\u06ff\u0750-\u077f\u08a0-\u08ff\ufb50-\ufdff\ufe70-\ufeff]")),
    ("hebrew", re.compile("[\u0590-\u05ff\ufb1d-\ufb4f]")),
    ("cyrillic", re.compile("[\u0400-\u052f]")),
    ("greek", re.compile("[\u0370-\u03ff]")),
    ("devanagari", re.compile("[\u0900-\u097f]")),
    ("latin", re.compile("[A-Za-z\u00c0-\u024f\u1e00-\u1eff]")),
)  # fmt: skip
"""Scripts told apart by :func:`script_counts` (by Unicode block: enough to tell what a page is in)."""


def has_unspaced(text: str, start: int = 0, end: int | None = None) -> bool:
    """Whether ``text[start:end]`` holds any character of an unspaced script."""
    return UNSPACED.search(text, start, len(text) if end is None else end) is not None


@lru_cache(maxsize=1)
def _breakers() -> tuple[type, type]:
    try:
        from icu4py.breakers import CharacterBreaker, WordBreaker
    except ImportError as error:  # a broken install: name the package, not a stack of imports
        raise RuntimeError(
            "icu4py is needed to count words of Chinese, Japanese, Thai, Lao, Khmer and Burmese text "
            "(pip install icu4py; `make install` installs it)"
        ) from error
    return WordBreaker, CharacterBreaker


def _segments(breaker: type, run: str) -> list[tuple[int, int]]:
    """ICU's segments of ``run`` as code-point offsets (ICU counts UTF-16 units; an unpaired surrogate, one
    unit, is read as U+FFFD)."""
    spans = list(breaker(_SURROGATE.sub("\ufffd", run), "und").segments())
    if not _ASTRAL.search(run):
        return spans
    units = [0]
    for character in run:
        units.append(units[-1] + (2 if character > "\uffff" else 1))
    at = {unit: index for index, unit in enumerate(units)}
    return [(at[a], at[b]) for a, b in spans]


def _unit_starts(text: str, start: int, end: int, unit: str) -> list[int]:
    """Where ICU's words (word-break segments holding a letter, digit or ideograph) or characters (grapheme
    clusters, blanks excepted) of ``text[start:end]`` start, in order: one breaker per window of
    :data:`SEGMENT_WINDOW` characters."""
    word_breaker, character_breaker = _breakers()
    starts: list[int] = []
    for window in range(start, end, SEGMENT_WINDOW):
        piece = text[window : min(end, window + SEGMENT_WINDOW)]
        if unit == "words":
            starts += [window + a for a, b in _segments(word_breaker, piece) if _WORDLIKE.search(piece, a, b)]
        elif _CLUSTERS.search(piece):
            starts += [window + a for a, _ in _segments(character_breaker, piece) if not piece[a].isspace()]
        else:  # every code point is a character of its own
            starts += [window + m.start() for m in _NOT_BLANK.finditer(piece)]
    return starts


def _token_starts(text: str, start: int, end: int, unit: str, units: list[int]) -> list[int]:
    """Starts of the words of one whitespace token holding unspaced characters (``units``: every start of
    :func:`_unit_starts` over the text): a spaced run inside it is a word (when it holds a letter or digit),
    an unspaced run holds ICU's words (with ``unit: characters``, every character of the token is a unit:
    ``東京2020年`` is 7); the token's first word starts at the token (leading punctuation is its), and a token
    with no word is one word."""
    starts: list[int] = []
    for match in _RUNS.finditer(text, start, end):
        run_start, run_end = match.span()
        if unit == "words" and not UNSPACED.match(text, run_start):
            if _WORDLIKE.search(text, run_start, run_end):
                starts.append(run_start)
            continue
        inside = units[bisect_left(units, run_start) : bisect_left(units, run_end)]
        first = inside[0] if inside else run_end
        if first > run_start and _WORDLIKE.search(text, run_start, first):  # a segment from before the run
            starts.append(run_start)
        starts += inside
    if not starts:
        return [start]
    starts[0] = start
    return starts


def word_starts(text: str, start: int = 0, end: int | None = None, unit: str = "words") -> list[int]:
    """Offsets in ``text`` where the words of ``text[start:end]`` start, in order (see the module's rules).

    A piece of whole words runs from one start to the next (whitespace before the next dropped): nothing
    but whitespace falls between the pieces of a text cut at these offsets."""
    if unit not in UNITS:
        raise ValueError(f"unknown passage unit {unit!r}; choose one of {', '.join(UNITS)}")
    end = len(text) if end is None else end
    if not has_unspaced(text, start, end):
        return [match.start() for match in _TOKEN.finditer(text, start, end)]
    units = _unit_starts(text, start, end, unit)
    starts: list[int] = []
    for match in _TOKEN.finditer(text, start, end):
        token_start, token_end = match.span()
        if UNSPACED.search(text, token_start, token_end):
            starts += _token_starts(text, token_start, token_end, unit, units)
        else:
            starts.append(token_start)
    return starts


def count_words(text: str, unit: str = "words", start: int = 0, end: int | None = None) -> int:
    """Words of ``text[start:end]`` (``str.split``'s count where the text has no unspaced script)."""
    if unit not in UNITS:
        raise ValueError(f"unknown passage unit {unit!r}; choose one of {', '.join(UNITS)}")
    end = len(text) if end is None else end
    if not has_unspaced(text, start, end):
        return len(text[start:end].split())
    return len(word_starts(text, start, end, unit))


def cut_at(text: str, starts: list[int], index: int, end: int) -> int:
    """The end of a piece holding the words before ``starts[index]`` (trailing whitespace dropped)."""
    if index >= len(starts):
        return end
    cut = starts[index]
    while cut > 0 and text[cut - 1].isspace():
        cut -= 1
    return cut


def segment_terms(text: str) -> list[str]:
    """The words of ``text`` for a bag-of-words index, case-folded and without punctuation: ICU's word
    segments (Unicode's word boundaries, UAX #29, and its dictionaries for unspaced scripts) that hold a
    letter, digit or ideograph. Documents and queries of a pre-segmented BM25 index go through this."""
    word_breaker, _ = _breakers()
    terms: list[str] = []
    for match in _TOKEN.finditer(text):
        token = match.group()
        if not UNSPACED.search(token) and token.isalnum():
            terms.append(token.casefold())
            continue
        for window in range(0, len(token), SEGMENT_WINDOW):
            run = token[window : window + SEGMENT_WINDOW]
            terms.extend(
                run[a:b].casefold() for a, b in _segments(word_breaker, run) if _WORDLIKE.search(run, a, b)
            )
    return terms


def script_counts(text: str) -> dict[str, int]:
    """Characters of each script in ``text`` (those of :data:`_SCRIPTS`; others are not counted)."""
    counts = {name: len(pattern.findall(text)) for name, pattern in _SCRIPTS}
    return {name: n for name, n in counts.items() if n}
