"""KILT's evaluation, number for number (``assets.indexes.evaluation.kilt_metrics``).

The records are real KILT dev records (``../shared/data/kilt``) with their outputs rewritten in code into
the cases KILT's own tests use (its ``gold1``/``guess1_1`` answers, its ``gold2``/``guess2_1`` ranking)
and the cases where our earlier evaluation disagreed with KILT. The reference values are those KILT's
``tests/test_eval_*.py`` assert. A property test compares thousands of random gold/guess pairs with a
second, deliberately literal re-derivation of KILT's procedure written here.
"""

from __future__ import annotations

import copy
import json
import random
from collections import defaultdict

import pytest

from assets.indexes.evaluation import (
    KiltEvaluationError,
    RetrievalMeans,
    downstream_metrics,
    normalize_answer,
    record_retrieval_metrics,
    retrieval_metrics,
)
from support.real_data import real_file

RANK_KEYS = (
    ["wikipedia_id"],
    ["wikipedia_id", "section"],
    ["wikipedia_id", "start_paragraph_id", "end_paragraph_id"],
)


def _records(name: str) -> list[dict]:
    path = real_file("kilt", "kilt_hf_dummy_first5", name)
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def zsre() -> list[dict]:
    return _records("structured_zeroshot-dev-kilt.jsonl")


@pytest.fixture(scope="module")
def page_pool() -> list[dict]:
    """Real provenance entries of KILT dev records (their page ids, sections, paragraphs)."""
    entries = []
    for name in (
        "hotpotqa-dev-kilt.jsonl",
        "nq-dev-kilt.jsonl",
        "fever-dev-kilt.jsonl",
        "structured_zeroshot-dev-kilt.jsonl",
    ):
        for record in _records(name):
            for output in record["output"]:
                entries.extend(output.get("provenance") or [])
    unique = {p["wikipedia_id"]: p for p in entries}
    assert len(unique) >= 12
    return list(unique.values())


def _entry(pool: list[dict], n: int) -> dict:
    """The n-th real provenance entry, with the rank keys KILT's gold2 fixture varies."""
    p = pool[n]
    return {
        "wikipedia_id": p["wikipedia_id"],
        "title": p.get("title"),
        "section": p.get("section", ""),
        "start_paragraph_id": p.get("start_paragraph_id", 0),
        "end_paragraph_id": p.get("end_paragraph_id", 0),
    }


# ------------------------------------------------------------------------- KILT's fixtures, rederived
def test_gold2_guess2_1_ranking(zsre, page_pool) -> None:
    """KILT's gold2/guess2_1: evidence sets {1, 2}, {5}, {7, 9, 11}; ranking 2 5 7 33 1 9 44 88."""
    ids = {n: i for i, n in enumerate((1, 2, 5, 7, 9, 11, 33, 44, 88))}
    gold = copy.deepcopy(zsre[0])
    gold["output"] = [
        {"answer": a, "provenance": [_entry(page_pool, ids[n]) for n in group]}
        for a, group in (("test1", (1, 2)), ("test2", (5,)), ("test3", (7, 9, 11)))
    ]
    guess = {
        "id": gold["id"],
        "output": [{"provenance": [_entry(page_pool, ids[n]) for n in (2, 5, 7, 33, 1, 9, 44, 88)]}],
    }
    for rank_keys in RANK_KEYS:
        result = retrieval_metrics([gold], [guess], ks=[1, 3, 4, 5], rank_keys=rank_keys)
        assert result["Rprec"] == 1 / 2
        assert result["precision@1"] == 1 and result["precision@5"] == 2 / 5
        assert result["recall@5"] == 2 / 3 and result["success_rate@5"] == 1
        # the set {1, 2} completes at rank 5, and its place at rank 1 is dropped: a hit within the top 3
        assert result["recall@3"] == result["recall@4"] == 2 / 3


