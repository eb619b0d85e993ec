"""The exhaustive span-search reference and its test pairs, shared by ``tests/unit/test_span_search.py``
and ``benchmarks/bench_span_search.py``.

The reference scores every contiguous token span of every searched paragraph with KILT's BLEU and keeps
the best (fewest tokens on ties, then earlier paragraph, then earlier start). It shares only the tokeniser
and the paragraph selection with the module under test; its BLEU is written from the nltk formula and
checked against nltk itself (a dev dependency) by the test. The pairs are real sentences or runs of words of
the excerpt, perturbed (dropped, replaced, swapped words).
"""

from __future__ import annotations

import math
import random
import re
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from assets.datasets.span_search import (
    SpanMatch,
    content_start,
    searched_paragraph_ids,
    tokenize,
    tokenize_with_offsets,
)


# ------------------------------------------------------------------------------ exhaustive reference
def reference_bleu(matches: Sequence[int], evidence_length: int, span_length: int) -> float:
    """nltk's ``sentence_bleu([span], evidence, weights=KILT's)`` from clipped match counts."""
    if evidence_length == 0 or matches[0] == 0:
        return 0.0
    orders = min(4, evidence_length)
    weights = (0.25, 0.25, 0.25, 0.25) if evidence_length >= 4 else [1.0 / evidence_length] * orders
    logs = []
    for n in range(orders):
        p = matches[n] / (evidence_length - n) if matches[n] else sys.float_info.min
        logs.append(weights[n] * math.log(p))
    bp = 1 if evidence_length > span_length else math.exp(1 - span_length / evidence_length)
    return bp * math.exp(math.fsum(logs))


@dataclass(frozen=True)
class ReferenceMatch:
    bleu: float
    paragraph_id: int
    start_character: int
    end_character: int
    tokens: int  # whitespace tokens in the span


def exhaustive_best_span(
    evidence: str, page_text: Sequence[str], *, skip_headers: bool = True
) -> ReferenceMatch | None:
    """Score every span of every searched paragraph; None when nothing scores above 0."""
    ev = tokenize(evidence)
    if not ev:
        return None
    orders = min(4, len(ev))
    ev_counts = [Counter(tuple(ev[i : i + n]) for i in range(len(ev) - n + 1)) for n in range(1, orders + 1)]
    ev_vocab = set(ev)
    best: ReferenceMatch | None = None
    best_key: tuple = ()
    scores: dict[tuple[int, ...], float] = {}  # the BLEU of a (counts, length) state, memoised
    for pid in searched_paragraph_ids(page_text, skip_headers=skip_headers):
        entry = page_text[pid]
        toks = tokenize_with_offsets(entry, content_start(entry))
        for s in range(len(toks)):
            counts = [Counter() for _ in range(orders)]
            matches = [0] * orders
            recent: list[str] = []
            length = 0
            for e in range(s, len(toks)):
                t = toks[e].text
                if t:
                    length += 1
                    recent.append(t)
                    if t in ev_vocab:  # an n-gram with a non-evidence token never matches
                        for n in range(min(orders, len(recent))):
                            g = tuple(recent[len(recent) - n - 1 :])
                            counts[n][g] += 1
                            if counts[n][g] <= ev_counts[n].get(g, 0):
                                matches[n] += 1
                state = (*matches, length)
                bleu = scores.get(state)
                if bleu is None:
                    bleu = scores[state] = reference_bleu(matches, len(ev), length)
                key = (-bleu, e - s + 1, pid, s)
                if best is None or key < best_key:
                    best_key = key
                    best = ReferenceMatch(bleu, pid, toks[s].start, toks[e].end, e - s + 1)
    if best is None or best.bleu <= 0.0:
        return None
    return best


# ------------------------------------------------------------------------------ real pairs
def load_excerpt_pages(path: Path) -> list[tuple[str, list[str]]]:
    """(title, KILT text list) of every main-namespace article of the dump."""
    from assets.wikipedia.dump import DumpReader
    from assets.wikipedia.wikitext import parse_wikitext

    pages = []
    for raw in DumpReader(path):
        if raw.ns != 0 or raw.redirect_target:
            continue
        text = parse_wikitext(raw.title, raw.text).text
        if len(text) >= 3:
            pages.append((raw.title, text))
    return pages


@dataclass(frozen=True)
class Pair:
    kind: str
    evidence: str
    page_text: list[str]


KINDS = {  # perturbation -> weight
    "verbatim": 1,
    "drop": 2,
    "replace": 2,
    "swap": 2,
    "shuffle": 1,
    "truncate": 1,
    "case_punct": 1,
    "insert": 1,
    "repeat": 1,
    "short": 2,
    "paraphrase": 3,
    "two_paragraphs": 1,
    "other_page": 2,
    "long": 1,  # a whole paragraph (up to 200 words), perturbed: like NQ long answers
}
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+")


def _body_ids(text: list[str]) -> list[int]:
    return [i for i in searched_paragraph_ids(text) if len(text[i][content_start(text[i]) :].split()) >= 4]


def _piece(rng: random.Random, entry: str, longest: int = 40) -> list[str]:
    """A sentence of the paragraph, or a random run of its words."""
    body = entry[content_start(entry) :]
    if rng.random() < 0.5:
        sentences = [s.split() for s in _SENTENCE_RE.split(body) if len(s.split()) >= 2]
        if sentences:
            return rng.choice(sentences)[:longest]
    words = body.split()
    size = rng.randint(2, min(longest, len(words)))
    start = rng.randrange(len(words) - size + 1)
    return words[start : start + size]


