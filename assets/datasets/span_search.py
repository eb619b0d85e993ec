"""Span search for KILT's dataset mapping: the span of a page with the highest BLEU against an evidence.

KILT (Petroni et al., 2021, section 2) maps each dataset's evidence (a short answer, a long answer,
a supporting sentence, ...) onto its knowledge source by finding, in the target page, the span with
the highest BLEU against the evidence. Its code (``kilt/kilt_utils.py``: ``match_answer`` and
``get_bleu``) scans every span of (a few) paragraphs; this module returns the same best span as an
exhaustive scan of every span of every searched paragraph, but prunes almost all of them.

KILT's BLEU, matched exactly
----------------------------
``get_bleu(candidate_tokens, gold_tokens)`` in ``kilt/kilt_utils.py`` is::

    candidate_tokens = [x for x in candidate_tokens if len(x.strip()) > 0]
    gold_tokens = [x for x in gold_tokens if len(x.strip()) > 0]
    weights = (0.25, 0.25, 0.25, 0.25)
    if len(gold_tokens) < 4:
        weights = [1.0 / len(gold_tokens) for _ in range(len(gold_tokens))]
    nltk.translate.bleu_score.sentence_bleu([candidate_tokens], gold_tokens, weights=weights)

and ``match_answer`` calls it as ``get_bleu(candidate, answer_tokens)``. Note the direction: nltk's
signature is ``sentence_bleu(references, hypothesis)``, so the **candidate span is the single
reference and the evidence is the hypothesis**. With ``E`` = number of evidence tokens,
``L`` = number of span tokens (both after dropping empty tokens), ``N = min(4, E)`` orders, each of
weight ``1/N`` (``0.25`` for ``E >= 4``, ``1.0 / E`` otherwise):

* ``m_n`` = clipped n-gram matches: ``sum over n-grams g of the evidence of min(count_evidence(g),
  count_span(g))``; the denominator is the evidence's n-gram count ``E - n + 1`` (fixed per query);
* ``m_1 == 0`` -> BLEU is 0 (nltk returns early);
* no smoothing (nltk's ``method0``): a zero ``m_n`` for ``n >= 2`` becomes ``sys.float_info.min``, so
  such spans score a tiny positive number (1e-77 down to 1e-231), not 0 -- and that still ranks spans;
* brevity penalty ``BP = 1`` if ``E > L`` else ``exp(1 - L / E)``: it penalises spans **longer**
  than the evidence;
* ``BLEU = BP * exp(fsum(w_n * log(p_n)))`` -- computed here with the same float operations, so the
  values are bit-identical to nltk 3.x (checked against ``sentence_bleu`` in the tests).

Tokenisation: KILT's whitespace path (``paragraph.split()``, used when ``nlp`` is None or
``approximate_search``; its spaCy path needs a model download that this project cannot do), with its
``normalize_text`` normalisation applied to every token: drop characters whose UTF-8 encoding takes 3
or more bytes (code points >= U+0800, e.g. CJK, dashes, curly quotes), lower-case, delete
``string.punctuation``. Tokens that normalise to ``""`` are dropped before the n-grams (KILT's
``x.strip()`` filter), so ``"a - b"`` has the bigram ``(a, b)``. The same normalisation is applied to
the evidence and to the page (KILT normalises the answer string before splitting; the result is the
same up to characters whose lower case changes UTF-8 width).

The procedure (``find_best_span``)
----------------------------------
Searched paragraphs: every entry of ``text`` except, with ``skip_headers=True``, ``text[0]`` (the title)
and ``Section::::`` headers. The list marker ``BULLET::::-`` or ``BULLET::::N.`` (and ``Section::::``,
when headers are searched) is markup, not text: tokens start after it. Spans never cross paragraphs
(KILT's ``match_answer`` returns one ``paragraph_id`` for start and end), so ``end_paragraph_id`` always
equals ``paragraph_id``.

1. Exact: if the evidence's whitespace tokens occur verbatim (whitespace runs normalised), as whole
   tokens, in a searched paragraph, the first such occurrence in page order is returned with BLEU 1.0
   and ``method="exact"`` (KILT's ``paragraph.find(answer)``, restricted to token boundaries so that
   the result is always a BLEU-1.0 span: ``"1990"`` inside ``"1990s"`` is not an exact match).
2. BLEU: the span maximising KILT's BLEU over all contiguous token spans of all searched paragraphs;
   ties go to the span with the fewest (whitespace) tokens -- KILT's rule, without its quirks (its
   test skips spans starting at token 0, and ``not max_bleu`` lets any span replace a 0.0 best) --
   then the earlier paragraph, then the earlier start. ``method="bleu"``. Unlike KILT, every
   paragraph is considered (KILT only scores the ~3 paragraphs with the most shared unigrams, a
   heuristic that can miss the best span); the pruning below makes that affordable.

An evidence that normalises to no token at all (``"–"``, ``":"``, CJK text) has no BLEU; it is
matched only verbatim (step 1).

``None`` when the evidence is empty, the page has no searched paragraph, the evidence has no token
left after normalisation (and no exact match), or no evidence token occurs in the searched paragraphs
(every span scores 0, so there is no best span).

Pruning rules and why the result equals the exhaustive search
-------------------------------------------------------------
Write ``B(s)`` for the BLEU of span ``s`` and ``best`` for the best value found so far. A rule only
discards spans whose upper bound is *strictly* below ``best`` (times ``1 + 1e-9`` of safety), so every
span that could beat or tie the best is still scored and the tie rule is applied to all of them.
All bounds are computed with the same float operations as ``B`` on larger counts, and every one of
those operations is monotone (log, multiplication by a positive weight, correctly rounded ``fsum``,
exp), so a bound is never below the float value of a span it covers.

R1. *Spans start and end on evidence tokens.* Let ``s`` end with a token that is not an evidence token
    (or normalises to ``""``). Every n-gram ending there contains that token, so it is not an evidence
    n-gram: removing the token leaves every ``m_n`` unchanged, and ``L`` does not grow, so ``BP`` does
    not drop. The trimmed span has ``B >= B(s)`` and strictly fewer tokens, so ``s`` is never the
    answer (it loses or ties-and-loses to the trimmed span). Symmetrically for the first token.
    (This holds for the precisions *and* for the brevity penalty: in KILT's direction BP only
    penalises long spans.) Hence only spans between two evidence-token positions are scored.
R2. *Ends only where a count grows.* Extending a span to the next evidence token position without any
    ``m_n`` growing (all its new n-grams are clipped or non-evidence) gives ``B`` no larger (``BP`` is
    non-increasing in ``L``) and more tokens: never the answer, so it is not scored.
R3. *Paragraph bound.* Clipped counts are monotone under inclusion of n-gram multisets, so every span
    of a paragraph has ``m_n <= M_n``, the clipped counts of the whole paragraph, and ``BP <= 1``:
    ``B(s) <= G(M) = exp(fsum(w_n log p_n(M_n)))``; ``G`` is non-decreasing in every count. Paragraphs
    with ``M_1 = 0`` (no evidence token) score 0 everywhere and are skipped. For the others a quick
    bound ``G(Q)`` uses ``Q_n = min(hits_n, E - n + 1) >= M_n`` (``hits_n``: evidence n-grams in the
    paragraph, unclipped; O(log) per paragraph); paragraphs are visited by decreasing ``G(Q)`` and the
    scan stops at the first whose quick bound is below ``best`` (all later ones are lower). A visited
    paragraph then gets its exact ``G(M)`` and is skipped if that is below ``best``.
R4. *Length window.* For a span of ``L`` tokens in that paragraph ``B(s) <= BP(L) * G(M)``, and
    ``BP(L)`` is non-increasing, so only ``L <= W`` can reach ``best``, with ``W`` the largest length
    such that ``BP(W) * G(M) >= best``; ``W = inf`` while ``best = 0``. ``W`` is computed once per
    paragraph, from the ``best`` at that time (a later, larger ``best`` only shrinks the true window,
    so the bound stays valid).
R5. *Start bound.* Every span starting at position ``i`` with ``L <= W`` lies inside the window
    ``[i, i + W - 1]``, so its counts are at most that window's clipped counts ``C(i)`` (kept with a
    sliding window in O(tokens)) and ``B(s) <= G(C(i))``. Starts are tried by decreasing bound; the
    scan of a paragraph stops at the first start whose bound is below ``best``.
R6. *End bound.* Extending a span from start ``i`` to ``L`` tokens gives ``B <= BP(L) * G(C(i))``;
    as ``BP`` is non-increasing, the extension stops at the first ``L`` where this is below ``best``:
    every longer span from ``i`` is below it too.

The spans that survive are scored incrementally (n-gram counts updated as the end moves), and the
result is compared with a plain exhaustive search on hundreds of real evidence/page pairs in
``tests/unit/test_span_search.py``.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import compress

from assets.datasets.kilt_bleu import (
    SAFETY,
    TOKEN_RE,
    Bleu,
    Token,
    kilt_bleu,
    normalize_token,
    normalize_tokens,
    tokenize,
    tokenize_with_offsets,
)
from assets.wikipedia.articles import bullet_marker_end

__all__ = [
    "PreparedPage",
    "SpanMatch",
    "Token",
    "content_start",
    "find_best_span",
    "kilt_bleu",
    "normalize_token",
    "prepare_page",
    "searched_paragraph_ids",
    "tokenize",
    "tokenize_with_offsets",
]


SECTION_PREFIX = "Section::::"


def content_start(entry: str) -> int:
    """Offset where an entry's text starts: after ``BULLET::::-`` (``BULLET::::N.``) or ``Section::::``
    markup."""
    if marker := bullet_marker_end(entry):
        return marker
    if entry.startswith(SECTION_PREFIX):
        return len(SECTION_PREFIX)
    return 0


def searched_paragraph_ids(page_text: Sequence[str], *, skip_headers: bool = True) -> list[int]:
    """Paragraph ids searched: all, or (``skip_headers``) all but the title and ``Section::::`` headers."""
    if not skip_headers:
        return list(range(len(page_text)))
    return [i for i in range(1, len(page_text)) if not page_text[i].startswith(SECTION_PREFIX)]


_SENTINEL = "\n"  # ends each paragraph in the flat token list: never a token, so n-grams never cross


@dataclass(frozen=True, slots=True)
class PreparedPage:
    """A page's searched paragraphs tokenised once, as flat lists (reuse it for several evidences).

    ``tokens`` holds the normalised non-empty tokens of every searched paragraph, each paragraph
    followed by a sentinel; ``raw_index`` the whitespace-token index of each within its paragraph;
    ``starts[k]`` the flat index of paragraph ``pids[k]``'s first token. ``padded`` joins every
    paragraph's whitespace tokens as ``" t0 t1 ... "`` (by newlines) for the verbatim search.
    """

    text: Sequence[str]
    skip_headers: bool
    pids: tuple[int, ...]
    tokens: list[str]
    raw_index: list[int]
    starts: list[int]
    padded: str
    padded_starts: list[int]

    def characters(self, paragraph_id: int, first: int, last: int) -> tuple[int, int]:
        """``[start, end)`` characters of whitespace tokens ``first..last`` of a paragraph."""
        entry = self.text[paragraph_id]
        start = 0
        for k, match in enumerate(TOKEN_RE.finditer(entry, content_start(entry))):
            if k == first:
                start = match.start()
            if k == last:
                return start, match.end()
        raise IndexError(f"paragraph {paragraph_id} has no token {last}")


def prepare_page(page_text: Sequence[str], *, skip_headers: bool = True) -> PreparedPage:
    """Tokenise the searched paragraphs of a KILT page ``text`` list once."""
    pids = searched_paragraph_ids(page_text, skip_headers=skip_headers)
    raws = [page_text[i][content_start(page_text[i]) :].split() for i in pids]
    tokens: list[str] = []
    raw_index: list[int] = []
    starts: list[int] = []
    parts: list[str] = []
    padded_starts: list[int] = []
    offset = 0
    for raw in raws:
        chunk = normalize_tokens(raw)
        starts.append(len(tokens))
        if "" in chunk:
            kept = [i for i, t in enumerate(chunk) if t]
            tokens.extend([chunk[i] for i in kept])
            raw_index.extend(kept)
        else:
            tokens.extend(chunk)
            raw_index.extend(range(len(chunk)))
        tokens.append(_SENTINEL)
        raw_index.append(-1)
        part = " " + " ".join(raw) + " "
        parts.append(part)
        padded_starts.append(offset)
        offset += len(part) + 1
    starts.append(len(tokens))
    return PreparedPage(
        page_text, skip_headers, tuple(pids), tokens, raw_index, starts, "\n".join(parts), padded_starts
    )


@dataclass(frozen=True, slots=True)
class SpanMatch:
    """The best span: ``text[paragraph_id][start_character:end_character]`` (end exclusive)."""

    paragraph_id: int
    start_character: int
    end_character: int
    bleu: float
    method: str  # "exact" | "bleu"

    @property
    def end_paragraph_id(self) -> int:
        """Spans never cross paragraphs (as in KILT): always ``paragraph_id``."""
        return self.paragraph_id


class _Evidence:
    """The evidence as integer ids (from 1), with its n-gram count tables keyed by integer codes."""

    __slots__ = ("base", "bleu", "counts", "vocab")

    def __init__(self, tokens: list[str]) -> None:
        self.vocab: dict[str, int] = {}
        for t in tokens:
            self.vocab.setdefault(t, len(self.vocab) + 1)
        self.base = len(self.vocab) + 1
        self.bleu = Bleu(len(tokens))
        ids = [self.vocab[t] for t in tokens]
        self.counts: list[dict[int, int]] = []
        for n in range(1, self.bleu.orders + 1):
            table: dict[int, int] = {}
            for i in range(len(ids) - n + 1):
                key = 0
                for x in ids[i : i + n]:
                    key = key * self.base + x
                table[key] = table.get(key, 0) + 1
            self.counts.append(table)


class _Candidate:
    """A paragraph holding evidence tokens: flat positions, n-gram codes and its R3 bounds."""

    __slots__ = ("bound", "hi", "keys", "lo", "pid", "pos", "quick")

    def __init__(self, pid: int, lo: int, hi: int, quick: float) -> None:
        self.pid = pid
        self.lo = lo  # the paragraph's matches are lo..hi-1 of the page-wide match lists
        self.hi = hi
        self.quick = quick  # R3 bound from unclipped hit counts (>= bound)
        self.bound = quick  # R3 bound from clipped counts, set by _Matches.load
        self.pos: list[int] = []  # flat positions of the paragraph's evidence tokens
        self.keys: list[list] = []  # keys[n][j]: code of the evidence (n+1)-gram ending at pos[j], or None


def _clipped(keys: list, table: dict[int, int]) -> int:
    seen: dict[int, int] = {}
    m = 0
    for key in keys:
        c = seen.get(key, 0) + 1
        seen[key] = c
        if c <= table[key]:
            m += 1
    return m


class _Matches:
    """The evidence n-grams of a page: where each order's n-grams end, and their codes."""

    __slots__ = ("ev", "hits", "keys", "pos")

    def __init__(self, page: PreparedPage, ev: _Evidence) -> None:
        self.ev = ev
        ids = list(map(ev.vocab.get, page.tokens))
        # ids start at 1: falsy only for non-evidence tokens (and the paragraph sentinels)
        self.pos = pos = list(compress(range(len(ids)), ids))
        count = len(pos)
        unigram = list(compress(ids, ids))
        self.keys: list[list] = [unigram]
        self.hits: list[Sequence[int]] = [range(count)]  # match indices where an (n+1)-gram ends
        # an n-gram's prefix is an evidence n-gram too, so codes grow from the order below; the
        # sentinel between paragraphs is never an evidence token, so no n-gram crosses paragraphs
        if ev.bleu.orders > 1 and count:
            before = list(compress([None, *ids[:-1]], ids))  # id of the token before each match
            prev: list = before
            cand = list(compress(range(count), before))
            for n in range(1, ev.bleu.orders):
                table = ev.counts[n]
                cur: list = [None] * count
                follow = []
                for j in cand:
                    p = prev[j] if n == 1 else prev[j - 1]
                    if p is not None:
                        key = p * ev.base + unigram[j]
                        if key in table:
                            cur[j] = key
                            follow.append(j)
                self.keys.append(cur)
                self.hits.append(follow)
                prev = cur
                cand = [j + 1 for j in follow if j + 1 < count and pos[j] + 1 == pos[j + 1]]

    def candidates(self, page: PreparedPage) -> list[_Candidate]:
        """Paragraphs with an evidence token (R3 skips the others) and their quick bounds: the
        unclipped number of evidence n-grams (at most ``E - n + 1``) bounds the clipped count."""
        pos, hits, bleu = self.pos, self.hits, self.ev.bleu
        if not pos:
            return []
        starts = page.starts
        orders = bleu.orders
        caps = [bleu.length - n for n in range(orders)]
        out = []
        hi = 0
        at = [0] * orders
        for k, pid in enumerate(page.pids):
            lo = hi
            hi = bisect_left(pos, starts[k + 1], lo)
            if hi == lo:
                continue
            totals = [min(hi - lo, caps[0])]
            for n in range(1, orders):
                h = hits[n]
                first = at[n]
                last = at[n] = bisect_left(h, hi, first)
                totals.append(min(last - first, caps[n]))
            out.append(_Candidate(pid, lo, hi, bleu.precision_part(totals)))
        return out

    def load(self, cand: _Candidate) -> None:
        """Fill the paragraph's match lists and its exact R3 bound (clipped counts)."""
        lo, hi = cand.lo, cand.hi
        cand.pos = self.pos[lo:hi]
        cand.keys = [kn[lo:hi] for kn in self.keys]
        tables = self.ev.counts
        totals = [_clipped(cand.keys[0], tables[0])]
        for n in range(1, self.ev.bleu.orders):
            h = self.hits[n]
            inside = h[bisect_left(h, lo) : bisect_left(h, hi)]
            totals.append(_clipped([self.keys[n][j] for j in inside], tables[n]) if inside else 0)
        cand.bound = self.ev.bleu.precision_part(totals)


