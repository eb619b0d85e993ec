"""What a BM25 index does to text before Anserini's analyzer sees it, per language, the same for documents
and queries.

* ``segmented`` (Thai, Lao, Khmer, Burmese): the text is cut into words by :func:`assets.segmentation.
  segment_terms` (ICU's dictionaries, case-folded, no punctuation) and indexed pre-tokenized (Lucene's
  whitespace analyzer). Anserini's own Thai analyzer needs the JRE's Thai break dictionary, which the
  bundled JRE lacks (measured: 0 of 208 Thai documents indexed); Khmer, Lao and Burmese have no Anserini
  analyzer at all (the English one keeps each unspaced run as one term).
* ``simplified`` (Chinese): Traditional characters become Simplified (OpenCC ``t2s``) before Anserini's
  CJK-bigram analyzer, so that zhwiki's mixed text and MKQA's zh_cn, zh_hk and zh_tw questions meet.
* ``none``: every other language, Anserini's analyzer alone.

A pre-analysed document keeps its text: the indexed JSON holds ``contents`` (what is analysed) and
``original`` (what a hit shows).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from assets.languages import SEGMENTED_LANGUAGES, SIMPLIFIED_LANGUAGES
from assets.segmentation import segment_terms

__all__ = ["ANALYSES", "ORIGINAL_FIELD", "TextAnalysis", "text_analysis"]

ORIGINAL_FIELD = "original"
"""The field of an indexed document that holds its text when ``contents`` was pre-analysed."""


@lru_cache(maxsize=1)
def _t2s() -> Callable[[str], str]:
    import opencc

    return opencc.OpenCC("t2s.json").convert


def _segmented(text: str) -> str:
    return " ".join(segment_terms(text))


def _simplified(text: str) -> str:
    return _t2s()(text)


@dataclass(frozen=True, slots=True)
class TextAnalysis:
    """One language's pre-analysis: its name, what it does to a text, and whether Anserini then indexes
    pre-tokenized text (whitespace analyzer) or analyses it itself."""

    name: str
    pretokenized: bool = False

    def apply(self, text: str) -> str:
        """``text`` as the index sees it (documents and queries alike)."""
        if self.name == "segmented":
            return _segmented(text)
        if self.name == "simplified":
            return _simplified(text)
        return text

    @property
    def rewrites(self) -> bool:
        return self.name != "none"


ANALYSES = {
    "none": TextAnalysis("none"),
    "segmented": TextAnalysis("segmented", pretokenized=True),
    "simplified": TextAnalysis("simplified"),
}
"""Every pre-analysis by name (an index records the name of its own)."""


def text_analysis(language: str | None) -> TextAnalysis:
    """The pre-analysis of a BM25 index of ``language`` (a Wikipedia code: ``th``, ``zh``, ``zh-yue``...)."""
    base = (language or "en").strip().lower().replace("_", "-").split("-")[0]
    if base in SEGMENTED_LANGUAGES:
        return ANALYSES["segmented"]
    if base in SIMPLIFIED_LANGUAGES:
        return ANALYSES["simplified"]
    return ANALYSES["none"]
