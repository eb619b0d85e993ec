"""Dataset readers on the real files in tests/data and on variants derived from them in code.

Nothing here is hand-written data: malformed, original-format (FEVER, HotpotQA, PAQ) and merge variants are
built from real records (KILT dummy/dev files, NQ-open, the real enwiki excerpt), as each helper says.
"""

from __future__ import annotations

import bz2
import gzip
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from assets.datasets.readers import (
    FORMATS,
    KILT_DATASETS,
    TRIVIAQA_MISSING_INPUT,
    DatasetFormatError,
    DatasetRecord,
    DuplicateIdError,
    Output,
    Provenance,
    ReadOptions,
    detect_format,
    fever_title,
    merge_triviaqa_ids,
    read_dataset,
    read_fever,
    read_fever_qrels,
    read_hotpotqa,
    read_mkqa,
    read_triviaqa,
)
from support.real_data import real_file, unpacked_data

DUMMY = "kilt/kilt_hf_dummy_first5"
EXCERPT = "wikipedia/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"

# every file of KILT's HF dummy data: name -> (dataset, split)
KILT_DUMMY_FILES = {
    f"{dataset}-{split}-kilt.jsonl": (dataset, split)
    for dataset, splits in {
        "aidayago2": ("train", "dev", "test_without_answers"),
        "cweb": ("dev", "test_without_answers"),
        "wned": ("dev", "test_without_answers"),
        "eli5": ("train", "dev", "test_without_answers"),
        "fever": ("train", "dev", "test_without_answers"),
        "hotpotqa": ("train", "dev", "test_without_answers"),
        "nq": ("train", "dev", "test_without_answers"),
        "structured_zeroshot": ("train", "dev", "test_without_answers"),
        "trex": ("train", "dev", "test_without_answers"),
        "triviaqa": ("train_id", "dev_id", "test_id_without_answers"),
        "wow": ("train", "dev", "test_without_answers"),
    }.items()
    for split in splits
}