def _window_length(bleu: Bleu, bound: float, best: float, longest: int) -> int:
    """Largest span length ``L <= longest`` with ``BP(L) * bound`` not below ``best`` (rule R4)."""
    if best <= 0.0:
        return longest
    e = bleu.length
    ratio = best / (bound * SAFETY)
    # BP(L) = exp(1 - L/E) >= ratio  <=>  L <= E (1 - ln ratio); estimate, then walk up to be exact
    estimate = int(e * (1.0 - math.log(ratio))) if ratio < 1.0 else e
    w = min(longest, max(e, estimate) + 1)
    while w < longest and bleu.brevity(w + 1) * bound * SAFETY >= best:
        w += 1
    return w


_LOG_FILTER_FLOOR = math.log(1e-300)  # below this best, scores may be subnormal: always score exactly


class _Best:
    __slots__ = ("bleu", "key", "log_bleu", "where")

    def __init__(self) -> None:
        self.bleu = 0.0
        self.log_bleu = -math.inf
        self.key: tuple[int, int, int] | None = None  # (whitespace tokens, paragraph id, first token)
        self.where: tuple[int, int, int] | None = None  # (paragraph id, first token, last token)

    def offer(self, bleu: float, raw_start: int, raw_end: int, pid: int) -> None:
        key = (raw_end - raw_start + 1, pid, raw_start)
        if bleu > self.bleu or (bleu == self.bleu and self.key is not None and key < self.key):
            self.bleu = bleu
            self.log_bleu = math.log(bleu)
            self.key = key
            self.where = (pid, raw_start, raw_end)