def test_gold1_guess1_1_downstream(zsre) -> None:
    """KILT's gold1/guess1_1, rederived from a real zsRE record with a one-word answer: the same answers
    ('x', 'x', 'it was x' against 'x', 'a x', 'x') and the same provenance pattern (right, wrong, wrong)."""
    base = next(r for r in zsre if len(r["output"][0]["answer"].split()) == 1)
    word, page = base["output"][0]["answer"], base["output"][0]["provenance"][0]
    gold, guess = [], []
    for n, (gold_answer, guess_answer, right_page) in enumerate(
        ((word, word, True), (word, f"a {word}", False), (f"it was {word}", word, False)), start=1
    ):
        record = copy.deepcopy(base)
        record["id"] = f"{base['id']}-{n}"
        record["output"] = [{"answer": gold_answer, "provenance": [page]}]
        gold.append(record)
        wrong = {**page, "wikipedia_id": str(int(page["wikipedia_id"]) + 1)}
        guess.append(
            {
                "id": record["id"],
                "output": [{"answer": guess_answer, "provenance": [page if right_page else wrong]}],
            }
        )
    result = downstream_metrics(gold, guess)
    assert result["kilt"]["KILT-em"] == 1 / 3 and result["kilt"]["KILT-f1"] == 1 / 3
    assert result["kilt"]["KILT-rougel"] == 0.3333333316666667
    assert result["downstream"]["em"] == 2 / 3 and result["downstream"]["f1"] == 0.8333333333333334
    assert result["downstream"]["rougel"] == 0.7222222178240741
    assert result["retrieval"] == {"Rprec": 1 / 3, "recall@5": 1 / 3}
    itself = downstream_metrics(gold, gold)
    assert itself["kilt"]["KILT-em"] == 1 and itself["downstream"]["rougel"] == 0.999999995


# --------------------------------------------------------------- where the earlier evaluation differed
def _gold_with(zsre: list[dict], outputs: list[dict]) -> dict:
    gold = copy.deepcopy(zsre[1])
    gold["output"] = outputs
    return gold


def _guess_of(gold: dict, entries: list[dict]) -> dict:
    return {"id": gold["id"], "output": [{"provenance": entries}]}


def test_duplicate_evidence_sets_count_once(zsre, page_pool) -> None:
    a, b, c = (_entry(page_pool, n) for n in range(3))
    gold = _gold_with(zsre, [{"provenance": [a]}, {"provenance": [a]}, {"provenance": [b]}])
    metrics = record_retrieval_metrics(_guess_of(gold, [a, c]), gold, ks=[2])
    assert metrics["recall@2"] == 1 / 2  # two distinct sets, {a} found


def test_an_empty_provenance_list_is_a_set_no_guess_completes(zsre, page_pool) -> None:
    a, c = _entry(page_pool, 0), _entry(page_pool, 2)
    gold = _gold_with(zsre, [{"provenance": [a]}, {"answer": "x", "provenance": []}])
    assert record_retrieval_metrics(_guess_of(gold, [a, c]), gold, ks=[2])["recall@2"] == 1 / 2


def test_records_without_provenance_score_zero_and_count(zsre, page_pool) -> None:
    a = _entry(page_pool, 0)
    with_provenance = _gold_with(zsre, [{"answer": "x", "provenance": [a]}])
    without = copy.deepcopy(zsre[2])
    without["output"] = [{"answer": "y"}]
    result = retrieval_metrics(
        [with_provenance, without], [_guess_of(with_provenance, [a]), _guess_of(without, [a])], ks=[1]
    )
    assert result["Rprec"] == 1 / 2 and result["precision@1"] == 1 / 2


def test_records_without_input_are_scored(zsre, page_pool) -> None:
    a = _entry(page_pool, 0)
    gold = _gold_with(zsre, [{"provenance": [a]}])
    del gold["input"]
    result = retrieval_metrics([gold], [_guess_of(gold, [a])], ks=[1])
    assert result["Rprec"] == 1 and result["entity_in_input"] == 0


def test_in_context_metrics_read_the_passage_text(zsre) -> None:
    gold = copy.deepcopy(zsre[1])
    answer, title = gold["output"][0]["answer"], gold["output"][0]["provenance"][0]["title"]
    page = gold["output"][0]["provenance"][0]
    guess = _guess_of(
        gold, [{**page, "text": "unrelated"}, {**page, "text": f"The {answer.upper()}, of {title}!"}]
    )
    metrics = record_retrieval_metrics(guess, gold, ks=[1, 2])
    assert metrics["answer_in_context@1"] == 0 and metrics["answer_in_context@2"] == 1
    assert metrics["answer_and_ent_in_context@2"] == 1 and metrics["entity_in_context@2"] == 1
    assert metrics["entity_in_input"] == float(normalize_answer(title) in normalize_answer(gold["input"]))


