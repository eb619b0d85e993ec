"""The ``kb`` collection retrieved, on the built snapshot (``make demo``: the excerpt and the real entities
of tests/data):

* **SimpleQuestions over Wikidata** (the validation and training questions shipped in tests/data) whose
  subject is a subject of the KB and whose gold fact (``subject property object``; ``R``-properties the
  inverse) is a statement of a ``kb`` passage: success@5 of a passage citing the gold statement, for BM25,
  dense and hybrid over ``kb``;
* **slot filling, KILT's format** (``subject [SEP] relation``): the real T-REx and zsRE inputs of
  tests/data (the first records of KILT's files), and inputs derived in code from the same SimpleQuestions
  facts (the subject's and the property's labels from the KB; the answers: the object's label and
  aliases): answer recall@5 (an answer string in one of the top 5 passages' text) with ``kb`` against
  ``text``, measured in the same run.

Honest, small numbers: the KB is the excerpt's (the entities of the test files); the script says how many
questions each figure is over. Figures to ``benchmarks/results/kb_facts.json``.

    .venv/bin/python benchmarks/bench_kb_facts.py [--data-dir data] [--snapshot ID]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pyarrow.parquet as pq

from assets.indexes import Retriever, searcher_key
from assets.params import data_dir as default_data_dir
from assets.reading import Snapshot
from assets.storage import resolve_snapshot
from assets.wikidata import KnowledgeBase
from benchmarks.common import format_table, machine_info, write_results
from support.real_data import real_file
from support.workspace import log

INDEXES = ("bm25", "dense", "hybrid")
K = 5


SPLITS = ("valid", "train")


def _simple_rows(split: str) -> list[list[str]]:
    """``[subject, property (R: inverse), object, question]`` of a SimpleQuestions split."""
    text = real_file("kbqa", f"annotated_wd_data_{split}.txt").read_text(encoding="utf-8")
    return [line.split("\t") for line in text.splitlines() if line.strip()]


def _simple_questions(kb: KnowledgeBase, split: str) -> list[dict]:
    """The questions of ``split`` whose gold statement is cited by a kb passage, with it."""
    rows = _simple_rows(split)
    citing: dict[str, set[str]] = {}
    for passage_id, statements in kb.con.execute(
        "SELECT passage_id, statement_ids FROM kb_passages"
    ).fetchall():
        for statement in statements:
            citing.setdefault(statement, set()).add(passage_id)
    facts = {}
    for statement_id, subject, prop, obj in kb.con.execute(
        "SELECT statement_id, subject, property, object FROM kb_statements WHERE object IS NOT NULL"
    ).fetchall():
        facts.setdefault((subject, prop, obj), []).append(statement_id)
    questions = []
    for row in rows:
        if len(row) != 4:
            continue
        subject, relation, obj, question = row
        key = (
            (subject, "P" + relation[1:], obj)
            if relation.startswith("P")
            else (obj, "P" + relation[1:], subject)
        )
        gold = {p for statement in facts.get(key, []) for p in citing.get(statement, ())}
        if gold:
            questions.append(
                {"question": question, "subject": subject, "relation": relation, "object": obj, "gold": gold}
            )
    return questions


def _answers(kb: KnowledgeBase, qid: str) -> list[str]:
    row = kb.resolve(qid) or {}
    names = [
        row.get("label"),
        row.get("label_en"),
        *(row.get("aliases") or []),
        *(row.get("aliases_en") or []),
    ]
    return sorted({n for n in names if n and len(n) > 1})


def _slot_filling(kb: KnowledgeBase, questions: list[dict]) -> tuple[list[dict], list[dict]]:
    """Real KILT slot-filling inputs (T-REx, zsRE) and inputs derived from the SimpleQuestions facts."""
    real = []
    for name in ("trex-dev", "trex-train", "structured_zeroshot-dev", "structured_zeroshot-train"):
        with open(
            real_file("kilt", "kilt_hf_dummy_first5", f"{name}-kilt.jsonl"), encoding="utf-8"
        ) as handle:
            for line in handle:
                record = json.loads(line)
                answers = sorted({o["answer"] for o in record.get("output", []) if o.get("answer")})
                if record.get("input") and answers:
                    real.append({"input": record["input"], "answers": answers})
    derived, seen = [], set()
    for q in questions:
        subject, prop, obj = (q["subject"], "P" + q["relation"][1:], q["object"])
        if not q["relation"].startswith("P") or (subject, prop) in seen:
            continue
        seen.add((subject, prop))
        answers = _answers(kb, obj)
        if answers:
            derived.append({"input": f"{kb.label(subject)} [SEP] {kb.label(prop)}", "answers": answers})
    return real, derived


def _recall(retriever: Retriever, key: str, items: list[dict]) -> float | None:
    if not items:
        return None
    hits = retriever.batch_search(key, [i["input"] for i in items], K)
    hits = retriever.with_text(hits)
    found = sum(
        any(answer.lower() in (hit.text or "").lower() for hit in ranked for answer in item["answers"])
        for item, ranked in zip(items, hits, strict=True)
    )
    return round(found / len(items), 4)


def _success(retriever: Retriever, questions: list[dict]) -> dict[str, float | None]:
    """success@5 per index over ``kb``: a top-5 passage cites the question's gold statement."""
    success: dict[str, float | None] = {}
    for index in INDEXES:
        if not questions:
            success[index] = None
            continue
        ranked = retriever.batch_search(f"{index}@kb", [q["question"] for q in questions], K)
        hit = sum(bool({h.passage_id for h in r} & q["gold"]) for q, r in zip(questions, ranked, strict=True))
        success[index] = round(hit / len(questions), 4)
    return success


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--snapshot", default=None)
    args = parser.parse_args()
    paths = resolve_snapshot(args.data_dir or default_data_dir(), args.snapshot)
    simple: dict[str, dict] = {}
    with Snapshot(paths) as opened:
        kb, retriever = opened.kb, opened.retriever
        subjects = {
            row[0] for row in kb.con.execute("SELECT id FROM kb_entities WHERE role = 'subject'").fetchall()
        }
        every = []
        for split in SPLITS:
            rows = _simple_rows(split)
            questions = _simple_questions(kb, split)
            every += questions
            log(f"SimpleQuestions {split}: {len(questions)} with their gold fact in the kb collection")
            simple[split] = {
                "questions": len(rows),
                "subject_in_kb": sum(row[0] in subjects for row in rows),
                "gold_fact_in_kb": len(questions),
                "success_at_5": _success(retriever, questions),
            }
        real, derived = _slot_filling(kb, every)
        sets = (("kilt_real", real), ("derived_from_simplequestions", derived))
        recall = {
            name: {
                f"{index}@{collection}": _recall(retriever, searcher_key(index, collection), items)
                for index in INDEXES
                for collection in ("kb", "text")
            }
            for name, items in sets
        }
    result = {
        "machine": machine_info(),
        "snapshot": paths.snapshot_id,
        "kb_passages": pq.ParquetFile(next((paths.kb_facts / "parquet").glob("*.parquet"))).metadata.num_rows,
        "simplequestions": simple,
        "slot_filling": {name: len(items) for name, items in sets} | {"answer_recall_at_5": recall},
    }
    table = [
        [f"{split}: {f['gold_fact_in_kb']} of {f['subject_in_kb']} ({f['questions']:,})"]
        + [f["success_at_5"][i] for i in INDEXES]
        for split, f in simple.items()
    ]
    print(format_table(["SimpleQuestions: gold fact in kb of subject in kb (all)", *INDEXES], table))
    rows = [
        [f"{name} ({len(items)})", *(recall[name][f"{i}@{c}"] for i in INDEXES for c in ("kb", "text"))]
        for name, items in sets
    ]
    print(format_table(["answer recall@5", *(f"{i}@{c}" for i in INDEXES for c in ("kb", "text"))], rows))
    write_results("kb_facts", result)


if __name__ == "__main__":
    main()
