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
}
"""Languages without an Anserini analyzer: ``(analyzer used, why)``."""

WHITESPACE_ANALYZER = "whitespace"
"""The analyzer of a pre-segmented index: Lucene's whitespace analyzer over ICU's words."""
SEGMENTED_LANGUAGES = frozenset({"th", "lo", "km", "my"})
"""Languages whose BM25 documents and queries are cut into words by ICU (assets.segmentation) and indexed
pre-tokenized: Anserini's Thai analyzer needs the JRE's Thai break dictionary, which pyserini's bundled JRE
lacks (0 of 208 real Thai documents indexed), and Khmer, Lao and Burmese have no Anserini analyzer (the
English one keeps each unspaced run of the script as one term)."""
SIMPLIFIED_LANGUAGES = frozenset({"zh"})
"""Languages whose BM25 documents and queries are converted to Simplified characters (OpenCC ``t2s``) before
Anserini's analyzer: zhwiki mixes both scripts and MKQA asks in zh_cn, zh_hk and zh_tw."""


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
    if code.split("-")[0] in SEGMENTED_LANGUAGES:
        return WHITESPACE_ANALYZER, None
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


def anserini_analyzer(language: str | None) -> str:
    """Anserini's own analyzer for ``language`` (English where it has none), whatever this project
    chooses (the benchmarks compare the two)."""
    code = (language or "en").strip().lower().replace("_", "-").split("-")[0]
    return code if code in ANSERINI_LANGUAGES else "en"


def language_table() -> list[dict[str, str]]:
    """One row per MKQA language: code, name, Wikipedia, analyzer and how it was chosen."""
    return [
        {
            "mkqa": item.code,
            "language": item.name,
            "wikipedia": item.dbname,
            "analyzer": item.analyzer,
            "analyzer_source": (
                "ICU words, pre-tokenized"
                if item.analyzer == WHITESPACE_ANALYZER
                else "Anserini"
                if item.analyzer_note is None
                else "fallback"
            ),
        }
        for item in MKQA_LANGUAGES
    ]


LANGUAGE_SCRIPTS: dict[str, frozenset[str]] = {
    "ja": frozenset({"han", "kana"}),
    "zh": frozenset({"han"}),
    "ko": frozenset({"hangul", "han"}),
    "th": frozenset({"thai"}),
    "lo": frozenset({"lao"}),
    "km": frozenset({"khmer"}),
    "my": frozenset({"myanmar"}),
    **dict.fromkeys(("ar", "fa", "ur", "ps", "ckb", "arz", "azb", "sd", "ug"), frozenset({"arabic"})),
    **dict.fromkeys(("he", "yi"), frozenset({"hebrew"})),
    **dict.fromkeys(("ru", "uk", "bg", "sr", "mk", "be", "kk", "ky", "tg", "mn", "tt", "ba", "ce", "cv"),
                    frozenset({"cyrillic", "latin"})),
    "el": frozenset({"greek"}),
    **dict.fromkeys(("hi", "mr", "ne", "sa", "new", "bh", "mai"), frozenset({"devanagari"})),
}  # fmt: skip
"""The scripts a Wikipedia's text is written in (a code not listed: Latin)."""
SCRIPT_LANGUAGE = {"kana": "ja", "han": "zh", "hangul": "ko", "thai": "th", "lao": "lo", "khmer": "km",
                   "myanmar": "my", "hebrew": "he", "greek": "el"}  # fmt: skip
"""The language a script names by itself, when it is the text's main script (Kana wins over Han: Japanese
text is Han and Kana)."""
KANA_SHARE = 0.05
"""Text whose Han and Kana letters are at least this share Kana is Japanese."""
LANGUAGE_SAMPLE_CHARS = 200_000
"""Characters of a dump's first pages whose scripts are compared with the language the dump claims."""


@dataclass(frozen=True, slots=True)
class LanguageCheck:
    """The language a dump is built as: what it claims (siteinfo, a record's ``in_language``), what the
    scripts of its first pages say, what a setting says, and which one won."""

    label: str | None
    scripts: dict[str, int]
    detected: str | None
    setting: str | None
    language: str
    source: str  # "label", "scripts" or "setting"
    warning: str | None

    def to_dict(self) -> dict[str, object]:
        return {
            "label": self.label,
            "scripts": self.scripts,
            "detected": self.detected,
            "setting": self.setting,
            "language": self.language,
            "source": self.source,
            "warning": self.warning,
        }


def script_language(scripts: dict[str, int]) -> str | None:
    """The language the main script of a text names (None: no letters, or a script several languages
    write, as Latin, Cyrillic or Arabic)."""
    if not scripts:
        return None
    kana, han = scripts.get("kana", 0), scripts.get("han", 0)
    if kana and kana >= KANA_SHARE * (kana + han) and kana + han >= max(scripts.values()):
        return "ja"
    return SCRIPT_LANGUAGE.get(max(scripts, key=lambda name: scripts[name]))


def check_language(
    label: str | None, scripts: dict[str, int], setting: str | None, where: str
) -> LanguageCheck:
    """Which language a dump is built as. ``setting`` (``knowledge_source.language``) wins; else the
    label, unless the main script of the first pages contradicts it and names a language by itself, which
    then wins. A contradiction is a warning naming both (``where``: the dump)."""
    claimed = (label or "en").strip().lower()
    main = max(scripts, key=lambda name: scripts[name]) if scripts else None
    detected = script_language(scripts)
    expected = LANGUAGE_SCRIPTS.get(claimed.split("-")[0], frozenset({"latin"}))
    contradicts = main is not None and main not in expected and not (detected == "ja" and "han" in expected)
    warning = None
    if setting:
        language, source = setting, "setting"
        if contradicts:
            warning = (
                f"{where} says it is language {claimed!r}, its first pages are mostly {main} script; "
                f"built as {setting!r} (knowledge_source.language)"
            )
    elif contradicts and detected is not None:
        language, source = detected, "scripts"
        warning = (
            f"{where} says it is language {claimed!r}, but its first pages are mostly {main} script: "
            f"built as {detected!r} (set knowledge_source.language to choose another)"
        )
    else:
        language, source = claimed, "label"
        if contradicts:
            warning = (
                f"{where} says it is language {claimed!r}, but its first pages are mostly {main} "
                f"script; built as {claimed!r} (set knowledge_source.language to choose another)"
            )
    return LanguageCheck(label, scripts, detected, setting, language, source, warning)