def test_refuses_what_kilt_refuses(zsre) -> None:
    gold = zsre[:2]
    with pytest.raises(KiltEvaluationError, match="no prediction"):
        retrieval_metrics(gold, [_guess_of(gold[0], [])])
    with pytest.raises(KiltEvaluationError, match="appears twice"):
        retrieval_metrics(gold[:1], [_guess_of(gold[0], []), _guess_of(gold[0], [])])
    with pytest.raises(KiltEvaluationError, match="exactly one output with provenance"):
        retrieval_metrics(gold[:1], [{"id": gold[0]["id"], "output": [{"answer": "x"}]}])


# ------------------------------------------------------------------------------- property test
def _literal_kilt(guess: dict, gold: dict, ks: list[int], rank_keys: list[str]) -> dict[str, float]:
    """KILT's eval_retrieval rules for one record, step by step as its procedure states them."""

    def ids_per_output(item: dict) -> list[list[str]]:
        lists = []
        for output in item["output"]:
            current = []
            for p in output.get("provenance", []):
                if all(key in p for key in rank_keys):
                    value = "+".join(str(p[key]).strip() for key in rank_keys)
                    if value not in current:
                        current.append(value)
            lists.append(current)
        return lists

    guess_ids = ids_per_output(guess)[0]
    rprec = max(
        (sum(1 for g in guess_ids[: len(gold_ids)] if str(g).strip() in gold_ids) / len(gold_ids))
        if gold_ids
        else 0
        for gold_ids in ids_per_output(gold)
    )
    out = {"Rprec": rprec}
    for k in ks:
        rank, distinct = [], 0
        if guess_ids:
            sets, sizes = [], defaultdict(int)
            for output in gold["output"]:
                if "provenance" in output:
                    s = {
                        "+".join(str(p[key]).strip() for key in rank_keys if key in p)
                        for p in output["provenance"]
                    }
                    if s not in sets:
                        sets.append(s)
                        sizes[len(s)] += 1
            distinct = len(sets)
            for g in guess_ids:
                g = str(g).strip()
                found = False
                for idx, s in enumerate(sets):
                    name = f"evidence_set:{idx}"
                    if g in s:
                        found = True
                        if name in rank:
                            rank.remove(name)
                        s.remove(g)
                        rank.append(True if len(s) == 0 else name)
                if not found:
                    rank.append(False)
        out[f"precision@{k}"] = rank[:k].count(True) / k if distinct else 0
        if k > 1:
            out[f"recall@{k}"] = rank[:k].count(True) / distinct if distinct else 0
            out[f"success_rate@{k}"] = int(True in rank[:k]) if distinct else 0
    return out


def test_thousands_of_random_cases_agree_with_the_literal_rules(page_pool) -> None:
    rng = random.Random(20261123)
    ks = [1, 2, 3, 5, 10]
    pool = [_entry(page_pool, n) for n in range(12)]
    compared = 0
    for _ in range(4000):
        rank_keys = rng.choice(RANK_KEYS)
        gold_outputs = []
        for _ in range(rng.randint(1, 4)):
            output: dict = {"answer": "x"}
            if rng.random() < 0.9:
                output["provenance"] = [copy.deepcopy(rng.choice(pool)) for _ in range(rng.randint(0, 3))]
                for entry in output["provenance"]:
                    if rng.random() < 0.1:
                        entry.pop(
                            rng.choice(rank_keys)
                        )  # a rank key missing: left out of Rprec, kept in sets
            gold_outputs.append(output)
        gold = {"id": "r", "input": "q", "output": gold_outputs}
        guess = {
            "id": "r",
            "output": [{"provenance": [copy.deepcopy(rng.choice(pool)) for _ in range(rng.randint(0, 12))]}],
        }
        ours = record_retrieval_metrics(guess, gold, ks, rank_keys)
        literal = _literal_kilt(copy.deepcopy(guess), copy.deepcopy(gold), ks, list(rank_keys))
        assert {key: ours[key] for key in literal} == literal, (gold, guess, rank_keys)
        compared += 1
    assert compared == 4000


