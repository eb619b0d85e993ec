"""Languages: MKQA's 26 language codes, the Wikipedia each is answered from, and the Lucene analyzer a
BM25 index of that Wikipedia uses (Anserini's where it has one, a documented fallback otherwise)."""

from __future__ import annotations

from dataclasses import dataclass

ANSERINI_LANGUAGES = frozenset(
    {"ar", "bn", "da", "de", "en", "es", "fa", "fi", "fr", "hi", "hu", "id", "it", "ja", "ko", "nl", "no",
     "pl", "pt", "ru", "sv", "te", "th", "tr", "uk", "zh"}
)  # fmt: skip
"""Languages with a Lucene analyzer in Anserini's ``AnalyzerMap`` (Anserini 1.7.1, the jar of pyserini
1.6.0), plus English (Anserini's DefaultEnglishAnalyzer, Porter stemmer)."""

LANGUAGE_ALIASES = {"simple": "en", "nb": "no", "nn": "no", "zh-classical": "zh", "zh-yue": "zh"}
"""Wikipedia language codes that use another code's analyzer."""

ANALYZER_FALLBACKS: dict[str, tuple[str, str]] = {
    "ms": (
        "id",
        "Anserini has no Malay analyzer; Indonesian's (Lucene's IndonesianStemmer) strips the prefixes and "
        "suffixes Malay and Indonesian share",
    ),
    "he": (
        "en",
        "Anserini has no Hebrew analyzer; English's tokenizes Hebrew at Unicode word boundaries and its "
        "Porter stemmer leaves Hebrew script alone (no stemming, no prefix splitting)",
    ),
    "vi": (
        "en",
        "Anserini has no Vietnamese analyzer; English's splits at spaces, i.e. into syllables (Vietnamese "
        "words of several syllables are matched syllable by syllable)",
    ),
    "km": (
        "en",
        "Anserini has no Khmer analyzer; English's keeps each unspaced run of Khmer script as one token, "
        "so BM25 finds little: use dense retrieval with a multilingual encoder for Khmer",
    ),
}
"""Languages without an Anserini analyzer: ``(analyzer used, why)``."""


@dataclass(frozen=True, slots=True)
class MkqaLanguage:
    """One of MKQA's 26 languages: its code in MKQA, the Wikipedia answering it, the analyzer used."""

    code: str
    name: str
    wiki_language: str

    @property
    def dbname(self) -> str:
        return f"{self.wiki_language}wiki"

    @property
    def analyzer(self) -> str:
        return resolve_language(self.wiki_language)[0]

    @property
    def analyzer_note(self) -> str | None:
        return resolve_language(self.wiki_language)[1]


MKQA_LANGUAGES = tuple(
    MkqaLanguage(code, name, wiki)
    for code, name, wiki in (
        ("ar", "Arabic", "ar"),
        ("da", "Danish", "da"),
        ("de", "German", "de"),
        ("en", "English", "en"),
        ("es", "Spanish", "es"),
        ("fi", "Finnish", "fi"),
        ("fr", "French", "fr"),
        ("he", "Hebrew", "he"),
        ("hu", "Hungarian", "hu"),
        ("it", "Italian", "it"),
        ("ja", "Japanese", "ja"),
        ("km", "Khmer", "km"),
        ("ko", "Korean", "ko"),
        ("ms", "Malay", "ms"),
        ("nl", "Dutch", "nl"),
        ("no", "Norwegian (Bokmål)", "no"),
        ("pl", "Polish", "pl"),
        ("pt", "Portuguese", "pt"),
        ("ru", "Russian", "ru"),
        ("sv", "Swedish", "sv"),
        ("th", "Thai", "th"),
        ("tr", "Turkish", "tr"),
        ("vi", "Vietnamese", "vi"),
        ("zh_cn", "Chinese (simplified, China)", "zh"),
        ("zh_hk", "Chinese (traditional, Hong Kong)", "zh"),
        ("zh_tw", "Chinese (traditional, Taiwan)", "zh"),
    )
)
"""MKQA's languages (its ``queries``/``answers`` keys) and the Wikipedia of each: the three Chinese
variants are answered from zhwiki, which holds both scripts; ``no`` is nowiki (Bokmål)."""

MKQA_BY_CODE = {language.code: language for language in MKQA_LANGUAGES}


def wiki_language(code: str) -> str:
    """The Wikipedia language code of a language code (``zh_tw`` -> ``zh``, ``nb`` -> ``no``)."""
    code = code.strip()
    if code in MKQA_BY_CODE:
        return MKQA_BY_CODE[code].wiki_language
    lowered = code.lower().replace("_", "-")
    return {"nb": "no"}.get(lowered, lowered)


def mkqa_codes_for(language: str | None) -> list[str]:
    """MKQA's codes answered by the Wikipedia of ``language`` (``zh`` -> the three Chinese variants;
    ``[]`` for a language MKQA does not have)."""
    if not language:
        return []
    target = wiki_language(language)
    return [item.code for item in MKQA_LANGUAGES if item.wiki_language == target]


def resolve_language(language: str | None) -> tuple[str, str | None]:
    """``(analyzer language, note or None)``: Anserini's analyzer for the language, else the documented
    fallback of :data:`ANALYZER_FALLBACKS`, else English with a warning naming what is available."""
    requested = (language or "en").strip().lower().replace("_", "-")
    code = LANGUAGE_ALIASES.get(requested, requested)
    if code in ANSERINI_LANGUAGES:
        return code, None
    base = code.split("-")[0]
    if base in ANSERINI_LANGUAGES:
        return base, None
    if base in ANALYZER_FALLBACKS:
        analyzer, why = ANALYZER_FALLBACKS[base]
        return analyzer, f"language {language!r}: analyzer {analyzer!r} (fallback: {why})"
    return "en", (
        f"no Anserini analyzer for language {language!r}: falling back to English "
        f"(available: {', '.join(sorted(ANSERINI_LANGUAGES))})"
    )


def language_table() -> list[dict[str, str]]:
    """One row per MKQA language: code, name, Wikipedia, analyzer and how it was chosen."""
    return [
        {
            "mkqa": item.code,
            "language": item.name,
            "wikipedia": item.dbname,
            "analyzer": item.analyzer,
            "analyzer_source": "Anserini" if item.analyzer_note is None else "fallback",
        }
        for item in MKQA_LANGUAGES
    ]
