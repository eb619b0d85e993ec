"""MKQA's 26 languages: their Wikipedia, their BM25 analyzer, and the dense model a snapshot's language
picks; the real MKQA records read per language."""

from __future__ import annotations

import pytest

from assets.datasets.readers import ReadOptions, read_dataset
from assets.indexes.settings import IndexSettings
from assets.languages import (
    ANALYZER_FALLBACKS,
    MKQA_LANGUAGES,
    check_language,
    language_table,
    mkqa_codes_for,
    resolve_language,
    wiki_language,
)
from assets.params import IndexesParams
from support.real_data import real_file


def test_every_mkqa_language_of_the_real_records_is_in_the_table() -> None:
    result = read_dataset(
        real_file("original", "mkqa", "test_mkqa.jsonl.gz"), ReadOptions(language="all"), format="mkqa"
    )
    seen = {record.meta["language"] for record in result.records}
    assert seen == {item.code for item in MKQA_LANGUAGES} and len(seen) == 26


def test_wikipedia_and_analyzer_of_each_language() -> None:
    rows = {row["mkqa"]: row for row in language_table()}
    assert {code: rows[code]["wikipedia"] for code in ("zh_cn", "zh_hk", "zh_tw", "no", "ja")} == {
        "zh_cn": "zhwiki", "zh_hk": "zhwiki", "zh_tw": "zhwiki", "no": "nowiki", "ja": "jawiki",
    }  # fmt: skip
    fallbacks = {code for code, row in rows.items() if row["analyzer_source"] == "fallback"}
    assert fallbacks == set(ANALYZER_FALLBACKS) == {"he", "ms", "vi"}
    assert (
        rows["ms"]["analyzer"] == "id"
        and rows["zh_tw"]["analyzer"] == "zh"
        and rows["th"]["analyzer"] == rows["km"]["analyzer"] == "whitespace"  # ICU's words, pre-tokenized
    )
    assert {code for code, row in rows.items() if row["analyzer_source"] == "ICU words, pre-tokenized"} == {
        "th",
        "km",
    }
    assert sum(row["analyzer_source"] == "Anserini" for row in rows.values()) == 21
    assert resolve_language("lo") == resolve_language("my") == ("whitespace", None)
    analyzer, note = resolve_language("he")
    assert analyzer == "en" and "no Hebrew analyzer" in note
    assert resolve_language("bg")[0] == "en" and "falling back to English" in resolve_language("bg")[1]


def test_a_dump_is_the_language_its_scripts_name_unless_a_setting_says() -> None:
    thai = {"thai": 9000, "latin": 400}
    check = check_language("en", thai, None, "berlin.xml")
    assert (check.language, check.source, check.detected) == ("th", "scripts", "th")
    assert "berlin.xml says it is language 'en'" in check.warning and "thai script" in check.warning
    assert check_language("en", thai, "lo", "x").language == "lo"  # the setting wins, still warned
    assert check_language("en", thai, "lo", "x").warning
    japanese = {"han": 5000, "kana": 3000, "latin": 800}
    assert check_language("ja", japanese, None, "x").warning is None
    assert check_language("zh", {"han": 9000, "latin": 300}, None, "x").warning is None
    assert check_language("ko", {"hangul": 6000, "han": 900}, None, "x").warning is None
    # Latin text under a Japanese label: warned, the label kept (Latin names no language by itself)
    english_as_ja = check_language("ja", {"latin": 9000}, None, "x")
    assert english_as_ja.language == "ja" and english_as_ja.source == "label" and english_as_ja.warning
    assert check_language("en", {}, None, "x").warning is None


def test_snapshot_language_to_mkqa_codes() -> None:
    assert mkqa_codes_for("zh") == ["zh_cn", "zh_hk", "zh_tw"]
    assert mkqa_codes_for("nb") == ["no"] and mkqa_codes_for("ja") == ["ja"]
    assert mkqa_codes_for("bg") == [] and mkqa_codes_for(None) == []
    assert wiki_language("zh_tw") == "zh" and wiki_language("pt-BR") == "pt-br"


def test_language_models_pick_the_dense_model_of_a_snapshot() -> None:
    section = IndexesParams.model_validate(
        {"dense": {"language_models": {"ja": "multilingual-a", "*": "multilingual-b"}}}
    )
    dense = IndexSettings.from_params(section).dense
    assert dense.model == "default"
    assert dense.for_language("ja").model == "multilingual-a"
    assert dense.for_language("zh").model == "multilingual-b"  # "*": any language not named
    assert IndexSettings.from_params(IndexesParams()).dense.for_language("ja").model == "default"
    only_ja = IndexSettings.from_params(
        IndexesParams.model_validate({"dense": {"language_models": {"ja": "m"}}})
    ).dense
    assert only_ja.for_language("en").model == "default" and only_ja.for_language(None) is only_ja


@pytest.mark.parametrize("code", ["km", "zh_hk", "ar"])
def test_mkqa_records_of_one_language(code: str) -> None:
    result = read_dataset(
        real_file("original", "mkqa", "test_mkqa.jsonl.gz"), ReadOptions(language=[code]), format="mkqa"
    )
    records = list(result.records)
    assert len(records) == 6 and all(r.id.endswith(f"-{code}") for r in records)


def test_each_index_type_takes_its_params_section_as_it_is() -> None:
    """Each built-in index type's settings class is its ``indexes`` section of the params model (a subclass
    that adds behaviour and no field: nothing restated), every field of every params section is documented
    by a docstring, and a section's value reaches its field."""
    import ast
    import inspect

    from assets.params import Params

    section = IndexesParams.model_validate(
        {"bm25": {"k1": 0.82, "threads": 3}, "hybrid": {"depth": 50}, "rerank": {"depth": 7}}
    )
    settings = IndexSettings.from_params(section)
    for name in ("bm25", "dense", "hybrid", "rerank"):
        kind, model = type(getattr(settings, name)), type(getattr(section, name))
        assert issubclass(kind, model) and kind.model_fields.keys() == model.model_fields.keys(), name
        body = ast.parse(inspect.getsource(kind)).body[0].body
        assert not [node for node in body if isinstance(node, ast.AnnAssign)], f"{name} restates a field"

    def sections(model: type) -> list[type]:
        nested = [f.annotation for f in model.model_fields.values() if isinstance(f.annotation, type)]
        return [model, *(s for n in nested if hasattr(n, "model_fields") for s in sections(n))]

    undocumented = [
        f"{model.__name__}.{name}"
        for model in sections(Params)
        for name, field in model.model_fields.items()
        if not field.description
    ]
    assert undocumented == []
    chosen = (settings.bm25.k1, settings.bm25.threads, settings.hybrid.depth, settings.rerank.depth)
    assert chosen == (0.82, 3, 50, 7)
    dense = settings.dense.replace(factory="IVF8,Flat", model=None)
    assert dense.factory == "IVF8,Flat" and dense.model == "default"
    assert IndexSettings.from_params(IndexesParams()) == IndexSettings.from_params(IndexesParams())