def _start_bounds(cand: _Candidate, ev: _Evidence, window: int) -> list[float]:
    """Rule R5: the clipped counts of the window ``[pos[i], pos[i] + window - 1]`` bound every start."""
    pos = cand.pos
    count = len(pos)
    orders = ev.bleu.orders
    precision_part = ev.bleu.precision_part
    bounds = [0.0] * count
    # n-grams of order n + 1 as (first match index, last match index, code), by last (and first) index
    items = []
    for n in range(orders):
        keys = cand.keys[n]
        items.append([(j - n, j, keys[j]) for j in range(n, count) if keys[j] is not None])
    sizes = [len(its) for its in items]
    added = [0] * orders
    removed = [0] * orders
    seen: list[dict[int, int]] = [{} for _ in range(orders)]
    m = [0] * orders
    last = 0
    for i in range(count):
        stop = pos[i] + window - 1
        while last + 1 < count and pos[last + 1] <= stop:
            last += 1
        for n in range(orders):
            its = items[n]
            table = ev.counts[n]
            s = seen[n]
            a = added[n]
            while a < sizes[n] and its[a][1] <= last:
                key = its[a][2]
                c = s.get(key, 0) + 1
                s[key] = c
                if c <= table[key]:
                    m[n] += 1
                a += 1
            added[n] = a
            r = removed[n]
            while r < a and its[r][0] < i:
                key = its[r][2]
                c = s[key]
                s[key] = c - 1
                if c <= table[key]:
                    m[n] -= 1
                r += 1
            removed[n] = r
        bounds[i] = precision_part(m)
    return bounds


