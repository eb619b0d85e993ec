"""KILT span search: BLEU values, tokenisation, and the pruned search against an exhaustive reference.

The exhaustive reference here scores every contiguous token span of every searched paragraph with
KILT's BLEU and keeps the best (fewest tokens on ties, then earlier paragraph, then earlier start).
It shares only the tokeniser and the paragraph selection with the module under test; its BLEU is
written from the nltk formula and checked against nltk itself (a dev dependency).
The reference and the pair generator live in ``support/span_reference.py``, which
``benchmarks/bench_span_search.py`` imports too.
"""

from __future__ import annotations

import math
import random
import sys
import warnings
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest

from assets.datasets.span_search import (
    SpanMatch,
    content_start,
    find_best_span,
    kilt_bleu,
    normalize_token,
    prepare_page,
    tokenize,
    tokenize_with_offsets,
)
from support.span_reference import (
    KINDS,
    Pair,
    ReferenceMatch,
    agree,
    exhaustive_best_span,
    load_excerpt_pages,
    make_pairs,
    reference_bleu,
)


@pytest.fixture(scope="module")
def excerpt_pages(excerpt: Path) -> list[tuple[str, list[str]]]:
    return load_excerpt_pages(excerpt)


# ------------------------------------------------------------------------------ BLEU
def _nltk_kilt_bleu(candidate: list[str], gold: list[str]) -> float:
    """KILT's get_bleu, verbatim in substance: nltk with the candidate as the reference."""
    from nltk.translate import bleu_score

    candidate = [x for x in candidate if len(x.strip()) > 0]
    gold = [x for x in gold if len(x.strip()) > 0]
    weights: Sequence[float] = (0.25, 0.25, 0.25, 0.25)
    if len(gold) < 4:
        weights = [1.0 / len(gold) for _ in range(len(gold))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nltk warns on every zero higher-order precision
        return float(bleu_score.sentence_bleu([candidate], gold, weights=weights))


def test_kilt_bleu_hand_values() -> None:
    fmin = sys.float_info.min
    assert kilt_bleu(["a", "b", "c", "d"], ["a", "b", "c", "d"]) == 1.0
    # the candidate is nltk's reference: a longer candidate is penalised, precisions stay 1
    longer = ["a", "b", "c", "d", "e", "f"]
    assert kilt_bleu(longer, ["a", "b", "c", "d"]) == pytest.approx(math.exp(1 - 6 / 4))
    # a shorter candidate: no brevity penalty, precisions over the evidence's n-grams
    # evidence a b c d e: m1 = 3/5 (a b c), m2 = 2/4, m3 = 1/3, m4 = 0 -> float min
    expected = math.exp(0.25 * (math.log(3 / 5) + math.log(2 / 4) + math.log(1 / 3) + math.log(fmin)))
    assert kilt_bleu(["a", "b", "c"], ["a", "b", "c", "d", "e"]) == pytest.approx(expected, rel=1e-12)
    # fewer orders for short evidence: 2 tokens -> weights (1/2, 1/2); "b a" has no bigram match
    assert kilt_bleu(["b", "a"], ["a", "b"]) == pytest.approx(math.sqrt(fmin), rel=1e-12)
    assert kilt_bleu(["x", "a", "b", "y"], ["a", "b"]) == pytest.approx(math.exp(1 - 4 / 2))
    # 3 tokens -> weights 1/3: x y q z vs x y z: p1 = 1, p2 = 1/2 (x y), p3 = 0, BP = exp(1 - 4/3)
    expected = math.exp(1 - 4 / 3) * math.exp((math.log(0.5) + math.log(fmin)) / 3)
    assert kilt_bleu(["x", "y", "q", "z"], ["x", "y", "z"]) == pytest.approx(expected, rel=1e-12)
    # a single token evidence: unigram only
    assert kilt_bleu(["a"], ["a"]) == 1.0
    assert kilt_bleu(["a", "b"], ["a"]) == pytest.approx(math.exp(1 - 2))
    # clipping: the evidence's "the" twice, the candidate's once
    assert kilt_bleu(["the"], ["the", "the"]) == pytest.approx(math.sqrt(0.5 * fmin), rel=1e-12)
    # no shared unigram, empty sides, whitespace-only tokens dropped as KILT does
    assert kilt_bleu(["x"], ["a", "b"]) == 0.0
    assert kilt_bleu([], ["a"]) == 0.0
    assert kilt_bleu(["a"], []) == 0.0
    assert kilt_bleu(["a", " ", "b"], ["a", "", "b"]) == 1.0


def test_kilt_bleu_matches_nltk_bit_for_bit() -> None:
    rng = random.Random(7)
    alphabet = "abcdefgh"
    for _ in range(800):
        gold = [rng.choice(alphabet[: rng.randint(1, 8)]) for _ in range(rng.randint(1, 12))]
        cand = [rng.choice(alphabet) for _ in range(rng.randint(1, 20))]
        if rng.random() < 0.3:  # a noisy copy, so higher orders match too
            cand = cand[: rng.randint(0, 5)] + gold[rng.randint(0, len(gold) - 1) :] + cand[:3]
        assert kilt_bleu(cand, gold) == _nltk_kilt_bleu(cand, gold), (cand, gold)


def test_reference_bleu_matches_kilt_bleu() -> None:
    rng = random.Random(11)
    for _ in range(2000):
        gold = [rng.choice("abcde") for _ in range(rng.randint(1, 9))]
        cand = [rng.choice("abcdef") for _ in range(rng.randint(1, 15))]
        orders = min(4, len(gold))
        matches = []
        for n in range(1, orders + 1):
            g = Counter(tuple(gold[i : i + n]) for i in range(len(gold) - n + 1))
            c = Counter(tuple(cand[i : i + n]) for i in range(len(cand) - n + 1))
            matches.append(sum(min(v, c[k]) for k, v in g.items()))
        assert reference_bleu(matches, len(gold), len(cand)) == kilt_bleu(cand, gold)


def test_kilt_bleu_on_real_spans_matches_nltk(excerpt_pages: list[tuple[str, list[str]]]) -> None:
    for pair in make_pairs(excerpt_pages, 150, seed=5):
        ev = tokenize(pair.evidence)
        if not ev:
            continue
        para = tokenize(pair.page_text[-1])
        rng = random.Random(len(pair.evidence))
        for _ in range(3):
            a = rng.randrange(len(para) + 1)
            cand = para[a : a + rng.randint(1, 2 * len(ev) + 2)]
            assert kilt_bleu(cand, ev) == _nltk_kilt_bleu(cand, ev)


# ------------------------------------------------------------------------------ tokenisation
def test_normalize_token_follows_kilt() -> None:
    assert normalize_token("Hello,") == "hello"
    assert normalize_token("U.S.") == "us"
    assert normalize_token("café") == "café"  # 2-byte UTF-8 kept
    assert normalize_token("北京") == ""  # 3-byte UTF-8 dropped
    assert normalize_token("1990–2000") == "19902000"  # en dash is 3 bytes
    assert normalize_token("—") == ""
    assert normalize_token("ΟΔΟΣ") == "οδος"  # final sigma
    assert tokenize("The  cat, — sat!\n") == ["the", "cat", "sat"]


def test_tokenize_with_offsets_matches_split(excerpt_pages: list[tuple[str, list[str]]]) -> None:
    for _, text in excerpt_pages[:40]:
        for entry in text:
            start = content_start(entry)
            toks = tokenize_with_offsets(entry, start)
            raw = entry[start:].split()
            assert [entry[t.start : t.end] for t in toks] == raw
            assert [t.text for t in toks] == [normalize_token(r) for r in raw]
            assert [t.text for t in toks if t.text] == tokenize(entry[start:])


# ------------------------------------------------------------------------------ search behaviour
PAGE = [
    "Example\n",
    "Example is a test page. It was written in 1990s by a tester.\n",
    "Section::::Origins.\n",
    "The history of   the example began in 1990, when the tester wrote it.\n",
    "BULLET::::- First item of the list.\n",
    "BULLET::::- Second item of the list.\n",
]


def test_list_markers_are_markup() -> None:
    """Both of KILT's list markers (``BULLET::::-``, ``BULLET::::N.``) are skipped: no span starts in one."""
    numbered = [entry.replace("BULLET::::- ", "BULLET::::2. ") for entry in PAGE]
    for page in (PAGE, numbered):
        got = find_best_span("First item of the list.", page)
        assert page[got.paragraph_id][got.start_character : got.end_character] == "First item of the list."
        assert content_start(page[4]) == page[4].index(" First") and got.method == "exact"
    assert content_start("BULLET::::- x") == 11 and content_start("BULLET::::17. x") == 13
    assert content_start("BULLET::::x") == 0 and content_start("plain") == 0


def test_exact_match_normalises_whitespace_and_respects_tokens() -> None:
    got = find_best_span("history of the\texample", PAGE)
    assert got == SpanMatch(3, 4, 28, 1.0, "exact")
    assert PAGE[3][got.start_character : got.end_character] == "history of   the example"
    assert got.end_paragraph_id == 3
    # "1990" inside "1990s" is not exact; the token "1990," (normalised "1990") scores 1.0 by BLEU
    got = find_best_span("1990", PAGE)
    assert (got.paragraph_id, got.method, got.bleu) == (3, "bleu", 1.0)
    assert PAGE[3][got.start_character : got.end_character] == "1990,"


def test_headers_title_and_bullets() -> None:
    assert find_best_span("Origins", PAGE) is None  # only in the header: skipped
    got = find_best_span("Origins.", PAGE, skip_headers=False)
    assert (got.paragraph_id, got.method) == (2, "exact")
    assert PAGE[2][got.start_character : got.end_character] == "Origins."
    got = find_best_span("Example", PAGE, skip_headers=False)
    assert (got.paragraph_id, got.start_character) == (0, 0)
    # the bullet marker is markup: never part of a span, never matched
    got = find_best_span("second item of the list", PAGE)
    assert (got.paragraph_id, got.method, got.bleu) == (5, "bleu", 1.0)
    assert PAGE[5][got.start_character : got.end_character] == "Second item of the list."
    assert find_best_span("bullet", PAGE) is None


def test_none_and_zero_cases() -> None:
    assert find_best_span("", PAGE) is None
    assert find_best_span("   ", PAGE) is None
    assert find_best_span("anything", []) is None
    assert find_best_span("anything", ["Title only\n"]) is None
    assert find_best_span("zebra quokka", PAGE) is None  # no shared token: every span scores 0
    assert find_best_span("— …", PAGE) is None  # nothing left after normalisation


def test_prepared_page_reuse_and_ties() -> None:
    page = prepare_page(PAGE)
    assert find_best_span("history of the example", page) == find_best_span("history of the example", PAGE)
    with pytest.raises(ValueError):
        find_best_span("x", page, skip_headers=False)
    # "item of the list" occurs in two paragraphs with the same BLEU and length: the earlier wins
    got = find_best_span("item of the list", PAGE)
    assert got.paragraph_id == 4 and got.method == "bleu"
    ref = exhaustive_best_span("item of the list", PAGE)
    assert (ref.paragraph_id, ref.start_character, ref.end_character) == (4, 18, 35)
    assert (got.start_character, got.end_character) == (18, 35)


def test_shortest_span_wins_ties() -> None:
    page = ["T\n", "a x x x b a b\n"]
    # evidence "a b": "a b" at the end scores 1.0 by BLEU (exact match is found first anyway)
    assert find_best_span("a b", page).method == "exact"
    # "b a" (bigram absent) : spans "b a" and "a b" share m1 = 2; "b a" has the bigram -> shortest best
    got = find_best_span("b a", page)
    ref = exhaustive_best_span("b a", page)
    assert (got.start_character, got.end_character, got.bleu) == (
        ref.start_character,
        ref.end_character,
        ref.bleu,
    )


# ------------------------------------------------------------------------------ pruned == exhaustive
def compare(
    pair: Pair, *, skip_headers: bool = True
) -> tuple[bool, bool, SpanMatch | None, ReferenceMatch | None]:
    """(same BLEU, same span) of the pruned search and the exhaustive reference on one pair."""
    got = find_best_span(pair.evidence, pair.page_text, skip_headers=skip_headers)
    ref = exhaustive_best_span(pair.evidence, pair.page_text, skip_headers=skip_headers)
    same_bleu, same_span = agree(pair, got, ref)
    return same_bleu, same_span, got, ref


def test_pruned_search_equals_exhaustive_on_real_pairs(excerpt_pages: list[tuple[str, list[str]]]) -> None:
    pairs = make_pairs(excerpt_pages, 600, seed=2026)
    assert len({p.kind for p in pairs}) == len(KINDS)
    bleu_ok = span_ok = 0
    methods: Counter = Counter()
    failures = []
    for pair in pairs:
        same_bleu, same_span, got, ref = compare(pair)
        bleu_ok += same_bleu
        span_ok += same_span
        methods[got.method if got else "none"] += 1
        if not (same_bleu and same_span):
            failures.append((pair.kind, pair.evidence, got, ref))
    print(f"\n{len(pairs)} pairs: same BLEU {bleu_ok}, same span {span_ok}, methods {dict(methods)}")
    assert methods["exact"] > 20 and methods["bleu"] > 300  # both paths exercised
    assert bleu_ok >= 0.995 * len(pairs), failures[:5]
    assert span_ok >= 0.995 * len(pairs), failures[:5]
    assert not failures, failures[:5]  # the search is exact: expect every pair to agree


def test_pruned_search_equals_exhaustive_on_whole_pages(excerpt_pages: list[tuple[str, list[str]]]) -> None:
    """A few pairs on whole (small) pages: pruning across many paragraphs."""
    small = [p for p in excerpt_pages if sum(len(e.split()) for e in p[1]) < 1500]
    pairs = make_pairs(small, 12, seed=99, max_tokens=None)
    for pair in pairs:
        same_bleu, same_span, got, ref = compare(pair)
        assert same_bleu and same_span, (pair.kind, pair.evidence, got, ref)


def test_pruned_search_equals_exhaustive_on_small_alphabets() -> None:
    """Random pages over a few words (with case, punctuation, empty-normalising tokens and bullets):
    many repeated n-grams, clipping and exact BLEU ties, where the tie rule decides."""
    rng = random.Random(5)
    words = ["a", "b", "c", "d", "A", "b,", "—", "e"]
    for _ in range(800):
        page = ["T a b\n"]
        for _ in range(rng.randint(1, 5)):
            marker = rng.choice(["", "", "BULLET::::- ", "BULLET::::12. ", "Section::::"])
            vocab = words[: rng.randint(2, len(words))]
            page.append(marker + " ".join(rng.choice(vocab) for _ in range(rng.randint(0, 25))) + "\n")
        evidence = " ".join(rng.choice(words) for _ in range(rng.randint(1, 9)))
        for skip in (True, False):
            same_bleu, same_span, got, ref = compare(Pair("synthetic", evidence, page), skip_headers=skip)
            assert same_bleu and same_span, (evidence, page, skip, got, ref)
