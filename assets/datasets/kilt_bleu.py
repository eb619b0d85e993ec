"""KILT's BLEU between a candidate span and the evidence, bit for bit: KILT's token normalisation (3+-byte
UTF-8 characters and ASCII punctuation dropped, lower case) and nltk's ``sentence_bleu`` with KILT's
weights, computed from clipped n-gram counts (see :mod:`assets.datasets.span_search`)."""

from __future__ import annotations

import math
import re
import string
import sys
from collections.abc import Sequence
from typing import NamedTuple

MAX_ORDER = 4


_FLOAT_MIN = sys.float_info.min  # nltk's method0 stand-in for a zero precision


SAFETY = 1.0 + 1e-9  # a bound must be below best by this factor before anything is discarded


_PUNCT_BYTES = string.punctuation.encode("ascii")


# chars whose UTF-8 encoding takes 3+ bytes (KILT drops them) and ASCII punctuation (KILT deletes it)
_DROP_RE = re.compile("[\u0800-\U0010ffff" + re.escape(string.punctuation) + "]")


TOKEN_RE = re.compile(r"\S+")  # re's \s is str.isspace: the same tokens as str.split()


class Token(NamedTuple):
    """A whitespace token: its KILT-normalised text (may be ``""``) and its character span."""

    text: str
    start: int
    end: int


def _normalize(text: str) -> str:
    # KILT drops the wide chars, lower-cases, then deletes punctuation. Deleting punctuation before
    # lower-casing is the same (no char lower-cases to or from ASCII punctuation), which lets one
    # pass do both deletions; ASCII text takes the much faster bytes path.
    if text.isascii():
        return text.encode("ascii").translate(None, _PUNCT_BYTES).decode("ascii").lower()
    return _DROP_RE.sub("", text).lower()


def normalize_token(token: str) -> str:
    """KILT's per-token normalisation: drop 3+-byte UTF-8 chars, lower-case, delete ASCII punctuation."""
    return _normalize(token)


def normalize_tokens(raw: list[str]) -> list[str]:
    """``normalize_token`` over a token list in one pass over a joined string (same result)."""
    if not raw:
        return []
    # "\n" is never inside a token and is neither cased nor case-ignorable, so lower() (final sigma
    # included) treats each token exactly as on its own.
    return _normalize("\n".join(raw)).split("\n")


def tokenize(text: str) -> list[str]:
    """The tokens BLEU sees: whitespace tokens, normalised, empty ones dropped."""
    return [t for t in normalize_tokens(text.split()) if t]


def tokenize_with_offsets(text: str, start: int = 0) -> list[Token]:
    """Every whitespace token of ``text[start:]`` with its normalised form and ``[start, end)`` offsets.

    Tokens whose normalised form is ``""`` are kept (they count in a span's token length, not in BLEU).
    """
    matches = list(TOKEN_RE.finditer(text, start))
    norm = normalize_tokens([m.group() for m in matches])
    return [Token(n, m.start(), m.end()) for n, m in zip(norm, matches, strict=True)]


class Bleu:
    """KILT's BLEU for one evidence (the hypothesis): score and bounds from clipped counts."""

    __slots__ = ("bp", "length", "orders", "terms")

    def __init__(self, length: int) -> None:
        self.length = length
        self.orders = min(MAX_ORDER, length)
        weight = 0.25 if length >= MAX_ORDER else 1.0 / length
        # terms[n][m] == w * math.log(p) exactly as nltk computes it (p = m / d, or float min for 0)
        self.terms = [
            [weight * math.log(m / (length - n) if m else _FLOAT_MIN) for m in range(length - n + 1)]
            for n in range(self.orders)
        ]
        self.bp = [1.0] * (length + 1)  # bp[L] for L <= E is 1; extended on demand

    def brevity(self, span_length: int) -> float:
        bp = self.bp
        if span_length >= len(bp):
            e = self.length
            bp.extend(math.exp(1 - k / e) for k in range(len(bp), max(span_length + 1, 2 * len(bp))))
        return bp[span_length]

    def precision_part(self, counts: Sequence[int]) -> float:
        """``exp(fsum(w_n log p_n))``: BLEU without the brevity penalty (an upper bound of BLEU)."""
        if not counts[0]:
            return 0.0
        terms = self.terms
        return math.exp(math.fsum([terms[n][counts[n]] for n in range(self.orders)]))

    def score(self, counts: Sequence[int], span_length: int) -> float:
        if not counts[0]:
            return 0.0
        terms = self.terms
        g = math.exp(math.fsum([terms[n][counts[n]] for n in range(self.orders)]))
        if self.length > span_length:
            return g
        return self.brevity(span_length) * g


def _ngram_counts(tokens: Sequence[str], n: int) -> dict[tuple[str, ...], int]:
    counts: dict[tuple[str, ...], int] = {}
    for i in range(len(tokens) - n + 1):
        g = tuple(tokens[i : i + n])
        counts[g] = counts.get(g, 0) + 1
    return counts


def kilt_bleu(candidate_tokens: Sequence[str], evidence_tokens: Sequence[str]) -> float:
    """KILT's ``get_bleu(candidate_tokens, gold_tokens)``, bit-identical to its nltk call.

    That is ``sentence_bleu([candidate_tokens], evidence_tokens, weights)``: the candidate span is the
    reference, the evidence (gold) is the hypothesis; uniform weights over ``min(4, len(evidence))``
    orders; no smoothing; brevity penalty for candidates longer than the evidence. Whitespace-only
    tokens are dropped first, as KILT does. An empty evidence scores 0 (nltk's result with no weights).
    """
    cand = [t for t in candidate_tokens if t.strip()]
    evid = [t for t in evidence_tokens if t.strip()]
    if not evid or not cand:
        return 0.0
    bleu = Bleu(len(evid))
    counts = []
    for n in range(1, bleu.orders + 1):
        ref = _ngram_counts(cand, n)
        counts.append(sum(min(c, ref.get(g, 0)) for g, c in _ngram_counts(evid, n).items()))
    return bleu.score(counts, len(cand))