def _search_paragraph(cand: _Candidate, ev: _Evidence, raw_index: list[int], best: _Best) -> None:
    bleu = ev.bleu
    pos = cand.pos
    keys = cand.keys
    pid = cand.pid
    orders = bleu.orders
    tables = ev.counts
    terms = bleu.terms
    evidence_length = bleu.length
    count = len(pos)
    longest = pos[-1] - pos[0] + 1
    window = _window_length(bleu, cand.bound, best.bleu, longest)
    bounds = _start_bounds(cand, ev, window) if count > 1 else [cand.bound]
    bleu.brevity(longest)  # the table now covers every span length of this paragraph
    bps = bleu.bp
    for i in sorted(range(count), key=bounds.__getitem__, reverse=True):
        bound = bounds[i]
        if bound * SAFETY < best.bleu:
            break  # rule R5: every later start has a bound at most this one
        first = pos[i]
        raw_first = raw_index[first]
        seen: list[dict[int, int]] = [{} for _ in range(orders)]
        m = [0] * orders
        for j in range(i, count):
            length = pos[j] - first + 1
            if length > window or bps[length] * bound * SAFETY < best.bleu:
                break  # rules R4/R6: longer spans from this start are below best
            grew = False
            for n in range(orders):
                if j - n < i:
                    break
                key = keys[n][j]
                if key is None:
                    break  # no evidence n-gram ends here, so no longer one either
                s = seen[n]
                c = s.get(key, 0) + 1
                s[key] = c
                if c <= tables[n][key]:
                    m[n] += 1
                    grew = True
            if not grew:
                continue  # rule R2
            if best.log_bleu > _LOG_FILTER_FLOOR:
                # log(BLEU) with a plain sum: within ~1e-13 of the exact value, so a span more than
                # 1e-6 below log(best) cannot reach best -- skip its exact (fsum + exp) score
                approx = 0.0
                for n in range(orders):
                    approx += terms[n][m[n]]
                if length > evidence_length:
                    approx += 1 - length / evidence_length
                if approx < best.log_bleu - 1e-6:
                    continue
            score = bleu.score(m, length)
            if score >= best.bleu:
                best.offer(score, raw_first, raw_index[pos[j]], pid)