def test_kiltpipe_eval_guess_gold(kiltpipe, zsre, tmp_path) -> None:
    """``kiltpipe eval --guess --gold`` on files: KILT's names, retrieval and downstream."""
    gold_path, guess_path = tmp_path / "gold.jsonl", tmp_path / "guess.jsonl"
    gold_path.write_text("".join(json.dumps(r) + "\n" for r in zsre), encoding="utf-8")
    guesses = [
        {
            "id": r["id"],
            "output": [{"answer": r["output"][0]["answer"], "provenance": r["output"][0]["provenance"][:1]}],
        }
        for r in zsre
    ]
    guesses[0]["output"][0]["provenance"] = []
    guess_path.write_text("".join(json.dumps(g) + "\n" for g in reversed(guesses)), encoding="utf-8")
    code, out, err = kiltpipe("eval", "--guess", guess_path, "--gold", gold_path, "--ks", "1,5")
    assert code == 0, err
    result = json.loads(out)
    assert result["retrieval"]["Rprec"] == (len(zsre) - 1) / len(zsre)
    assert result["downstream"]["em"] == 1 and result["kilt"]["KILT-em"] == (len(zsre) - 1) / len(zsre)
    assert "success_rate@5" in result["retrieval"] and "KILT evaluation" in err
    code, _, err = kiltpipe("eval", "--guess", guess_path)
    assert code == 2 and "--guess and --gold go together" in err


def test_kiltpipe_eval_names_bad_files(kiltpipe, zsre, tmp_path) -> None:
    gold_path, guess_path = tmp_path / "gold.jsonl", tmp_path / "guess.jsonl"
    gold_path.write_text("".join(json.dumps(r) + "\n" for r in zsre), encoding="utf-8")
    guess_path.write_text(json.dumps({"id": zsre[0]["id"], "output": [{"provenance": []}]}) + "\n{not json\n")
    code, _, err = kiltpipe("eval", "--guess", guess_path, "--gold", gold_path)
    assert code == 2 and f"{guess_path}:2: not JSON" in err
    guess_path.write_text(json.dumps({"id": zsre[0]["id"], "output": [{"provenance": []}]}) + "\n")
    code, _, err = kiltpipe("eval", "--guess", guess_path, "--gold", gold_path)
    assert code == 2 and f"no prediction for {len(zsre) - 1} gold id(s)" in err
    code, _, err = kiltpipe("eval", "--guess", tmp_path / "missing.jsonl", "--gold", gold_path)
    assert code == 2 and "missing.jsonl" in err


def test_means_fed_in_chunks_are_the_one_pass_floats(page_pool) -> None:
    """The evaluation scores a split chunk by chunk (memory: one chunk): the means are the very floats of
    one pass over every record, and a gold id repeated in a later chunk is refused as in one file."""
    rng = random.Random(7)
    pool = [_entry(page_pool, n) for n in range(12)]
    gold, guesses = [], []
    for n in range(257):
        provenance = [copy.deepcopy(rng.choice(pool)) for _ in range(rng.randint(1, 3))]
        gold.append({"id": f"r{n}", "input": "q", "output": [{"answer": "x", "provenance": provenance}]})
        ranked = [copy.deepcopy(rng.choice(pool)) for _ in range(rng.randint(0, 12))]
        guesses.append({"id": f"r{n}", "output": [{"provenance": ranked}]})
    whole = retrieval_metrics(gold, guesses, ks=[1, 5, 10])
    for size in (1, 10, 100):
        means = RetrievalMeans([1, 5, 10])
        for start in range(0, len(gold), size):
            means.add(gold[start : start + size], guesses[start : start + size])
        assert means.count == len(gold) and means.means() == whole, size
    with pytest.raises(KiltEvaluationError, match="not unique"):
        means.add(gold[:1], guesses[:1])
