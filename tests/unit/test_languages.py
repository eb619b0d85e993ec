"""MKQA's 26 languages: their Wikipedia, their BM25 analyzer, and the dense model a snapshot's language
picks; the real MKQA records read per language."""

from __future__ import annotations

import pytest

from assets.datasets.readers import read_dataset
from assets.indexes.retrieval import IndexSettings
from assets.params import IndexesParams
from assets.wikipedia.languages import (
    ANALYZER_FALLBACKS,
    MKQA_LANGUAGES,
    language_table,
    mkqa_codes_for,
    resolve_language,
    wiki_language,
)
from support.real_data import real_file


def test_every_mkqa_language_of_the_real_records_is_in_the_table() -> None:
    result = read_dataset(real_file("original", "mkqa", "test_mkqa.jsonl.gz"), format="mkqa", language="all")
    seen = {record.meta["language"] for record in result.records}
    assert seen == {item.code for item in MKQA_LANGUAGES} and len(seen) == 26


def test_wikipedia_and_analyzer_of_each_language() -> None:
    rows = {row["mkqa"]: row for row in language_table()}
    assert {code: rows[code]["wikipedia"] for code in ("zh_cn", "zh_hk", "zh_tw", "no", "ja")} == {
        "zh_cn": "zhwiki", "zh_hk": "zhwiki", "zh_tw": "zhwiki", "no": "nowiki", "ja": "jawiki",
    }  # fmt: skip
    fallbacks = {code for code, row in rows.items() if row["analyzer_source"] == "fallback"}
    assert fallbacks == set(ANALYZER_FALLBACKS) == {"he", "km", "ms", "vi"}
    assert (
        rows["ms"]["analyzer"] == "id"
        and rows["zh_tw"]["analyzer"] == "zh"
        and rows["th"]["analyzer"] == "th"
    )
    assert sum(row["analyzer_source"] == "Anserini" for row in rows.values()) == 22
    analyzer, note = resolve_language("he")
    assert analyzer == "en" and "no Hebrew analyzer" in note
    assert resolve_language("bg")[0] == "en" and "falling back to English" in resolve_language("bg")[1]


def test_snapshot_language_to_mkqa_codes() -> None:
    assert mkqa_codes_for("zh") == ["zh_cn", "zh_hk", "zh_tw"]
    assert mkqa_codes_for("nb") == ["no"] and mkqa_codes_for("ja") == ["ja"]
    assert mkqa_codes_for("bg") == [] and mkqa_codes_for(None) == []
    assert wiki_language("zh_tw") == "zh" and wiki_language("pt-BR") == "pt-br"


def test_language_models_pick_the_dense_model_of_a_snapshot() -> None:
    section = IndexesParams.model_validate(
        {"dense": {"language_models": {"ja": "multilingual-a", "*": "multilingual-b"}}}
    )
    settings = IndexSettings.from_params(section)
    assert settings.model == "default"
    assert settings.for_language("ja").model == "multilingual-a"
    assert settings.for_language("zh").model == "multilingual-b"  # "*": any language not named
    assert IndexSettings.from_params(IndexesParams()).for_language("ja").model == "default"
    only_ja = IndexSettings.from_params(
        IndexesParams.model_validate({"dense": {"language_models": {"ja": "m"}}})
    )
    assert only_ja.for_language("en").model == "default" and only_ja.for_language(None) is only_ja


@pytest.mark.parametrize("code", ["km", "zh_hk", "ar"])
def test_mkqa_records_of_one_language(code: str) -> None:
    result = read_dataset(real_file("original", "mkqa", "test_mkqa.jsonl.gz"), format="mkqa", language=[code])
    records = list(result.records)
    assert len(records) == 6 and all(r.id.endswith(f"-{code}") for r in records)


def test_index_settings_are_params_flattened_by_one_rule() -> None:
    """Every ``indexes`` key of params.yaml is one :class:`IndexSettings` field and back (no hand mapping to
    keep in step), and a section's value (here from a real params file's shape) reaches its field."""
    import dataclasses

    from assets.indexes.retrieval import flat_index_params

    section = IndexesParams.model_validate(
        {"bm25": {"k1": 0.82, "threads": 3}, "hybrid": {"depth": 50}, "rerank": {"depth": 7}}
    )
    flat = flat_index_params(section)
    assert set(flat) == {field.name for field in dataclasses.fields(IndexSettings)}
    settings = IndexSettings.from_params(section, factory="IVF8,Flat")
    chosen = (settings.k1, settings.bm25_threads, settings.hybrid_depth, settings.rerank_depth)
    assert chosen == (0.82, 3, 50, 7)
    assert settings.factory == "IVF8,Flat" and IndexSettings() == IndexSettings.from_params(IndexesParams())