def _perturb(rng: random.Random, kind: str, words: list[str], vocab: list[str]) -> list[str]:
    words = list(words)
    if kind == "drop":
        kept = [w for w in words if rng.random() > rng.uniform(0.1, 0.4)]
        return kept or words[:1]
    if kind == "replace":
        return [rng.choice(vocab) if rng.random() < 0.25 else w for w in words]
    if kind == "swap":
        for _ in range(max(1, len(words) // 5)):
            if len(words) > 1:
                i = rng.randrange(len(words) - 1)
                words[i], words[i + 1] = words[i + 1], words[i]
        return words
    if kind == "shuffle":
        if len(words) > 3:
            i = rng.randrange(len(words) - 2)
            j = rng.randint(i + 2, min(len(words), i + 8))
            chunk = words[i:j]
            rng.shuffle(chunk)
            words[i:j] = chunk
        else:
            rng.shuffle(words)
        return words
    if kind == "truncate":
        a = rng.randint(0, len(words) // 3)
        b = len(words) - rng.randint(0, len(words) // 3)
        words = words[a:b] or words[:1]
        if len(words) > 4:
            del words[rng.randrange(1, len(words) - 1)]
        return words
    if kind == "case_punct":
        return [re.sub(r"[^\w]", "", w).lower() or w for w in words] + (["."] if rng.random() < 0.5 else [])
    if kind == "insert":
        for _ in range(rng.randint(1, 3)):
            words.insert(rng.randint(0, len(words)), rng.choice(vocab))
        return words
    if kind == "repeat":
        i = rng.randrange(len(words))
        return words[: i + 1] + words[max(0, i - 2) : i + 1] + words[i + 1 :]
    if kind == "short":
        size = rng.randint(1, 3)
        start = rng.randrange(max(1, len(words) - size + 1))
        words = words[start : start + size]
        if rng.random() < 0.5:
            words = _perturb(rng, rng.choice(["swap", "replace", "case_punct"]), words, vocab)
        return words
    if kind in ("paraphrase", "two_paragraphs", "other_page", "long"):
        for step in rng.sample(["drop", "replace", "swap", "insert", "truncate"], k=rng.randint(1, 3)):
            words = _perturb(rng, step, words, vocab)
        return words
    return words


def make_pairs(
    pages: list[tuple[str, list[str]]],
    count: int,
    seed: int,
    *,
    max_tokens: int | None = 450,
    max_paragraphs: int = 12,
) -> list[Pair]:
    """Evidence/page pairs from real pages: a window of consecutive paragraphs (the whole page when
    ``max_tokens`` is None) and an evidence taken from it (or, for ``other_page``, from another page),
    perturbed as named by the pair's kind."""
    rng = random.Random(seed)
    vocab = sorted({w for _, text in pages for entry in text[1:] for w in entry.split()})
    kinds = list(KINDS)
    weights = [KINDS[k] for k in kinds]
    pairs: list[Pair] = []
    while len(pairs) < count:
        _, text = rng.choice(pages)
        if max_tokens is None:
            window = text
        else:
            start = rng.randrange(1, len(text))
            end, size = start, 0
            while end < len(text) and end - start < max_paragraphs:
                words = len(text[end].split())
                if size + words > max_tokens and end > start:
                    break
                size += words
                end += 1
            window = [text[0], *text[start:end]]
        body = _body_ids(window)
        if not body:
            continue
        kind = rng.choices(kinds, weights)[0]
        if kind == "other_page":
            _, other = rng.choice(pages)
            other_body = _body_ids(other)
            if not other_body:
                continue
            words = _piece(rng, other[rng.choice(other_body)])
        elif kind == "long":
            entry = window[rng.choice(body)]
            words = entry[content_start(entry) :].split()[:200]
        else:
            words = _piece(rng, window[rng.choice(body)])
            if kind == "two_paragraphs" and len(body) > 1:
                words = words[: rng.randint(1, len(words))] + _piece(rng, window[rng.choice(body)])[:10]
        words = _perturb(rng, kind, words, vocab)
        pairs.append(Pair(kind, " ".join(words), window))
    return pairs


def agree(pair: Pair, got: SpanMatch | None, ref: ReferenceMatch | None) -> tuple[bool, bool]:
    """(same BLEU, same span) of a pruned result and the reference's on ``pair``."""
    if got is not None and got.method == "exact":
        # a verbatim occurrence: BLEU 1.0, and the reference must reach 1.0 too -- unless nothing of the
        # evidence survives normalisation ("–", ":"), where BLEU is undefined and only verbatim counts
        text = pair.page_text[got.paragraph_id][got.start_character : got.end_character]
        verbatim = text.split() == pair.evidence.split()
        reached = ref.bleu == 1.0 if ref is not None else not tokenize(pair.evidence)
        return reached, verbatim
    if got is None or ref is None:
        same = got is None and ref is None
        return same, same
    same_bleu = math.isclose(got.bleu, ref.bleu, rel_tol=1e-9, abs_tol=0.0)
    same_span = (got.paragraph_id, got.start_character, got.end_character) == (
        ref.paragraph_id,
        ref.start_character,
        ref.end_character,
    )
    return same_bleu, same_span
