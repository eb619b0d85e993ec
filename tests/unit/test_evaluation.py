"""A retriever's ranked passages scored by KILT's rules (``assets.indexes.evaluation``), on real KILT
dev records: passages collapse to pages as KILT's ids do, every gold record counts, both names."""

from __future__ import annotations

import copy
import json

from assets.indexes.evaluation import evaluate, guess_of
from assets.indexes.hits import Hit
from support.real_data import real_file


def _zsre() -> list[dict]:
    path = real_file("kilt", "kilt_hf_dummy_first5", "structured_zeroshot-dev-kilt.jsonl")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _hits(*pages: str) -> list[Hit]:
    return [Hit(f"{page}-{n}", page, 1.0 / (n + 1), None, None) for n, page in enumerate(pages)]


def test_passages_of_one_page_are_one_guess_id_and_records_without_provenance_count() -> None:
    gold = _zsre()[:3]
    pages = [r["output"][0]["provenance"][0]["wikipedia_id"] for r in gold]
    no_provenance = copy.deepcopy(gold[2])
    no_provenance["output"] = [{"answer": no_provenance["output"][0]["answer"]}]
    no_input = copy.deepcopy(gold[1])
    del no_input["input"]
    records = [gold[0], no_input, no_provenance]
    hits = {
        gold[0]["id"]: _hits("1", pages[0], pages[0], "2"),  # the page at rank 2, twice: one id
        no_provenance["id"]: _hits(pages[2]),
    }
    scores = evaluate(records, hits, ks=(1, 5))
    assert scores["queries"] == 3 and scores["without_provenance"] == 1
    assert scores["Rprec"] == 0.0 and "R-precision" not in scores  # R = 1 and rank 1 is another page
    assert scores["precision@1"] == 0 and scores["recall@5"] == scores["success_rate@5"] == round(1 / 3, 4)
    assert "recall@1" not in scores and "success_rate@5" in scores  # KILT reports recall for k > 1 only


def test_a_guess_carries_the_passage_text_for_the_in_context_metrics() -> None:
    guess = guess_of("q", [Hit("12-0", "12", 3.5, "Anarchism", "Anarchism is a political philosophy")])
    assert guess == {
        "id": "q",
        "output": [
            {
                "provenance": [
                    {
                        "wikipedia_id": "12",
                        "passage_id": "12-0",
                        "title": "Anarchism",
                        "text": "Anarchism is a political philosophy",
                    }
                ]
            }
        ],
    }