def real_lines(path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# ------------------------------------------------------------------------------------ KILT files


def test_dummy_file_table_covers_all_eleven_datasets() -> None:
    assert {d for d, _ in KILT_DUMMY_FILES.values()} == set(KILT_DATASETS)
    assert len(KILT_DUMMY_FILES) == 31


@pytest.mark.parametrize("name", sorted(KILT_DUMMY_FILES))
def test_kilt_dummy_file(name: str) -> None:
    path = real_file(DUMMY, name)
    dataset, split = KILT_DUMMY_FILES[name]
    result = read_dataset(path)
    assert (result.format, result.dataset, result.split) == ("kilt", dataset, split)
    records = list(result)
    assert len(records) == result.n_records == 5
    assert result.n_skipped == 0
    # the KILT form round-trips every real line unchanged
    originals = [json.loads(line) for line in real_lines(path)]
    assert [r.to_kilt() for r in records] == originals
    assert all(
        isinstance(r, DatasetRecord) and r.id == str(o["id"]) for r, o in zip(records, originals, strict=True)
    )
    if "without_answers" in split:
        assert all(r.output == [] for r in records)
        assert result.counts["records_without_output"] == 5
    else:
        assert all(r.output for r in records)
    if dataset == "triviaqa":
        assert all(r.input is None for r in records)
        assert result.missing_input == 5
        assert result.problems == [(1, result.problems[0][1])]
        assert TRIVIAQA_MISSING_INPUT in result.problems[0][1]
        assert "5 record(s)" in result.problems[0][1]
    else:
        assert all(isinstance(r.input, str) and r.input for r in records)
        assert result.problems == [] and result.missing_input == 0


def test_kilt_record_shapes_from_real_files() -> None:
    fever = read_dataset(real_file(DUMMY, "fever-dev-kilt.jsonl")).records
    brody = next(r for r in fever if r.id == "105095")
    assert brody.answers == ["SUPPORTS", "SUPPORTS"]
    assert brody.titles == ["Nicholas Brody", "Carrie Mathison"]
    first = brody.provenance[0]
    assert first.wikipedia_id == "36908332" and first.start_paragraph_id == 1
    assert first.meta == {"fever_page_id": "Nicholas_Brody", "fever_sentence_id": 1}
    # NQ outputs may carry provenance without an answer (long answers): kept as they are
    nq = read_dataset(real_file(DUMMY, "nq-train-kilt.jsonl")).records
    assert any("answer" not in o.keys and o.provenance for r in nq for o in r.output)
    # zsRE keeps record meta (template questions)
    zsre = read_dataset(real_file(DUMMY, "structured_zeroshot-dev-kilt.jsonl")).records[0]
    assert zsre.input == "USA-88 [SEP] time of spacecraft launch"
    assert "What is the launch date of USA-88?" in zsre.meta["template_questions"]


def test_hotpotqa_dev_full() -> None:
    result = read_dataset(real_file("kilt", "kilt_dev_full", "hotpotqa-dev-kilt.jsonl"))
    assert (result.format, result.dataset, result.split) == ("kilt", "hotpotqa", "dev")
    assert result.n_records == 5600 and len(result.records) == 5600 and result.problems == []
    by_id = {r.id: r for r in result.records}
    assert "Albert Einstein" in by_id["5a81f49c5542995ce29dcc9a"].titles
    assert "Angola" in by_id["5a79258a55429974737f79a8"].titles
    assert by_id["5a89e0ec5542992e4fca8427"].answers == ["Objectivism"]


def test_wow_dev_full_and_lazy_reading() -> None:
    path = real_file("kilt", "kilt_dev_full", "wow-dev-kilt.jsonl")
    result = read_dataset(path, ReadOptions(lazy=True))
    assert result.dataset == "wow" and result.n_records == 0  # nothing consumed yet
    count = sum(1 for _ in result)
    assert count == result.n_records == 3054
    assert "\n" in next(iter(read_dataset(path).records)).input  # dialogue turns joined by newlines


# ---------------------------------------------------------------------------- TriviaQA (KILT + original)

TRIVIAQA = "original/triviaqa_hf_dummy"


def test_triviaqa_original_wikipedia_dev() -> None:
    result = read_dataset(real_file(TRIVIAQA, "qa", "wikipedia-dev.json"))
    assert (result.format, result.dataset, result.split) == ("triviaqa", "triviaqa", "dev")
    (record,) = result.records
    assert record.id == "tc_33"
    assert record.input == "Which Lloyd Webber musical premiered in the US on 10th December 1993?"
    assert record.answers[0] == "Sunset Boulevard"
    assert set(record.answers) == {
        "Sunset Boulevard",
        "Sunset Blvd",
        "West Sunset Boulevard",
        "Sunset Bulevard",
        "Sunset Blvd.",
    }
    assert all(o.meta == {"alias": True} for o in record.output[1:])
    (page,) = record.provenance
    assert page.title == "Andrew Lloyd Webber" and page.extra["filename"] == "Andrew_Lloyd_Webber.txt"
    evidence = real_file(TRIVIAQA, "evidence", "wikipedia", "Andrew_Lloyd_Webber.txt").read_text(
        encoding="utf-8"
    )
    assert len(evidence) < 2000  # the whole file fits in the default bound
    assert page.evidence_text == evidence and page.extra["evidence_truncated"] is False
    assert page.extra["evidence_chars"] == 2000
    assert record.meta["answer"]["NormalizedValue"] == "sunset boulevard"
    assert record.meta["domain"] == "Wikipedia"
    assert result.counts["evidence_files_read"] == 1


def test_triviaqa_original_evidence_bound_and_missing_dir(tmp_path: Path) -> None:
    path = real_file(TRIVIAQA, "qa", "wikipedia-train.json")
    (record,) = read_triviaqa(path, ReadOptions(evidence_chars=100)).records
    assert record.id == "tc_3" and record.answers[0] == "York"
    assert record.titles == ["England", "Judi Dench"]
    england = record.provenance[0]
    assert england.evidence_text.startswith("England is a country that is part of the United Kingdom.")
    assert len(england.evidence_text) == 100 and england.extra["evidence_truncated"] is True
    result = read_triviaqa(path, ReadOptions(evidence_dir=tmp_path))  # no evidence files there
    assert all(p.evidence_text is None for p in result.records[0].provenance)
    assert result.counts["evidence_files_missing"] == 2


def test_triviaqa_original_web_and_test_files() -> None:
    web = read_dataset(real_file(TRIVIAQA, "qa", "web-dev.json"))
    assert [r.id for r in web.records] == ["tc_2", "tc_33", "tc_276"]
    chipmunks = web.records[0]
    assert chipmunks.answers == ["David Seville"] and chipmunks.provenance == []
    assert [s["Filename"] for s in chipmunks.meta["search_results"]] == ["61/61_97.txt", "10/10_99.txt"]
    test = read_dataset(real_file(TRIVIAQA, "qa", "web-test-without-answers.json"))
    assert test.split == "test_without_answers"
    assert [r.output for r in test.records] == [[], [], []]
    assert test.records[0].meta["entity_pages"][0]["Title"] == "Asmara International Airport"


def test_triviaqa_original_truncated_document(tmp_path: Path) -> None:
    text = real_file(TRIVIAQA, "qa", "web-train.json").read_text(encoding="utf-8")
    cut = tmp_path / "web-train.json"
    cut.write_text(text[: len(text) // 2], encoding="utf-8")
    with pytest.raises(DatasetFormatError, match=r"web-train\.json:\d+: not a valid JSON document"):
        read_dataset(cut)


def test_merge_triviaqa_ids_real_files_do_not_overlap() -> None:
    kilt = read_dataset(real_file(DUMMY, "triviaqa-dev_id-kilt.jsonl")).records
    originals = [
        r
        for name in ("wikipedia-dev.json", "web-dev.json")
        for r in read_dataset(real_file(TRIVIAQA, "qa", name)).records
    ]
    merged = merge_triviaqa_ids(kilt, originals)
    # the HF dummy TriviaQA ids (tc_*) are not the KILT dummy ids (sfq_*, ...): nothing to merge, all reported
    assert merged.merged == 0
    assert merged.missing_ids == [r.id for r in kilt]
    assert [r.input for r in merged.records] == [None] * 5
    assert merge_triviaqa_ids(kilt, originals, drop_missing=True).records == []


def test_merge_triviaqa_ids_fills_input_of_id_only_records() -> None:
    # derived: the KILT id-only form of the real original questions (input dropped), merged back
    originals = read_dataset(real_file(TRIVIAQA, "qa", "web-train.json")).records
    id_only = [DatasetRecord(id=r.id, input=None, output=r.output, line=r.line) for r in originals]
    merged = merge_triviaqa_ids(id_only, originals)
    assert merged.merged == 3 and merged.missing_ids == []
    assert [r.input for r in merged.records] == [r.input for r in originals]
    assert all(r.input is None for r in id_only)  # inputs untouched
    # the same id with another question (derived by editing a real one) is an error
    changed = DatasetRecord(id=originals[0].id, input=originals[0].input + "?", output=[])
    with pytest.raises(ValueError, match="two different questions"):
        merge_triviaqa_ids(id_only, [*originals, changed])


# ------------------------------------------------------------------------------------- NQ-open / PAQ


def test_nq_open_dev() -> None:
    result = read_dataset(real_file("original", "nq_open", "NQ-open.dev.jsonl"))
    assert (result.format, result.dataset, result.split) == ("nq_open", "nq_open", "dev")
    assert result.n_records == 3610 and result.problems == []
    first = result.records[0]
    assert first.id == "nq_open-dev-1"
    assert first.input == "when was the last time anyone was on the moon"
    assert first.answers == ["14 December 1972 UTC", "December 1972"]
    assert result.records[-1].id == "nq_open-dev-3610"


def test_efficientqa_test_extra_fields_in_meta() -> None:
    result = read_dataset(real_file("original", "nq_open", "NQ-open.efficientqa.test.1.1.jsonl"))
    assert (result.dataset, result.split, result.n_records) == ("efficientqa", "test", 1769)
    first = result.records[0]
    assert first.id == "efficientqa-test-1"
    assert first.meta["def_correct_predictions"] == ["six geese a-laying"]
    assert "answer_and_def_correct_predictions" in first.meta


def test_paq_style_records(tmp_path: Path) -> None:
    # derived: real NQ-open questions/answers carried in PAQ's layout (answers with passage metadata)
    lines = real_lines(real_file("original", "nq_open", "NQ-open.dev.jsonl"))[:3]
    paq = tmp_path / "PAQ.sample.jsonl"
    with paq.open("w", encoding="utf-8") as out:
        for number, line in enumerate(lines):
            obj = json.loads(line)
            answers = [{"passage_id": str(number), "offset": 0, "text": a} for a in obj["answer"]]
            if number == 0:
                obj["passage_score"] = 1.0
                obj["answers"] = answers
            else:  # no plain "answer" list: the texts of "answers" are used
                obj = {"question": obj["question"], "answers": answers}
            out.write(json.dumps(obj) + "\n")
    result = read_dataset(paq)
    assert (result.format, result.dataset) == ("nq_open", "paq")
    first, second = result.records[:2]
    assert first.meta["passage_score"] == 1.0 and first.meta["answers"][0]["passage_id"] == "0"
    assert second.answers == json.loads(lines[1])["answer"]
    assert second.id == "paq-all-2"


# ------------------------------------------------------------------------------------------ FEVER


def test_fever_qrels_pair() -> None:
    topics = real_file("original", "fever", "topics.fever.dev.txt")
    qrels = real_file("original", "fever", "qrels.fever.dev.txt")
    result = read_fever_qrels(topics, qrels)
    assert (result.format, result.dataset, result.split) == ("fever_qrels", "fever", "dev")
    assert result.n_records == 9999
    assert result.counts["claims_with_provenance"] == 6666
    assert result.counts["claims_without_provenance"] == 3333
    assert result.counts["provenance"] == 8079 and result.problems == []
    by_id = {r.id: r for r in result.records}
    soul = by_id["137334"]
    assert soul.input == "Fox 2000 Pictures released the film Soul Food."
    assert [output.to_kilt() for output in soul.output] == [
        {
            "provenance": [
                {"title": "Soul Food (film)", "fever_page_id": "Soul_Food_-LRB-film-RRB-", "relevance": 2}
            ]
        }
    ]
    assert by_id["111897"].titles == ["Hispanic and Latino Americans", "Telemundo"]
    assert by_id["91198"].output == []
    # the same through read_dataset on either file of the pair
    for path in (topics, qrels):
        again = read_dataset(path)
        assert again.format == "fever_qrels" and again.counts["claims_with_provenance"] == 6666


def _original_fever_lines() -> list[dict]:
    """Original FEVER claims derived from the real KILT FEVER dev records (page ids/sentence ids from the
    provenance meta; annotation/evidence ids are not in KILT, so null)."""
    claims = []
    for record in read_dataset(real_file(DUMMY, "fever-dev-kilt.jsonl")).records:
        evidence = [
            [[None, None, p.meta["fever_page_id"], p.meta["fever_sentence_id"]] for p in o.entries]
            for o in record.output
        ]
        claims.append(
            {
                "id": int(record.id),
                "verifiable": "VERIFIABLE",
                "label": record.output[0].answer,
                "claim": record.input,
                "evidence": evidence,
            }
        )
    return claims


def test_fever_original_from_real_kilt_records(tmp_path: Path) -> None:
    claims = _original_fever_lines()
    kilt = read_dataset(real_file(DUMMY, "fever-dev-kilt.jsonl")).records
    # NOT ENOUGH INFO: a real test claim with FEVER's null evidence (label assigned here for the variant)
    nei_claim = read_dataset(real_file(DUMMY, "fever-test_without_answers-kilt.jsonl")).records[0]
    claims.append(
        {
            "id": int(nei_claim.id),
            "verifiable": "NOT VERIFIABLE",
            "label": "NOT ENOUGH INFO",
            "claim": nei_claim.input,
            "evidence": [[[269158, None, None, None]], [[269159, None, None, None]]],
        }
    )
    # a test-set claim: no label, no evidence
    test_claim = read_dataset(real_file(DUMMY, "fever-test_without_answers-kilt.jsonl")).records[1]
    claims.append({"id": int(test_claim.id), "claim": test_claim.input})
    path = tmp_path / "shared_task_dev.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in claims), encoding="utf-8")

    result = read_dataset(path)
    assert (result.format, result.dataset, result.split) == ("fever", "fever", "dev")
    assert result.n_records == 7 and result.problems == []
    for record, original in zip(result.records[:5], kilt, strict=True):
        assert record.id == original.id and record.input == original.input
        assert len(record.output) == len(original.output)  # one output per evidence set
        assert record.answers == original.answers
        assert record.titles == original.titles  # un-escaped FEVER page ids are the KILT titles
        assert [p.extra["sentence_id"] for p in record.provenance] == [
            p.meta["fever_sentence_id"] for p in original.provenance
        ]
    soul = result.records[0].provenance[0]
    assert soul.extra["fever_page_id"] == "Soul_Food_-LRB-film-RRB-" and soul.title == "Soul Food (film)"
    nei, test = result.records[5], result.records[6]
    assert nei.output == [Output.of(answer="NOT ENOUGH INFO")] and nei.meta == {
        "verifiable": "NOT VERIFIABLE"
    }
    assert test.output == []


def test_fever_original_malformed_evidence(tmp_path: Path) -> None:
    claims = _original_fever_lines()
    claims[2]["evidence"] = [["Savages_-LRB-2012_film-RRB-", 3]]  # flattened: not [ann, ev, page, sent]
    path = tmp_path / "paper_dev.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in claims), encoding="utf-8")
    result = read_fever(path)
    assert result.n_records == 4 and result.n_skipped == 1
    assert result.problems == [
        (3, "evidence[0] item must be [annotation_id, evidence_id, page, sentence_id]")
    ]


def test_fever_title() -> None:
    assert fever_title("Savages_-LRB-2012_film-RRB-") == "Savages (2012 film)"
    assert fever_title("Star_Wars-COLON-_The_Force_Awakens") == "Star Wars: The Force Awakens"
    assert fever_title("-LSB-x-RSB-_-LCB-y-RCB-") == "[x] {y}"


# ------------------------------------------------------------------------------------------- MKQA


def test_mkqa_english_default() -> None:
    result = read_dataset(real_file("original", "mkqa", "test_mkqa.jsonl.gz"))
    assert (result.format, result.dataset) == ("mkqa", "mkqa")
    assert result.n_records == 6 and all(r.id.endswith("-en") for r in result.records)
    gladiator = next(r for r in result.records if r.id == "7631360939705650347-en")
    assert gladiator.input == "who is the director of the film gladiator which was released in 2000"
    assert gladiator.answers == ["Ridley Scott", "Sir Ridley Scott"]
    assert gladiator.output[0].meta == {"type": "entity", "entity": "Q56005"}
    assert gladiator.output[1].meta["alias_of"] == "Ridley Scott"
    assert gladiator.meta["entities"] == ["Q56005"] and gladiator.meta["answer_types"] == ["entity"]
    unanswerable = next(r for r in result.records if r.id == "2961317153244610375-en")
    assert unanswerable.output == [] and unanswerable.meta["answer_types"] == ["unanswerable"]
    assert result.counts["records_without_short_answer"] == 3


def test_mkqa_all_languages_and_selection() -> None:
    path = real_file("original", "mkqa", "hf_dummy_mkqa_first5.jsonl")
    every = read_mkqa(path, ReadOptions(language="all"))
    assert every.n_records == 5 * 26 and every.problems == []
    languages = {r.meta["language"] for r in every.records}
    assert len(languages) == 26 and {"en", "ja", "zh_cn", "ar"} <= languages
    chris = {r.meta["language"]: r for r in every.records if r.meta["example_id"] == -4766029169354683727}
    assert chris["ja"].id == "-4766029169354683727-ja" and chris["ja"].answers == ["クリス・ヤング"]
    assert chris["ru"].answers == ["Янг, Крис", "Крис Янг"]
    assert all(r.meta["entities"] == ["Q952176"] for r in chris.values())
    pair = read_mkqa(path, ReadOptions(language=["de", "fr"]))
    assert pair.n_records == 10 and {r.id.rsplit("-", 1)[1] for r in pair.records} == {"de", "fr"}
    missing = read_mkqa(path, ReadOptions(language="xx"))
    assert missing.n_records == 0 and missing.n_skipped == 5
    assert "no query/answers for language 'xx'" in missing.problems[0][1]


# ------------------------------------------------------------------------- HotpotQA original format

HOTPOT_IDS = (
    "5a81f49c5542995ce29dcc9a",
    "5a79258a55429974737f79a8",
    "5a89e0ec5542992e4fca8427",
    "5a81b99c5542995ce29dcc56",
)
# for each record, a word of the record itself (answer or question) that the supporting sentence contains
HOTPOT_KEYWORDS = {"Albert Einstein": "1921", "Angola": "seventh-largest", "Ayn Rand": "Objectivism"}


def _strip_wikitext(text: str) -> str:
    """Crude plain text of a wikitext lead, enough to get real sentences (not the project's converter)."""
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = re.sub(r"<ref[^>/]*/>", "", text)
    text = re.sub(r"<ref[^>]*>.*?</ref>", "", text, flags=re.S)
    previous = None
    while previous != text:
        previous, text = text, re.sub(r"\{\{[^{}]*\}\}", "", text)
    text = re.sub(r"\[\[(?:[^|\]]*\|)?([^\]]*)\]\]", r"\1", text)
    return text.replace("'''", "").replace("''", "").replace("&nbsp;", " ")


def _excerpt_sentences(titles: set[str]) -> dict[str, list[str]]:
    """Sentences of the lead section of real pages of the enwiki excerpt."""
    found: dict[str, list[str]] = {}
    with bz2.open(real_file(EXCERPT)) as handle:
        for _, element in ET.iterparse(handle):
            if not element.tag.endswith("}page"):
                continue
            ns = element.tag[: -len("page")]
            title = element.findtext(ns + "title")
            if title in titles:
                lead = _strip_wikitext(element.findtext(f"{ns}revision/{ns}text") or "").split("\n==")[0]
                paragraphs = [p.strip() for p in lead.split("\n\n") if p.strip()[:1].isalpha()]
                found[title] = [s for p in paragraphs for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", p)]
            element.clear()
    return found


def _hotpot_original(tmp_path: Path) -> tuple[Path, list[DatasetRecord], dict[str, list[str]]]:
    """HotpotQA original-format JSON derived from the 4 real KILT dev records citing excerpt pages.

    Question, answer and supporting-fact titles come from the KILT record; context sentences from the real
    excerpt page (pages outside the excerpt have no text, so their supporting facts point outside the
    context)."""
    records = {
        r.id: r for r in read_dataset(real_file("kilt", "kilt_dev_full", "hotpotqa-dev-kilt.jsonl")).records
    }
    chosen = [records[i] for i in HOTPOT_IDS]
    sentences = _excerpt_sentences(set(HOTPOT_KEYWORDS))
    items = []
    for record in chosen:
        facts, context = [], []
        for title in record.titles:
            if title in sentences:
                sent_id = next(i for i, s in enumerate(sentences[title]) if HOTPOT_KEYWORDS[title] in s)
                facts.append([title, sent_id])
                context.append([title, sentences[title]])
            else:
                facts.append([title, 0])
        items.append(
            {
                "_id": record.id,
                "question": record.input,
                "answer": record.answers[0],
                "type": "bridge",
                "level": "hard",
                "supporting_facts": facts,
                "context": context,
            }
        )
    path = tmp_path / "hotpot_dev_distractor_v1.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    return path, chosen, sentences


def test_hotpotqa_original_supporting_sentences(tmp_path: Path) -> None:
    path, chosen, sentences = _hotpot_original(tmp_path)
    assert set(sentences) == set(HOTPOT_KEYWORDS)
    result = read_dataset(path)
    assert (result.format, result.dataset, result.split) == ("hotpotqa", "hotpotqa", "dev")
    assert [r.id for r in result.records] == list(HOTPOT_IDS)
    for record, kilt in zip(result.records, chosen, strict=True):
        assert record.input == kilt.input and record.answers == kilt.answers
        assert record.titles == kilt.titles and record.meta["type"] == "bridge"
        for prov in record.provenance:
            if prov.title in HOTPOT_KEYWORDS:
                assert prov.evidence_text == sentences[prov.title][prov.extra["sent_id"]]
                assert HOTPOT_KEYWORDS[prov.title] in prov.evidence_text
            else:
                assert prov.evidence_text is None
    einstein = result.records[0].provenance[-1]
    assert einstein.title == "Albert Einstein" and "Nobel Prize in Physics" in einstein.evidence_text
    # Cosmic catastrophe, Soyo, The Fountainhead, Atlas Shrugged (film series) are not in the excerpt
    assert result.counts["supporting_facts_without_text"] == 4
    assert result.n_skipped == 0 and len(result.problems) == 4
    assert "supporting fact ['Cosmic catastrophe', 0] is not in the context" in result.problems[0][1]


def test_hotpotqa_original_test_file_and_bad_item(tmp_path: Path) -> None:
    path, _, _ = _hotpot_original(tmp_path)
    items = json.loads(path.read_text(encoding="utf-8"))
    for item in items:  # the fullwiki test layout: no answer, no supporting facts
        del item["answer"], item["supporting_facts"]
    del items[2]["_id"]
    test = tmp_path / "hotpot_test_fullwiki_v1.json"
    test.write_text(json.dumps(items), encoding="utf-8")
    result = read_hotpotqa(test)
    assert result.split == "test" and result.n_records == 3
    assert all(r.output == [] for r in result.records)
    assert result.problems == [(3, "missing required field '_id'")]
    with pytest.raises(DatasetFormatError, match=r"hotpot_test_fullwiki_v1\.json:3: missing required field"):
        read_hotpotqa(test, ReadOptions(strict=True))


# ------------------------------------------------------------------------------- malformed variants


def _variant(tmp_path: Path, name: str, lines: list[str]) -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_truncated_json_line(tmp_path: Path) -> None:
    lines = real_lines(real_file(DUMMY, "nq-dev-kilt.jsonl"))
    lines[4] = lines[4][: len(lines[4]) // 2]  # the last line cut in half
    path = _variant(tmp_path, "nq-dev-kilt.jsonl", lines)
    result = read_dataset(path)
    assert result.n_records == 4 and result.n_skipped == 1
    assert len(result.problems) == 1
    number, message = result.problems[0]
    assert number == 5 and message.startswith("invalid JSON: ")
    with pytest.raises(DatasetFormatError, match=r"nq-dev-kilt\.jsonl:5: invalid JSON"):
        read_dataset(path, ReadOptions(strict=True))


def test_record_missing_id(tmp_path: Path) -> None:
    lines = real_lines(real_file(DUMMY, "hotpotqa-dev-kilt.jsonl"))
    record = json.loads(lines[2])
    del record["id"]
    lines[2] = json.dumps(record)
    path = _variant(tmp_path, "hotpotqa-dev-kilt.jsonl", lines)
    result = read_dataset(path)
    assert result.problems == [(3, "missing required field 'id'")]
    assert result.n_records == 4 and result.n_skipped == 1
    with pytest.raises(DatasetFormatError, match=r"hotpotqa-dev-kilt\.jsonl:3: missing required field 'id'"):
        read_dataset(path, ReadOptions(strict=True))


def test_record_missing_input_outside_triviaqa(tmp_path: Path) -> None:
    lines = real_lines(real_file(DUMMY, "fever-dev-kilt.jsonl"))
    record = json.loads(lines[1])
    del record["input"]
    lines[1] = json.dumps(record)
    result = read_dataset(_variant(tmp_path, "fever-dev-kilt.jsonl", lines))
    assert result.problems == [(2, "missing required field 'input'")] and result.missing_input == 0


def test_duplicate_id(tmp_path: Path) -> None:
    lines = real_lines(real_file(DUMMY, "wow-dev-kilt.jsonl"))
    path = _variant(tmp_path, "wow-dev-kilt.jsonl", [*lines, lines[0]])
    duplicated = json.loads(lines[0])["id"]
    with pytest.raises(DuplicateIdError, match=rf"duplicate id '{re.escape(duplicated)}' at lines 1 and 6"):
        read_dataset(path)
    assert issubclass(DuplicateIdError, ValueError)


def test_unknown_format(tmp_path: Path) -> None:
    path = real_file(DUMMY, "eli5-dev-kilt.jsonl")
    with pytest.raises(ValueError, match=r"unknown dataset format 'squad'; supported formats: kilt") as error:
        read_dataset(path, format="squad")
    assert all(name in str(error.value) for name in FORMATS)
    # a real file that is not a dataset (the NQ-open README) cannot be detected
    readme = real_file("original", "nq_open", "README.md")
    with pytest.raises(
        ValueError, match=r"cannot detect the dataset format of .*README\.md; supported formats"
    ):
        read_dataset(readme)


def test_detection_by_content_when_the_name_says_nothing(tmp_path: Path) -> None:
    copies = {
        "a.jsonl": (real_file(DUMMY, "trex-dev-kilt.jsonl"), "kilt"),
        "b.jsonl": (real_file("original", "nq_open", "NQ-open.efficientqa.dev.1.1.sample.jsonl"), "nq_open"),
        "c.jsonl": (real_file("original", "mkqa", "hf_dummy_mkqa_first5.jsonl"), "mkqa"),
        "d.json": (real_file(TRIVIAQA, "qa", "wikipedia-train.json"), "triviaqa"),
        "e.txt": (real_file("original", "fever", "topics.fever.dev.txt"), "fever_qrels"),
    }
    for name, (source, expected) in copies.items():
        copy = tmp_path / name
        copy.write_bytes(source.read_bytes())
        assert detect_format(copy)[0] == expected, name
    # an explicit format overrides the name; dataset/split can be given
    result = read_dataset(tmp_path / "a.jsonl", ReadOptions(dataset="trex", split="dev"), format="kilt")
    assert (result.dataset, result.split, result.n_records) == ("trex", "dev", 5)


def test_every_kilt_fixture_round_trips_byte_identical() -> None:
    """Every record of every KILT file shipped in tests/data read into typed records (``DatasetRecord`` with
    ``Output`` and ``Provenance``) and written back as JSON is the file, byte for byte: keys in their order,
    keys beyond KILT's (FEVER's ``meta``, ELI5's ``meta.score``...) kept, absent keys left absent."""
    files = sorted((unpacked_data() / "kilt").rglob("*-kilt.jsonl"))
    assert len(files) >= 30
    records = 0
    for path in files:
        original = path.read_bytes()
        text = original.decode("utf-8")
        ensure_ascii = text.isascii()  # KILT wrote some files with ensure_ascii=False
        lines = text.splitlines()
        typed = [DatasetRecord.from_kilt(json.loads(line)) for line in lines]
        assert all(isinstance(o, Output) for r in typed for o in r.output)
        assert all(isinstance(p, Provenance) for r in typed for p in r.provenance)
        written = "\n".join(json.dumps(r.to_kilt(), ensure_ascii=ensure_ascii) for r in typed)
        written += "\n" if text.endswith("\n") else ""
        assert written.encode("utf-8") == original, path.name
        records += len(typed)
    assert records > 8000


def test_typed_provenance_keeps_key_order_extras_and_absence() -> None:
    """A provenance entry built in code keeps the order it was given; an extra key survives; a key that was
    never set is absent from the JSON (not null), and ``with_provenance`` keeps the key's place."""
    entry = Provenance.of(title="Soul Food (film)", fever_page_id="Soul_Food_-LRB-film-RRB-", sentence_id=0)
    assert entry.to_kilt() == {
        "title": "Soul Food (film)",
        "fever_page_id": "Soul_Food_-LRB-film-RRB-",
        "sentence_id": 0,
    }
    assert list(entry.to_kilt()) == ["title", "fever_page_id", "sentence_id"] and entry.span is None
    assert entry.extra == {"fever_page_id": "Soul_Food_-LRB-film-RRB-", "sentence_id": 0}
    output = Output.from_kilt({"provenance": [], "answer": "SUPPORTS"})
    mapped = output.with_provenance(
        [
            Provenance.of(
                wikipedia_id="1",
                title="A",
                start_paragraph_id=1,
                start_character=0,
                end_paragraph_id=1,
                end_character=5,
            )
        ]
    )
    assert list(mapped.to_kilt()) == ["provenance", "answer"] and mapped.entries[0].span == (1, 0, 1, 5)
    assert list(Output.of(answer="x").with_provenance([]).to_kilt()) == ["answer", "provenance"]


def test_typed_entries_built_directly_write_the_keys_they_hold() -> None:
    assert Provenance(wikipedia_id="12", title="Anarchism", extra={"relevance": 1}).to_kilt() == {
        "wikipedia_id": "12",
        "title": "Anarchism",
        "relevance": 1,
    }
    assert Output(answer="yes", provenance=[Provenance(title="A")]).to_kilt() == {
        "answer": "yes",
        "provenance": [{"title": "A"}],
    }


def test_mintaka_dev_every_answer_kind_and_translations(tmp_path: Path) -> None:
    """The real Mintaka dev set (2,000 questions): entity answers carry their QID as MKQA's do, values are
    written as text, the question's entities go to ``meta``; a translation is one more record; derived
    variants with a broken answer or question are counted problems, never a crash."""
    path = real_file("kbqa", "mintaka_dev_v1.0.json.gz")
    assert detect_format(path)[0] == "mintaka"
    result = read_dataset(path)
    records = list(result.records)
    assert len(records) == 2000 and not result.problems
    first = records[0]
    assert (first.id, first.input) == ("9ace9041", "What is the fourth book in the Twilight series?")
    assert first.output[0].answer == "Breaking Dawn" and first.output[0].meta["entity"] == "Q53945"
    assert first.meta["question_entities"][0]["name"] == "Q44523" and first.meta["entities"] == ["Q53945"]
    kinds = {r.meta["answer_type"]: r for r in records}
    assert kinds["boolean"].output[0].answer in ("Yes", "No")
    assert kinds["numerical"].output[0].answer.lstrip("-").replace(".", "").isdigit()
    both = list(read_dataset(path, ReadOptions(language=["en", "fr"])).records)
    assert len(both) == 4000 and both[1].id == "9ace9041-fr" and both[1].input.startswith("Quel")
    raw = json.loads(gzip.decompress(path.read_bytes()))
    broken = [
        dict(raw[0], answer={"answerType": "entity", "answer": "Breaking Dawn"}),
        dict(raw[1], question=None),
        dict(raw[2], answer={"answerType": "entity", "answer": [[{"name": "Q1"}]]}),
        "not an object",
        *raw[3:10],
    ]
    variant = tmp_path / "mintaka_dev.json"
    variant.write_text(json.dumps(broken))
    result = read_dataset(variant)
    assert len(list(result.records)) == 7 and len(result.problems) == 4
    assert all(isinstance(number, int) for number, _ in result.problems)