def _exact(page: PreparedPage, evidence_raw: list[str]) -> SpanMatch | None:
    at = page.padded.find(" " + " ".join(evidence_raw) + " ")
    if at < 0:
        return None
    k = bisect_right(page.padded_starts, at) - 1
    first = page.padded.count(" ", page.padded_starts[k], at)
    start, end = page.characters(page.pids[k], first, first + len(evidence_raw) - 1)
    return SpanMatch(page.pids[k], start, end, 1.0, "exact")


def find_best_span(
    evidence: str, page_text: Sequence[str] | PreparedPage, *, skip_headers: bool = True
) -> SpanMatch | None:
    """The span of the page with the highest KILT BLEU against ``evidence`` (see the module doc).

    ``page_text`` is a KILT ``text`` list, or a ``PreparedPage`` (built with the same
    ``skip_headers``) to tokenise a page once for several evidences.
    """
    if isinstance(page_text, PreparedPage):
        if page_text.skip_headers != skip_headers:
            raise ValueError("the PreparedPage was built with another skip_headers")
        page = page_text
    else:
        page = prepare_page(page_text, skip_headers=skip_headers)
    evidence_raw = evidence.split()
    if not evidence_raw or not page.pids:
        return None
    exact = _exact(page, evidence_raw)
    if exact is not None:
        return exact
    tokens = [t for t in normalize_tokens(evidence_raw) if t]
    if not tokens:
        return None
    ev = _Evidence(tokens)
    matches = _Matches(page, ev)
    candidates = matches.candidates(page)
    candidates.sort(key=lambda c: c.quick, reverse=True)  # stable: page order among equal bounds
    best = _Best()
    for cand in candidates:
        if cand.quick * SAFETY < best.bleu:
            break  # rule R3: the remaining paragraphs have smaller (quick) bounds
        matches.load(cand)
        if cand.bound * SAFETY < best.bleu:
            continue  # rule R3 with the exact clipped counts
        _search_paragraph(cand, ev, page.raw_index, best)
    if best.where is None or best.bleu <= 0.0:
        return None
    pid, raw_start, raw_end = best.where
    start, end = page.characters(pid, raw_start, raw_end)
    return SpanMatch(pid, start, end, best.bleu, "bleu")
